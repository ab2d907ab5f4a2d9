package broker

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// A stop closes the connections still opening, a TLS handshake or the
// read of the first bytes on a listener that takes raft streams too,
// instead of waiting out their deadlines (raised here to ten minutes, so
// that a stop that waits for them cannot pass).
func TestStopClosesConnectionsStillOpening(t *testing.T) {
	handshake, firstBytes := tlsHandshakeTimeout, firstBytesTimeout
	tlsHandshakeTimeout, firstBytesTimeout = 10*time.Minute, 10*time.Minute
	defer func() { tlsHandshakeTimeout, firstBytesTimeout = handshake, firstBytes }()

	t.Run("TLS handshake", func(t *testing.T) {
		pki := newTestPKI(t)
		b := startBrokerWith(t, pki.tlsProps(t.TempDir(), nil))
		stopWithSilentConnection(t, b, listenerAddr(t, b, "SSL"))
	})
	t.Run("first bytes on the controller listener", func(t *testing.T) {
		c := startCluster(t, 1, nil)
		stopWithSilentConnection(t, c.nodes[0], listenerAddr(t, c.nodes[0], "CONTROLLER"))
	})
}

// stopWithSilentConnection connects to addr and sends nothing, then stops
// b: the stop must end within a minute and close the connection.
func stopWithSilentConnection(t *testing.T, b *Broker, addr string) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	waitUntil(t, "the silent connection accepted", 10*time.Second, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		for opening := range b.opening {
			if opening.RemoteAddr().String() == nc.LocalAddr().String() {
				return true
			}
		}
		return false
	})
	stopped := make(chan struct{})
	go func() {
		b.Close()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("the stop waited for a connection that sent nothing")
	}
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the silent connection after the stop: read %v, want it closed", err)
	}
}
