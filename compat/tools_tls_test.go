package compat

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// testTLS runs Kafka's tools against a broker whose key store is a JKS
// file from keytool (tlsBroker): kafka-topics over SSL with a PKCS12 trust
// store, the console producer over SASL_SSL as a SCRAM-SHA-512 user, the
// console consumer over SSL; the records are the ones sent. A client
// whose trust store lacks the broker's certificate fails its handshake.
func (e *cliEnv) testTLS(t *testing.T) {
	tb := startTLSBroker(t)
	addScram(t, tb.adm, "tess", "tess-secret", kadm.ScramSha512)
	trust := fmt.Sprintf("ssl.truststore.location=%s\nssl.truststore.password=ts-secret\nssl.truststore.type=PKCS12\n", tb.trustStore)
	ssl := cliProperties(t, "ssl", "security.protocol=SSL\n"+trust)
	saslSSL := cliProperties(t, "sasl-ssl", "security.protocol=SASL_SSL\n"+trust+"sasl.mechanism=SCRAM-SHA-512\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="tess" password="tess-secret";`+"\n")

	const topic, n = "cli-tls", 50
	e.run(t, "", e.cls.topics, "--bootstrap-server", tb.sslAddr, "--command-config", ssl, "--create", "--topic", topic, "--partitions", "2")
	e.consoleRoundTrip(t, topic, "tls", n, []string{"--bootstrap-server", tb.saslSSLAddr, "--command-config", saslSSL},
		[]string{"--bootstrap-server", tb.sslAddr, "--command-config", ssl})
	stored := 0
	ends := endOffsets(t, tb.adm, topic)
	for _, end := range ends {
		stored += int(end)
	}
	if stored != n {
		t.Fatalf("the broker holds %d records of %s, want %d", stored, topic, n)
	}

	// The JVM's default trust store does not know the broker's certificate.
	untrusting := cliProperties(t, "untrusting", "security.protocol=SSL\n")
	r := e.try(t, "", e.cls.topics, "--bootstrap-server", tb.sslAddr, "--command-config", untrusting, "--list")
	if r.err == nil {
		t.Fatalf("kafka-topics without the broker's certificate succeeded:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout+r.stderr, "SSL handshake failed") {
		t.Fatalf("without the broker's certificate: output lacks the handshake failure:\n%s\n%s", r.stdout, r.stderr)
	}
}
