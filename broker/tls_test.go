package broker

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// testPKI is a CA and certificates it signed, as PEM files.
type testPKI struct {
	t      *testing.T
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caFile string
	pool   *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{t: t, dir: t.TempDir()}
	p.ca, p.caKey = p.sign(pkix.Name{CommonName: "test CA"}, true)
	p.caFile = p.write("ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.ca.Raw}))
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.ca)
	return p
}

// loopback is the subject alternative name of the test certificates.
var loopback = []net.IP{net.IPv4(127, 0, 0, 1)}

func (p *testPKI) sign(subject pkix.Name, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	return p.signNaming(subject, isCA, loopback, nil)
}

// signNaming is sign with the certificate's subject alternative names.
func (p *testPKI) signNaming(subject pkix.Name, isCA bool, ips []net.IP, dns []string) (*x509.Certificate, *ecdsa.PrivateKey) {
	p.t.Helper()
	return p.signTemplate(certTemplate(subject, ips, dns), isCA)
}

// certTemplate is the template of a test certificate.
func certTemplate(subject pkix.Name, ips []net.IP, dns []string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	return &x509.Certificate{SerialNumber: serial, Subject: subject, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: ips, DNSNames: dns, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
}

// signTemplate signs tmpl, for a new key, as the CA (or itself).
func (p *testPKI) signTemplate(tmpl *x509.Certificate, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	parent, signer := tmpl, key
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature
	} else {
		parent, signer = p.ca, p.caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		p.t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

func (p *testPKI) write(name string, data []byte) string {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// keyStore writes a PEM key store (key and certificate) for subject.
func (p *testPKI) keyStore(name string, subject pkix.Name) (string, tls.Certificate) {
	return p.keyStoreNaming(name, subject, loopback, nil)
}

// keyStoreNaming is keyStore with the certificate's subject alternative
// names.
func (p *testPKI) keyStoreNaming(name string, subject pkix.Name, ips []net.IP, dns []string) (string, tls.Certificate) {
	cert, key := p.signNaming(subject, false, ips, dns)
	return p.writeKeyStore(name, cert, key)
}

// writeKeyStore writes a PEM key store of cert and key.
func (p *testPKI) writeKeyStore(name string, cert *x509.Certificate, key *ecdsa.PrivateKey) (string, tls.Certificate) {
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		p.t.Fatal(err)
	}
	return p.write(name+".pem", append(keyPEM, certPEM...)), pair
}

// tlsProps: an SSL listener first, then SASL_SSL and PLAINTEXT, sharing a
// PEM key store signed by the test CA.
func (p *testPKI) tlsProps(dir string, extra map[string]string) map[string]string {
	ks, _ := p.keyStore("broker", pkix.Name{CommonName: "broker"})
	props := map[string]string{
		"listeners":               "SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
		"log.dirs":                dir,
		"ssl.keystore.type":       "PEM",
		"ssl.keystore.location":   ks,
		"ssl.truststore.type":     "PEM",
		"ssl.truststore.location": p.caFile,
		"sasl.enabled.mechanisms": "SCRAM-SHA-256",
	}
	for k, v := range extra {
		props[k] = v
	}
	return props
}

// clusterProps are the settings of cluster nodes that share a PEM key
// store the CA signed, under protocolMap (listener.security.protocol.map),
// requiring client certificates on their SSL listeners.
func (p *testPKI) clusterProps(protocolMap string) map[string]string {
	ks, _ := p.keyStore("node", pkix.Name{CommonName: "node"})
	return map[string]string{
		"listener.security.protocol.map": protocolMap,
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          ks,
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.location":        p.caFile,
		"ssl.client.auth":                "required",
	}
}

// clientTLS is a client's TLS config: the CA trusted, and a certificate
// it signed shown.
func (p *testPKI) clientTLS() *tls.Config {
	_, client := p.keyStore("client", pkix.Name{CommonName: "client"})
	return &tls.Config{RootCAs: p.pool, Certificates: []tls.Certificate{client}}
}

func tlsClient(t *testing.T, addr string, cfg *tls.Config, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTLSConfig(cfg), kgo.RetryTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestTLSListeners(t *testing.T) {
	pki := newTestPKI(t)
	b := startBrokerWith(t, pki.tlsProps(t.TempDir(), nil))
	trusting := &tls.Config{RootCAs: pki.pool}

	if err := roundTrip(t, tlsClient(t, listenerAddr(t, b, "SSL"), trusting), "over-ssl", 20); err != nil {
		t.Fatalf("SSL: %v", err)
	}

	// Fetches large enough for the file-range path (sendfile on plain TCP)
	// are copied through TLS intact.
	big := tlsClient(t, listenerAddr(t, b, "SSL"), trusting, kgo.ProducerBatchMaxBytes(1<<20))
	if _, err := kadm.NewClient(big).CreateTopic(ctxT(t), 1, 1, nil, "big-over-ssl"); err != nil {
		t.Fatal(err)
	}
	var sent []*kgo.Record
	for range 64 {
		value := make([]byte, 32<<10)
		rand.Read(value)
		sent = append(sent, &kgo.Record{Topic: "big-over-ssl", Value: value})
	}
	if err := big.ProduceSync(ctxT(t), sent...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	big.AddConsumePartitions(map[string]map[int32]kgo.Offset{"big-over-ssl": {0: kgo.NewOffset().AtStart()}})
	for got := 0; got < len(sent); {
		fs := big.PollFetches(ctxT(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		for _, r := range fs.Records() {
			if !bytes.Equal(r.Value, sent[got].Value) {
				t.Fatalf("record %d came back different over TLS", got)
			}
			got++
		}
	}

	// SASL_SSL: SCRAM inside TLS; the user is created on the PLAINTEXT listener.
	adm := kadm.NewClient(saslFreeClient(t, listenerAddr(t, b, "PLAINTEXT")))
	alterScram(t, adm, "dora", "dora-secret", kadm.ScramSha256)
	dora := tlsClient(t, listenerAddr(t, b, "SASL_SSL"), trusting, kgo.SASL(scram.Auth{User: "dora", Pass: "dora-secret"}.AsSha256Mechanism()))
	if err := roundTrip(t, dora, "over-sasl-ssl", 20); err != nil {
		t.Fatalf("SASL_SSL: %v", err)
	}
	wrong := tlsClient(t, listenerAddr(t, b, "SASL_SSL"), trusting, kgo.SASL(scram.Auth{User: "dora", Pass: "nope"}.AsSha256Mechanism()))
	if err := wrong.Ping(ctxT(t)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("SASL_SSL wrong password: %v", err)
	}

	// A client that does not trust the broker's CA, and one that speaks no
	// TLS, get nowhere; the broker serves the next client as before.
	if err := tlsClient(t, listenerAddr(t, b, "SSL"), &tls.Config{}).Ping(ctxT(t)); err == nil {
		t.Fatal("a client without the CA completed a TLS handshake")
	}
	rc := dialAddr(t, listenerAddr(t, b, "SSL"))
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	if _, err := rc.tryRequest(meta); err == nil {
		t.Fatal("a plaintext request to the SSL listener was answered")
	}
	if err := tlsClient(t, listenerAddr(t, b, "SSL"), trusting).Ping(ctxT(t)); err != nil {
		t.Fatalf("after the failed clients: %v", err)
	}

	// Key store passwords and keys are never described.
	resp := describeBrokerConfigs(t, saslFreeClient(t, listenerAddr(t, b, "PLAINTEXT")), b, "ssl.keystore.password", "ssl.keystore.key", "ssl.keystore.location")
	for _, c := range resp {
		sensitive := c.Name != "ssl.keystore.location"
		if c.IsSensitive != sensitive || (sensitive && c.Value != nil) {
			t.Errorf("%s described as %v sensitive=%v", c.Name, c.Value, c.IsSensitive)
		}
	}
}

func saslFreeClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func describeBrokerConfigs(t *testing.T, cl *kgo.Client, b *Broker, names ...string) []kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeBroker
	res.ResourceName = "1"
	res.ConfigNames = names
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Resources) != 1 || len(resp.Resources[0].Configs) != len(names) {
		t.Fatalf("described %+v", resp.Resources)
	}
	return resp.Resources[0].Configs
}

// With ssl.client.auth=required a client must show a certificate from the
// trust store's CA, and its subject is its user: quotas apply by it.
func TestTLSClientCertificates(t *testing.T) {
	pki := newTestPKI(t)
	b := startBrokerWith(t, pki.tlsProps(t.TempDir(), map[string]string{"listener.name.ssl.ssl.client.auth": "required"}))
	addr := listenerAddr(t, b, "SSL")
	if err := tlsClient(t, addr, &tls.Config{RootCAs: pki.pool}).Ping(ctxT(t)); err == nil {
		t.Fatal("a client without a certificate was admitted")
	}
	_, alice := pki.keyStore("alice", pkix.Name{CommonName: "alice"})
	_, bob := pki.keyStore("bob", pkix.Name{CommonName: "bob"})
	adm := kadm.NewClient(saslFreeClient(t, listenerAddr(t, b, "PLAINTEXT")))
	alterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "CN=bob"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}}})
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "by-certificate"); err != nil {
		t.Fatal(err)
	}
	produce := func(pair tls.Certificate) int64 {
		hook := &throttleHook{}
		cl := tlsClient(t, addr, &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pair}}, kgo.WithHooks(hook))
		for range 8 {
			value := make([]byte, 8<<10)
			rand.Read(value)
			if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "by-certificate", Value: value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if hook.n.Load() > 0 {
				break
			}
		}
		return hook.n.Load()
	}
	if n := produce(alice); n != 0 {
		t.Fatalf("CN=alice, without a quota, was throttled %d times", n)
	}
	if n := produce(bob); n == 0 {
		t.Fatal("CN=bob produced 64 KB under a 1 KB/s quota without a throttle")
	}
}

// ssl.principal.mapping.rules (KIP-371) turn a certificate's subject into
// the user ACLs name: the first rule that matches the whole name gives it,
// and a certificate no rule matches is refused.
func TestTLSPrincipalMappingRules(t *testing.T) {
	pki := newTestPKI(t)
	b, log := startBrokerLogged(t, pki.tlsProps(t.TempDir(), map[string]string{"listener.name.ssl.ssl.client.auth": "required",
		"ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=ServiceUsers,.*$/$1/L, RULE:^CN=(.*?),OU=People$/$1/",
		"authorizer.class.name":       "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:ANONYMOUS"}))
	addr := listenerAddr(t, b, "SSL")
	adm := kadm.NewClient(saslFreeClient(t, listenerAddr(t, b, "PLAINTEXT")))
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "mapped"); err != nil {
		t.Fatal(err)
	}
	acl := kadm.NewACLs().Allow("User:alice").Topics("mapped").Operations(kadm.OpWrite, kadm.OpDescribe)
	if res, err := adm.CreateACLs(ctxT(t), acl); err != nil || res[0].Err != nil {
		t.Fatalf("ACLs for User:alice: %v %v", res, err)
	}
	client := func(subject pkix.Name) *kgo.Client {
		_, pair := pki.keyStore(subject.CommonName, subject)
		return tlsClient(t, addr, &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pair}})
	}
	produce := func(subject pkix.Name) error {
		return client(subject).ProduceSync(ctxT(t), &kgo.Record{Topic: "mapped", Value: []byte(subject.String())}).FirstErr()
	}
	// Subjects are written with the most specific part first:
	// CN=Alice,OU=ServiceUsers,O=Acme.
	if err := produce(pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"ServiceUsers"}, Organization: []string{"Acme"}}); err != nil {
		t.Fatalf("CN=Alice,OU=ServiceUsers,O=Acme, mapped to alice: %v", err)
	}
	if err := produce(pkix.Name{CommonName: "bob", OrganizationalUnit: []string{"People"}}); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("CN=bob,OU=People, mapped to bob, without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := client(pkix.Name{CommonName: "carol", OrganizationalUnit: []string{"Contractors"}}).Ping(ctxT(t)); err == nil {
		t.Fatal("CN=carol,OU=Contractors, which no rule maps, was admitted")
	}
	waitUntil(t, "the refusal logged", 10*time.Second, func() bool {
		return strings.Contains(log.String(), `msg="failed authentication"`) &&
			strings.Contains(log.String(), "no SSL principal mapping rule applies to CN=carol,OU=Contractors")
	})
}

// ssl.cipher.suites limits what a TLS listener agrees to: with one TLS 1.2
// suite listed, a client that would take TLS 1.3 gets TLS 1.2 and that
// suite, and a client offering only another is refused; with only the
// TLS 1.3 suites listed, a TLS 1.2 client is refused.
func TestTLSCipherSuites(t *testing.T) {
	pki := newTestPKI(t)
	dial := func(addr string, cfg *tls.Config) (tls.ConnectionState, error) {
		conn, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			return tls.ConnectionState{}, err
		}
		defer conn.Close()
		return conn.ConnectionState(), nil
	}
	const suite = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" // the test CA signs ECDSA keys
	b := startBrokerWith(t, pki.tlsProps(t.TempDir(), map[string]string{"ssl.cipher.suites": suite}))
	addr := listenerAddr(t, b, "SSL")
	st, err := dial(addr, &tls.Config{RootCAs: pki.pool})
	if err != nil || st.Version != tls.VersionTLS12 || tls.CipherSuiteName(st.CipherSuite) != suite {
		t.Fatalf("a default client got %s with %s (%v), want TLS 1.2 with %s", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite), err, suite)
	}
	other := &tls.Config{RootCAs: pki.pool, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}
	if _, err := dial(addr, other); err == nil {
		t.Fatal("a client offering only TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 was admitted")
	}

	b = startBrokerWith(t, pki.tlsProps(t.TempDir(), map[string]string{
		"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256"}))
	addr = listenerAddr(t, b, "SSL")
	if st, err := dial(addr, &tls.Config{RootCAs: pki.pool}); err != nil || st.Version != tls.VersionTLS13 {
		t.Fatalf("a default client with only TLS 1.3 suites listed: %s, %v", tls.VersionName(st.Version), err)
	}
	if _, err := dial(addr, &tls.Config{RootCAs: pki.pool, MaxVersion: tls.VersionTLS12}); err == nil {
		t.Fatal("a TLS 1.2 client was admitted with only TLS 1.3 suites listed")
	}
}

func TestTLSConfigRefusals(t *testing.T) {
	pki := newTestPKI(t)
	checkConfigRefusals(t, func() map[string]string { return pki.tlsProps(t.TempDir(), nil) }, map[string]configRefusal{
		"no key store":    {map[string]string{"ssl.keystore.location": ""}, "has no key store"},
		"missing file":    {map[string]string{"ssl.keystore.location": "/nonexistent/ks.pem"}, "ssl.keystore"},
		"wrong type":      {map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.password": "x"}, "PKCS12 key store"},
		"bad client auth": {map[string]string{"ssl.client.auth": "always"}, `invalid value "always" for config key ssl.client.auth`},
		"bad SASL_SSL client auth": {map[string]string{"listener.name.sasl_ssl.ssl.client.auth": "always"},
			"invalid value for config key ssl.client.auth: always"},
		"old TLS only":        {map[string]string{"ssl.enabled.protocols": "TLSv1.1,TLSv1"}, "no TLS version enabled"},
		"unknown TLS":         {map[string]string{"ssl.enabled.protocols": "TLSv1.2,TLSv1.4"}, "invalid value for config key ssl.enabled.protocols: TLSv1.4"},
		"client auth, no CAs": {map[string]string{"ssl.client.auth": "required", "ssl.truststore.location": ""}, "needs a trust store"},
		"unknown cipher suite": {map[string]string{"ssl.cipher.suites": "TLS_FANCY_WITH_AES"},
			"invalid value for config key ssl.cipher.suites: unsupported cipher suite TLS_FANCY_WITH_AES"},
		"some TLS 1.3 suites": {map[string]string{"ssl.cipher.suites": "TLS_AES_256_GCM_SHA384,TLS_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256"}, "but not all 3"},
		"no suite of an enabled version": {map[string]string{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256",
			"ssl.enabled.protocols": "TLSv1.2"}, "no suite of an enabled TLS version"},
		"inter-broker key store not trusted": {map[string]string{"inter.broker.listener.name": "SSL", "ssl.truststore.location": newTestPKI(t).caFile},
			"listener SSL: A client SSLEngine created with the provided settings can't connect to a server SSLEngine created with those settings"},
		"bad mapping rule": {map[string]string{"ssl.principal.mapping.rules": "RULE:foo"},
			"invalid value for config key ssl.principal.mapping.rules: Invalid rule: `RULE:foo`"},
	})
}

// A cluster whose inter-broker listener is SSL with client certificates
// required: replicas dial their leaders over TLS with the node's key store.
func TestClusterTLS(t *testing.T) {
	pki := newTestPKI(t)
	c := startCluster(t, 3, pki.clusterProps("PLAINTEXT:SSL,CONTROLLER:PLAINTEXT"))
	cl := c.client(kgo.DialTLSConfig(pki.clientTLS()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 3, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("3")}, "replicated-tls"); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "replicated-tls", Partition: int32(i % 3), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("acks=all with min.insync.replicas=3 needs every replica fetching over TLS: %v", err)
		}
	}
}

// The inter-broker dialer sets replica.socket.receive.buffer.bytes (for
// the replica fetcher) before connecting, in plain TCP and over TLS, where
// it names the host dialed (whose address the certificate holds) as the
// server as franz-go does.
func TestReplicaDialerReceiveBuffer(t *testing.T) {
	pki := newTestPKI(t)
	_, server := pki.keyStore("server", pkix.Name{CommonName: "server"})
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{server}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { c.(*tls.Conn).Handshake(); c.Close() }()
		}
	}()
	for _, secure := range []bool{false, true} {
		var cfg *tls.Config
		if secure {
			cfg = pki.clientTLS()
		}
		d := &interBrokerDialer{rcvBuf: 12345}
		nc, err := d.connect(ctxT(t), "tcp", ln.Addr().String(), cfg)
		if err != nil {
			t.Fatalf("TLS %v: %v", secure, err)
		}
		raw := nc
		if tc, ok := nc.(*tls.Conn); ok {
			if err := tc.Handshake(); err != nil {
				t.Fatalf("handshake: %v", err)
			}
			raw = tc.NetConn()
		}
		sc, _ := raw.(*net.TCPConn).SyscallConn()
		var got int
		sc.Control(func(fd uintptr) { got, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF) })
		nc.Close()
		if got != 2*12345 { // Linux doubles what is asked, for its bookkeeping
			t.Fatalf("TLS %v: SO_RCVBUF %d, want 2x12345", secure, got)
		}
	}
}

// ssl.client.auth without the listener prefix applies to SSL listeners
// only: a SASL_SSL listener asks for client certificates only with its
// own listener.name.<listener>.ssl.client.auth.
func TestTLSClientAuthOnSASLSSL(t *testing.T) {
	pki := newTestPKI(t)
	sasl := func(b *Broker) *kgo.Client {
		alterScram(t, kadm.NewClient(saslFreeClient(t, listenerAddr(t, b, "PLAINTEXT"))), "dora", "dora-secret", kadm.ScramSha256)
		return tlsClient(t, listenerAddr(t, b, "SASL_SSL"), &tls.Config{RootCAs: pki.pool},
			kgo.SASL(scram.Auth{User: "dora", Pass: "dora-secret"}.AsSha256Mechanism()))
	}

	b := startBrokerWith(t, pki.tlsProps(t.TempDir(), map[string]string{"ssl.client.auth": "required"}))
	if err := tlsClient(t, listenerAddr(t, b, "SSL"), &tls.Config{RootCAs: pki.pool}).Ping(ctxT(t)); err == nil {
		t.Fatal("ssl.client.auth=required: an SSL client without a certificate was admitted")
	}
	if err := sasl(b).Ping(ctxT(t)); err != nil {
		t.Fatalf("ssl.client.auth=required: a SASL_SSL client without a certificate: %v", err)
	}

	b = startBrokerWith(t, pki.tlsProps(t.TempDir(), map[string]string{"listener.name.sasl_ssl.ssl.client.auth": "required"}))
	if err := sasl(b).Ping(ctxT(t)); err == nil {
		t.Fatal("listener.name.sasl_ssl.ssl.client.auth=required: a SASL_SSL client without a certificate was admitted")
	}
}

// ssl.endpoint.identification.algorithm: https (in any case, as Java reads
// it) has a broker dialling another check that the certificate names the
// host dialled; empty checks the chain only.
func TestTLSEndpointIdentification(t *testing.T) {
	pki := newTestPKI(t) // certificates for 127.0.0.1, not for localhost
	for alg, checksName := range map[string]bool{"https": true, "HTTPS": true, "": false} {
		b := startBrokerWith(t, pki.tlsProps(t.TempDir(), map[string]string{"ssl.endpoint.identification.algorithm": alg}))
		_, port, _ := net.SplitHostPort(listenerAddr(t, b, "SSL"))
		dial := func(host string) error {
			c, err := tls.Dial("tcp", net.JoinHostPort(host, port), b.cfg.Security["SSL"].ClientTLS.Clone())
			if err == nil {
				c.Close()
			}
			return err
		}
		if err := dial("127.0.0.1"); err != nil {
			t.Errorf("%q: dialling the address the certificate names: %v", alg, err)
		}
		var hostErr x509.HostnameError
		if err := dial("localhost"); checksName != errors.As(err, &hostErr) {
			t.Errorf("%q: dialling a name the certificate does not hold: %v, want a host name error %v", alg, err, checksName)
		}
	}
}

// ssl.enabled.protocols may name the versions Java knows but disables by
// default (Kafka's default before 2.5 was TLSv1.2,TLSv1.1,TLSv1): the
// broker starts, as Kafka's does, and serves the others.
func TestTLSEnabledProtocolsOldVersions(t *testing.T) {
	pki := newTestPKI(t)
	b := startBrokerWith(t, pki.tlsProps(t.TempDir(), map[string]string{"ssl.enabled.protocols": "TLSv1.2,TLSv1.1,TLSv1"}))
	addr := listenerAddr(t, b, "SSL")
	dial := func(lo, hi uint16) (uint16, error) {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pki.pool, MinVersion: lo, MaxVersion: hi})
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return c.ConnectionState().Version, nil
	}
	if v, err := dial(tls.VersionTLS10, tls.VersionTLS13); err != nil || v != tls.VersionTLS12 {
		t.Fatalf("a client offering TLS 1.0 to 1.3 got %s (%v), want TLS 1.2", tls.VersionName(v), err)
	}
	if _, err := dial(tls.VersionTLS10, tls.VersionTLS11); err == nil {
		t.Fatal("a TLS 1.1 client was admitted")
	}
}

// A PEM key store's private key may be encrypted (ENCRYPTED PRIVATE KEY,
// as openssl pkcs8 -topk8 writes it), its password ssl.key.password, as
// in Kafka; inline in ssl.keystore.key too.
func TestTLSEncryptedPEMKey(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatalf("openssl is needed: %v", err)
	}
	pki := newTestPKI(t)
	cert, key := pki.sign(pkix.Name{CommonName: "broker"}, false)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	plain := pki.write("plain-key.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	encrypted := filepath.Join(pki.dir, "encrypted-key.pem")
	if out, err := exec.Command(openssl, "pkcs8", "-topk8", "-in", plain, "-out", encrypted, "-passout", "pass:key-secret").CombinedOutput(); err != nil {
		t.Fatalf("openssl: %v\n%s", err, out)
	}
	keyPEM, err := os.ReadFile(encrypted)
	if err != nil {
		t.Fatal(err)
	}
	chainPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	for name, props := range map[string]map[string]string{
		"file":   {"ssl.keystore.location": pki.write("ks.pem", append(keyPEM, chainPEM...))},
		"inline": {"ssl.keystore.location": "", "ssl.keystore.key": string(keyPEM), "ssl.keystore.certificate.chain": string(chainPEM)},
	} {
		props["ssl.key.password"] = "key-secret"
		p := pki.tlsProps(t.TempDir(), props)
		for k, v := range props {
			if v == "" {
				delete(p, k)
			}
		}
		b := startBrokerWith(t, p)
		if got := peerCertificate(t, listenerAddr(t, b, "SSL"), &tls.Config{RootCAs: pki.pool}); !bytes.Equal(got, cert.Raw) {
			t.Errorf("%s: the listener does not show the key store's certificate", name)
		}
		p["ssl.key.password"] = "wrong"
		if _, _, err := ParseConfig(p); err == nil || !strings.Contains(err.Error(), "wrong password") {
			t.Errorf("%s: a wrong ssl.key.password: %v", name, err)
		}
	}
}

// ssl.cipher.suites may name suites Java has but Go's TLS does not (the
// DHE ones, as hardened Kafka configurations list them): they are left
// out, as Java leaves out suites it cannot use, and the others served.
// Suites Java 17 disables (3DES, RC4) are left out too.
func TestTLSCipherSuitesJavaOnly(t *testing.T) {
	pki := newTestPKI(t)
	const suite = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
	b := startBrokerWith(t, pki.tlsProps(t.TempDir(), map[string]string{"ssl.enabled.protocols": "TLSv1.2",
		"ssl.cipher.suites": "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384," + suite + ",TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384,TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA"}))
	addr := listenerAddr(t, b, "SSL")
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pki.pool})
	if err != nil {
		t.Fatal(err)
	}
	if got := tls.CipherSuiteName(c.ConnectionState().CipherSuite); got != suite {
		t.Errorf("agreed on %s, want %s", got, suite)
	}
	c.Close()
	if c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pki.pool, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA}}); err == nil {
		c.Close()
		t.Fatal("a client offering only triple DES was admitted")
	}
	_, _, err = ParseConfig(pki.tlsProps(t.TempDir(), map[string]string{"ssl.cipher.suites": "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384"}))
	if err == nil || !strings.Contains(err.Error(), "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384") {
		t.Errorf("only a suite Go's TLS does not have: %v, want it refused by name", err)
	}
}

// A broker dialling another (replicas, and raft and controller requests
// on the CONTROLLER listener) with ssl.endpoint.identification.algorithm
// https checks the host name as Java's trust manager does: against the
// certificate's DNS subject alternative names, or, when it has none, its
// common name (certificates keytool made without -ext SAN); an address
// against the IP names only.
func TestInterBrokerDialHostNames(t *testing.T) {
	pki := newTestPKI(t)
	cfg, _, err := ParseConfig(pki.tlsProps(t.TempDir(), nil))
	if err != nil {
		t.Fatal(err)
	}
	client := cfg.Security["SSL"].ClientTLS
	serve := func(cn string, ips []net.IP, dns []string) string {
		cert, key := pki.signNaming(pkix.Name{CommonName: cn}, false, ips, dns)
		_, pair := pki.writeKeyStore(cn, cert, key)
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { c.(*tls.Conn).Handshake(); c.Close() }()
			}
		}()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		return port
	}
	for _, c := range []struct {
		what, host string
		port       string
		ok         bool
	}{
		{"CN=localhost, no names", "localhost", serve("localhost", nil, nil), true},
		{"CN=other, no names", "localhost", serve("other", nil, nil), false},
		{"CN=localhost, DNS name other", "localhost", serve("localhost", nil, []string{"other"}), false},
		{"CN=x, DNS name localhost", "localhost", serve("x", nil, []string{"localhost"}), true},
		{"CN=127.0.0.1, no names", "127.0.0.1", serve("127.0.0.1", nil, nil), false},
		{"IP name 127.0.0.1", "127.0.0.1", serve("x", loopback, nil), true},
	} {
		addr := net.JoinHostPort(c.host, c.port)
		nc, err := (&interBrokerDialer{}).connect(ctxT(t), "tcp", addr, client)
		if err == nil {
			err = nc.(*tls.Conn).HandshakeContext(ctxT(t))
			nc.Close()
		}
		if (err == nil) != c.ok {
			t.Errorf("replica dialling %s, %s: %v, want ok %v", addr, c.what, err, c.ok)
		}
		conn, err := controller.Security{TLS: client}.Dial(ctxT(t), addr, "test", 5*time.Second)
		if err == nil {
			conn.Close()
		}
		if (err == nil) != c.ok {
			t.Errorf("controller connection to %s, %s: %v, want ok %v", addr, c.what, err, c.ok)
		}
	}
}
