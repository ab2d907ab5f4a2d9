package compat

import (
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
)

// javaSecurity runs compat/java's security checks (SecurityChecks.java)
// against a broker with a PLAINTEXT listener for the set-up, a
// SASL_PLAINTEXT one (PLAIN from its JAAS config, SCRAM-SHA-256 and -512
// credentials of the user java), an SSL and a SASL_SSL one (SCRAM-SHA-512
// only), whose key store is keytool's; the program trusts the certificate from a PKCS12
// trust store; and the ACL checks (AclChecks.java) against a broker with
// the StandardAuthorizer (startACLBroker). Its RESULTs become the sasl, tls
// and acls cells; each topic it wrote must hold its records.
func javaSecurity(t *testing.T, classpath string) {
	ks, trustStore, _ := keytoolStores(t)
	p := harness.Start(t, t.TempDir(),
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`,
		"ssl.keystore.location="+ks, "ssl.keystore.password=ks-secret")
	adm := newAdmin(t, p.Addr)
	addScram(t, adm, "java", "java-secret", kadm.ScramSha256)
	addScram(t, adm, "java", "java-secret", kadm.ScramSha512)
	acls := startACLBroker(t)
	env := []string{"GREGOR_SASL_PLAINTEXT=" + p.ListenerAddr(t, "SASL_PLAINTEXT"), "GREGOR_SSL=" + p.ListenerAddr(t, "SSL"),
		"GREGOR_SASL_SSL=" + p.ListenerAddr(t, "SASL_SSL"), "GREGOR_TRUSTSTORE=" + trustStore, "GREGOR_ACL_SASL=" + acls.addr}
	rep := runProgramEnv(t, 3*time.Minute, env, "java", "-cp", classpath, "gregor.compat.Main", p.Addr, "javasec", "security")
	recordReport(t, rep, "sasl", "tls", "acls")
	if recs := scriptTopicRecords(t, acls.plainAddr, "javasec-acl", 10); len(recs) != 10 {
		t.Errorf("javasec-acl holds %d records, want alice's 10", len(recs))
	}
	for _, topic := range []string{"javasec-sasl-plain", "javasec-sasl-scram-sha-256", "javasec-sasl-scram-sha-512", "javasec-tls"} {
		if recs := scriptTopicRecords(t, p.Addr, topic, 100); len(recs) != 100 {
			t.Errorf("%s holds %d records, want 100", topic, len(recs))
		}
	}
}
