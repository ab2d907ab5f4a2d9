package sasl

import (
	"fmt"
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

// invalidCredentials is the message Kafka gives a client for a SaslException,
// whatever its cause, so as to tell nothing of the credentials.
func invalidCredentials(mechanism string) string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mechanism
}

// Credentials finds a user's SCRAM credential for a mechanism.
type Credentials func(user string, m ScramMechanism) (Credential, bool)

// New starts an exchange for a mechanism the listener has enabled:
// plainUsers are the PLAIN users and passwords, creds the SCRAM
// credentials, oauth the OAUTHBEARER token validation.
func New(mechanism string, plainUsers map[string]string, creds Credentials, oauth *OAuthValidator) (Server, error) {
	switch mechanism {
	case OAuthBearer:
		if oauth == nil {
			return nil, fmt.Errorf("OAUTHBEARER has no token validation configured")
		}
		return &oauthServer{v: oauth}, nil
	case Plain:
		return &plainServer{users: plainUsers}, nil
	case ScramSHA256, ScramSHA512:
		return &scramServer{mech: ScramMechanismNamed(mechanism), creds: creds}, nil
	}
	return nil, fmt.Errorf("unsupported SASL mechanism %s", mechanism)
}
