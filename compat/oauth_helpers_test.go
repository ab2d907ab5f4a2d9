package compat

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
)

// identityProvider is a small OAuth 2 authorization server on 127.0.0.1,
// as OIDC clients meet one: its key set at JWKSURL and a client
// credentials grant at TokenURL, which gives the registered client an
// RS256 access token whose subject is the client id.
type identityProvider struct {
	JWKSURL, TokenURL string
	Issuer, Audience  string
	key               *rsa.PrivateKey
	clients           map[string]string // client id -> secret
}

func startIdentityProvider(t *testing.T, clients map[string]string) *identityProvider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	idp := &identityProvider{key: key, clients: clients, Audience: "gregor"}
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks.json", func(w http.ResponseWriter, _ *http.Request) {
		enc := base64.RawURLEncoding
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "idp-1", "use": "sig", "alg": "RS256",
			"n": enc.EncodeToString(key.N.Bytes()), "e": enc.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}})
	})
	mux.HandleFunc("/token", idp.grant)
	srv := httptest.NewServer(mux) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	idp.JWKSURL, idp.TokenURL, idp.Issuer = srv.URL+"/jwks.json", srv.URL+"/token", srv.URL
	return idp
}

// grant answers a client credentials request (client id and secret in
// HTTP basic auth or in the form) with a token, or 401.
func (idp *identityProvider) grant(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if want, known := idp.clients[id]; !known || want != secret {
		http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": idp.Token(id, time.Hour), "token_type": "Bearer", "expires_in": 3600})
}

// Token is an access token for subject, valid for lifetime (expired when
// lifetime is negative).
func (idp *identityProvider) Token(subject string, lifetime time.Duration) string {
	enc := base64.RawURLEncoding
	seg := func(v any) string {
		raw, _ := json.Marshal(v)
		return enc.EncodeToString(raw)
	}
	now := time.Now()
	iat := now
	if lifetime < 0 {
		iat = now.Add(2 * lifetime)
	}
	input := seg(map[string]string{"alg": "RS256", "kid": "idp-1", "typ": "JWT"}) + "." + seg(map[string]any{
		"sub": subject, "iss": idp.Issuer, "aud": idp.Audience, "scope": "kafka",
		"iat": iat.Unix(), "exp": now.Add(lifetime).Unix()})
	digest := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, idp.key, crypto.SHA256, digest[:])
	if err != nil {
		panic(err)
	}
	return input + "." + enc.EncodeToString(sig)
}

// UnsecuredToken is a JWT signed with "none" for subject, as Kafka's
// unsecured login and librdkafka's unsecure JWT make them.
func UnsecuredToken(subject string) string {
	enc := base64.RawURLEncoding
	now := time.Now().Unix()
	claims, _ := json.Marshal(map[string]any{"sub": subject, "iat": now, "exp": now + 3600, "scope": "kafka"})
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(claims) + "."
}

// oauthBroker is a gregor with two OAUTHBEARER listeners, configured with
// Kafka's keys: UNSECURED (SASL_PLAINTEXT, Kafka's default validator,
// unsecured tokens) and SECURED (SASL_PLAINTEXT, Kafka's JWKS validator
// against idp's key set, its issuer and audience), and a PLAINTEXT
// listener for the checks.
type oauthBroker struct {
	unsecuredAddr, securedAddr, plainAddr string
	adm                                   *kadm.Client
	logs                                  string
}

func startOAuthBroker(t *testing.T, idp *identityProvider) oauthBroker {
	t.Helper()
	const module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	p := harness.Start(t, t.TempDir(),
		"listeners=UNSECURED://127.0.0.1:0,SECURED://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
		"listener.security.protocol.map=UNSECURED:SASL_PLAINTEXT,SECURED:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"sasl.enabled.mechanisms=OAUTHBEARER",
		"listener.name.unsecured.oauthbearer.sasl.jaas.config="+module+" required;",
		"listener.name.secured.oauthbearer.sasl.jaas.config="+module+" required;",
		"listener.name.secured.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"listener.name.secured.oauthbearer.sasl.oauthbearer.jwks.endpoint.url="+idp.JWKSURL,
		"listener.name.secured.oauthbearer.sasl.oauthbearer.expected.issuer="+idp.Issuer,
		"listener.name.secured.oauthbearer.sasl.oauthbearer.expected.audience="+idp.Audience,
		"group.initial.rebalance.delay.ms=0")
	b := oauthBroker{unsecuredAddr: p.ListenerAddr(t, "UNSECURED"), securedAddr: p.ListenerAddr(t, "SECURED"), plainAddr: p.ListenerAddr(t, "PLAINTEXT"), logs: p.Logs}
	b.adm = newAdmin(t, b.plainAddr)
	return b
}

// expectRefusedToken checks that the broker logged a refused OAUTHBEARER
// token (RFC 7628's invalid_token), not a failure of anything else.
func (b oauthBroker) expectRefusedToken(t *testing.T) {
	t.Helper()
	logs, err := os.ReadFile(b.logs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), `msg="failed authentication"`) || !strings.Contains(string(logs), `invalid_token`) {
		t.Fatalf("the broker logged no refused OAUTHBEARER token:\n%s", logs)
	}
}

// clientCredentialsToken asks the token endpoint for an access token with
// the client credentials grant, as OIDC clients do.
func clientCredentialsToken(ctx context.Context, tokenURL, id, secret string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {"kafka"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("token endpoint answered %s (%v)", resp.Status, err)
	}
	return body.AccessToken, nil
}
