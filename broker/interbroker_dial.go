package broker

// How this broker connects to another broker's inter-broker listener (its
// replica fetchers, transaction markers, forwarded share-group state, the
// share groups' dead-letter writes), as Kafka's NetworkClient connects:
//   - the TLS config is taken live at every connection, so key and trust
//     stores altered at runtime (tls_reload.go) serve the next connection;
//   - a connection (TCP and the TLS handshake) not set up within
//     socket.connection.setup.timeout.ms is given up, and each consecutive
//     failure to the same address doubles that, up to
//     socket.connection.setup.timeout.max.ms, with Kafka's 20% jitter
//     (its ExponentialBackoff); a connection set up starts over;
//   - SO_RCVBUF is set before connecting when asked
//     (replica.socket.receive.buffer.bytes).

import (
	"context"
	"crypto/tls"
	"math"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// setupTimeout is Kafka's ExponentialBackoff with multiplier 2 and jitter
// 0.2: the time allowed to a connection after failures consecutive
// failures.
func setupTimeout(initial, maxTimeout time.Duration, failures int) time.Duration {
	if maxTimeout <= initial {
		return initial
	}
	exp := min(float64(failures), math.Log2(float64(maxTimeout)/float64(max(initial, time.Millisecond))))
	d := time.Duration(float64(initial) * math.Pow(2, exp) * (0.8 + 0.4*rand.Float64()))
	return min(d, maxTimeout)
}

// interBrokerDialer dials other brokers for one client.
type interBrokerDialer struct {
	b      *Broker
	rcvBuf int // above 0: SO_RCVBUF

	mu       sync.Mutex
	failures map[string]int // consecutive failed setups, by address
}

func (b *Broker) newInterBrokerDialer(rcvBuf int) *interBrokerDialer {
	return &interBrokerDialer{b: b, rcvBuf: rcvBuf, failures: map[string]int{}}
}

func (d *interBrokerDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	cfg := d.b.liveConfig()
	if cfg == nil {
		cfg = &d.b.cfg
	}
	d.mu.Lock()
	timeout := setupTimeout(cfg.Cluster.ConnectionSetupTimeout, cfg.Cluster.ConnectionSetupTimeoutMax, d.failures[host])
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nc, err := d.connect(ctx, network, host, cfg.interBrokerTLS())
	d.mu.Lock()
	if err != nil {
		d.failures[host]++
	} else {
		delete(d.failures, host)
	}
	d.mu.Unlock()
	return nc, err
}

// connect sets up one connection, over TLS when t is not nil, naming the
// host dialed as the server unless t names one, as franz-go's
// DialTLSConfig does.
func (d *interBrokerDialer) connect(ctx context.Context, network, host string, t *tls.Config) (net.Conn, error) {
	nd := &net.Dialer{}
	if d.rcvBuf > 0 {
		nd.Control = setReceiveBuffer(d.rcvBuf)
	}
	if t == nil {
		return nd.DialContext(ctx, network, host)
	}
	t = t.Clone()
	if t.ServerName == "" {
		t.ServerName, _, _ = net.SplitHostPort(host)
	}
	return (&tls.Dialer{NetDialer: nd, Config: t}).DialContext(ctx, network, host)
}
