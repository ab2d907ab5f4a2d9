package sasl

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var b64 = base64.RawURLEncoding

func segment(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b64.EncodeToString(raw)
}

// unsecuredToken is a JWT with alg "none", as Kafka's unsecured login
// callback handler and librdkafka's unsecured JWT make them.
func unsecuredToken(t *testing.T, claims map[string]any) string {
	return segment(t, map[string]string{"alg": "none"}) + "." + segment(t, claims) + "."
}

// signedToken is a JWT signed by key with alg, naming kid.
func signedToken(t *testing.T, alg, kid string, key crypto.Signer, claims map[string]any) string {
	t.Helper()
	input := segment(t, map[string]string{"alg": alg, "kid": kid, "typ": "JWT"}) + "." + segment(t, claims)
	hash := map[byte]crypto.Hash{'2': crypto.SHA256, '3': crypto.SHA384, '5': crypto.SHA512}[alg[2]]
	h := hash.New()
	h.Write([]byte(input))
	var opts crypto.SignerOpts = hash
	if alg[0] == 'P' {
		opts = &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: hash}
	}
	var sig []byte
	var err error
	if ec, ok := key.(*ecdsa.PrivateKey); ok {
		r, s, e := ecdsa.Sign(rand.Reader, ec, h.Sum(nil))
		size := (ec.Curve.Params().BitSize + 7) / 8
		sig, err = append(r.FillBytes(make([]byte, size)), s.FillBytes(make([]byte, size))...), e
	} else {
		sig, err = key.Sign(rand.Reader, h.Sum(nil), opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64.EncodeToString(sig)
}

// firstMessage is an OAUTHBEARER client first message carrying token.
func firstMessage(authzid, token string) []byte {
	a := ""
	if authzid != "" {
		a = "a=" + authzid
	}
	return []byte("n," + a + ",\x01auth=Bearer " + token + "\x01traceId=42\x01\x01")
}

// oauthExchange runs one OAUTHBEARER exchange: the user on success, otherwise
// the JSON error the client was sent (after acknowledging it) or the
// failure.
func oauthExchange(t *testing.T, v *OAuthValidator, first []byte) (user, refusal string) {
	t.Helper()
	s, err := New(OAuthBearer, Stores{OAuth: v})
	if err != nil {
		t.Fatal(err)
	}
	challenge, done, err := s.Step(first)
	switch {
	case err != nil:
		return "", err.Error()
	case done:
		if len(challenge) != 0 {
			t.Fatalf("success with challenge %q", challenge)
		}
		return s.User(), ""
	}
	_, done, err = s.Step([]byte{0x01})
	if done || err == nil || err.Error() != string(challenge) {
		t.Fatalf("after the error %q and ^A: done %v, err %v; want the error as the failure", challenge, done, err)
	}
	return "", string(challenge)
}

func TestOAuthBearerUnsecured(t *testing.T) {
	now := time.Now().Unix()
	v := &OAuthValidator{PrincipalClaim: "sub", ScopeClaim: "scope"}
	good := map[string]any{"sub": "alice", "iat": now, "exp": now + 60, "scope": "read write"}
	if user, refusal := oauthExchange(t, v, firstMessage("", unsecuredToken(t, good))); user != "alice" {
		t.Fatalf("good token: user %q, refusal %q", user, refusal)
	}
	if user, _ := oauthExchange(t, v, firstMessage("alice", unsecuredToken(t, good))); user != "alice" {
		t.Fatalf("good token with the same authorization id: user %q", user)
	}
	const invalid = `{"status":"invalid_token"}`
	for name, c := range map[string]struct {
		first []byte
		want  string
	}{
		"expired":       {firstMessage("", unsecuredToken(t, map[string]any{"sub": "alice", "exp": now - 1})), invalid},
		"no exp":        {firstMessage("", unsecuredToken(t, map[string]any{"sub": "alice"})), invalid},
		"no sub":        {firstMessage("", unsecuredToken(t, map[string]any{"exp": now + 60})), invalid},
		"issued later":  {firstMessage("", unsecuredToken(t, map[string]any{"sub": "alice", "iat": now + 60, "exp": now + 120})), invalid},
		"signed":        {firstMessage("", segment(t, map[string]string{"alg": "HS256"})+"."+segment(t, good)+".c2ln"), invalid},
		"not a JWT":     {firstMessage("", "abc"), invalid},
		"other authzid": {firstMessage("bob", unsecuredToken(t, good)), "Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)"},
		"no auth":       {[]byte("n,,\x01host=x\x01\x01"), invalidCredentials(OAuthBearer)},
		"garbage":       {[]byte("n,,auth=Bearer x"), invalidCredentials(OAuthBearer)},
	} {
		if user, refusal := oauthExchange(t, v, c.first); user != "" || refusal != c.want {
			t.Errorf("%s: user %q, refusal %q; want %q", name, user, refusal, c.want)
		}
	}

	scoped := &OAuthValidator{PrincipalClaim: "sub", ScopeClaim: "scope", RequiredScope: []string{"kafka", "admin"}}
	if _, refusal := oauthExchange(t, scoped, firstMessage("", unsecuredToken(t, good))); refusal != `{"status":"insufficient_scope", "scope":"kafka admin"}` {
		t.Errorf("missing scope: %q", refusal)
	}
	list := map[string]any{"sub": "alice", "exp": now + 60, "scope": []string{"admin", "kafka"}}
	if user, refusal := oauthExchange(t, scoped, firstMessage("", unsecuredToken(t, list))); user != "alice" {
		t.Errorf("scope given as a list: refusal %q", refusal)
	}
	skewed := &OAuthValidator{PrincipalClaim: "sub", ScopeClaim: "scope", ClockSkew: 5 * time.Second}
	late := map[string]any{"sub": "alice", "exp": now - 2}
	if user, _ := oauthExchange(t, skewed, firstMessage("", unsecuredToken(t, late))); user != "alice" {
		t.Error("a token expired within the clock skew was refused")
	}
}

// A first message Kafka cannot parse fails with a SaslException: the
// client is told only that its credentials are invalid, the log why. A
// refused token's reason is logged with its JSON error, also when the
// client answers the refusal with something other than ^A; a new first
// message instead is read afresh.
func TestOAuthBearerFailureReasons(t *testing.T) {
	now := time.Now().Unix()
	v := &OAuthValidator{PrincipalClaim: "sub", ScopeClaim: "scope"}
	expired := firstMessage("", unsecuredToken(t, map[string]any{"sub": "alice", "exp": now - 1}))
	const refusal = `^\{"status":"invalid_token"\}: the token expired at \d+ s`
	generic := invalidCredentials(OAuthBearer)
	for name, c := range map[string]struct {
		tokens          [][]byte
		message, logged string
	}{
		"no auth":      {[][]byte{[]byte("n,,\x01host=x\x01\x01")}, generic, `^Invalid OAUTHBEARER client first message: 'auth' not specified$`},
		"basic scheme": {[][]byte{[]byte("n,,\x01auth=Basic YWxpY2U=\x01\x01")}, generic, `^Invalid scheme in OAUTHBEARER client first message: Basic$`},
		"garbage":      {[][]byte{[]byte("n,,auth=Bearer x")}, generic, `^Invalid OAUTHBEARER client first message$`},
		"^A":           {[][]byte{expired, {0x01}}, `{"status":"invalid_token"}`, refusal + `$`},
		"sarama's ^A":  {[][]byte{expired, []byte(`\x01`)}, generic, refusal + `; then Invalid OAUTHBEARER client first message$`},
	} {
		s, err := New(OAuthBearer, Stores{OAuth: v})
		if err != nil {
			t.Fatal(err)
		}
		for _, token := range c.tokens {
			if _, _, err = s.Step(token); err != nil {
				break
			}
		}
		f, ok := err.(*Failure)
		if !ok || f.Message != c.message || !regexp.MustCompile(c.logged).MatchString(f.Logged()) {
			t.Errorf("%s: failed with %#v, want message %q and logged %s", name, err, c.message, c.logged)
		}
	}

	s, err := New(OAuthBearer, Stores{OAuth: v})
	if err != nil {
		t.Fatal(err)
	}
	if challenge, _, err := s.Step(expired); err != nil || len(challenge) == 0 {
		t.Fatalf("expired token: challenge %q, err %v", challenge, err)
	}
	good := firstMessage("", unsecuredToken(t, map[string]any{"sub": "alice", "exp": now + 60}))
	if _, done, err := s.Step(good); !done || err != nil || s.User() != "alice" {
		t.Fatalf("a good token after the refusal: done %v, err %v, user %q", done, err, s.User())
	}
}

// jwks writes the public keys as a JWKS document.
func jwks(t *testing.T, keys map[string]crypto.PublicKey) []byte {
	t.Helper()
	var doc struct {
		Keys []map[string]string `json:"keys"`
	}
	for kid, key := range keys {
		switch k := key.(type) {
		case *rsa.PublicKey:
			doc.Keys = append(doc.Keys, map[string]string{"kty": "RSA", "kid": kid, "use": "sig",
				"n": b64.EncodeToString(k.N.Bytes()), "e": b64.EncodeToString(big.NewInt(int64(k.E)).Bytes())})
		case *ecdsa.PublicKey:
			doc.Keys = append(doc.Keys, map[string]string{"kty": "EC", "kid": kid, "crv": k.Curve.Params().Name,
				"x": b64.EncodeToString(k.X.Bytes()), "y": b64.EncodeToString(k.Y.Bytes())})
		}
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestOAuthBearerJWKS(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	doc := jwks(t, map[string]crypto.PublicKey{"r1": &rsaKey.PublicKey, "e1": &ecKey.PublicKey})
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	served := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(doc) }))
	defer served.Close()

	now := time.Now().Unix()
	claims := map[string]any{"sub": "svc", "iat": now, "exp": now + 60, "aud": []string{"kafka"}, "iss": "https://idp"}
	for _, url := range []string{"file://" + path, served.URL} {
		v := &OAuthValidator{PrincipalClaim: "sub", ScopeClaim: "scope", ClockSkew: 30 * time.Second,
			Keys: NewKeySet(url, time.Hour), Audience: []string{"kafka", "other"}, Issuer: "https://idp"}
		for _, c := range []struct {
			alg, kid string
			key      crypto.Signer
		}{{"RS256", "r1", rsaKey}, {"RS512", "r1", rsaKey}, {"PS256", "r1", rsaKey}, {"ES256", "e1", ecKey}, {"RS256", "", rsaKey}} {
			if user, refusal := oauthExchange(t, v, firstMessage("", signedToken(t, c.alg, c.kid, c.key, claims))); user != "svc" {
				t.Errorf("%s: %s signed by %q: refused %q", url, c.alg, c.kid, refusal)
			}
		}
		refused := map[string]string{
			"stranger's key": signedToken(t, "RS256", "r1", stranger, claims),
			"wrong kid":      signedToken(t, "RS256", "e1", rsaKey, claims),
			"unsecured":      unsecuredToken(t, claims),
			"no iat":         signedToken(t, "RS256", "r1", rsaKey, map[string]any{"sub": "svc", "exp": now + 60, "aud": "kafka", "iss": "https://idp"}),
			"audience":       signedToken(t, "RS256", "r1", rsaKey, map[string]any{"sub": "svc", "iat": now, "exp": now + 60, "aud": "web", "iss": "https://idp"}),
			"issuer":         signedToken(t, "RS256", "r1", rsaKey, map[string]any{"sub": "svc", "iat": now, "exp": now + 60, "aud": "kafka", "iss": "https://evil"}),
			"expired":        signedToken(t, "RS256", "r1", rsaKey, map[string]any{"sub": "svc", "iat": now - 120, "exp": now - 60, "aud": "kafka", "iss": "https://idp"}),
		}
		for name, token := range refused {
			if user, refusal := oauthExchange(t, v, firstMessage("", token)); user != "" || refusal != `{"status":"invalid_token"}` {
				t.Errorf("%s: %s: user %q, refusal %q", url, name, user, refusal)
			}
		}
	}

	// The identity provider rotates its key: a token naming a kid the set
	// lacks makes it read the set again. (The validator expects no
	// audience, so the tokens name none.)
	claims = map[string]any{"sub": "svc", "iat": now, "exp": now + 60, "iss": "https://idp"}
	v := &OAuthValidator{PrincipalClaim: "sub", ScopeClaim: "scope", Keys: NewKeySet("file://"+path, time.Hour)}
	if user, _ := oauthExchange(t, v, firstMessage("", signedToken(t, "RS256", "r1", rsaKey, claims))); user != "svc" {
		t.Fatal("token before the rotation refused")
	}
	if err := os.WriteFile(path, jwks(t, map[string]crypto.PublicKey{"r2": &stranger.PublicKey}), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // unknown kids reread the set at most once a second
	rotated := signedToken(t, "RS256", "r2", stranger, claims)
	if user, refusal := oauthExchange(t, v, firstMessage("", rotated)); user != "svc" {
		t.Fatalf("token signed by the new key: %q", refusal)
	}
	if _, refusal := oauthExchange(t, v, firstMessage("", signedToken(t, "RS256", "r1", rsaKey, claims))); !strings.Contains(refusal, "invalid_token") {
		t.Fatalf("token signed by the retired key: %q", refusal)
	}
}

// jwksValidator is a JWKS validator trusting key (kid "k") with a
// 30-second clock skew, and a signer of tokens by that key.
func jwksValidator(t *testing.T) (*OAuthValidator, func(claims map[string]any) string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, jwks(t, map[string]crypto.PublicKey{"k": &key.PublicKey}), 0o600); err != nil {
		t.Fatal(err)
	}
	v := &OAuthValidator{PrincipalClaim: "sub", ScopeClaim: "scope", ClockSkew: 30 * time.Second, Keys: NewKeySet("file://"+path, time.Hour)}
	return v, func(claims map[string]any) string { return signedToken(t, "ES256", "k", key, claims) }
}

// TestOAuthBearerJWKSAudience: without sasl.oauthbearer.expected.audience
// a signed token that names an audience is refused, as Kafka's jose4j
// JwtConsumer (its default audience check) refuses it; with one, the
// token must name one of them.
func TestOAuthBearerJWKSAudience(t *testing.T) {
	v, sign := jwksValidator(t)
	now := time.Now().Unix()
	plain := map[string]any{"sub": "svc", "iat": now, "exp": now + 60}
	withAud := map[string]any{"sub": "svc", "iat": now, "exp": now + 60, "aud": "kafka"}
	if user, refusal := oauthExchange(t, v, firstMessage("", sign(plain))); user != "svc" {
		t.Errorf("no audience expected or named: refused %q", refusal)
	}
	if user, refusal := oauthExchange(t, v, firstMessage("", sign(withAud))); user != "" || refusal != `{"status":"invalid_token"}` {
		t.Errorf("an audience named, none expected: user %q, refusal %q", user, refusal)
	}
	v.Audience = []string{"kafka"}
	if user, refusal := oauthExchange(t, v, firstMessage("", sign(withAud))); user != "svc" {
		t.Errorf("the expected audience: refused %q", refusal)
	}
	if user, refusal := oauthExchange(t, v, firstMessage("", sign(plain))); user != "" || refusal != `{"status":"invalid_token"}` {
		t.Errorf("an audience expected, none named: user %q, refusal %q", user, refusal)
	}
}

// TestOAuthBearerJWKSNotBefore: a signed token is refused before its nbf
// (less the clock skew), as jose4j's NumericDateValidator refuses it.
func TestOAuthBearerJWKSNotBefore(t *testing.T) {
	v, sign := jwksValidator(t)
	now := time.Now().Unix()
	for nbf, ok := range map[int64]bool{now - 60: true, now + 20: true, now + 60: false} {
		user, refusal := oauthExchange(t, v, firstMessage("", sign(map[string]any{"sub": "svc", "iat": now, "exp": now + 300, "nbf": nbf})))
		if ok != (user == "svc") {
			t.Errorf("nbf now%+d: user %q, refusal %q", nbf-now, user, refusal)
		}
	}
}

// TestOAuthBearerJWKSIssuedAt: a signed token issued in the future, or
// expiring at its issue time, is taken, as jose4j takes it for Kafka (no
// iat restrictions; only exp before iat is refused); an unsecured one is
// refused, as Kafka's OAuthBearerValidationUtils refuses it.
func TestOAuthBearerJWKSIssuedAt(t *testing.T) {
	v, sign := jwksValidator(t)
	unsecured := &OAuthValidator{PrincipalClaim: "sub", ScopeClaim: "scope", ClockSkew: 30 * time.Second}
	now := time.Now().Unix()
	for name, claims := range map[string]map[string]any{
		"issued in the future":    {"sub": "svc", "iat": now + 120, "exp": now + 300},
		"expires when issued":     {"sub": "svc", "iat": now + 300, "exp": now + 300},
		"expires before issuing?": {"sub": "svc", "iat": now + 301, "exp": now + 300},
	} {
		wantSigned := claims["iat"].(int64) <= claims["exp"].(int64)
		if user, refusal := oauthExchange(t, v, firstMessage("", sign(claims))); wantSigned != (user == "svc") {
			t.Errorf("signed, %s: user %q, refusal %q", name, user, refusal)
		}
		if user, _ := oauthExchange(t, unsecured, firstMessage("", unsecuredToken(t, claims))); user != "" {
			t.Errorf("unsecured, %s: logged in", name)
		}
	}
}

// TestOAuthBearerJWKSClaimValues: Kafka's ClaimValidationUtils on a signed
// token's claims: the subject is trimmed, the scope's values must be
// neither blank nor repeated, and exp and iat not negative.
func TestOAuthBearerJWKSClaimValues(t *testing.T) {
	v, sign := jwksValidator(t)
	now := time.Now().Unix()
	if user, refusal := oauthExchange(t, v, firstMessage("", sign(map[string]any{"sub": " svc ", "iat": now, "exp": now + 60}))); user != "svc" {
		t.Errorf("a subject with spaces: user %q, refusal %q", user, refusal)
	}
	for name, claims := range map[string]map[string]any{
		"blank scope":    {"sub": "svc", "iat": now, "exp": now + 60, "scope": " "},
		"empty in list":  {"sub": "svc", "iat": now, "exp": now + 60, "scope": []string{"a", ""}},
		"repeated scope": {"sub": "svc", "iat": now, "exp": now + 60, "scope": []string{"a", "a"}},
		"negative iat":   {"sub": "svc", "iat": -1, "exp": now + 60},
	} {
		if user, refusal := oauthExchange(t, v, firstMessage("", sign(claims))); user != "" || refusal != `{"status":"invalid_token"}` {
			t.Errorf("%s: user %q, refusal %q", name, user, refusal)
		}
	}
	if user, refusal := oauthExchange(t, v, firstMessage("", sign(map[string]any{"sub": "svc", "iat": now, "exp": now + 60, "scope": "a b"}))); user != "svc" {
		t.Errorf("a scope string: refused %q", refusal)
	}
}
