package broker

// OAUTHBEARER on SASL listeners (KIP-255, KIP-768), configured as in
// Kafka. A listener enabling it needs the login module's JAAS config:
//
//	listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;
//
// Tokens are then checked by Kafka's default validator, which accepts
// unsecured JWTs (alg "none"; for development, as Kafka warns), with its
// unsecuredValidator* JAAS options. Setting
//
//	listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
//
// makes the listener verify signed JWTs against the keys of
// sasl.oauthbearer.jwks.endpoint.url (https, http or file), with
// sasl.oauthbearer.expected.audience, .expected.issuer, .sub.claim.name,
// .scope.claim.name and .clock.skew.seconds. The principal is the token's
// subject. As the inter-broker mechanism, OAUTHBEARER logs replicas in
// with an unsecured token whose subject is unsecuredLoginStringClaim_sub.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/sasl"
	fsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

const (
	oauthLoginModule   = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	unsecuredSubOption = "unsecuredLoginStringClaim_sub"
	// The server callback handler classes Kafka ships for OAUTHBEARER.
	unsecuredValidatorClass = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
	jwksValidatorClass      = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	jwksValidatorClassOld   = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
	callbackHandlerKey      = "sasl.server.callback.handler.class"
)

var oauthKeys = []configKey{
	{"sasl.oauthbearer.jwks.endpoint.url", "STRING", "", "The URL of the JSON Web Key Set that signed OAUTHBEARER tokens are verified against (https, http or file).", checked(func(string) error { return nil })},
	{"sasl.oauthbearer.jwks.endpoint.refresh.ms", "LONG", "3600000", "How often the JWKS is read again.", checked(func(v string) error {
		_, err := parseInt(v, 1, math.MaxInt64)
		return err
	})},
	{"sasl.oauthbearer.expected.audience", "LIST", "", "Audiences of which a token's aud claim must name one.", checked(func(string) error { return nil })},
	{"sasl.oauthbearer.expected.issuer", "STRING", "", "The issuer a token's iss claim must name.", checked(func(string) error { return nil })},
	{"sasl.oauthbearer.sub.claim.name", "STRING", "sub", "The claim naming the token's principal.", checked(func(string) error { return nil })},
	{"sasl.oauthbearer.scope.claim.name", "STRING", "scope", "The claim holding the token's scope.", checked(func(string) error { return nil })},
	{"sasl.oauthbearer.clock.skew.seconds", "INT", "30", "The clock difference with the token's issuer that is tolerated.", checked(func(v string) error {
		_, err := parseInt(v, 0, math.MaxInt32)
		return err
	})},
}

func init() {
	brokerKeys = append(brokerKeys, oauthKeys...)
}

// isOAuthListenerKey reports whether setting, after "listener.name.<l>.",
// is an OAUTHBEARER key: the mechanism's callback handler class, or one
// of oauthKeys with or without the mechanism prefix.
func isOAuthListenerKey(setting string) bool {
	rest, _ := strings.CutPrefix(setting, "oauthbearer.")
	if rest == callbackHandlerKey {
		return setting != rest
	}
	for _, k := range oauthKeys {
		if k.name == rest {
			return true
		}
	}
	return false
}

// oauthValue is an OAUTHBEARER key's value on a listener (see
// mechanismValue), or its default.
func (c *Config) oauthValue(listener, key string) (string, string) {
	if v, from := c.mechanismValue(listener, sasl.OAuthBearer, key); v != "" || key == callbackHandlerKey {
		return v, from
	}
	for _, k := range oauthKeys {
		if k.name == key {
			return k.def, key
		}
	}
	return "", key
}

// oauthValidator is the token validation of a listener's OAUTHBEARER.
func (c *Config) oauthValidator(listener string, jaas sasl.JAAS) (*sasl.OAuthValidator, error) {
	handler, handlerKey := c.oauthValue(listener, callbackHandlerKey)
	switch handler {
	case "", unsecuredValidatorClass:
		return unsecuredValidator(jaas.Options)
	case jwksValidatorClass, jwksValidatorClassOld:
	default:
		return nil, fmt.Errorf("invalid value for config key %s: %s is not a validator Gregor has (it has %s and %s)",
			handlerKey, handler, unsecuredValidatorClass, jwksValidatorClass)
	}
	url, urlKey := c.oauthValue(listener, "sasl.oauthbearer.jwks.endpoint.url")
	if url == "" {
		return nil, fmt.Errorf("listener %s verifies OAUTHBEARER tokens with %s, which needs %s", listener, handler, urlKey)
	}
	get := func(key string) string { v, _ := c.oauthValue(listener, key); return v }
	refresh, _ := strconv.ParseInt(get("sasl.oauthbearer.jwks.endpoint.refresh.ms"), 10, 64)
	skew, _ := strconv.ParseInt(get("sasl.oauthbearer.clock.skew.seconds"), 10, 64)
	return &sasl.OAuthValidator{
		PrincipalClaim: get("sasl.oauthbearer.sub.claim.name"),
		ScopeClaim:     get("sasl.oauthbearer.scope.claim.name"),
		ClockSkew:      time.Duration(skew) * time.Second,
		Keys:           sasl.NewKeySet(url, time.Duration(refresh)*time.Millisecond),
		Audience:       splitList(get("sasl.oauthbearer.expected.audience")),
		Issuer:         get("sasl.oauthbearer.expected.issuer"),
	}, nil
}

// unsecuredValidator is Kafka's OAuthBearerUnsecuredValidatorCallbackHandler
// with its JAAS options.
func unsecuredValidator(opts map[string]string) (*sasl.OAuthValidator, error) {
	option := func(name, def string) string {
		if v := strings.TrimSpace(opts["unsecuredValidator"+name]); v != "" {
			return v
		}
		return def
	}
	skew, err := strconv.ParseInt(option("AllowableClockSkewMs", "0"), 10, 32)
	if err != nil || skew < 0 {
		return nil, fmt.Errorf("OAUTHBEARER JAAS option unsecuredValidatorAllowableClockSkewMs must be a non-negative number of milliseconds")
	}
	return &sasl.OAuthValidator{
		PrincipalClaim: option("PrincipalClaimName", "sub"),
		ScopeClaim:     option("ScopeClaimName", "scope"),
		RequiredScope:  strings.Fields(option("RequiredScope", "")),
		ClockSkew:      time.Duration(skew) * time.Millisecond,
	}, nil
}

// unsecuredLogin logs in with an unsecured token, as Kafka's
// OAuthBearerUnsecuredLoginCallbackHandler makes from the JAAS options
// unsecuredLoginStringClaim_sub and unsecuredLoginLifetimeSeconds.
func unsecuredLogin(opts map[string]string) fsasl.Mechanism {
	return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		lifetime, err := strconv.ParseInt(opts["unsecuredLoginLifetimeSeconds"], 10, 64)
		if err != nil || lifetime <= 0 {
			lifetime = 3600
		}
		now := time.Now().Unix()
		claims, err := json.Marshal(map[string]any{"sub": opts[unsecuredSubOption], "iat": now, "exp": now + lifetime})
		if err != nil {
			return oauth.Auth{}, err
		}
		enc := base64.RawURLEncoding
		return oauth.Auth{Token: enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(claims) + "."}, nil
	})
}
