package sasl

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
)

// OAuthBearer is the OAUTHBEARER mechanism (RFC 7628, KIP-255).
const OAuthBearer = "OAUTHBEARER"

// The client's first message: a GS2 header with an optional authorization
// id, then key=value pairs each ended by ^A, the last followed by another
// ^A. "auth" carries "Bearer <token>"; the other keys are SASL extensions
// (KIP-342), which Kafka's validators accept whatever they are.
var (
	oauthInitial = regexp.MustCompile("^n,(?:a=((?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01$")
	oauthAuth    = regexp.MustCompile(`^(\w+) +([-_~+/.a-zA-Z0-9]+=*)$`)
)

// OAuthValidator checks the token of an OAUTHBEARER exchange. A listener
// uses Kafka's unsecured validator (tokens signed with "none", the
// default) or its JWKS validator (OAuthBearerValidatorCallbackHandler).
type OAuthValidator struct {
	PrincipalClaim string   // the claim naming the principal ("sub")
	ScopeClaim     string   // the claim holding the scope ("scope")
	RequiredScope  []string // unsecured only: scope every token must have
	ClockSkew      time.Duration
	// Keys, when set, makes the validator Kafka's secured one: the
	// token must be signed by one of the keys, carry exp and iat, and
	// match Audience (any of) and Issuer when they are set.
	Keys     *KeySet
	Audience []string
	Issuer   string
	Now      func() time.Time // nil: time.Now
}

// TokenError is a token that was refused; the client is told Status
// ("invalid_token" or "insufficient_scope") and Scope in RFC 7628's JSON.
type TokenError struct {
	Status, Scope, Reason string
}

func (e *TokenError) Error() string { return e.Reason }

// logged is the refusal as the broker logs it: the JSON the client is
// sent, and why.
func (e *TokenError) logged() string { return oauthErrorJSON(e) + ": " + e.Reason }

func invalidToken(format string, args ...any) *TokenError {
	return &TokenError{Status: "invalid_token", Reason: fmt.Sprintf(format, args...)}
}

// Validate checks a compact JWS and returns the principal it names and
// when it expires.
func (v *OAuthValidator) Validate(token string) (string, time.Time, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", time.Time{}, invalidToken("the token is not a JWS in compact serialization (three parts)")
	}
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := decodeSegment(parts[0], &header); err != nil {
		return "", time.Time{}, invalidToken("the token's header: %v", err)
	}
	claims := map[string]any{}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return "", time.Time{}, invalidToken("the token's claims: %v", err)
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	if v.Keys == nil {
		if header.Alg != "none" || parts[2] != "" {
			return "", time.Time{}, invalidToken("an unsecured JWS must have 'none' for an algorithm and no signature")
		}
		return v.checkClaims(claims, now(), false)
	}
	if header.Alg == "none" {
		return "", time.Time{}, invalidToken("the token is not signed")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return "", time.Time{}, invalidToken("the token's signature is not base64url")
	}
	if err := v.Keys.Verify(header.Alg, header.Kid, []byte(parts[0]+"."+parts[1]), sig); err != nil {
		return "", time.Time{}, invalidToken("the token's signature: %v", err)
	}
	return v.checkClaims(claims, now(), true)
}

func decodeSegment(s string, into any) error {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return fmt.Errorf("not base64url")
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("not a JSON object")
	}
	return nil
}

// checkClaims applies Kafka's claim rules: the principal claim is a
// non-empty string, exp is required and not past (less the clock skew),
// and the scope, audience and issuer are what the listener asks for.
// Unsecured: iat, if any, is not in the future and exp is after it.
// Signed (the checks of jose4j and ClaimValidationUtils): the principal
// is trimmed, the scope's values neither blank nor repeated, iat is
// required and not negative (it may be in the future), exp is not before
// it, nbf (if any) is not in the future, and aud is absent when no
// audience is expected.
func (v *OAuthValidator) checkClaims(claims map[string]any, now time.Time, signed bool) (string, time.Time, error) {
	principal, _ := claims[v.PrincipalClaim].(string)
	if strings.TrimSpace(principal) == "" {
		return "", time.Time{}, invalidToken("required claim missing or not a string: %s", v.PrincipalClaim)
	}
	if signed {
		// Kafka's ClaimValidationUtils: the subject trimmed, the scope's
		// values neither blank nor repeated, iat not negative.
		principal = strings.TrimSpace(principal)
		if err := v.checkScopeValues(claims[v.ScopeClaim]); err != nil {
			return "", time.Time{}, err
		}
		if iat, ok := numericClaim(claims, "iat"); ok && iat < 0 {
			return "", time.Time{}, invalidToken("iat is negative")
		}
	}
	exp, ok := numericClaim(claims, "exp")
	if !ok {
		return "", time.Time{}, invalidToken("required claim missing: exp")
	}
	nowMs, skewMs := float64(now.UnixMilli()), float64(v.ClockSkew.Milliseconds())
	if nowMs-skewMs >= 1000*exp {
		return "", time.Time{}, invalidToken("the token expired at %.0f s", exp)
	}
	iat, hasIat := numericClaim(claims, "iat")
	switch {
	case !hasIat && signed:
		return "", time.Time{}, invalidToken("required claim missing: iat")
	case hasIat && signed && exp < iat:
		// jose4j's checks for Kafka's signed-token validator: exp not
		// before iat, and iat may be in the future.
		return "", time.Time{}, invalidToken("the token's expiration is before its issue time")
	case hasIat && !signed && 1000*iat > nowMs+skewMs:
		return "", time.Time{}, invalidToken("the token was issued at %.0f s, in the future", iat)
	case hasIat && !signed && exp <= iat:
		return "", time.Time{}, invalidToken("the token's expiration is not after its issue time")
	}
	if nbf, ok := numericClaim(claims, "nbf"); ok && signed {
		// Only a signed token's, as jose4j checks it for Kafka.
		switch {
		case exp < nbf:
			return "", time.Time{}, invalidToken("the token's expiration is before its not-before time")
		case 1000*nbf > nowMs+skewMs:
			return "", time.Time{}, invalidToken("the token is not valid before %.0f s", nbf)
		}
	}
	scope := scopeClaim(claims[v.ScopeClaim])
	for _, want := range v.RequiredScope {
		if !scope[want] {
			return "", time.Time{}, &TokenError{Status: "insufficient_scope", Scope: strings.Join(v.RequiredScope, " "),
				Reason: fmt.Sprintf("the token's scope lacks %s", want)}
		}
	}
	switch _, named := claims["aud"]; {
	case signed && len(v.Audience) == 0 && named:
		// jose4j's JwtConsumer, which Kafka's signed-token validator
		// uses, refuses a token naming an audience when none is expected.
		return "", time.Time{}, invalidToken("the token names an audience, and sasl.oauthbearer.expected.audience none")
	case len(v.Audience) > 0 && !audienceMatches(claims["aud"], v.Audience):
		return "", time.Time{}, invalidToken("the token's audience is not one of %v", v.Audience)
	}
	if v.Issuer != "" && claims["iss"] != v.Issuer {
		return "", time.Time{}, invalidToken("the token's issuer is not %s", v.Issuer)
	}
	return principal, time.UnixMilli(int64(1000 * exp)), nil
}

// checkScopeValues refuses a signed token's scope (a string, or a list)
// with a blank or repeated value.
func (v *OAuthValidator) checkScopeValues(raw any) error {
	var values []any
	switch s := raw.(type) {
	case string:
		values = []any{s}
	case []any:
		values = s
	}
	seen := map[string]bool{}
	for _, e := range values {
		str, _ := e.(string)
		str = strings.TrimSpace(str)
		switch {
		case str == "":
			return invalidToken("the %s claim has a blank value", v.ScopeClaim)
		case seen[str]:
			return invalidToken("the %s claim has %s twice", v.ScopeClaim, str)
		}
		seen[str] = true
	}
	return nil
}

func numericClaim(claims map[string]any, name string) (float64, bool) {
	f, ok := claims[name].(float64)
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// scopeClaim reads a scope given as a space-separated string or as a list.
func scopeClaim(raw any) map[string]bool {
	out := map[string]bool{}
	switch s := raw.(type) {
	case string:
		for _, f := range strings.Fields(s) {
			out[f] = true
		}
	case []any:
		for _, e := range s {
			if str, ok := e.(string); ok {
				out[str] = true
			}
		}
	}
	return out
}

func audienceMatches(raw any, want []string) bool {
	var got []string
	switch a := raw.(type) {
	case string:
		got = []string{a}
	case []any:
		for _, e := range a {
			if s, ok := e.(string); ok {
				got = append(got, s)
			}
		}
	}
	for _, g := range got {
		for _, w := range want {
			if g == w {
				return true
			}
		}
	}
	return false
}

// oauthServer is one OAUTHBEARER exchange, as Kafka's OAuthBearerSaslServer:
// a refused token is answered with RFC 7628's JSON error as a challenge,
// and the client's ^A that acknowledges it ends the exchange with that
// JSON as the failure. Anything else after a refusal is read as a new
// first message. The log gets why the token was refused, as Kafka's
// validator logs it.
type oauthServer struct {
	v       *OAuthValidator
	user    string
	expires time.Time   // the token's exp
	refused *TokenError // the token refused, awaiting the client's ^A
}

func (s *oauthServer) Step(token []byte) ([]byte, bool, error) {
	refused := s.refused
	s.refused = nil
	if refused != nil && len(token) == 1 && token[0] == 0x01 {
		return nil, false, &Failure{Message: oauthErrorJSON(refused), Reason: refused.logged()}
	}
	challenge, done, err := s.first(token)
	if f, ok := err.(*Failure); ok && refused != nil {
		// A client that does not acknowledge the refusal with a lone
		// ^A (sarama 1.61 sends the four characters `\x01`) fails on
		// that message, but the log keeps why its token was refused.
		f.Reason = refused.logged() + "; then " + f.Logged()
	}
	return challenge, done, err
}

// first takes a client first message: the token's principal, or the
// refusal to send, or a failure.
func (s *oauthServer) first(token []byte) ([]byte, bool, error) {
	m := oauthInitial.FindSubmatch(token)
	if m == nil {
		return nil, false, unreadableMessage("Invalid OAUTHBEARER client first message")
	}
	authzid := strings.NewReplacer("=2C", ",", "=3D", "=").Replace(string(m[1]))
	var auth string
	for _, kv := range strings.Split(string(m[2]), "\x01") {
		if k, val, ok := strings.Cut(kv, "="); ok && k == "auth" {
			auth = val
		}
	}
	if auth == "" {
		return nil, false, unreadableMessage("Invalid OAUTHBEARER client first message: 'auth' not specified")
	}
	am := oauthAuth.FindStringSubmatch(auth)
	if am == nil {
		return nil, false, unreadableMessage("Invalid OAUTHBEARER client first message: invalid 'auth' format")
	}
	if !strings.EqualFold(am[1], "bearer") {
		return nil, false, unreadableMessage("Invalid scheme in OAUTHBEARER client first message: " + am[1])
	}
	principal, expires, err := s.v.Validate(am[2])
	if err != nil {
		s.refused, _ = err.(*TokenError)
		return []byte(oauthErrorJSON(s.refused)), false, nil
	}
	if authzid != "" && authzid != principal {
		return nil, false, &Failure{Message: fmt.Sprintf(
			"Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)",
			authzid, principal)}
	}
	s.user, s.expires = principal, expires
	return []byte{}, true, nil
}

// unreadableMessage is a client first message Kafka cannot parse: it
// throws a SaslException, whose text goes to its log only.
func unreadableMessage(reason string) *Failure {
	return &Failure{Message: invalidCredentials(OAuthBearer), Reason: reason}
}

func (s *oauthServer) User() string { return s.user }

// Refusal is the refused token's JSON error and why, while the client has
// not acknowledged it; "" when there is none.
func (s *oauthServer) Refusal() string {
	if s.refused == nil {
		return ""
	}
	return s.refused.logged()
}

// Expiry is when the token the client logged in with expires.
func (s *oauthServer) Expiry() (time.Time, bool) { return s.expires, !s.expires.IsZero() }

// oauthErrorJSON is RFC 7628's error, as Kafka writes it.
func oauthErrorJSON(e *TokenError) string {
	out := `{"status":"` + e.Status + `"`
	if e.Scope != "" {
		out += `, "scope":"` + e.Scope + `"`
	}
	return out + "}"
}
