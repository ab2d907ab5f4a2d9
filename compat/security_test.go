package compat

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
)

// TestKcatSASL: librdkafka logs in to a SASL_PLAINTEXT listener with
// SCRAM-SHA-512 to produce and with PLAIN to consume, the records are
// stored as sent, and a wrong password is refused with Kafka's message.
func TestKcatSASL(t *testing.T) {
	version := kcatVersion(t)
	feature(t, kcatClientName, version, "sasl", func(t *testing.T) {
		s := startSASLBroker(t)
		addScram(t, s.adm, "kc", "kc-secret", kadm.ScramSha512)
		login := func(mechanism, user, password string) []string {
			return []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=" + mechanism,
				"-X", "sasl.username=" + user, "-X", "sasl.password=" + password}
		}
		const topic = "kcat-sasl"
		createTopic(t, s.adm, topic)
		input, want := kcatKeyedInput("sasl", 100)
		kcat(t, s.addr, input, append([]string{"-P", "-t", topic, "-K", ":"}, login("SCRAM-SHA-512", "kc", "kc-secret")...)...)
		checkStored(t, s.plainAddr, topic, want, 0)
		out := kcat(t, s.addr, "", append([]string{"-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k:%s\n"}, login("PLAIN", "admin", "admin-secret")...)...)
		if n := len(strings.Split(strings.TrimSpace(out), "\n")); n != 100 {
			t.Fatalf("consumed %d records, want 100:\n%.300s", n, out)
		}

		bad := kcatFails(t, s.addr, append([]string{"-L", "-m", "5"}, login("SCRAM-SHA-512", "kc", "wrong")...)...)
		if want := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"; !strings.Contains(bad, want) {
			t.Fatalf("wrong password: kcat said\n%s\nwithout %q", bad, want)
		}
	})
}

// TestKcatTLS: librdkafka produces over SASL_SSL (SCRAM-SHA-512) and
// consumes over SSL, trusting the broker's keytool-made certificate from
// a PEM file; without it the handshake fails.
func TestKcatTLS(t *testing.T) {
	version := kcatVersion(t)
	feature(t, kcatClientName, version, "tls", func(t *testing.T) {
		tb := startTLSBroker(t)
		addScram(t, tb.adm, "kc", "kc-secret", kadm.ScramSha512)
		ssl := []string{"-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + tb.caFile}
		saslSSL := []string{"-X", "security.protocol=sasl_ssl", "-X", "ssl.ca.location=" + tb.caFile,
			"-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=kc", "-X", "sasl.password=kc-secret"}
		const topic = "kcat-tls"
		createTopic(t, tb.adm, topic)
		input, want := kcatKeyedInput("tls", 100)
		kcat(t, tb.saslSSLAddr, input, append([]string{"-P", "-t", topic, "-K", ":"}, saslSSL...)...)
		checkStored(t, tb.plainAddr, topic, want, 0)
		out := kcat(t, tb.sslAddr, "", append([]string{"-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k:%s\n"}, ssl...)...)
		if n := len(strings.Split(strings.TrimSpace(out), "\n")); n != 100 {
			t.Fatalf("consumed %d records, want 100:\n%.300s", n, out)
		}

		bad := kcatFails(t, tb.sslAddr, "-L", "-m", "5", "-X", "security.protocol=ssl")
		if !strings.Contains(bad, "certificate verify failed") {
			t.Fatalf("without the broker's certificate kcat said\n%s", bad)
		}
	})
}

// TestSaramaSASL: sarama logs in with PLAIN over both SASL handshakes it
// speaks: v0, whose tokens go bare on the socket, and v1 with
// SaslAuthenticate requests. Each produces and reads back its records.
func TestSaramaSASL(t *testing.T) {
	version := moduleVersion(t, "github.com/IBM/sarama")
	feature(t, saramaClientName, version, "sasl", func(t *testing.T) {
		s := startSASLBroker(t)
		for _, handshake := range []int16{sarama.SASLHandshakeV0, sarama.SASLHandshakeV1} {
			cfg := sarama.NewConfig()
			cfg.Version = sarama.V4_0_0_0
			cfg.Producer.Return.Successes = true
			cfg.Consumer.MaxWaitTime = 100 * time.Millisecond
			cfg.Net.SASL.Enable = true
			cfg.Net.SASL.Mechanism = sarama.SASLTypePlaintext
			cfg.Net.SASL.Version = handshake
			cfg.ApiVersionsRequest = handshake != sarama.SASLHandshakeV0 // sarama's rule for v0
			cfg.Net.SASL.User, cfg.Net.SASL.Password = "admin", "admin-secret"
			topic := fmt.Sprintf("sarama-sasl-v%d", handshake)
			createTopic(t, s.adm, topic)
			want := makeRecords(topic, 50)
			saramaProduce(t, s.addr, topic, want, cfg)
			checkStored(t, s.plainAddr, topic, want, 0)
			sameRecords(t, "consumed", saramaConsumeAll(t, s.addr, topic, cfg), want)

			cfg.Net.SASL.Password = "wrong"
			cfg.Metadata.Retry.Max = 0
			if _, err := sarama.NewClient([]string{s.addr}, cfg); err == nil {
				t.Fatalf("handshake v%d: a wrong password was accepted", handshake)
			}
		}
	})
}
