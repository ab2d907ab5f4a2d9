package broker

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// The CONTROLLER listener may be PLAINTEXT, SSL, SASL_PLAINTEXT or
// SASL_SSL; nodes log in to a SASL one with sasl.mechanism.controller.protocol
// and the username and password of its JAAS config there. A broker-only
// node, whose inter-broker listener the active controller dials for the
// metadata log as it dials voters, needs that listener on the controller
// listener's protocol (and mechanism, if SASL), and dials SSL controllers
// with a trust store alone when they ask for no client certificate.
func TestControllerListenerSecurityConfig(t *testing.T) {
	pki := newTestPKI(t)
	ks, _ := pki.keyStore("node", pkix.Name{CommonName: "node"})
	controllerNode := func() map[string]string {
		return map[string]string{"process.roles": "broker,controller", "node.id": "1", "controller.quorum.voters": "1@127.0.0.1:9093",
			"listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "controller.listener.names": "CONTROLLER",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL", "log.dirs": t.TempDir(),
			"ssl.keystore.type": "PEM", "ssl.keystore.location": ks, "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.caFile}
	}
	brokerNode := func() map[string]string {
		return map[string]string{"process.roles": "broker", "node.id": "2", "controller.quorum.voters": "1@127.0.0.1:9093",
			"listeners": "PLAINTEXT://127.0.0.1:9094", "controller.listener.names": "CONTROLLER",
			"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:SSL", "log.dirs": t.TempDir(),
			"ssl.keystore.type": "PEM", "ssl.keystore.location": ks, "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.caFile}
	}
	saslController := map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL",
		"sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.controller.protocol": "PLAIN",
		"listener.name.controller.plain.sasl.jaas.config": plainJAAS}
	with := func(extra map[string]string) map[string]string {
		m := maps.Clone(saslController)
		maps.Copy(m, extra)
		return m
	}
	checkConfigRefusals(t, controllerNode, map[string]configRefusal{
		"SSL controller without a key store": {map[string]string{"ssl.keystore.location": ""}, "listener CONTROLLER uses TLS but has no key store"},
		"SASL controller, Kafka's default mechanism": {with(map[string]string{"sasl.mechanism.controller.protocol": ""}),
			"invalid value for config key sasl.mechanism.controller.protocol: GSSAPI is not enabled on the controller listener CONTROLLER (PLAIN)"},
		"SASL controller, no login": {with(map[string]string{"listener.name.controller.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";`}),
			"listener CONTROLLER: controllers log in with PLAIN, whose JAAS config (listener.name.controller.plain.sasl.jaas.config) needs username and password options"},
	})
	props := controllerNode()
	maps.Copy(props, saslController)
	if cfg, _, err := ParseConfig(props); err != nil || cfg.ControllerSASL == nil || cfg.ControllerSASL.Name() != "PLAIN" || cfg.ControllerTLS == nil {
		t.Fatalf("a SASL_SSL controller listener with PLAIN: %v; want a PLAIN login over TLS", err)
	}
	checkConfigRefusals(t, brokerNode, map[string]configRefusal{
		"SSL inter-broker, PLAINTEXT controller": {map[string]string{"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT"},
			"listener PLAINTEXT: a broker-only node's inter-broker listener carries the metadata log, which the active controller sends as it does to controllers, so it must be PLAINTEXT, as the controller listener CONTROLLER is"},
		"PLAINTEXT inter-broker, SSL controller": {map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"},
			"so it must be SSL, as the controller listener CONTROLLER is"},
		"SSL inter-broker, SASL_PLAINTEXT controller": {map[string]string{"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:SASL_PLAINTEXT",
			"sasl.mechanism.controller.protocol": "PLAIN", "listener.name.controller.plain.sasl.jaas.config": plainJAAS},
			"so it must be SASL_PLAINTEXT, as the controller listener CONTROLLER is"},
		"SASL controller, its mechanism not enabled on the inter-broker listener": {map[string]string{
			"listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT", "sasl.enabled.mechanisms": "SCRAM-SHA-256,PLAIN",
			"listener.name.plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-256", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
			"sasl.mechanism.controller.protocol": "PLAIN", "listener.name.plaintext.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`,
			"listener.name.controller.plain.sasl.jaas.config": plainJAAS},
			"invalid value for config key sasl.mechanism.controller.protocol: the active controller logs in with PLAIN to the inter-broker listener PLAINTEXT of a broker-only node to send it the metadata log, and that listener does not enable it (SCRAM-SHA-256)"},
	})
	scramControllers := brokerNode()
	maps.Copy(scramControllers, map[string]string{"listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms": "SCRAM-SHA-512", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512", "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
		"listener.name.plaintext.scram-sha-512.sasl.jaas.config":  `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`,
		"listener.name.controller.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`})
	if _, _, err := ParseConfig(scramControllers); err == nil || !strings.Contains(err.Error(), "which holds the SCRAM credentials the node would check that login against") {
		t.Fatalf("a broker-only node under SCRAM controllers: %v, want refused", err)
	}
	props = brokerNode()
	maps.Copy(props, map[string]string{"listener.security.protocol.map": "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN", "sasl.mechanism.controller.protocol": "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config": plainJAAS, "listener.name.controller.plain.sasl.jaas.config": plainJAAS})
	if cfg, _, err := ParseConfig(props); err != nil || cfg.ControllerSASL == nil || cfg.ControllerSASL.Name() != "PLAIN" {
		t.Fatalf("a broker-only node under SASL_PLAINTEXT controllers: %v; want a PLAIN login to them", err)
	}

	cfg, _, err := ParseConfig(controllerNode())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ControllerTLS == nil || len(cfg.ControllerTLS.Certificates) != 1 || cfg.Security["CONTROLLER"].TLS == nil {
		t.Fatalf("an SSL controller listener: client TLS %v, server TLS %v; want both, the client with the key store's certificate",
			cfg.ControllerTLS, cfg.Security["CONTROLLER"].TLS)
	}
	props = brokerNode()
	delete(props, "ssl.keystore.location")
	props["listener.name.plaintext.ssl.keystore.location"] = ks // the inter-broker listener's own
	if cfg, _, err = ParseConfig(props); err != nil {
		t.Fatalf("a broker-only node with a trust store for the controllers and a key store for its own listener: %v", err)
	}
	if cfg.ControllerTLS == nil || len(cfg.ControllerTLS.Certificates) != 0 || cfg.ControllerTLS.RootCAs == nil {
		t.Fatalf("broker-only node's client TLS for SSL controllers: %+v, want the trust store and no certificate", cfg.ControllerTLS)
	}
}

// A cluster every listener of which is SSL with client certificates
// required, CONTROLLER included, with controller-only voters and
// broker-only observers: raft's streams (to voters and to observers) and
// the brokers' requests to the active controller go over TLS, and go on
// after the raft leader stops. A peer without a certificate the CA signed
// gets nothing through the CONTROLLER listener, nor does plain TCP.
func TestClusterControllerTLS(t *testing.T) {
	pki := newTestPKI(t)
	c := startClusterRoles(t, 3, 2, pki.clusterProps("PLAINTEXT:SSL,CONTROLLER:SSL"))
	old := checkControllerFailover(t, c, kgo.DialTLSConfig(pki.clientTLS()))

	addr := strings.TrimPrefix(c.props[(old+1)%3]["listeners"], "CONTROLLER://")
	conn, err := net.Dial("tcp", addr)
	refusesRaft(t, "plain TCP", conn, err)
	stranger := newTestPKI(t)
	_, foreign := stranger.keyStore("intruder", pkix.Name{CommonName: "node"})
	tc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{foreign}})
	refusesRaft(t, "a certificate another CA signed", tc, err)
	tc, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: pki.pool})
	refusesRaft(t, "no certificate", tc, err)
}

// checkControllerFailover creates a topic and produces to it with acks=all
// through c's brokers, stops the raft leader, waits for another, and does
// it again; every running node must apply the second topic. It returns the
// stopped node's index.
func checkControllerFailover(t *testing.T, c *testCluster, opts ...kgo.Opt) int {
	t.Helper()
	cl := c.client(append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))...)
	adm := kadm.NewClient(cl)
	produce := func(topic string) {
		t.Helper()
		if _, err := adm.CreateTopic(ctxT(t), 2, 2, nil, topic); err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
		for i := range 20 {
			if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatalf("producing to %s: %v", topic, err)
			}
		}
	}
	produce("before")
	var old int
	waitUntil(t, "a raft leader", 30*time.Second, func() bool { old = c.raftLeader(); return old >= 0 })
	c.stop(old)
	waitUntil(t, "another raft leader", 30*time.Second, func() bool {
		i := c.raftLeader()
		return i >= 0 && i != old && c.nodes[i] != nil
	})
	produce("after")
	for i, n := range c.nodes {
		if n == nil {
			continue
		}
		waitUntil(t, fmt.Sprintf("node %d applying the new leader's topic", i+1), 30*time.Second, func() bool {
			img := n.cluster.image()
			return img != nil && img.Topics["after"] != nil
		})
	}
	return old
}

// raftLeader is the index of the node a running node knows as the raft
// leader, or -1.
func (c *testCluster) raftLeader() int {
	for _, n := range c.nodes {
		if n != nil {
			if id, ok := n.cluster.ctl.LeaderID(); ok {
				return int(id) - 1
			}
		}
	}
	return -1
}

// refusesRaft writes RaftMagic and a byte of a raft RPC (five bytes, a
// whole TLS record header) on conn, unless dialling it failed (err), and
// fails the test unless the listener closes the connection: it must not
// be handed to raft, which would wait for the rest of the RPC.
func refusesRaft(t *testing.T, what string, conn net.Conn, err error) {
	t.Helper()
	if err != nil {
		return // refused in the handshake
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(append(controller.RaftMagic[:], 0)); err != nil {
		return
	}
	if _, err := io.ReadFull(conn, make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: the CONTROLLER listener kept the connection (read: %v), want it closed", what, err)
	}
}

// Combined nodes whose CONTROLLER listener is SASL_PLAINTEXT, or SASL_SSL,
// with PLAIN (the setup of Kafka's listener documentation): raft's streams
// and the controller requests log in with sasl.mechanism.controller.protocol
// and go on after the raft leader stops. Raft's magic without a login gets
// the connection closed, a wrong password SASL_AUTHENTICATION_FAILED; after
// a good login the stream is raft's.
func TestClusterControllerSASL(t *testing.T) {
	pki := newTestPKI(t)
	ks, _ := pki.keyStore("node", pkix.Name{CommonName: "node"})
	for _, protocol := range []string{"SASL_PLAINTEXT", "SASL_SSL"} {
		t.Run(protocol, func(t *testing.T) {
			props := map[string]string{
				"listener.security.protocol.map":                  "PLAINTEXT:PLAINTEXT,CONTROLLER:" + protocol,
				"sasl.enabled.mechanisms":                         "PLAIN",
				"sasl.mechanism.controller.protocol":              "PLAIN",
				"listener.name.controller.plain.sasl.jaas.config": plainJAAS,
			}
			if protocol == "SASL_SSL" {
				maps.Copy(props, map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": ks,
					"ssl.truststore.type": "PEM", "ssl.truststore.location": pki.caFile})
			}
			c := startCluster(t, 3, props)
			old := checkControllerFailover(t, c)

			addr := strings.TrimPrefix(strings.Split(c.props[(old+1)%3]["listeners"], ",")[1], "CONTROLLER://")
			dial := func(login *plain.Auth) (net.Conn, error) {
				var sec controller.Security
				if protocol == "SASL_SSL" {
					sec.TLS = &tls.Config{RootCAs: pki.pool}
				}
				if login != nil {
					sec.SASL = login.AsMechanism()
				}
				return sec.Dial(ctxT(t), addr, "test", 5*time.Second)
			}
			conn, err := dial(nil)
			refusesRaft(t, "no login", conn, err)
			if _, err := dial(&plain.Auth{User: "admin", Pass: "wrong"}); err == nil || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
				t.Fatalf("a login with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
			}
			conn, err = dial(&plain.Auth{User: "admin", Pass: "admin-secret"})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(2 * time.Second))
			conn.Write(controller.RaftMagic[:])
			if _, err := io.ReadFull(conn, make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("raft's magic after a login: read %v, want the connection taken by raft, waiting for an RPC", err)
			}
		})
	}
}

// saslQuorumProps are a cluster's whose client and CONTROLLER listeners
// are SASL_PLAINTEXT with PLAIN: replicas and the nodes log in as admin.
func saslQuorumProps() map[string]string {
	return map[string]string{
		"listener.security.protocol.map":                  "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":                         "PLAIN",
		"sasl.mechanism.inter.broker.protocol":            "PLAIN",
		"sasl.mechanism.controller.protocol":              "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config":  plainJAAS,
		"listener.name.controller.plain.sasl.jaas.config": plainJAAS,
	}
}

// With an authorizer, a cluster's CONTROLLER listener checks what Kafka's
// ControllerApis checks: a user who is not a super user and has no ACLs
// may not describe the quorum or the cluster, create ACLs or topics, send
// a broker's heartbeat or speak raft; granted DESCRIBE on the cluster and
// CREATE on a topic, he may describe the quorum and create that topic.
// The nodes (admin, a super user) register, replicate and forward their
// clients' requests as before.
func TestClusterControllerListenerACLs(t *testing.T) {
	props := saslQuorumProps()
	props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	props["super.users"] = "User:admin"
	c := startCluster(t, 3, props)
	admin := kadm.NewClient(c.client(kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())))
	if _, err := admin.CreateTopic(ctxT(t), 3, 3, nil, "through-a-broker"); err != nil {
		t.Fatal(err)
	}

	// The active controller's: the others answer NOT_CONTROLLER.
	var leader int
	waitUntil(t, "a raft leader", 30*time.Second, func() bool { leader = c.raftLeader(); return leader >= 0 })
	addr := strings.TrimPrefix(strings.Split(c.props[leader]["listeners"], ",")[1], "CONTROLLER://")
	bob := func() *rawConn {
		nc, err := controller.Security{SASL: plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism()}.Dial(ctxT(t), addr, "test", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return &rawConn{t: t, nc: nc}
	}
	createBobs := kmsg.NewPtrCreateTopicsRequest()
	createBobs.SetVersion(7)
	createBobs.TimeoutMillis = 10000
	createBobs.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "bobs", NumPartitions: 1, ReplicationFactor: 3}}

	conn := bob()
	refusesDescribes(t, conn, "bob")
	grant := kmsg.NewPtrCreateACLsRequest()
	grant.SetVersion(3)
	grant.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeCluster, ResourceName: "kafka-cluster",
		ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: "User:bob", Host: "*",
		Operation: kmsg.ACLOperationAll, PermissionType: kmsg.ACLPermissionTypeAllow}}
	if r := conn.request(grant).(*kmsg.CreateACLsResponse); len(r.Results) != 1 || r.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("bob granting himself the cluster: %+v, want CLUSTER_AUTHORIZATION_FAILED", r.Results)
	}
	if r := conn.request(createBobs).(*kmsg.CreateTopicsResponse); len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("bob's CreateTopics: %+v, want TOPIC_AUTHORIZATION_FAILED", r.Topics)
	}
	heartbeat := kmsg.NewPtrBrokerHeartbeatRequest()
	heartbeat.SetVersion(1)
	heartbeat.BrokerID, heartbeat.BrokerEpoch, heartbeat.WantShutdown = 1, 1, true
	if r := conn.request(heartbeat).(*kmsg.BrokerHeartbeatResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("bob's BrokerHeartbeat for node 1: %+v, want CLUSTER_AUTHORIZATION_FAILED", r)
	}
	raft := bob()
	refusesRaft(t, "raft's magic after bob's login", raft.nc, nil)
	c.log.mu.Lock()
	audited := strings.Contains(c.log.buf.String(), "Principal = User:bob is Denied operation = CLUSTER_ACTION from host = 127.0.0.1 on resource = Cluster:LITERAL:kafka-cluster for request = RaftStream")
	c.log.mu.Unlock()
	if !audited {
		t.Error("kafka.authorizer.logger did not write bob's refused raft stream")
	}
	if img := c.nodes[leader].cluster.image(); img.Topics["bobs"] != nil || len(img.ACLs) != 0 {
		t.Fatalf("bob changed the metadata: topics %v, ACLs %v", slices.Collect(maps.Keys(img.Topics)), img.ACLs)
	}

	createACLs(t, admin, kadm.NewACLs().Allow("User:bob").Clusters().Operations(kadm.OpDescribe))
	createACLs(t, admin, kadm.NewACLs().Allow("User:bob").Topics("bobs").Operations(kadm.OpCreate))
	c.waitFor("the active controller knowing bob's ACLs", func() bool { return len(c.nodes[leader].acls()) == 2 })
	if r := conn.request(quorumRequest(controller.MetadataTopic)).(*kmsg.DescribeQuorumResponse); r.ErrorCode != 0 || len(r.Topics) != 1 {
		t.Errorf("bob's DescribeQuorum with DESCRIBE on the cluster: %+v", r)
	}
	if r := conn.request(createBobs).(*kmsg.CreateTopicsResponse); len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 {
		t.Errorf("bob's CreateTopics with CREATE on it: %+v", r.Topics)
	}
	if r := conn.request(heartbeat).(*kmsg.BrokerHeartbeatResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("bob's BrokerHeartbeat with DESCRIBE on the cluster: %+v, want CLUSTER_AUTHORIZATION_FAILED", r)
	}
	c.waitFor("every node applying bob's topic", func() bool {
		for _, n := range c.nodes {
			if img := n.cluster.image(); img == nil || img.Topics["bobs"] == nil {
				return false
			}
		}
		return true
	})
	producer := c.client(kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()), kgo.RequiredAcks(kgo.AllISRAcks()))
	for _, topic := range []string{"through-a-broker", "bobs"} {
		if err := producer.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("acks=all to %s: %v", topic, err)
		}
	}

	// Granted CLUSTER_ACTION, bob's raft stream is taken; it is closed
	// when that ACL is deleted, as Kafka refuses his next raft request.
	clusterAction := kadm.NewACLs().Allow("User:bob").AllowHosts("*").Clusters().Operations(kadm.OpClusterAction)
	createACLs(t, admin, clusterAction)
	c.waitFor("the active controller knowing bob's CLUSTER_ACTION", func() bool { return len(c.nodes[leader].acls()) == 3 })
	stream := bob().nc
	if _, err := stream.Write(controller.RaftMagic[:]); err != nil {
		t.Fatal(err)
	}
	stream.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := stream.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("bob's raft stream with CLUSTER_ACTION: read %v, want it kept open and silent", err)
	}
	if _, err := admin.DeleteACLs(ctxT(t), clusterAction); err != nil {
		t.Fatal(err)
	}
	stream.SetReadDeadline(time.Now().Add(15 * time.Second))
	if _, err := stream.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("bob's raft stream after his CLUSTER_ACTION was deleted: read %v, want it closed", err)
	}
	c.log.mu.Lock()
	logged := strings.Contains(c.log.buf.String(), "closing a raft stream whose principal lost CLUSTER_ACTION")
	c.log.mu.Unlock()
	if !logged {
		t.Error("the closed raft stream was not logged")
	}
}

// Controller-only voters and broker-only observers whose CONTROLLER and
// inter-broker listeners are SASL_PLAINTEXT with PLAIN: the active
// controller logs in to the observers' inter-broker listener before they
// serve and streams them the metadata log there; the brokers register,
// replicate and go on after the raft leader stops.
func TestClusterControllerSASLBrokerOnly(t *testing.T) {
	c := startClusterRoles(t, 3, 2, saslQuorumProps())
	checkControllerFailover(t, c, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
}

// A cluster's CONTROLLER listener changes the node's log levels for a
// principal with CLUSTER_ACTION on the cluster, and refuses one with only
// ALTER_CONFIGS, as Kafka's ControllerApis.handleIncrementalAlterConfigs
// authorizes BROKER_LOGGER resources.
func TestClusterControllerLoggersNeedClusterAction(t *testing.T) {
	props := saslQuorumProps()
	props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	props["super.users"] = "User:admin"
	c := startCluster(t, 1, props)
	admin := kadm.NewClient(c.client(kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())))
	addr := strings.TrimPrefix(strings.Split(c.props[0]["listeners"], ",")[1], "CONTROLLER://")
	bob := func() *rawConn {
		nc, err := controller.Security{SASL: plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism()}.Dial(ctxT(t), addr, "test", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return &rawConn{t: t, nc: nc}
	}
	levels := kmsg.NewPtrIncrementalAlterConfigsRequest()
	levels.SetVersion(1)
	levels.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBrokerLogger, ResourceName: "1",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "kafka", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("DEBUG")}}}}
	grant := func(op kadm.ACLOperation) {
		t.Helper()
		createACLs(t, admin, kadm.NewACLs().Allow("User:bob").Clusters().Operations(op))
		time.Sleep(500 * time.Millisecond) // the ACL reaches the controller's image
	}
	grant(kadm.OpAlterConfigs)
	if r := bob().request(levels).(*kmsg.IncrementalAlterConfigsResponse); len(r.Resources) != 1 || r.Resources[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("bob with ALTER_CONFIGS on the cluster: %+v, want CLUSTER_AUTHORIZATION_FAILED", r.Resources)
	}
	grant(kadm.OpClusterAction)
	if r := bob().request(levels).(*kmsg.IncrementalAlterConfigsResponse); len(r.Resources) != 1 || r.Resources[0].ErrorCode != 0 {
		t.Errorf("bob with CLUSTER_ACTION on the cluster: %+v, want the level set", r.Resources)
	}
}
