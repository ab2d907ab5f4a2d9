package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// RaftMagic opens every raft stream. Read as a Kafka frame size it is
// 0x52414654 (about 1.3 GiB), above any allowed request, so the broker can
// tell a raft stream from a Kafka request by its first four bytes.
var RaftMagic = [4]byte{'R', 'A', 'F', 'T'}

// streamLayer is raft's StreamLayer over the broker's CONTROLLER listener:
// Dial opens a TCP connection (TLS when the CONTROLLER listener is SSL) and
// writes RaftMagic; Accept returns the connections the broker identified
// by that magic and passed to HandOff.
//
// Raft dials the addresses its configuration holds. A voter that cannot
// be reached there is dialled at its address in controller.quorum.voters
// (fallback), which is where every voter of a static quorum is after an
// operator moved them all at once: their registrations, which move them
// in raft's configuration, need the leader they cannot elect otherwise.
type streamLayer struct {
	addr     voterAddr
	tls      *tls.Config // nil: plain TCP
	incoming chan net.Conn
	fallback atomic.Pointer[func(raft.ServerAddress) (raft.ServerAddress, bool)]

	closeOnce sync.Once
	closed    chan struct{}
}

type voterAddr string

func (a voterAddr) Network() string { return "tcp" }
func (a voterAddr) String() string  { return string(a) }

func newStreamLayer(addr string, tlsConfig *tls.Config) *streamLayer {
	return &streamLayer{addr: voterAddr(addr), tls: tlsConfig, incoming: make(chan net.Conn), closed: make(chan struct{})}
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
	conn, err := dial(context.Background(), string(address), s.tls, timeout)
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

// dial connects to address within timeout, and with tlsConfig completes a
// TLS handshake there too, checking the certificate names address's host
// unless tlsConfig says otherwise.
func dial(ctx context.Context, address string, tlsConfig *tls.Config, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if tlsConfig == nil {
		return d.DialContext(ctx, "tcp", address)
	}
	return (&tls.Dialer{NetDialer: d, Config: tlsConfig}).DialContext(ctx, "tcp", address)
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
