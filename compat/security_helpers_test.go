package compat

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
)

// saslBroker is a gregor whose first listener is SASL_PLAINTEXT, with the
// PLAIN user admin (password admin-secret) in its JAAS config and
// SCRAM-SHA-256 and SCRAM-SHA-512 enabled, configured with Kafka's keys.
// Its second listener is PLAINTEXT, for the checks: creating SCRAM users
// and topics and reading what a client stored through franz-go.
type saslBroker struct {
	addr      string // SASL_PLAINTEXT
	plainAddr string // PLAINTEXT
	adm       *kadm.Client
	logs      string // the broker's log file
}

func startSASLBroker(t *testing.T) saslBroker {
	t.Helper()
	p := harness.Start(t, t.TempDir(),
		"listeners=SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`,
		"group.initial.rebalance.delay.ms=0")
	s := saslBroker{addr: p.Addr, plainAddr: p.ListenerAddr(t, "PLAINTEXT"), logs: p.Logs}
	s.adm = newAdmin(t, s.plainAddr)
	return s
}

// runSASLScript runs a script's sasl feature against a fresh saslBroker,
// where user has a SCRAM-SHA-256 and a SCRAM-SHA-512 credential (password
// <user>-secret): its RESULT goes in the matrix, its topic <prefix>-sasl
// must hold the 100 records it wrote, and the broker must have refused
// its wrong password.
func runSASLScript(t *testing.T, user, prefix, name string, args ...string) {
	t.Helper()
	s := startSASLBroker(t)
	addScram(t, s.adm, user, user+"-secret", kadm.ScramSha256)
	addScram(t, s.adm, user, user+"-secret", kadm.ScramSha512)
	recordReport(t, runScript(t, 3*time.Minute, s.addr, prefix, name, args...), "sasl")
	if recs := scriptTopicRecords(t, s.plainAddr, prefix+"-sasl", 100); len(recs) != 100 {
		t.Fatalf("%s-sasl holds %d records, want 100", prefix, len(recs))
	}
	s.expectFailedLogin(t)
}

// runTLSScript runs a script's tls feature against a fresh tlsBroker's
// SASL_SSL listener, where user has a SCRAM-SHA-512 credential (password
// <user>-secret) and GREGOR_TLS_CA names the broker's certificate (PEM):
// its RESULT goes in the matrix and its topic <prefix>-tls must hold the
// 100 records it wrote.
func runTLSScript(t *testing.T, user, prefix, name string, args ...string) {
	t.Helper()
	tb := startTLSBroker(t)
	addScram(t, tb.adm, user, user+"-secret", kadm.ScramSha512)
	t.Setenv("GREGOR_TLS_CA", tb.caFile)
	recordReport(t, runScript(t, 3*time.Minute, tb.saslSSLAddr, prefix, name, args...), "tls")
	if recs := scriptTopicRecords(t, tb.plainAddr, prefix+"-tls", 100); len(recs) != 100 {
		t.Fatalf("%s-tls holds %d records, want 100", prefix, len(recs))
	}
}

// expectFailedLogin checks that the broker logged a refused SCRAM login:
// a client's wrong password was turned away for its credentials, not for
// anything else.
func (s saslBroker) expectFailedLogin(t *testing.T) {
	t.Helper()
	logs, err := os.ReadFile(s.logs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), `msg="failed authentication"`) || !strings.Contains(string(logs), "due to invalid credentials with SASL mechanism SCRAM-SHA-256") {
		t.Fatalf("the broker logged no refused SCRAM-SHA-256 login:\n%s", logs)
	}
}

// addScram gives user a SCRAM credential for mechanism, through adm.
func addScram(t *testing.T, adm *kadm.Client, user, password string, m kadm.ScramMechanism) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: m, Iterations: 4096, Password: password}})
	if err == nil {
		err = res[user].Err
	}
	if err != nil {
		t.Fatalf("SCRAM credential for %s: %v", user, err)
	}
}

// tlsBroker is a gregor with an SSL listener first and a SASL_SSL one
// second (SCRAM-SHA-512), whose key store is a JKS file made by keytool,
// as Kafka users make theirs, and a PLAINTEXT listener for the checks.
// The clients trust its certificate through trustStore (PKCS12) or
// caFile (PEM).
type tlsBroker struct {
	sslAddr, saslSSLAddr, plainAddr string
	trustStore, caFile              string
	adm                             *kadm.Client
}

func startTLSBroker(t *testing.T) tlsBroker {
	t.Helper()
	ks, trustStore, crt := keytoolStores(t)
	tb := tlsBroker{trustStore: trustStore, caFile: crt}
	p := harness.Start(t, t.TempDir(),
		"listeners=SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
		"ssl.keystore.location="+ks, "ssl.keystore.password=ks-secret",
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"group.initial.rebalance.delay.ms=0")
	tb.sslAddr = p.Addr
	tb.saslSSLAddr, tb.plainAddr = p.ListenerAddr(t, "SASL_SSL"), p.ListenerAddr(t, "PLAINTEXT")
	tb.adm = newAdmin(t, tb.plainAddr)
	return tb
}

// keytoolStores makes, with the JDK's keytool, a JKS key store (password
// ks-secret) holding a key and a self-signed certificate for 127.0.0.1, a
// PKCS12 trust store (ts-secret) holding that certificate, and the
// certificate in PEM.
func keytoolStores(t *testing.T) (keyStore, trustStore, certFile string) {
	t.Helper()
	return keytoolStoresFor(t, "CN=127.0.0.1")
}

// keytoolStoresFor is keytoolStores with the certificate's subject dname.
func keytoolStoresFor(t *testing.T, dname string) (keyStore, trustStore, certFile string) {
	t.Helper()
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		t.Fatalf("keytool (from the JDK) is needed: %v", err)
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(keytool, args...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %v: %v\n%s", args, err, out)
		}
	}
	keyStore, certFile, trustStore = filepath.Join(dir, "broker.jks"), filepath.Join(dir, "broker.pem"), filepath.Join(dir, "client-trust.p12")
	run("-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048", "-dname", dname,
		"-ext", "SAN=IP:127.0.0.1", "-validity", "2", "-storetype", "JKS", "-keystore", keyStore, "-storepass", "ks-secret", "-keypass", "ks-secret")
	run("-exportcert", "-rfc", "-alias", "broker", "-keystore", keyStore, "-storepass", "ks-secret", "-file", certFile)
	run("-importcert", "-noprompt", "-alias", "broker", "-file", certFile, "-storetype", "PKCS12", "-keystore", trustStore, "-storepass", "ts-secret")
	return keyStore, trustStore, certFile
}
