package broker

// SASL authentication on a connection (Kafka's SaslServerAuthenticator).
// A connection on a SASL_PLAINTEXT listener starts in the handshake state
// and is admitted to the broker's other APIs only once authenticated:
//
//	handshake:  ApiVersions (once answered without error), then SaslHandshake(mechanism)
//	tokens:     SaslAuthenticate, one per token      (SaslHandshake v1)
//	raw tokens: bare size-prefixed tokens, no header (SaslHandshake v0)
//	done:       every API; the user is the connection's principal
//
// Any other request before that fails the authentication, as in Kafka
// (an IllegalSaslStateException): a client that took an OAUTHBEARER
// refusal for success and carries on is turned away like one that
// acknowledged it. Kafka answers such a request that comes instead of a
// SaslAuthenticate with its own error response (ILLEGAL_SASL_STATE)
// before closing; Gregor closes without one. The session lasts
// connections.max.reauth.ms, or until the credential expires (an
// OAUTHBEARER token's exp) when that is sooner, as SaslAuthenticate tells
// the client (KIP-368). Before then the client re-authenticates on the
// same connection (SaslHandshake v1 and SaslAuthenticate, at most once a
// second, as the same user with the same mechanism); after it, a
// SaslHandshake still starts one, as in Kafka, and any other request
// closes the connection. A failed authentication (unknown mechanism, bad
// credentials, a request out of turn) is logged, answered after
// connection.failed.authentication.delay.ms, and the connection closed;
// on a raw-token connection it is closed without an answer. SaslHandshake and SaslAuthenticate on a PLAINTEXT listener or
// after authentication get ILLEGAL_SASL_STATE, as from Kafka's KafkaApis.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/gregor-broker/gregor/sasl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type authState int

const (
	authHandshake authState = iota
	authTokens
	authRawTokens
)

// authExchange is a SASL connection's authentication in progress.
type authExchange struct {
	state     authState
	security  ListenerSecurity
	mechanism string
	server    sasl.Server
	// reauthOf is the mechanism of the session being re-authenticated;
	// badMechanism the failure when the client asked for another.
	reauthOf, badMechanism string
	// versionsAnswered is set once an ApiVersions before the handshake
	// was answered without an error: Kafka takes no other.
	versionsAnswered bool
}

// admits reports whether a request may come in the exchange's state, or
// why the authentication fails: a request out of turn, and the refusal
// the client did not acknowledge, if any.
func (a *authExchange) admits(key int16) error {
	switch {
	case a.state == authHandshake && (key == 18 && !a.versionsAnswered || key == 17):
		return nil
	case a.state == authTokens && key == 36:
		return nil
	}
	err := fmt.Errorf("unexpected %s request during SASL authentication", kmsg.NameForKey(key))
	if r, ok := a.server.(sasl.Refusing); ok && r.Refusal() != "" {
		err = fmt.Errorf("%w, which refused the client's %s credentials: %s", err, a.mechanism, r.Refusal())
	}
	return err
}

// principal is the connection's user for quotas and ACLs: the SASL user
// or the client certificate's subject, or ANONYMOUS without either.
func (c *conn) principal() string {
	if c.user == "" {
		return anonymousUser
	}
	return c.user
}

func handleSaslHandshake(b *Broker, c *conn, req *kmsg.SASLHandshakeRequest) (*kmsg.SASLHandshakeResponse, error) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if c.auth == nil && c.mayReauthenticate(req.Version) {
		c.auth = &authExchange{security: c.listener.security, reauthOf: c.mechanism}
		c.lastReauth = time.Now()
	}
	a := c.auth
	if a == nil || a.state != authHandshake {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	resp.SupportedMechanisms = a.security.Mechanisms
	if !slices.Contains(a.security.Mechanisms, req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.authFailed = "unsupported SASL mechanism " + req.Mechanism
		return resp, nil
	}
	server, err := sasl.New(req.Mechanism, sasl.Stores{PlainUsers: a.security.PlainUsers, Credentials: b.scramCredential,
		Tokens: b.tokenLogin, OAuth: a.security.OAuth})
	if err != nil {
		return nil, err
	}
	a.mechanism, a.server = req.Mechanism, server
	if a.reauthOf != "" && a.reauthOf != req.Mechanism {
		a.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'",
			req.Mechanism, a.reauthOf)
	}
	a.state = authTokens
	if req.Version == 0 {
		a.state = authRawTokens
	}
	return resp, nil
}

func handleSaslAuthenticate(b *Broker, c *conn, req *kmsg.SASLAuthenticateRequest) (*kmsg.SASLAuthenticateResponse, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if c.auth == nil || c.auth.state != authTokens {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate request received after successful authentication")
		return resp, nil
	}
	challenge, lifetime, err := c.authStep(req.SASLAuthBytes)
	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		return resp, nil
	}
	resp.SASLAuthBytes, resp.SessionLifetimeMillis = challenge, lifetime
	return resp, nil
}

// mayReauthenticate reports whether a SaslHandshake on an authenticated
// connection starts a re-authentication: the session expires, the
// handshake is v1 (v0 has no session lifetime), and the last one began a
// second or more ago, as in Kafka.
func (c *conn) mayReauthenticate(version int16) bool {
	return !c.sessionExpires.IsZero() && version >= 1 && time.Since(c.lastReauth) >= time.Second
}

// authStep gives the client's token to the mechanism; when it completes
// the exchange the connection is authenticated, and the session's
// lifetime in milliseconds is returned (0: it does not expire).
func (c *conn) authStep(token []byte) ([]byte, int64, error) {
	a := c.auth
	if a.badMechanism != "" {
		c.authFailed = a.badMechanism
		return nil, 0, errors.New(a.badMechanism)
	}
	challenge, done, err := a.server.Step(token)
	if err != nil {
		c.authFailed = err.Error()
		if f, ok := err.(*sasl.Failure); ok {
			c.authFailed = f.Logged()
			if a.reauthOf != "" {
				err = f.DuringReauthentication()
			}
		}
		return nil, 0, err
	}
	if !done {
		return challenge, 0, nil
	}
	user := a.server.User()
	if a.reauthOf != "" && user != c.user {
		c.authFailed = fmt.Sprintf("Cannot change principals during re-authentication from User.%s: User.%s", c.user, user)
		return nil, 0, errors.New(c.authFailed)
	}
	c.user, c.mechanism, c.auth = user, a.mechanism, nil
	t, ok := a.server.(sasl.TokenAuthenticated)
	c.tokenAuthenticated = ok && t.TokenAuthenticated()
	lifetime := c.startSession(a)
	c.b.logger.Debug("authenticated", "remote", c.nc.RemoteAddr().String(), "user", c.user, "mechanism", a.mechanism,
		"reauthentication", a.reauthOf != "", "session.lifetime.ms", lifetime)
	return challenge, lifetime, nil
}

// startSession sets when the session expires, as Kafka works it out:
// connections.max.reauth.ms of the mechanism, or the credential's expiry
// when it has one and that is sooner; neither, and it never expires. It
// returns the lifetime in milliseconds.
func (c *conn) startSession(a *authExchange) int64 {
	now := time.Now()
	maxReauth := a.security.MaxReauth[a.mechanism]
	var expiry time.Time
	if e, ok := a.server.(sasl.Expiring); ok {
		expiry, _ = e.Expiry()
	}
	lifetime := maxReauth
	switch {
	case expiry.IsZero() && maxReauth <= 0:
		c.sessionExpires = time.Time{}
		return 0
	case expiry.IsZero():
	case maxReauth <= 0:
		lifetime = expiry.Sub(now)
	default:
		lifetime = min(expiry.Sub(now), maxReauth)
	}
	ms := max(lifetime.Milliseconds(), 0)
	c.sessionExpires = now.Add(time.Duration(ms) * time.Millisecond)
	return ms
}

// rawToken handles a frame of a SaslHandshake v0 exchange: the token
// itself, answered with the bare size-prefixed challenge.
func (c *conn) rawToken(token []byte) (out *response) {
	defer func() { // as in handle: a panic costs the connection only
		if p := recover(); p != nil {
			c.b.logger.Error("SASL token handling panicked", "panic", p, "stack", string(debug.Stack()))
			c.authFailed, out = fmt.Sprint("internal error: ", p), nil
		}
	}()
	challenge, _, err := c.authStep(token)
	if err != nil {
		return nil
	}
	out = newResponse()
	out.buf = binary.BigEndian.AppendUint32(out.buf, uint32(len(challenge)))
	out.buf = append(out.buf, challenge...)
	return out
}

// failAuthentication holds a failed authentication's answer for
// connection.failed.authentication.delay.ms, sends it (if any), and
// leaves the caller to close the connection.
func (c *conn) failAuthentication(resp *response) {
	c.b.logger.Info("failed authentication", "remote", c.nc.RemoteAddr().String(), "listener", c.listener.name, "reason", c.authFailed)
	if !c.pause(c.b.cfg.FailedAuthenticationDelay) || resp == nil {
		resp.free()
		return
	}
	select {
	case c.out <- resp:
	case <-c.done:
		resp.free()
	}
}
