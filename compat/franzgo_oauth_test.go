package compat

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// TestFranzGoOAuthBearer: franz-go logs in with OAUTHBEARER, with an
// unsecured token and with a token from the identity provider's client
// credentials grant, and produces what the broker stores; an unsigned token on the
// JWKS-checked listener is refused.
func TestFranzGoOAuthBearer(t *testing.T) {
	version := moduleVersion(t, "github.com/twmb/franz-go")
	feature(t, "franz-go", version, "oauthbearer", func(t *testing.T) {
		idp := startIdentityProvider(t, map[string]string{"franz-app": "franz-secret"})
		b := startOAuthBroker(t, idp)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		fetched := oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
			token, err := clientCredentialsToken(ctx, idp.TokenURL, "franz-app", "franz-secret")
			return oauth.Auth{Token: token}, err
		})
		for addr, mech := range map[string]kgo.Opt{
			b.unsecuredAddr: kgo.SASL(oauth.Auth{Token: UnsecuredToken("franz-dev")}.AsMechanism()),
			b.securedAddr:   kgo.SASL(fetched),
		} {
			topic := "franz-oauth-" + map[bool]string{true: "secured", false: "unsecured"}[addr == b.securedAddr]
			createTopic(t, b.adm, topic)
			recs := makeRecords(topic, 50)
			franzProduce(t, ctx, addr, topic, recs, mech, kgo.ProducerBatchCompression(kgo.NoCompression()))
			checkStored(t, b.plainAddr, topic, recs, 0)
		}
		refused := franzClient(t, b.securedAddr, kgo.SASL(oauth.Auth{Token: UnsecuredToken("franz-app")}.AsMechanism()))
		if err := refused.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("an unsigned token on the JWKS listener: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
		b.expectRefusedToken(t)
	})
}
