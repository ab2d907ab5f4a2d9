package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/properties"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	fsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
	`username="admin" password="admin-secret" user_admin="admin-secret" user_bob="bob-secret";`

// saslProps serve SASL_PLAINTEXT on 127.0.0.1 first and PLAINTEXT second,
// with PLAIN users admin and bob and both SCRAM mechanisms.
func saslProps(dir string) map[string]string {
	return map[string]string{
		"listeners":               "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
		"log.dirs":                dir,
		"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":         plainJAAS,
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"connection.failed.authentication.delay.ms":                   "300",
	}
}

// listenerAddr is the bound address of the listener called name.
func listenerAddr(t testing.TB, b *Broker, name string) string {
	t.Helper()
	for _, l := range b.listeners {
		if l.name == name {
			return l.ln.Addr().String()
		}
	}
	t.Fatalf("no listener %s", name)
	return ""
}

func saslClient(t testing.TB, addr string, m fsasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(m), kgo.RetryTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// roundTrip creates a topic, produces n records to it and reads them back
// in order.
func roundTrip(t *testing.T, cl *kgo.Client, topic string, n int) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		return err
	}
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			return err
		}
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
	defer cl.RemoveConsumePartitions(map[string][]int32{topic: {0}})
	seen := 0
	for seen < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %d of %d records: %w", seen, n, err)
		}
		for _, e := range fs.Errors() {
			return e.Err
		}
		for _, r := range fs.Records() {
			if string(r.Value) != fmt.Sprint(seen) {
				return fmt.Errorf("record %d is %q", seen, r.Value)
			}
			seen++
		}
	}
	return nil
}

func alterScram(t *testing.T, adm *kadm.Client, user, password string, m kadm.ScramMechanism) {
	t.Helper()
	res, err := adm.AlterUserSCRAMs(ctxT(t), nil, []kadm.UpsertSCRAM{{User: user, Mechanism: m, Iterations: 4096, Password: password}})
	if err != nil {
		t.Fatal(err)
	}
	if e := res[user].Err; e != nil {
		t.Fatalf("AlterUserScramCredentials %s: %v (%s)", user, e, res[user].ErrMessage)
	}
}

func TestSASLPlainAndScramWithRealClients(t *testing.T) {
	dir := t.TempDir()
	b := startBrokerWith(t, saslProps(dir))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	admin := saslClient(t, addr, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())
	adm := kadm.NewClient(admin)
	if err := roundTrip(t, admin, "by-admin", 10); err != nil {
		t.Fatalf("PLAIN admin: %v", err)
	}

	// SCRAM users are created over the authenticated connection.
	alterScram(t, adm, "alice", "alice-256", kadm.ScramSha256)
	alterScram(t, adm, "alice", "alice-512", kadm.ScramSha512)
	described, err := adm.DescribeUserSCRAMs(ctxT(t), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if infos := described["alice"].CredInfos; len(infos) != 2 || infos[0].Mechanism != kadm.ScramSha256 || infos[1].Mechanism != kadm.ScramSha512 || infos[0].Iterations != 4096 {
		t.Fatalf("described %+v", described["alice"])
	}
	alice256 := saslClient(t, addr, scram.Auth{User: "alice", Pass: "alice-256"}.AsSha256Mechanism())
	if err := roundTrip(t, alice256, "by-alice-256", 5); err != nil {
		t.Fatalf("SCRAM-SHA-256: %v", err)
	}
	alice512 := saslClient(t, addr, scram.Auth{User: "alice", Pass: "alice-512"}.AsSha512Mechanism())
	if err := roundTrip(t, alice512, "by-alice-512", 5); err != nil {
		t.Fatalf("SCRAM-SHA-512: %v", err)
	}

	for name, m := range map[string]fsasl.Mechanism{
		"PLAIN wrong password":         plain.Auth{User: "admin", Pass: "nope"}.AsMechanism(),
		"PLAIN unknown user":           plain.Auth{User: "carol", Pass: "admin-secret"}.AsMechanism(),
		"SCRAM wrong password":         scram.Auth{User: "alice", Pass: "alice-512"}.AsSha256Mechanism(),
		"SCRAM user without the mech":  scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism(),
		"SCRAM password of other mech": scram.Auth{User: "alice", Pass: "alice-256"}.AsSha512Mechanism(),
	} {
		cl := saslClient(t, addr, m)
		err := cl.Ping(ctxT(t))
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: got %v, want SASL_AUTHENTICATION_FAILED", name, err)
		}
	}

	// Removing a credential stops its logins; the other mechanism stays.
	res, err := adm.AlterUserSCRAMs(ctxT(t), []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || res["alice"].Err != nil {
		t.Fatalf("delete: %v %v", err, res["alice"].Err)
	}
	if err := saslClient(t, addr, scram.Auth{User: "alice", Pass: "alice-256"}.AsSha256Mechanism()).Ping(ctxT(t)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("deleted credential: %v", err)
	}

	// Credentials outlive a restart: they are in the metadata file.
	b.Close()
	b = startBrokerWith(t, saslProps(dir))
	addr = listenerAddr(t, b, "SASL_PLAINTEXT")
	if err := roundTrip(t, saslClient(t, addr, scram.Auth{User: "alice", Pass: "alice-512"}.AsSha512Mechanism()), "after-restart", 25); err != nil {
		t.Fatalf("SCRAM-SHA-512 after restart: %v", err)
	}
}

// saslRaw dials the SASL listener for hand-made exchanges.
func saslRaw(t *testing.T, b *Broker) *rawConn {
	t.Helper()
	rc := dialRaw(t, b) // the first listener is the SASL one
	if got := listenerAddr(t, b, "SASL_PLAINTEXT"); rc.nc.RemoteAddr().String() != got {
		t.Fatalf("dialed %s, SASL listener is %s", rc.nc.RemoteAddr(), got)
	}
	return rc
}

func handshake(rc *rawConn, version int16, mechanism string) *kmsg.SASLHandshakeResponse {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(version)
	req.Mechanism = mechanism
	return rc.request(req).(*kmsg.SASLHandshakeResponse)
}

func TestSASLStateMachine(t *testing.T) {
	b := startBrokerWith(t, saslProps(t.TempDir()))

	t.Run("requests before authentication close the connection", func(t *testing.T) {
		rc := saslRaw(t, b)
		apiv := kmsg.NewPtrApiVersionsRequest()
		apiv.SetVersion(3)
		apiv.ClientSoftwareName, apiv.ClientSoftwareVersion = "raw-test", "1.0"
		if r := rc.request(apiv).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 || len(r.ApiKeys) == 0 {
			t.Fatalf("ApiVersions before the handshake: %+v", r)
		}
		meta := kmsg.NewPtrMetadataRequest()
		meta.SetVersion(12)
		if _, err := rc.tryRequest(meta); err == nil {
			t.Fatal("Metadata answered before authentication")
		}
	})

	// Kafka's SaslServerAuthenticator takes one ApiVersions before the
	// handshake (another after one it answered with an error), and
	// closes the connection on a second.
	t.Run("a second ApiVersions before the handshake closes the connection", func(t *testing.T) {
		rc := saslRaw(t, b)
		apiv := kmsg.NewPtrApiVersionsRequest()
		apiv.SetVersion(3)
		apiv.ClientSoftwareName, apiv.ClientSoftwareVersion = "-bad", "1.0"
		if r := rc.request(apiv).(*kmsg.ApiVersionsResponse); r.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("ApiVersions with a bad software name: %+v", r)
		}
		apiv.ClientSoftwareName = "raw-test"
		if r := rc.request(apiv).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 || len(r.ApiKeys) == 0 {
			t.Fatalf("ApiVersions after a refused one: %+v", r)
		}
		if _, err := rc.tryRequest(apiv); err == nil {
			t.Fatal("a second ApiVersions answered before the handshake")
		}
	})

	t.Run("unsupported mechanism lists the enabled ones, then closes", func(t *testing.T) {
		rc := saslRaw(t, b)
		start := time.Now()
		r := handshake(rc, 1, "GSSAPI")
		if r.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(r.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" {
			t.Fatalf("handshake: %+v", r)
		}
		if waited := time.Since(start); waited < 300*time.Millisecond {
			t.Fatalf("failure answered after %v, before connection.failed.authentication.delay.ms", waited)
		}
		rc.expectClosed()
	})

	t.Run("v1 PLAIN by hand, then a second handshake is illegal", func(t *testing.T) {
		rc := saslRaw(t, b)
		if r := handshake(rc, 1, "PLAIN"); r.ErrorCode != 0 {
			t.Fatalf("handshake: %+v", r)
		}
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = []byte("\x00bob\x00bob-secret")
		if r := rc.request(auth).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 {
			t.Fatalf("authenticate: %+v", r)
		}
		if r := handshake(rc, 1, "PLAIN"); r.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("second handshake: %+v", r)
		}
		meta := kmsg.NewPtrMetadataRequest()
		meta.SetVersion(12)
		if r := rc.request(meta).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
			t.Fatalf("metadata after authentication: %+v", r)
		}
	})

	t.Run("SaslHandshake and SaslAuthenticate at both ends of their ranges", func(t *testing.T) {
		for _, hv := range bothEnds(17) {
			for _, av := range bothEnds(36) {
				rc := saslRaw(t, b)
				if r := handshake(rc, hv, "PLAIN"); r.ErrorCode != 0 {
					t.Fatalf("handshake v%d: %+v", hv, r)
				}
				token := []byte("\x00bob\x00bob-secret")
				if hv == 0 { // bare tokens, no SaslAuthenticate
					rc.nc.Write(append([]byte{0, 0, 0, byte(len(token))}, token...))
					if body, err := rc.readFrame(); err != nil || len(body) != 0 {
						t.Fatalf("v0 token answer %q %v", body, err)
					}
					continue
				}
				auth := kmsg.NewPtrSASLAuthenticateRequest()
				auth.SetVersion(av)
				auth.SASLAuthBytes = token
				if r := rc.request(auth).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 || r.SessionLifetimeMillis != 0 {
					t.Fatalf("authenticate v%d after handshake v%d: %+v", av, hv, r)
				}
			}
		}
	})

	t.Run("v1 bad password answers SASL_AUTHENTICATION_FAILED and closes", func(t *testing.T) {
		rc := saslRaw(t, b)
		handshake(rc, 1, "PLAIN")
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(1)
		auth.SASLAuthBytes = []byte("\x00bob\x00wrong")
		r := rc.request(auth).(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil || *r.ErrorMessage != "Authentication failed: Invalid username or password" {
			t.Fatalf("authenticate: %+v", r)
		}
		rc.expectClosed()
	})

	t.Run("v0 handshake exchanges bare tokens", func(t *testing.T) {
		rc := saslRaw(t, b)
		handshake(rc, 0, "PLAIN")
		token := []byte("\x00admin\x00admin-secret")
		frame := append([]byte{0, 0, 0, byte(len(token))}, token...)
		if _, err := rc.nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		if body, err := rc.readFrame(); err != nil || len(body) != 0 {
			t.Fatalf("PLAIN's answer: %q %v, want an empty frame", body, err)
		}
		meta := kmsg.NewPtrMetadataRequest()
		meta.SetVersion(12)
		if r := rc.request(meta).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
			t.Fatalf("metadata after authentication: %+v", r)
		}
	})

	t.Run("a frame above sasl.server.max.receive.size before login closes", func(t *testing.T) {
		rc := saslRaw(t, b)
		big := kmsg.NewPtrApiVersionsRequest()
		big.SetVersion(3)
		big.ClientSoftwareName, big.ClientSoftwareVersion = strings.Repeat("x", 600<<10), "1.0"
		if _, err := rc.tryRequest(big); err == nil {
			t.Fatal("a 600 KB request was answered before authentication")
		}
		rc.expectClosed()
	})

	t.Run("v0 bad token closes without an answer", func(t *testing.T) {
		rc := saslRaw(t, b)
		handshake(rc, 0, "PLAIN")
		token := []byte("\x00admin\x00wrong")
		rc.nc.Write(append([]byte{0, 0, 0, byte(len(token))}, token...))
		rc.expectClosed()
	})

	t.Run("the PLAINTEXT listener has no SASL state", func(t *testing.T) {
		nc := dialAddr(t, listenerAddr(t, b, "PLAINTEXT"))
		if r := handshake(nc, 1, "PLAIN"); r.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("handshake on PLAINTEXT: %+v", r)
		}
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		if r := nc.request(auth).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("authenticate on PLAINTEXT: %+v", r)
		}
	})
}

// Quotas of an authenticated user apply to that user's connections only.
func TestSASLUserQuotas(t *testing.T) {
	b := startBrokerWith(t, saslProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	admin := saslClient(t, addr, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "limited"); err != nil {
		t.Fatal(err)
	}
	alterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "bob"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}}})
	produce := func(m fsasl.Mechanism) int64 {
		hook := &throttleHook{}
		cl := saslClient(t, addr, m, kgo.WithHooks(hook))
		for range 8 {
			value := make([]byte, 8<<10)
			rand.Read(value) // incompressible
			if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "limited", Value: value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if hook.n.Load() > 0 {
				break // no need to wait the throttle out
			}
		}
		return hook.n.Load()
	}
	if n := produce(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()); n != 0 {
		t.Fatalf("admin, without a quota, was throttled %d times", n)
	}
	if n := produce(plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism()); n == 0 {
		t.Fatal("bob produced 64 KB under a 1 KB/s quota without a throttle")
	}

	// Fetches are measured against the user's consumer quota too: bob's
	// reads of admin's 64 KB are throttled, and capped at what the quota
	// allows over its window (1 KB/s x 10 s), one batch at least.
	alterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "bob"), Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 1024}}})
	hook := &throttleHook{}
	bob := saslClient(t, addr, plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism(), kgo.WithHooks(hook),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"limited": {0: kgo.NewOffset().AtStart()}}))
	fs := bob.PollFetches(ctxT(t))
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if n := len(fs.Records()); n == 0 || n > 2 {
		t.Fatalf("bob's first fetch under 1 KB/s brought %d records of 8 KB", n)
	}
	for hook.n.Load() == 0 {
		if err := bob.PollFetches(ctxT(t)).Err0(); err != nil {
			t.Fatalf("bob read without a throttle: %v", err)
		}
	}
}

func TestSecurityConfigRefusals(t *testing.T) {
	base := func(extra map[string]string) map[string]string {
		p := saslProps(t.TempDir())
		for k, v := range extra {
			if v == "" {
				delete(p, k)
			} else {
				p[k] = v
			}
		}
		return p
	}
	for name, c := range map[string]struct {
		props map[string]string
		want  string
	}{
		"SSL without stores": {base(map[string]string{"listeners": "SSL://127.0.0.1:0"}), "listener SSL uses TLS but has no key store"},
		"unmapped listener":  {base(map[string]string{"listeners": "INTERNAL://127.0.0.1:0"}), "no security protocol defined for listener INTERNAL"},
		"GSSAPI (default)":   {base(map[string]string{"sasl.enabled.mechanisms": ""}), "SASL mechanism GSSAPI is not supported"},
		"PLAIN without JAAS": {base(map[string]string{"listener.name.sasl_plaintext.plain.sasl.jaas.config": ""}), "names its users"},
		"wrong login module": {base(map[string]string{"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`}), "needs org.apache.kafka.common.security.plain.PlainLoginModule"},
		"bad JAAS":           {base(map[string]string{"listener.name.sasl_plaintext.plain.sasl.jaas.config": `PlainLoginModule required user_a="b"`}), "is not 'LoginModule flag"},
		"bad protocol":       {base(map[string]string{"listener.security.protocol.map": "SASL_PLAINTEXT:TLS"}), "unknown security protocol TLS"},
		"listener mechanisms": {base(map[string]string{"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "GSSAPI"}),
			"invalid value for config key listener.name.sasl_plaintext.sasl.enabled.mechanisms: SASL mechanism GSSAPI is not supported"},
	} {
		_, _, err := ParseConfig(c.props)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, c.want)
		}
	}
	// The listener's own mechanisms replace sasl.enabled.mechanisms.
	cfg, warnings, err := ParseConfig(base(map[string]string{"sasl.enabled.mechanisms": "", "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-512"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Security["SASL_PLAINTEXT"].Mechanisms; strings.Join(got, ",") != "SCRAM-SHA-512" {
		t.Fatalf("mechanisms %v", got)
	}
	for _, w := range warnings {
		if strings.Contains(w, "listener.name.") {
			t.Fatalf("a listener key Gregor reads was warned about: %s", w)
		}
	}
}

// A cluster whose inter-broker listener is SASL_PLAINTEXT: replicas log
// in to their leaders with PLAIN, SCRAM credentials altered through any
// broker reach every broker, and acks=all writes are replicated.
func TestClusterSASL(t *testing.T) {
	c := startCluster(t, 3, map[string]string{
		"listener.security.protocol.map":                 "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":                        "PLAIN,SCRAM-SHA-256",
		"sasl.mechanism.inter.broker.protocol":           "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config": plainJAAS,
	})
	admin := c.client(kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctxT(t), 3, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("3")}, "replicated"); err != nil {
		t.Fatal(err)
	}
	alterScram(t, adm, "carol", "carol-secret", kadm.ScramSha256)
	c.waitFor("every broker knowing carol's credential", func() bool {
		for _, b := range c.nodes {
			if len(b.scramCredentials()) != 1 {
				return false
			}
		}
		return true
	})
	for _, b := range c.nodes {
		cl := saslClient(t, b.Addr(), scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism())
		if err := cl.Ping(ctxT(t)); err != nil {
			t.Fatalf("carol on %s: %v", b.Addr(), err)
		}
	}
	carol := c.client(kgo.SASL(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism()), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 30 {
		if err := carol.ProduceSync(ctxT(t), &kgo.Record{Topic: "replicated", Partition: int32(i % 3), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("acks=all with min.insync.replicas=3 needs every replica fetching: %v", err)
		}
	}
}

// The README's example, as a server.properties file with the JAAS entry
// continued over two lines.
func TestSASLConfigFromServerProperties(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	text := `listeners=SASL_PLAINTEXT://:9092
security.inter.broker.protocol=SASL_PLAINTEXT
sasl.mechanism.inter.broker.protocol=PLAIN
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
    username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	props, err := properties.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, warnings, err := ParseConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	sec := cfg.Security["SASL_PLAINTEXT"]
	if sec.Protocol != "SASL_PLAINTEXT" || len(sec.PlainUsers) != 2 || sec.PlainUsers["alice"] != "alice-secret" || len(sec.Mechanisms) != 3 {
		t.Fatalf("resolved %+v", sec)
	}
}

// DescribeUserScramCredentials and DescribeClientQuotas refused for want
// of DESCRIBE / DESCRIBE_CONFIGS on the cluster carry no error message:
// Kafka's getErrorResponse takes it from ApiError.fromThrowable, which
// leaves out an error's default message.
func TestClusterDescribesDeniedWithoutMessage(t *testing.T) {
	props := saslProps(t.TempDir())
	props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	props["super.users"] = "User:admin"
	b := startBrokerWith(t, props)
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	scramUsers(t, addr, "alice")
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "alice"}}
	resp, err := req.RequestWith(ctxT(t), scramClient(t, addr, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || resp.ErrorMessage != nil {
		t.Fatalf("describe without DESCRIBE on the cluster: %v %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage)
	}
	// DescribeClientQuotas' refusal goes through the same
	// ApiError.fromThrowable (DescribeClientQuotasRequest.getErrorResponse).
	quotas, err := kmsg.NewPtrDescribeClientQuotasRequest().RequestWith(ctxT(t), scramClient(t, addr, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if quotas.ErrorCode != kerr.ClusterAuthorizationFailed.Code || quotas.ErrorMessage != nil {
		t.Fatalf("describe quotas without DESCRIBE_CONFIGS on the cluster: %v %v", kerr.ErrorForCode(quotas.ErrorCode), quotas.ErrorMessage)
	}
}
