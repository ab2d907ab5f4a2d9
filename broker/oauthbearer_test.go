package broker

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/sasl"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	fsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

const oauthJAAS = oauthLoginModule + ` required unsecuredValidatorRequiredScope="kafka";`

func oauthProps(dir string, extra map[string]string) map[string]string {
	p := map[string]string{
		"listeners":               "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
		"log.dirs":                dir,
		"sasl.enabled.mechanisms": "OAUTHBEARER",
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": oauthJAAS,
		"authorizer.class.name":                     "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                               "User:alice",
		"connection.failed.authentication.delay.ms": "50",
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func jwtSegment(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}

// bearer logs in with token.
func bearer(token string) fsasl.Mechanism { return oauth.Auth{Token: token}.AsMechanism() }

// checkRefused expects cl's first request to fail authentication with a
// message containing want.
func checkRefused(t *testing.T, cl *kgo.Client, want string) {
	t.Helper()
	err := cl.Ping(ctxT(t))
	if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want SASL_AUTHENTICATION_FAILED with %q", err, want)
	}
}

// Kafka's default OAUTHBEARER validator takes unsecured tokens: the
// principal is the subject, which ACLs then see (alice is a super user,
// bob has no ACL), and the JAAS options require a scope.
func TestSASLOAuthBearerUnsecured(t *testing.T) {
	b := startBrokerWith(t, oauthProps(t.TempDir(), nil))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	token := func(sub, scope string) string {
		now := time.Now().Unix()
		return jwtSegment(t, map[string]string{"alg": "none"}) + "." +
			jwtSegment(t, map[string]any{"sub": sub, "iat": now, "exp": now + 300, "scope": scope}) + "."
	}
	if err := roundTrip(t, saslClient(t, addr, bearer(token("alice", "kafka"))), "by-alice", 10); err != nil {
		t.Fatalf("alice: %v", err)
	}
	bob := saslClient(t, addr, bearer(token("bob", "kafka profile")))
	err := bob.ProduceSync(ctxT(t), &kgo.Record{Topic: "by-alice", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob, authenticated without ACLs, produced: %v", err)
	}
	checkRefused(t, saslClient(t, addr, bearer(token("carol", "profile"))), `{"status":"insufficient_scope", "scope":"kafka"}`)
	expired := jwtSegment(t, map[string]string{"alg": "none"}) + "." + jwtSegment(t, map[string]any{"sub": "alice", "exp": 1000}) + "."
	checkRefused(t, saslClient(t, addr, bearer(expired)), `{"status":"invalid_token"}`)
}

// With Kafka's JWKS validator a listener takes only tokens signed by a key
// of the set, for its audience and issuer.
func TestSASLOAuthBearerJWKS(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	set, err := json.Marshal(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "k1", "alg": "RS256",
		"n": enc.EncodeToString(key.N.Bytes()), "e": enc.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(path, set, 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBrokerWith(t, oauthProps(filepath.Join(dir, "data"), map[string]string{
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":                   oauthLoginModule + " required;",
		"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": jwksValidatorClass,
		"sasl.oauthbearer.jwks.endpoint.url":                                          "file://" + path,
		"sasl.oauthbearer.expected.audience":                                          "kafka",
		"listener.name.sasl_plaintext.oauthbearer.sasl.oauthbearer.expected.issuer":   "https://idp.example",
	}))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	sign := func(claims map[string]any) string {
		input := jwtSegment(t, map[string]string{"alg": "RS256", "kid": "k1"}) + "." + jwtSegment(t, claims)
		digest := sha256.Sum256([]byte(input))
		sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
		if err != nil {
			t.Fatal(err)
		}
		return input + "." + enc.EncodeToString(sig)
	}
	now := time.Now().Unix()
	claims := map[string]any{"sub": "alice", "iat": now, "exp": now + 300, "aud": "kafka", "iss": "https://idp.example"}
	if err := roundTrip(t, saslClient(t, addr, bearer(sign(claims))), "signed", 5); err != nil {
		t.Fatalf("signed token: %v", err)
	}
	claims["iss"] = "https://elsewhere"
	checkRefused(t, saslClient(t, addr, bearer(sign(claims))), `{"status":"invalid_token"}`)
	unsigned := jwtSegment(t, map[string]string{"alg": "none"}) + "." + jwtSegment(t, map[string]any{"sub": "alice", "exp": now + 300}) + "."
	checkRefused(t, saslClient(t, addr, bearer(unsigned)), `{"status":"invalid_token"}`)

	// The exchange by hand: the client's ^A ends it with the JSON error.
	rc := refusedByHand(t, b, unsigned)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte{0x01}
	r := rc.request(auth).(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil || *r.ErrorMessage != `{"status":"invalid_token"}` {
		t.Fatalf("after ^A: code %d, message %v", r.ErrorCode, r.ErrorMessage)
	}
}

// refusedByHand starts an OAUTHBEARER exchange with token on b's SASL
// listener, which must refuse it with RFC 7628's JSON error as a
// challenge.
func refusedByHand(t *testing.T, b *Broker, token string) *rawConn {
	t.Helper()
	rc := saslRaw(t, b)
	if r := handshake(rc, 1, "OAUTHBEARER"); r.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(2)
	auth.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + token + "\x01\x01")
	r := rc.request(auth).(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode != 0 || string(r.SASLAuthBytes) != `{"status":"invalid_token"}` {
		t.Fatalf("token: code %d, challenge %q", r.ErrorCode, r.SASLAuthBytes)
	}
	return rc
}

// A client that takes the challenge refusing its token for a success and
// sends its next request (kafkajs does) fails the authentication as one
// that acknowledged the refusal would, as in Kafka: no answer, the
// connection closed after connection.failed.authentication.delay.ms, and
// the refusal in the reason the broker logs.
func TestOAuthBearerRefusalNotAcknowledged(t *testing.T) {
	b := startBrokerWith(t, oauthProps(t.TempDir(), map[string]string{"connection.failed.authentication.delay.ms": "300"}))
	expired := jwtSegment(t, map[string]string{"alg": "none"}) + "." + jwtSegment(t, map[string]any{"sub": "alice", "exp": 1000, "scope": "kafka"}) + "."
	rc := refusedByHand(t, b, expired)
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	start := time.Now()
	if _, err := rc.tryRequest(meta); err == nil {
		t.Fatal("Metadata answered after a refused token")
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Fatalf("closed after %v, before connection.failed.authentication.delay.ms", waited)
	}

	server, err := sasl.New(sasl.OAuthBearer, sasl.Stores{OAuth: &sasl.OAuthValidator{PrincipalClaim: "sub"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := server.Step([]byte("n,,\x01auth=Bearer " + expired + "\x01\x01")); err != nil {
		t.Fatal(err)
	}
	a := authExchange{state: authTokens, mechanism: sasl.OAuthBearer, server: server}
	want := `unexpected Metadata request during SASL authentication, which refused the client's OAUTHBEARER credentials: {"status":"invalid_token"}: the token expired at 1000 s`
	if err := a.admits(3); err == nil || err.Error() != want {
		t.Fatalf("reason %v, want %s", err, want)
	}
}

func TestOAuthBearerConfigRefusals(t *testing.T) {
	checkConfigRefusals(t, func() map[string]string { return oauthProps(t.TempDir(), nil) }, map[string]configRefusal{
		"no JAAS":       {map[string]string{"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": ""}, "enables OAUTHBEARER but listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"},
		"other module":  {map[string]string{"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": plainJAAS}, "needs " + oauthLoginModule},
		"other handler": {map[string]string{"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": "com.example.Handler"}, "com.example.Handler is not a validator Gregor has"},
		"no JWKS URL":   {map[string]string{"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": jwksValidatorClass}, "needs sasl.oauthbearer.jwks.endpoint.url"},
		"bad skew":      {map[string]string{"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": oauthLoginModule + ` required unsecuredValidatorAllowableClockSkewMs="-1";`}, "unsecuredValidatorAllowableClockSkewMs"},
	})
}

// Replicas log in to their leaders with an unsecured token whose subject
// is the JAAS option unsecuredLoginStringClaim_sub.
func TestClusterOAuthBearer(t *testing.T) {
	c := startCluster(t, 3, map[string]string{
		"listener.security.protocol.map":                       "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":                              "OAUTHBEARER",
		"sasl.mechanism.inter.broker.protocol":                 "OAUTHBEARER",
		"listener.name.plaintext.oauthbearer.sasl.jaas.config": oauthLoginModule + ` required unsecuredLoginStringClaim_sub="broker";`,
	})
	now := time.Now().Unix()
	token := jwtSegment(t, map[string]string{"alg": "none"}) + "." + jwtSegment(t, map[string]any{"sub": "app", "exp": now + 300}) + "."
	app := c.client(kgo.SASL(bearer(token)), kgo.RequiredAcks(kgo.AllISRAcks()))
	if _, err := kadm.NewClient(app).CreateTopic(ctxT(t), 3, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("3")}, "replicated"); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := app.ProduceSync(ctxT(t), &kgo.Record{Topic: "replicated", Partition: int32(i % 3), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("acks=all with min.insync.replicas=3 needs every replica fetching: %v", err)
		}
	}
}
