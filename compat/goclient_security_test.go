package compat

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/segmentio/kafka-go"
	kafkagosasl "github.com/segmentio/kafka-go/sasl"
	kafkagoplain "github.com/segmentio/kafka-go/sasl/plain"
	kafkagoscram "github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// trusting is a TLS client config that trusts only the certificates of
// the PEM file caFile (a tlsBroker's).
func trusting(t *testing.T, caFile string) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", caFile)
	}
	return &tls.Config{RootCAs: pool}
}

// untrustedCertificate fails unless err is a TLS handshake refused for a
// certificate of an unknown authority.
func untrustedCertificate(t *testing.T, what string, err error) {
	t.Helper()
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) && (err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority")) {
		t.Fatalf("%s without the broker's certificate: %v, want an unknown authority", what, err)
	}
}

// TestFranzGoSASL: franz-go logs in to a SASL_PLAINTEXT listener with
// PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; with each it produces what the
// broker stores and reads it back; a wrong password is refused.
func TestFranzGoSASL(t *testing.T) {
	version := moduleVersion(t, "github.com/twmb/franz-go")
	feature(t, "franz-go", version, "sasl", func(t *testing.T) {
		s := startSASLBroker(t)
		addScram(t, s.adm, "fg", "fg-secret", kadm.ScramSha256)
		addScram(t, s.adm, "fg", "fg-secret", kadm.ScramSha512)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for name, mech := range map[string]sasl.Mechanism{
			"plain":         plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism(),
			"scram-sha-256": scram.Auth{User: "fg", Pass: "fg-secret"}.AsSha256Mechanism(),
			"scram-sha-512": scram.Auth{User: "fg", Pass: "fg-secret"}.AsSha512Mechanism(),
		} {
			topic := "franz-sasl-" + name
			createTopic(t, s.adm, topic)
			recs := makeRecords(topic, 50)
			franzProduce(t, ctx, s.addr, topic, recs, kgo.SASL(mech), kgo.ProducerBatchCompression(kgo.NoCompression()))
			checkStored(t, s.plainAddr, topic, recs, 0)
			cl := franzClient(t, s.addr, kgo.SASL(mech), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			sameRecords(t, name+": consumed", franzKVs(franzPoll(t, ctx, cl, len(recs))), recs)
		}
		refused := franzClient(t, s.addr, kgo.SASL(scram.Auth{User: "fg", Pass: "wrong"}.AsSha256Mechanism()))
		if err := refused.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		s.expectFailedLogin(t)
	})
}

// TestFranzGoTLS: franz-go produces over SASL_SSL (SCRAM-SHA-512) and
// consumes over SSL, trusting the broker's keytool-made certificate; a
// client that does not trust it fails the handshake.
func TestFranzGoTLS(t *testing.T) {
	version := moduleVersion(t, "github.com/twmb/franz-go")
	feature(t, "franz-go", version, "tls", func(t *testing.T) {
		tb := startTLSBroker(t)
		addScram(t, tb.adm, "fg", "fg-secret", kadm.ScramSha512)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		const topic = "franz-tls"
		createTopic(t, tb.adm, topic)
		recs := makeRecords(topic, 100)
		franzProduce(t, ctx, tb.saslSSLAddr, topic, recs, kgo.DialTLSConfig(trusting(t, tb.caFile)),
			kgo.SASL(scram.Auth{User: "fg", Pass: "fg-secret"}.AsSha512Mechanism()), kgo.ProducerBatchCompression(kgo.NoCompression()))
		checkStored(t, tb.plainAddr, topic, recs, 0)
		cl := franzClient(t, tb.sslAddr, kgo.DialTLSConfig(trusting(t, tb.caFile)), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		sameRecords(t, "consumed over SSL", franzKVs(franzPoll(t, ctx, cl, len(recs))), recs)

		untrusted := franzClient(t, tb.sslAddr, kgo.DialTLSConfig(&tls.Config{}))
		untrustedCertificate(t, "franz-go", untrusted.Ping(ctx))
	})
}

// TestSaramaTLS: sarama produces and consumes over SSL trusting the
// broker's certificate; without it the handshake fails.
func TestSaramaTLS(t *testing.T) {
	version := moduleVersion(t, "github.com/IBM/sarama")
	feature(t, saramaClientName, version, "tls", func(t *testing.T) {
		tb := startTLSBroker(t)
		cfg := sarama.NewConfig()
		cfg.Version = sarama.V4_0_0_0
		cfg.Producer.Return.Successes = true
		cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, trusting(t, tb.caFile)
		const topic = "sarama-tls"
		createTopic(t, tb.adm, topic)
		want := makeRecords(topic, 100)
		saramaProduce(t, tb.sslAddr, topic, want, cfg)
		checkStored(t, tb.plainAddr, topic, want, 0)
		sameRecords(t, "consumed over SSL", saramaConsumeAll(t, tb.sslAddr, topic, cfg), want)

		cfg.Net.TLS.Config = &tls.Config{}
		cfg.Metadata.Retry.Max = 0
		_, err := sarama.NewClient([]string{tb.sslAddr}, cfg)
		untrustedCertificate(t, "sarama", err)
	})
}

// TestKafkaGoSASL: kafka-go logs in to a SASL_PLAINTEXT listener with
// PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512: its Transport creates the topic
// and writes, its Dialer reads back; a wrong password is refused.
func TestKafkaGoSASL(t *testing.T) {
	version := moduleVersion(t, "github.com/segmentio/kafka-go")
	feature(t, kafkagoClientName, version, "sasl", func(t *testing.T) {
		s := startSASLBroker(t)
		addScram(t, s.adm, "kg", "kg-secret", kadm.ScramSha256)
		addScram(t, s.adm, "kg", "kg-secret", kadm.ScramSha512)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		scramMech := func(algo kafkagoscram.Algorithm, password string) kafkagosasl.Mechanism {
			m, err := kafkagoscram.Mechanism(algo, "kg", password)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		for name, mech := range map[string]kafkagosasl.Mechanism{
			"plain":         kafkagoplain.Mechanism{Username: "admin", Password: "admin-secret"},
			"scram-sha-256": scramMech(kafkagoscram.SHA256, "kg-secret"),
			"scram-sha-512": scramMech(kafkagoscram.SHA512, "kg-secret"),
		} {
			topic := "kafkago-sasl-" + name
			kafkagoSecured(t, ctx, s.addr, s.plainAddr, topic, &kafka.Transport{SASL: mech, MetadataTTL: time.Second},
				&kafka.Dialer{SASLMechanism: mech, Timeout: 10 * time.Second})
		}
		d := &kafka.Dialer{SASLMechanism: scramMech(kafkagoscram.SHA256, "wrong"), Timeout: 10 * time.Second}
		if conn, err := d.DialContext(ctx, "tcp", s.addr); err == nil {
			conn.Close()
			t.Fatal("a wrong password was accepted")
		} else if !errors.Is(err, kafka.SASLAuthenticationFailed) {
			t.Fatalf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		s.expectFailedLogin(t)
	})
}

// TestKafkaGoTLS: kafka-go writes over SASL_SSL (SCRAM-SHA-512) and reads
// over SSL, trusting the broker's certificate; without it the handshake
// fails.
func TestKafkaGoTLS(t *testing.T) {
	version := moduleVersion(t, "github.com/segmentio/kafka-go")
	feature(t, kafkagoClientName, version, "tls", func(t *testing.T) {
		tb := startTLSBroker(t)
		addScram(t, tb.adm, "kg", "kg-secret", kadm.ScramSha512)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		mech, err := kafkagoscram.Mechanism(kafkagoscram.SHA512, "kg", "kg-secret")
		if err != nil {
			t.Fatal(err)
		}
		kafkagoSecured(t, ctx, tb.saslSSLAddr, tb.plainAddr, "kafkago-tls",
			&kafka.Transport{SASL: mech, TLS: trusting(t, tb.caFile), MetadataTTL: time.Second},
			&kafka.Dialer{TLS: trusting(t, tb.caFile), Timeout: 10 * time.Second}, tb.sslAddr)

		d := &kafka.Dialer{TLS: &tls.Config{}, Timeout: 10 * time.Second}
		conn, err := d.DialContext(ctx, "tcp", tb.sslAddr)
		if err == nil {
			conn.Close()
		}
		untrustedCertificate(t, "kafka-go", err)
	})
}

// kafkagoSecured creates topic and writes 100 records to it through tr at
// addr, checks what plainAddr's broker stored, and reads them back with
// partition Readers dialed by d at readAddr (addr when not given).
func kafkagoSecured(t *testing.T, ctx context.Context, addr, plainAddr, topic string, tr *kafka.Transport, d *kafka.Dialer, readAddr ...string) {
	t.Helper()
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second, Transport: tr}
	kafkagoCreateTopic(t, ctx, cl, topic, groupPartitions)
	recs := makeRecords(topic, 100)
	kafkagoProduce(t, ctx, cl, topic, recs, 0)
	checkStored(t, plainAddr, topic, recs, 0)
	if len(readAddr) > 0 {
		addr = readAddr[0]
	}
	sameRecords(t, topic+": consumed", kafkagoReadAll(t, ctx, addr, plainAddr, topic, d), recs)
}
