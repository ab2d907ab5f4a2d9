package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// plainLogin authenticates rc with PLAIN and returns the session
// lifetime, or fails the test.
func plainLogin(t *testing.T, rc *rawConn, user, password string) int64 {
	t.Helper()
	r := plainAttempt(t, rc, user, password)
	if r.ErrorCode != 0 {
		t.Fatalf("PLAIN login as %s: %v %v", user, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
	return r.SessionLifetimeMillis
}

func plainAttempt(t *testing.T, rc *rawConn, user, password string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	if r := handshake(rc, 1, "PLAIN"); r.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("\x00" + user + "\x00" + password)
	return rc.request(auth).(*kmsg.SASLAuthenticateResponse)
}

// metadataOK reports whether rc is still served.
func metadataOK(rc *rawConn) bool {
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	_, err := rc.tryRequest(meta)
	return err == nil
}

// With connections.max.reauth.ms the session has a lifetime, which
// SaslAuthenticate tells the client; the client re-authenticates on the
// same connection before it ends, as itself and with the same mechanism,
// and a request after the end closes the connection (KIP-368).
func TestSASLReauthentication(t *testing.T) {
	props := saslProps(t.TempDir())
	props["connections.max.reauth.ms"] = "2000"
	props["listener.name.sasl_plaintext.scram-sha-256.connections.max.reauth.ms"] = "60000"
	b := startBrokerWith(t, props)

	rc := saslRaw(t, b)
	if got := plainLogin(t, rc, "admin", "admin-secret"); got != 2000 {
		t.Fatalf("session lifetime %d ms, want connections.max.reauth.ms 2000", got)
	}
	if got := plainLogin(t, rc, "admin", "admin-secret"); got != 2000 {
		t.Fatalf("first re-authentication: session lifetime %d ms, want 2000", got)
	}
	if r := handshake(rc, 1, "PLAIN"); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("a re-authentication within a second of the last: %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(r.ErrorCode))
	}
	time.Sleep(1100 * time.Millisecond)
	if got := plainLogin(t, rc, "admin", "admin-secret"); got != 2000 {
		t.Fatalf("re-authenticated session lifetime %d ms, want 2000", got)
	}
	if !metadataOK(rc) {
		t.Fatal("not served after re-authenticating")
	}
	time.Sleep(2300 * time.Millisecond)
	if metadataOK(rc) {
		t.Fatal("a request after the session's end was served")
	}

	other := saslRaw(t, b)
	plainLogin(t, other, "admin", "admin-secret")
	r := plainAttempt(t, other, "bob", "bob-secret")
	if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil ||
		*r.ErrorMessage != "Cannot change principals during re-authentication from User.admin: User.bob" {
		t.Fatalf("re-authenticating as another user: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}

	third := saslRaw(t, b)
	plainLogin(t, third, "admin", "admin-secret")
	if r := handshake(third, 1, "SCRAM-SHA-256"); r.ErrorCode != 0 {
		t.Fatalf("handshake for another mechanism: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("n,,n=admin,r=abc")
	if r := third.request(auth).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != kerr.SaslAuthenticationFailed.Code ||
		r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "not supported for re-authentication of mechanism 'PLAIN'") {
		t.Fatalf("re-authenticating with another mechanism: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}

	// franz-go re-authenticates by itself and keeps producing across
	// several session lifetimes.
	cl := saslClient(t, listenerAddr(t, b, "SASL_PLAINTEXT"), plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism(),
		kgo.DefaultProduceTopic("reauth"), kgo.AllowAutoTopicCreation())
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("franz-go across re-authentications: %v", err)
		}
	}
}

// An OAUTHBEARER session ends when its token does, whatever
// connections.max.reauth.ms says, as in Kafka.
func TestOAuthBearerSessionEndsWithToken(t *testing.T) {
	b := startBrokerWith(t, oauthProps(t.TempDir(), nil))
	rc := saslRaw(t, b)
	if r := handshake(rc, 1, "OAUTHBEARER"); r.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	exp := time.Now().Add(3 * time.Second).Unix()
	token := jwtSegment(t, map[string]string{"alg": "none"}) + "." + jwtSegment(t, map[string]any{"sub": "alice", "exp": exp, "scope": "kafka"}) + "."
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(1)
	auth.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + token + "\x01\x01")
	r := rc.request(auth).(*kmsg.SASLAuthenticateResponse)
	want := time.Until(time.Unix(exp, 0)).Milliseconds()
	if r.ErrorCode != 0 || r.SessionLifetimeMillis <= 0 || r.SessionLifetimeMillis > want+100 || r.SessionLifetimeMillis < want-1000 {
		t.Fatalf("session lifetime %d ms (error %v), want about %d, the token's", r.SessionLifetimeMillis, kerr.ErrorForCode(r.ErrorCode), want)
	}
	if !metadataOK(rc) {
		t.Fatal("not served before the token expired")
	}
	time.Sleep(time.Until(time.Unix(exp, 0)) + 200*time.Millisecond)
	if metadataOK(rc) {
		t.Fatal("served after the token expired")
	}
}

// A credential refused during a re-authentication is reported as Kafka's
// SaslServerAuthenticator words it then: "during re-authentication".
func TestReauthenticationFailureMessage(t *testing.T) {
	props := saslProps(t.TempDir())
	props["connections.max.reauth.ms"] = "60000"
	b := startBrokerWith(t, props)
	scramUsers(t, listenerAddr(t, b, "SASL_PLAINTEXT"), "alice")

	rc := saslRaw(t, b)
	authenticate := func(token []byte) *kmsg.SASLAuthenticateResponse {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(2)
		auth.SASLAuthBytes = token
		return rc.request(auth).(*kmsg.SASLAuthenticateResponse)
	}
	if r := handshake(rc, 1, "SCRAM-SHA-256"); r.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	session, msg, err := scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism().Authenticate(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		r := authenticate(msg)
		if r.ErrorCode != 0 {
			t.Fatalf("SCRAM login: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
		if done, msg, err = session.Challenge(r.SASLAuthBytes); err != nil {
			t.Fatal(err)
		}
	}
	if r := handshake(rc, 1, "SCRAM-SHA-256"); r.ErrorCode != 0 {
		t.Fatalf("re-authentication handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	r := authenticate([]byte("n,,n=nobody,r=abc"))
	want := "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
	if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil || *r.ErrorMessage != want {
		t.Fatalf("re-authenticating as an unknown user: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
}

// connections.max.reauth.ms has no lower bound in Kafka
// (BrokerSecurityConfigs): a negative value, like 0, turns re-authentication
// off.
func TestNegativeConnectionsMaxReauth(t *testing.T) {
	props := saslProps(t.TempDir())
	props["connections.max.reauth.ms"] = "-1"
	props["listener.name.sasl_plaintext.scram-sha-256.connections.max.reauth.ms"] = "-5"
	c, _, err := ParseConfig(props)
	if err != nil {
		t.Fatalf("negative connections.max.reauth.ms refused: %v", err)
	}
	for _, l := range c.Listeners {
		for m, d := range c.Security[l.Name].MaxReauth {
			if d > 0 {
				t.Errorf("%s %s: session lifetime %v", l.Name, m, d)
			}
		}
	}
}

// A client may still re-authenticate after its session's end: Kafka's
// SocketServer starts the re-authentication for a SaslHandshake before it
// looks at the session's expiry (KafkaChannel.maybeBeginServerReauthentication),
// which closes the connection only for other requests.
func TestReauthenticationAfterSessionEnd(t *testing.T) {
	props := saslProps(t.TempDir())
	props["connections.max.reauth.ms"] = "1000"
	b := startBrokerWith(t, props)
	rc := saslRaw(t, b)
	plainLogin(t, rc, "admin", "admin-secret")
	time.Sleep(1200 * time.Millisecond)
	if got := plainLogin(t, rc, "admin", "admin-secret"); got != 1000 {
		t.Fatalf("re-authenticated session lifetime %d ms, want 1000", got)
	}
	if !metadataOK(rc) {
		t.Fatal("not served after re-authenticating")
	}
}
