package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/internal/connsetup"
	"github.com/gregor-broker/gregor/internal/tlsverify"
	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// RaftMagic opens every raft stream. Read as a Kafka frame size it is
// 0x52414654 (about 1.3 GiB), above any allowed request, so the broker can
// tell a raft stream from a Kafka request by its first four bytes.
var RaftMagic = [4]byte{'R', 'A', 'F', 'T'}

// streamLayer is raft's StreamLayer over the broker's CONTROLLER listener:
// Dial opens a connection as Security says (TLS, then a SASL login, when
// the CONTROLLER listener asks for them) and writes RaftMagic; Accept
// returns the connections the broker identified by that magic and passed
// to HandOff.
//
// Raft dials the addresses its configuration holds. A voter that cannot
// be reached there is dialled at its address in controller.quorum.voters
// (fallback), which is where every voter of a static quorum is after an
// operator moved them all at once: their registrations, which move them
// in raft's configuration, need the leader they cannot elect otherwise.
type streamLayer struct {
	addr     voterAddr
	security Security
	incoming chan net.Conn
	fallback atomic.Pointer[func(raft.ServerAddress) (raft.ServerAddress, bool)]

	closeOnce sync.Once
	closed    chan struct{}
}

type voterAddr string

func (a voterAddr) Network() string { return "tcp" }
func (a voterAddr) String() string  { return string(a) }

func newStreamLayer(addr string, security Security) *streamLayer {
	return &streamLayer{addr: voterAddr(addr), security: security, incoming: make(chan net.Conn), closed: make(chan struct{})}
}

var errStreamClosed = errors.New("controller: raft stream layer closed")

func (s *streamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-s.incoming:
		return c, nil
	case <-s.closed:
		return nil, errStreamClosed
	}
}

func (s *streamLayer) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

func (s *streamLayer) Addr() net.Addr { return s.addr }

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	conn, err := s.dialRaft(address, timeout)
	if err == nil {
		return conn, nil
	}
	if f := s.fallback.Load(); f != nil {
		if alt, ok := (*f)(address); ok && alt != address {
			if conn, altErr := s.dialRaft(alt, timeout); altErr == nil {
				return conn, nil
			}
		}
	}
	return nil, err
}

func (s *streamLayer) dialRaft(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	conn, err := s.security.Dial(context.Background(), string(address), raftClientID, timeout)
	if err != nil {
		return nil, err
	}
	conn.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(RaftMagic[:]); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

// Security is how a node reaches CONTROLLER listeners: over TLS when TLS
// is set, and logged in with SASL when SASL is set (SaslHandshake v1 and
// SaslAuthenticate, as Kafka's clients log in).
type Security struct {
	TLS *tls.Config
	// LiveTLS, when set, is called at every connection instead of TLS:
	// the key and trust stores altered at runtime serve the next
	// connection (raft's streams and the controller client alike).
	LiveTLS func() *tls.Config
	SASL    sasl.Mechanism
	// Setup, when set, gives each connection its setup time
	// (socket.connection.setup.timeout.ms, growing with the failures to
	// the address) instead of the timeout Dial is given.
	Setup *connsetup.Policy
}

// tlsConfig is the TLS config of the next connection, nil for none.
func (s Security) tlsConfig() *tls.Config {
	if s.LiveTLS != nil {
		return s.LiveTLS()
	}
	return s.TLS
}

// raftClientID names raft streams' logins in the listener's logs.
const raftClientID = "gregor-raft"

// Dial connects to address and completes the TLS handshake (checking the
// certificate names address's host, as Java does, unless TLS says
// otherwise) and the
// SASL login, all within timeout, or the time Setup gives.
func (s Security) Dial(ctx context.Context, address, clientID string, timeout time.Duration) (net.Conn, error) {
	if s.Setup != nil {
		timeout = s.Setup.Timeout(address)
	}
	conn, err := s.dial(ctx, address, clientID, timeout)
	if s.Setup != nil {
		s.Setup.Done(address, err)
	}
	return conn, err
}

func (s Security) dial(ctx context.Context, address, clientID string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := &net.Dialer{}
	var conn net.Conn
	var err error
	if t := s.tlsConfig(); t == nil {
		conn, err = d.DialContext(ctx, "tcp", address)
	} else {
		conn, err = (&tls.Dialer{NetDialer: d, Config: tlsverify.ForHost(t, address)}).DialContext(ctx, "tcp", address)
	}
	if err != nil || s.SASL == nil {
		return conn, err
	}
	if err := login(ctx, conn, address, clientID, s.SASL); err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return conn, nil
}

// login authenticates conn with mechanism: SaslHandshake v1 naming it,
// then SaslAuthenticate until the mechanism is done.
func login(ctx context.Context, conn net.Conn, address, clientID string, mechanism sasl.Mechanism) error {
	w := &wireConn{conn: conn}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = mechanism.Name()
	resp, err := w.roundTrip(ctx, clientID, hs)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return fmt.Errorf("controller: SASL handshake with %s for %s: %w", address, mechanism.Name(), err)
	}
	host, _, _ := net.SplitHostPort(address)
	session, msg, err := mechanism.Authenticate(ctx, host)
	if err != nil {
		return err
	}
	for {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SetVersion(1)
		auth.SASLAuthBytes = msg
		resp, err := w.roundTrip(ctx, clientID, auth)
		if err != nil {
			return err
		}
		ar := resp.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(ar.ErrorCode); err != nil {
			if ar.ErrorMessage != nil {
				return fmt.Errorf("controller: SASL login to %s: %w: %s", address, err, *ar.ErrorMessage)
			}
			return fmt.Errorf("controller: SASL login to %s: %w", address, err)
		}
		done, next, err := session.Challenge(ar.SASLAuthBytes)
		if err != nil || done {
			return err
		}
		msg = next
	}
}

// handOff gives an accepted raft connection to the transport, or closes it
// when the controller is closed.
func (s *streamLayer) handOff(conn net.Conn) {
	select {
	case s.incoming <- conn:
	case <-s.closed:
		conn.Close()
	}
}
