package broker

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The CONTROLLER listener may be PLAINTEXT or SSL, never SASL; a
// broker-only node, whose inter-broker listener the active controller
// dials for the metadata log as it dials voters, needs that listener on
// the controller listener's protocol, and dials SSL controllers with a
// trust store alone when they ask for no client certificate.
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
	checkConfigRefusals(t, controllerNode, map[string]configRefusal{
		"SASL_SSL controller": {map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL"},
			"listener CONTROLLER: the controller listener must be PLAINTEXT or SSL in Gregor"},
		"SSL controller without a key store": {map[string]string{"ssl.keystore.location": ""}, "listener CONTROLLER uses TLS but has no key store"},
	})
	checkConfigRefusals(t, brokerNode, map[string]configRefusal{
		"SSL inter-broker, PLAINTEXT controller": {map[string]string{"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT"},
			"listener PLAINTEXT: a broker-only node's inter-broker listener carries the metadata log, which the active controller sends as it does to controllers, so it must be PLAINTEXT, as the controller listener CONTROLLER is"},
		"PLAINTEXT inter-broker, SSL controller": {map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"},
			"so it must be SSL, as the controller listener CONTROLLER is"},
		"SASL_PLAINTEXT controller": {map[string]string{"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:SASL_PLAINTEXT"},
			"listener CONTROLLER: the controller listener must be PLAINTEXT or SSL in Gregor"},
	})

	cfg, _, err := ParseConfig(controllerNode())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ControllerTLS == nil || len(cfg.ControllerTLS.Certificates) != 1 || cfg.Security["CONTROLLER"].TLS == nil {
		t.Fatalf("an SSL controller listener: client TLS %v, server TLS %v; want both, the client with the key store's certificate",
			cfg.ControllerTLS, cfg.Security["CONTROLLER"].TLS)
	}
	props := brokerNode()
	delete(props, "ssl.keystore.location")
	props["listener.security.protocol.map"] = "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"
	props["listener.name.plaintext.ssl.keystore.location"] = ks // the inter-broker listener's own
	if _, _, err := ParseConfig(props); err == nil || !strings.Contains(err.Error(), "so it must be SSL") {
		t.Fatalf("PLAINTEXT inter-broker listener under SSL controllers: %v", err)
	}
	props["listener.security.protocol.map"] = "PLAINTEXT:SSL,CONTROLLER:SSL"
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
	ks, _ := pki.keyStore("node", pkix.Name{CommonName: "node"})
	c := startClusterRoles(t, 3, 2, map[string]string{
		"listener.security.protocol.map": "PLAINTEXT:SSL,CONTROLLER:SSL",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          ks,
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.location":        pki.caFile,
		"ssl.client.auth":                "required",
	})
	_, client := pki.keyStore("client", pkix.Name{CommonName: "client"})
	clientTLS := &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{client}}
	cl := c.client(kgo.DialTLSConfig(clientTLS), kgo.RequiredAcks(kgo.AllISRAcks()))
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

	leaderIndex := func() int {
		for i := range 3 {
			if n := c.nodes[i]; n != nil {
				if id, ok := n.cluster.ctl.LeaderID(); ok {
					return int(id) - 1
				}
			}
		}
		return -1
	}
	var old int
	waitUntil(t, "a raft leader", 30*time.Second, func() bool { old = leaderIndex(); return old >= 0 })
	c.stop(old)
	waitUntil(t, "another raft leader", 30*time.Second, func() bool {
		i := leaderIndex()
		return i >= 0 && i != old && c.nodes[i] != nil
	})
	produce("after")
	for _, i := range []int{3, 4} {
		waitUntil(t, fmt.Sprintf("observer %d applying the new leader's topic", i+1), 30*time.Second, func() bool {
			img := c.nodes[i].cluster.image()
			return img != nil && img.Topics["after"] != nil
		})
	}

	addr := strings.TrimPrefix(c.props[(old+1)%3]["listeners"], "CONTROLLER://")
	refused := func(what string, conn net.Conn, err error) {
		t.Helper()
		if err != nil {
			return // refused in the handshake
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		// The magic and the first byte of a raft RPC: five bytes, a whole
		// TLS record header.
		if _, err := conn.Write(append(controller.RaftMagic[:], 0)); err != nil {
			return
		}
		if _, err := io.ReadFull(conn, make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: the CONTROLLER listener kept the connection (read: %v), want it closed", what, err)
		}
	}
	conn, err := net.Dial("tcp", addr)
	refused("plain TCP", conn, err)
	stranger := newTestPKI(t)
	_, foreign := stranger.keyStore("intruder", pkix.Name{CommonName: "node"})
	tc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{foreign}})
	refused("a certificate another CA signed", tc, err)
	tc, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: pki.pool})
	refused("no certificate", tc, err)
}
