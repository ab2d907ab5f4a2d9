package compat

import (
	"strings"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
)

// confluentLogin are librdkafka's settings for a SASL login.
func confluentLogin(protocol, mechanism, user, password string) []string {
	return []string{"security.protocol=" + protocol, "sasl.mechanisms=" + mechanism, "sasl.username=" + user, "sasl.password=" + password}
}

// TestConfluentSASL: librdkafka, in confluent-kafka-go, logs in to a
// SASL_PLAINTEXT listener with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512,
// with each producing what the broker stores and reading it back; a wrong
// password is refused with Kafka's message.
func TestConfluentSASL(t *testing.T) {
	feature(t, confluentClientName, confluentVersion(t), "sasl", func(t *testing.T) {
		s := startSASLBroker(t)
		addScram(t, s.adm, "cg", "cg-secret", kadm.ScramSha256)
		addScram(t, s.adm, "cg", "cg-secret", kadm.ScramSha512)
		for name, login := range map[string][]string{
			"plain":         confluentLogin("SASL_PLAINTEXT", "PLAIN", "admin", "admin-secret"),
			"scram-sha-256": confluentLogin("SASL_PLAINTEXT", "SCRAM-SHA-256", "cg", "cg-secret"),
			"scram-sha-512": confluentLogin("SASL_PLAINTEXT", "SCRAM-SHA-512", "cg", "cg-secret"),
		} {
			topic := "confluent-sasl-" + name
			createTopic(t, s.adm, topic)
			recs := makeRecords(topic, 50)
			confluentProduce(t, s.addr, topic, recs, login...)
			checkStored(t, s.plainAddr, topic, recs, 0)
			sameRecords(t, name+" consumed", confluentConsumeTo(t, s.addr, topic, endOffsets(t, s.adm, topic), login...), recs)
		}
		prod, err := kafka.NewProducer(confluentConfig(t, s.addr, confluentLogin("SASL_PLAINTEXT", "SCRAM-SHA-256", "cg", "wrong")...))
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		if err := confluentError(t, prod.Events(), kafka.ErrAuthentication); !strings.Contains(err.Error(),
			"invalid credentials with SASL mechanism SCRAM-SHA-256") {
			t.Fatalf("a wrong password: %v", err)
		}
		s.expectFailedLogin(t)
	})
}

// TestConfluentTLS: librdkafka, in confluent-kafka-go, produces over
// SASL_SSL (SCRAM-SHA-512) and consumes over SSL, trusting the broker's
// keytool certificate from PEM; without it the handshake fails.
func TestConfluentTLS(t *testing.T) {
	feature(t, confluentClientName, confluentVersion(t), "tls", func(t *testing.T) {
		tb := startTLSBroker(t)
		addScram(t, tb.adm, "cg", "cg-secret", kadm.ScramSha512)
		const topic = "confluent-tls"
		createTopic(t, tb.adm, topic)
		recs := makeRecords(topic, 100)
		trust := "ssl.ca.location=" + tb.caFile
		confluentProduce(t, tb.saslSSLAddr, topic, recs, append(confluentLogin("SASL_SSL", "SCRAM-SHA-512", "cg", "cg-secret"), trust)...)
		checkStored(t, tb.plainAddr, topic, recs, 0)
		sameRecords(t, "consumed over SSL", confluentConsumeTo(t, tb.sslAddr, topic, endOffsets(t, tb.adm, topic),
			"security.protocol=SSL", trust), recs)

		prod, err := kafka.NewProducer(confluentConfig(t, tb.sslAddr, "security.protocol=SSL"))
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		if err := confluentError(t, prod.Events(), kafka.ErrSsl); !strings.Contains(err.Error(), "certificate verify failed") {
			t.Fatalf("without the broker's certificate: %v", err)
		}
	})
}
