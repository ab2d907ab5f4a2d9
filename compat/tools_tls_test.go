package compat

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/cmd/gregor/clustertest"
	"github.com/twmb/franz-go/pkg/kadm"
)

// testTLS runs Kafka's tools against a broker whose key store is a JKS
// file from keytool (tlsBroker): kafka-topics over SSL with a PKCS12 trust
// store, the console producer over SASL_SSL as a SCRAM-SHA-512 user, the
// console consumer over SSL; the records are the ones sent. A client
// whose trust store lacks the broker's certificate fails its handshake.
// Then a cluster's CONTROLLER listeners over SSL (checkControllerTLS).
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
	e.checkKeyStoreRenewal(t, tb)
	e.checkControllerTLS(t)
}

// checkKeyStoreRenewal renews the SSL listener's key store with
// kafka-configs while the broker runs (KIP-226): a new keytool key store
// of the same subject is taken, after which kafka-topics trusting only the
// renewed certificate gets in and one trusting only the old one fails its
// handshake; a key store of another subject is refused with Kafka's
// message, and kafka-configs fails.
func (e *cliEnv) checkKeyStoreRenewal(t *testing.T, tb tlsBroker) {
	renewed, renewedTrust, _ := keytoolStoresFor(t, "CN=127.0.0.1")
	alter := func(keyStore string) cliResult {
		return e.try(t, "", e.cls.configs, "--bootstrap-server", tb.plainAddr, "--entity-type", "brokers", "--entity-name", "1", "--alter",
			"--add-config", "listener.name.ssl.ssl.keystore.location="+keyStore+",listener.name.ssl.ssl.keystore.password=ks-secret")
	}
	if r := alter(renewed); r.err != nil || !strings.Contains(r.stdout, "Completed updating config for broker 1.") {
		t.Fatalf("kafka-configs renewing the key store: %v\n%s\n%s", r.err, r.stdout, r.stderr)
	}
	trusting := func(name, store string) string {
		return cliProperties(t, name, fmt.Sprintf("security.protocol=SSL\nssl.truststore.location=%s\nssl.truststore.password=ts-secret\nssl.truststore.type=PKCS12\n", store))
	}
	e.run(t, "", e.cls.topics, "--bootstrap-server", tb.sslAddr, "--command-config", trusting("renewed-trust", renewedTrust), "--list")
	if r := e.try(t, "", e.cls.topics, "--bootstrap-server", tb.sslAddr, "--command-config", trusting("old-trust", tb.trustStore), "--list"); r.err == nil {
		t.Fatalf("kafka-topics trusting only the old certificate got in after the renewal:\n%s", r.stdout)
	}
	stranger, _, _ := keytoolStoresFor(t, "CN=stranger")
	r := alter(stranger)
	if r.err == nil || !strings.Contains(r.stdout+r.stderr, "Keystore DistinguishedName does not match") {
		t.Fatalf("kafka-configs with a key store of another subject: %v\n%s\n%s", r.err, r.stdout, r.stderr)
	}
}

// checkControllerTLS starts three nodes whose CONTROLLER listeners are
// secured as Kafka's documentation secures them, from keytool's stores:
// SSL with client certificates required, then SASL_SSL with PLAIN
// (sasl.mechanism.controller.protocol). In each, the quorum forms;
// kafka-topics through a broker creates a topic, which the broker forwards
// to the active controller and every node applies; kafka-metadata-quorum
// --bootstrap-controller, logged in as the listener asks, names the active
// controller as leader and the three voters.
func (e *cliEnv) checkControllerTLS(t *testing.T) {
	ks, trust, _ := keytoolStores(t)
	stores := []string{"ssl.keystore.location=" + ks, "ssl.keystore.password=ks-secret",
		"ssl.truststore.location=" + trust, "ssl.truststore.type=PKCS12", "ssl.truststore.password=ts-secret"}
	trusting := fmt.Sprintf("ssl.truststore.location=%s\nssl.truststore.password=ts-secret\nssl.truststore.type=PKCS12\n", trust)
	const jaas = `org.apache.kafka.common.security.plain.PlainLoginModule required username="quorum" password="quorum-secret"`
	for i, setup := range []struct {
		name      string
		overrides []string
		client    string
	}{
		{"SSL", []string{"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL", "ssl.client.auth=required"},
			"security.protocol=SSL\n" + trusting + fmt.Sprintf("ssl.keystore.location=%s\nssl.keystore.password=ks-secret\nssl.key.password=ks-secret\n", ks)},
		{"SASL_SSL", []string{"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL",
			"sasl.enabled.mechanisms=PLAIN", "sasl.mechanism.controller.protocol=PLAIN",
			"listener.name.controller.plain.sasl.jaas.config=" + jaas + ` user_quorum="quorum-secret" user_ops="ops-secret";`,
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:quorum",
			"allow.everyone.if.no.acl.found=true"},
			"security.protocol=SASL_SSL\n" + trusting + "sasl.mechanism=PLAIN\n" +
				`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="ops" password="ops-secret";` + "\n"},
	} {
		c := clustertest.Start(t, clustertest.Options{Overrides: append(slices.Clone(stores), setup.overrides...)})
		c.WaitBrokers(t, 3, time.Minute)
		topic := fmt.Sprintf("cli-controller-%d", i)
		e.run(t, "", e.cls.topics, "--bootstrap-server", c.Nodes[0].Addr(), "--create", "--topic", topic,
			"--partitions", "2", "--replication-factor", "3")
		c.WaitAgreed(t, topic, 2, 3, time.Minute)

		leader := c.Controller(t, time.Minute)
		var voters []string
		for _, n := range c.Nodes {
			voters = append(voters, fmt.Sprintf(`{"id": %d, "endpoints": ["CONTROLLER://127.0.0.1:%d"]}`, n.ID, n.ControllerPort))
		}
		config := cliProperties(t, "controller-"+strings.ToLower(setup.name), setup.client)
		out, status := e.describeStatus(t, "--bootstrap-controller", fmt.Sprintf("127.0.0.1:%d", c.Nodes[1].ControllerPort), "--command-config", config)
		if status["LeaderId"] != strconv.Itoa(int(leader)) || status["CurrentVoters"] != "["+strings.Join(voters, ", ")+"]" {
			t.Fatalf("kafka-metadata-quorum --bootstrap-controller over %s said\n%s\nwant leader %d and voters %s", setup.name, out, leader, strings.Join(voters, ", "))
		}
		if setup.name == "SASL_SSL" {
			e.checkControllerACLs(t, c, config, trusting)
		}
		for _, n := range c.Nodes {
			n.Kill()
		}
	}
}

// checkControllerACLs runs kafka-acls and kafka-metadata-quorum with
// --bootstrap-controller against a SASL_SSL quorum with an authorizer,
// whose nodes log in as the super user quorum and where a resource no
// ACL names is open: ops (config) denies himself ALTER on the cluster
// through the CONTROLLER listener, after which the quorum tools, whose
// admin client first sends DescribeCluster (ALTER on a controller), are
// refused to him and still answer quorum.
func (e *cliEnv) checkControllerACLs(t *testing.T, c *clustertest.Cluster, config, trusting string) {
	controller := fmt.Sprintf("127.0.0.1:%d", c.Nodes[2].ControllerPort)
	out := e.run(t, "", e.cls.acls, "--bootstrap-controller", controller, "--command-config", config,
		"--add", "--deny-principal", "User:ops", "--operation", "Alter", "--cluster")
	if !strings.Contains(out, "Adding ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`") {
		t.Fatalf("kafka-acls --bootstrap-controller --add said:\n%s", out)
	}
	var r cliResult
	waitFor(t, "ops refused the quorum tools", time.Minute, func() bool {
		r = e.try(t, "", e.cls.quorum, "--bootstrap-controller", controller, "--command-config", config, "describe", "--status")
		return strings.Contains(r.stdout+r.stderr, "ClusterAuthorizationException")
	})
	quorum := cliProperties(t, "controller-quorum", "security.protocol=SASL_SSL\n"+trusting+"sasl.mechanism=PLAIN\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="quorum" password="quorum-secret";`+"\n")
	if out, status := e.describeStatus(t, "--bootstrap-controller", controller, "--command-config", quorum); status["LeaderId"] == "" {
		t.Fatalf("kafka-metadata-quorum --bootstrap-controller as the super user quorum said\n%s", out)
	}
}
