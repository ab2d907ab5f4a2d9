package compat

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaTokens is a sarama.AccessTokenProvider: each call gives the token
// the function returns.
type saramaTokens func() (string, error)

func (f saramaTokens) Token() (*sarama.AccessToken, error) {
	token, err := f()
	return &sarama.AccessToken{Token: token}, err
}

// saramaStaticToken always gives token.
func saramaStaticToken(token string) saramaTokens {
	return func() (string, error) { return token, nil }
}

// saramaOAuthConfig is a sarama config logging in with OAUTHBEARER and
// tokens from provider.
func saramaOAuthConfig(provider sarama.AccessTokenProvider) *sarama.Config {
	cfg := saramaEnv{proto: sarama.V4_0_0_0}.config()
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Mechanism = sarama.SASLTypeOAuth
	cfg.Net.SASL.TokenProvider = provider
	return cfg
}

// TestSaramaOAuthBearer: sarama logs in with OAUTHBEARER through an
// AccessTokenProvider, on the JWKS-checked listener with tokens it asks
// the identity provider's client credentials grant for, on the unsecured
// listener with an unsecured token; through each it produces what the
// broker stores and reads it back. An expired token from the identity
// provider is refused.
func TestSaramaOAuthBearer(t *testing.T) {
	version := moduleVersion(t, "github.com/IBM/sarama")
	feature(t, saramaClientName, version, "oauthbearer", func(t *testing.T) {
		idp := startIdentityProvider(t, map[string]string{"sarama-app": "sarama-secret"})
		b := startOAuthBroker(t, idp)
		fetched := saramaTokens(func() (string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return clientCredentialsToken(ctx, idp.TokenURL, "sarama-app", "sarama-secret")
		})
		for _, l := range []struct {
			name, addr string
			tokens     sarama.AccessTokenProvider
		}{
			{"secured", b.securedAddr, fetched},
			{"unsecured", b.unsecuredAddr, saramaStaticToken(UnsecuredToken("sarama-dev"))},
		} {
			topic := "sarama-oauth-" + l.name
			createTopic(t, b.adm, topic)
			recs := makeRecords(topic, 50)
			cfg := saramaOAuthConfig(l.tokens)
			saramaProduce(t, l.addr, topic, recs, cfg)
			checkStored(t, b.plainAddr, topic, recs, 0)
			sameRecords(t, l.name+" consumed", saramaConsumeAll(t, l.addr, topic, cfg), recs)
		}

		expired := saramaOAuthConfig(saramaStaticToken(idp.Token("sarama-app", -time.Hour)))
		expired.Metadata.Retry.Max = 0
		// sarama answers the refusal with the four characters `\x01`
		// rather than ^A, which Kafka reads as a first message it cannot
		// parse: its client is told no more than this.
		const message = "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"
		cl, err := sarama.NewClient([]string{b.securedAddr}, expired)
		if err == nil {
			cl.Close()
		}
		if !errors.Is(err, sarama.ErrSASLAuthenticationFailed) || !strings.Contains(err.Error(), message) {
			t.Fatalf("an expired token: %v, want SASL_AUTHENTICATION_FAILED with %q", err, message)
		}
		b.expectRefusedToken(t)
	})
}
