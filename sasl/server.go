package sasl

import (
	"fmt"
	"strings"
	"time"
)

// Mechanism names as clients ask for them in SaslHandshake.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Supported reports whether a mechanism can be enabled on a listener.
func Supported(mechanism string) bool {
	switch mechanism {
	case Plain, ScramSHA256, ScramSHA512, OAuthBearer:
		return true
	}
	return false
}

// Server is one authentication exchange on one connection.
type Server interface {
	// Step takes the client's next token and returns the server's answer;
	// done is set when the client is authenticated. An error ends the
	// exchange; it is a *Failure.
	Step(token []byte) (challenge []byte, done bool, err error)
	// User is the authenticated user's name, once Step is done.
	User() string
}

// Expiring is a Server whose credential expires (an OAUTHBEARER token):
// the session ends then, unless the client re-authenticates (KIP-368).
type Expiring interface {
	Expiry() (time.Time, bool)
}

// Refusing is a Server that can turn the client's credentials down in a
// challenge, which the client must acknowledge before the exchange fails
// (OAUTHBEARER's ^A, RFC 7628).
type Refusing interface {
	// Refusal says what the client was told and why, while it has not
	// acknowledged it; "" otherwise.
	Refusal() string
}

// Failure is a failed authentication. Message is what the client is told;
// Reason, when set, is what the broker logs instead: why, in the detail
// Kafka keeps to its own log.
type Failure struct {
	Message, Reason string
}

func (f *Failure) Error() string { return f.Message }

// Logged is what the broker logs of the failure.
func (f *Failure) Logged() string {
	if f.Reason != "" {
		return f.Reason
	}
	return f.Message
}

// DuringReauthentication is the failure as Kafka tells it when it ends a
// re-authentication: the generic message says "during re-authentication".
func (f *Failure) DuringReauthentication() *Failure {
	rest, ok := strings.CutPrefix(f.Message, "Authentication failed during authentication ")
	if !ok {
		return f
	}
	return &Failure{Message: "Authentication failed during re-authentication " + rest, Reason: f.Reason}
}

// invalidCredentials is the message Kafka gives a client for a SaslException,
// whatever its cause, so as to tell nothing of the credentials.
func invalidCredentials(mechanism string) string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mechanism
}

// Credentials finds a user's SCRAM credential for a mechanism.
type Credentials func(user string, m ScramMechanism) (Credential, bool)

// TokenLogin is what a SCRAM login with a delegation token checks: the
// credential derived from the token's HMAC, the owner the connection
// becomes, and when the token expires.
type TokenLogin struct {
	Owner      string
	Expiry     time.Time
	Credential Credential
}

// Tokens finds an unexpired delegation token's login by the token's id.
type Tokens func(id string, m ScramMechanism) (TokenLogin, bool)

// TokenAuthenticated is a Server whose login may have been a delegation
// token's; such a connection may not create, renew or expire tokens.
type TokenAuthenticated interface {
	TokenAuthenticated() bool
}

// Stores are where a login's credentials are looked up: PLAIN users and
// passwords, users' SCRAM credentials, delegation tokens, and OAUTHBEARER
// token validation.
type Stores struct {
	PlainUsers  map[string]string
	Credentials Credentials
	Tokens      Tokens
	OAuth       *OAuthValidator
}

// New starts an exchange for a mechanism the listener has enabled.
func New(mechanism string, st Stores) (Server, error) {
	switch mechanism {
	case OAuthBearer:
		if st.OAuth == nil {
			return nil, fmt.Errorf("OAUTHBEARER has no token validation configured")
		}
		return &oauthServer{v: st.OAuth}, nil
	case Plain:
		return &plainServer{users: st.PlainUsers}, nil
	case ScramSHA256, ScramSHA512:
		return &scramServer{mech: ScramMechanismNamed(mechanism), creds: st.Credentials, tokens: st.Tokens}, nil
	}
	return nil, fmt.Errorf("unsupported SASL mechanism %s", mechanism)
}
