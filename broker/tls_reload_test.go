package broker

import (
	"bytes"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// peerCertificate is the certificate the SSL listener at addr shows a
// new connection.
func peerCertificate(t *testing.T, addr string, roots *tls.Config) []byte {
	t.Helper()
	c, err := tls.Dial("tcp", addr, roots)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Raw
}

// TestDynamicKeyStore: KIP-226's key store update, as Kafka 4.4 answers it
// (checked by hand): a per-broker listener-prefixed key store of the same
// subject and names (or more names) is taken and shown to new connections
// while an open one goes on; fewer names, another subject, a store that
// does not load, the
// cluster-wide level and the key without the listener prefix are refused
// with INVALID_REQUEST and Kafka's messages; ssl.allow.dn.changes lets
// another subject in; the change survives a restart.
func TestDynamicKeyStore(t *testing.T) {
	pki := newTestPKI(t)
	dir := t.TempDir()
	props := pki.tlsProps(dir, nil)
	b := startBrokerWith(t, props)
	roots := &tls.Config{RootCAs: pki.pool}
	ssl := listenerAddr(t, b, "SSL")
	first := peerCertificate(t, ssl, roots)
	open := tlsClient(t, ssl, roots)
	if err := open.Ping(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	admin := saslFreeClient(t, listenerAddr(t, b, "PLAINTEXT"))
	alter := func(broker bool, kv ...string) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType = kmsg.ConfigResourceTypeBroker
		if broker {
			res.ResourceName = "1"
		}
		for i := 0; i < len(kv); i += 2 {
			res.Configs = append(res.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: kv[i], Value: kmsg.StringPtr(kv[i+1])})
		}
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctxT(t), admin)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.Resources[0]
		if r.ErrorMessage == nil {
			return r.ErrorCode, ""
		}
		return r.ErrorCode, *r.ErrorMessage
	}
	const key = "listener.name.ssl.ssl.keystore.location"

	renewed, _ := pki.keyStore("renewed", pkix.Name{CommonName: "broker"})
	if code, msg := alter(true, key, renewed); code != 0 {
		t.Fatalf("a renewed key store: %d %s", code, msg)
	}
	second := peerCertificate(t, ssl, roots)
	if string(second) == string(first) {
		t.Fatal("new connections still get the old certificate")
	}
	if err := open.Ping(ctxT(t)); err != nil {
		t.Fatalf("a connection made before the change: %v", err)
	}

	// More subject alternative names will do (Kafka asks only that the old
	// ones stay); fewer or others will not.
	wider, _ := pki.keyStoreNaming("wider", pkix.Name{CommonName: "broker"}, loopback, []string{"broker.example"})
	if code, msg := alter(true, key, wider); code != 0 {
		t.Fatalf("a key store with one name more: %d %s", code, msg)
	}
	second = peerCertificate(t, ssl, roots)
	narrower, _ := pki.keyStoreNaming("narrower", pkix.Name{CommonName: "broker"}, nil, []string{"broker.example"})
	if code, msg := alter(true, key, narrower); code != kerr.InvalidRequest.Code || !strings.Contains(msg, "Keystore SubjectAltNames do not match:  existing={SAN=[DNS:broker.example IP:127.0.0.1]}, new={SAN=[DNS:broker.example]}") {
		t.Fatalf("a key store without the address: %d %s", code, msg)
	}

	other, _ := pki.keyStoreNaming("other", pkix.Name{CommonName: "someone-else"}, loopback, []string{"broker.example"})
	for _, c := range []struct {
		broker bool
		kv     []string
		msg    string
	}{
		{true, []string{key, other}, "Keystore DistinguishedName does not match:  existing={DN=CN=broker}, new={DN=CN=someone-else}"},
		{true, []string{key, dir + "/missing.pem"}, "Validation of dynamic config update of SSLFactory failed"},
		{false, []string{key, wider}, "Cannot update these configs at default cluster level, broker id must be specified: [" + key + "]"},
		{true, []string{"ssl.keystore.location", wider}, "These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.location]"},
	} {
		code, msg := alter(c.broker, c.kv...)
		if code != kerr.InvalidRequest.Code || !strings.Contains(msg, c.msg) {
			t.Errorf("%v: %d %q, want INVALID_REQUEST with %q", c.kv, code, msg, c.msg)
		}
	}
	if got := peerCertificate(t, ssl, roots); string(got) != string(second) {
		t.Fatal("a refused key store was put in use")
	}

	// The change is stored: a restart serves the renewed certificate.
	b.Close()
	b = startBrokerWith(t, props)
	if got := peerCertificate(t, listenerAddr(t, b, "SSL"), roots); string(got) != string(second) {
		t.Fatal("the altered key store was lost at restart")
	}
	admin = saslFreeClient(t, listenerAddr(t, b, "PLAINTEXT"))
	describe := kmsg.NewPtrDescribeConfigsRequest()
	describe.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1", ConfigNames: []string{key}}}
	resp, err := describe.RequestWith(ctxT(t), admin)
	if err != nil {
		t.Fatal(err)
	}
	if cs := resp.Resources[0].Configs; len(cs) != 1 || cs[0].Value == nil || *cs[0].Value != wider ||
		cs[0].Source != kmsg.ConfigSourceDynamicBrokerConfig || !cs[0].ReadOnly { // read-only, as Kafka describes every listener-prefixed key
		t.Errorf("described %s: %+v", key, cs)
	}

	// With ssl.allow.dn.changes another subject is taken.
	b.Close()
	props["ssl.allow.dn.changes"] = "true"
	b = startBrokerWith(t, props)
	admin = saslFreeClient(t, listenerAddr(t, b, "PLAINTEXT"))
	if code, msg := alter(true, key, other); code != 0 {
		t.Fatalf("another subject with ssl.allow.dn.changes: %d %s", code, msg)
	}
	os.Remove(other) // loaded already: new connections do not read it
	if got := peerCertificate(t, listenerAddr(t, b, "SSL"), roots); string(got) == string(second) {
		t.Fatal("the certificate of another subject was not put in use")
	}
}

// On the inter-broker listener a new key store must be one the listener's
// trust store trusts, since the other brokers check it with theirs; a
// renewed one is taken, and replication goes on over new connections.
func TestDynamicKeyStoreInterBroker(t *testing.T) {
	pki := newTestPKI(t)
	c := startCluster(t, 3, pki.clusterProps("PLAINTEXT:SSL,CONTROLLER:PLAINTEXT"))
	cl := c.client(kgo.DialTLSConfig(pki.clientTLS()), kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	const key = "listener.name.plaintext.ssl.keystore.location"
	stranger, _ := newTestPKI(t).keyStore("stranger", pkix.Name{CommonName: "node"})
	resps, err := adm.AlterBrokerConfigs(ctxT(t), []kadm.AlterConfig{{Name: key, Value: kmsg.StringPtr(stranger)}}, 1)
	if err != nil || len(resps) != 1 || !errors.Is(resps[0].Err, kerr.InvalidRequest) || !strings.Contains(resps[0].ErrMessage, "not trusted by its trust store") {
		t.Fatalf("a key store from another CA on the inter-broker listener: %+v %v", resps, err)
	}
	renewed, _ := pki.keyStore("renewed-node", pkix.Name{CommonName: "node"})
	for _, id := range []int32{1, 2, 3} {
		resps, err := adm.AlterBrokerConfigs(ctxT(t), []kadm.AlterConfig{{Name: key, Value: kmsg.StringPtr(renewed)}}, id)
		if err != nil || resps[0].Err != nil {
			t.Fatalf("renewing node %d's key store: %+v %v", id, resps, err)
		}
	}
	if _, err := adm.CreateTopic(ctxT(t), 3, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("3")}, "after-renewal"); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "after-renewal", Partition: int32(i % 3), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("acks=all with every replica fetching after the renewal: %v", err)
		}
	}
}

// The CONTROLLER listener's key store renewed at runtime is the one this
// node's raft streams and controller requests present from the next
// connection on, as the listener serves it from the next handshake; the
// quorum goes on electing leaders and committing.
func TestDynamicKeyStoreController(t *testing.T) {
	pki := newTestPKI(t)
	c := startCluster(t, 3, pki.clusterProps("PLAINTEXT:SSL,CONTROLLER:SSL"))
	_, serverCert := pki.keyStore("listener", pkix.Name{CommonName: "listener"})
	presented := func(b *Broker) []byte {
		t.Helper()
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientAuth: tls.RequireAnyClientCert})
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		peer := make(chan []byte, 1)
		go func() {
			conn, err := ln.Accept()
			if err != nil {
				peer <- nil
				return
			}
			defer conn.Close()
			tc := conn.(*tls.Conn)
			if tc.Handshake() != nil || len(tc.ConnectionState().PeerCertificates) == 0 {
				peer <- nil
				return
			}
			peer <- tc.ConnectionState().PeerCertificates[0].Raw
		}()
		conn, err := b.liveControllerSecurity().Dial(ctxT(t), ln.Addr().String(), "test", 10*time.Second)
		if err != nil {
			t.Fatalf("dialling as node %d's controller connections do: %v", b.cfg.NodeID, err)
		}
		defer conn.Close()
		return <-peer
	}
	before := presented(c.nodes[0])
	renewed, pair := pki.keyStore("renewed-node", pkix.Name{CommonName: "node"})
	adm := kadm.NewClient(c.client(kgo.DialTLSConfig(pki.clientTLS())))
	resps, err := adm.AlterBrokerConfigs(ctxT(t), []kadm.AlterConfig{{Name: "listener.name.controller.ssl.keystore.location", Value: kmsg.StringPtr(renewed)}}, 1)
	if err != nil || len(resps) != 1 || resps[0].Err != nil {
		t.Fatalf("renewing node 1's CONTROLLER key store: %+v %v", resps, err)
	}
	after := presented(c.nodes[0])
	if bytes.Equal(after, before) || !bytes.Equal(after, pair.Certificate[0]) {
		t.Fatal("node 1's controller connections do not present the renewed certificate")
	}
	checkControllerFailover(t, c, kgo.DialTLSConfig(pki.clientTLS()))
}

// A renewed key store's subject is compared as Kafka's SslFactory compares
// X500Principals: the same name in another string type (UTF8String where
// the old had PrintableString, as another CA tool writes it) or another
// case is the same subject, and the change is taken.
func TestDynamicKeyStoreSubjectEncoding(t *testing.T) {
	pki := newTestPKI(t)
	b := startBrokerWith(t, pki.tlsProps(t.TempDir(), nil)) // CN=broker, a PrintableString
	admin := kadm.NewClient(saslFreeClient(t, listenerAddr(t, b, "PLAINTEXT")))
	roots := &tls.Config{RootCAs: pki.pool}
	for _, cn := range []string{"broker", "Broker"} {
		rawSubject, err := asn1.Marshal(pkix.RDNSequence{{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, // CN
			Value: asn1.RawValue{Tag: asn1.TagUTF8String, Bytes: []byte(cn)}}}})
		if err != nil {
			t.Fatal(err)
		}
		tmpl := certTemplate(pkix.Name{}, loopback, nil)
		tmpl.RawSubject = rawSubject
		cert, key := pki.signTemplate(tmpl, false)
		path, _ := pki.writeKeyStore("utf8-"+cn, cert, key)
		resps, err := admin.AlterBrokerConfigs(ctxT(t), []kadm.AlterConfig{{Name: "listener.name.ssl.ssl.keystore.location", Value: kmsg.StringPtr(path)}}, 1)
		if err != nil || len(resps) != 1 || resps[0].Err != nil {
			t.Fatalf("CN=%s as a UTF8String for CN=broker: %+v %v", cn, resps, err)
		}
		if got := peerCertificate(t, listenerAddr(t, b, "SSL"), roots); !bytes.Equal(got, cert.Raw) {
			t.Fatalf("CN=%s as a UTF8String: the new certificate is not shown", cn)
		}
	}
}

// On the inter-broker listener a change of stores must keep this broker
// and the others (which still have its old stores) able to connect both
// ways, as Kafka's SslFactory.SslEngineValidator checks it: the old trust
// store must trust the new certificate, and the new trust store the old
// one. A CA rotated in one step (key store and trust store of a new CA
// together) is refused; in steps (the new CA trusted first, then the new
// key store, then the old CA dropped) it is taken.
func TestDynamicStoresInterBrokerTrust(t *testing.T) {
	pki, next := newTestPKI(t), newTestPKI(t)
	b := startBrokerWith(t, pki.tlsProps(t.TempDir(), map[string]string{"inter.broker.listener.name": "SSL"}))
	admin := kadm.NewClient(saslFreeClient(t, listenerAddr(t, b, "PLAINTEXT")))
	alter := func(kv ...string) error {
		t.Helper()
		var cs []kadm.AlterConfig
		for i := 0; i < len(kv); i += 2 {
			cs = append(cs, kadm.AlterConfig{Name: "listener.name.ssl.ssl." + kv[i], Value: kmsg.StringPtr(kv[i+1])})
		}
		resps, err := admin.AlterBrokerConfigs(ctxT(t), cs, 1)
		if err != nil {
			t.Fatal(err)
		}
		return resps[0].Err
	}
	nextKeyStore, _ := next.keyStore("next-broker", pkix.Name{CommonName: "broker"})
	both := pki.write("both-cas.pem", append(mustRead(t, pki.caFile), mustRead(t, next.caFile)...))

	if err := alter("keystore.location", nextKeyStore, "truststore.location", next.caFile); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("a new CA's key store and trust store in one step: %v, want INVALID_REQUEST", err)
	}
	if err := alter("truststore.location", both); err != nil {
		t.Fatalf("the new CA trusted too: %v", err)
	}
	if err := alter("keystore.location", nextKeyStore); err != nil {
		t.Fatalf("the new CA's key store, both trusted: %v", err)
	}
	if err := alter("truststore.location", next.caFile); err != nil {
		t.Fatalf("the old CA dropped: %v", err)
	}
	if got := peerCertificate(t, listenerAddr(t, b, "SSL"), &tls.Config{RootCAs: next.pool}); len(got) == 0 {
		t.Fatal("no certificate of the new CA shown")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A listener started without a trust store cannot be given one at
// runtime, as in Kafka.
func TestDynamicTrustStoreAdded(t *testing.T) {
	pki := newTestPKI(t)
	props := pki.tlsProps(t.TempDir(), nil)
	delete(props, "ssl.truststore.location")
	b := startBrokerWith(t, props)
	admin := kadm.NewClient(saslFreeClient(t, listenerAddr(t, b, "PLAINTEXT")))
	resps, err := admin.AlterBrokerConfigs(ctxT(t), []kadm.AlterConfig{{Name: "listener.name.ssl.ssl.truststore.location", Value: kmsg.StringPtr(pki.caFile)}}, 1)
	if err != nil || !errors.Is(resps[0].Err, kerr.InvalidRequest) ||
		!strings.Contains(resps[0].ErrMessage, "Cannot add SSL truststore to an existing listener for which no truststore was configured.") {
		t.Fatalf("a trust store added: %+v %v, want INVALID_REQUEST", resps, err)
	}
}
