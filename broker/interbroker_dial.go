package broker

// How this broker connects to another broker's inter-broker listener (its
// replica fetchers, transaction markers, forwarded share-group state, the
// share groups' dead-letter writes), as Kafka's NetworkClient connects:
//   - the TLS config is taken live at every connection, so key and trust
//     stores altered at runtime (tls_reload.go) serve the next connection;
//   - a connection (TCP and the TLS handshake) not set up within
//     socket.connection.setup.timeout.ms is given up, and each consecutive
//     failure to the same address doubles that, up to
//     socket.connection.setup.timeout.max.ms (internal/connsetup);
//   - SO_RCVBUF is set before connecting when asked
//     (replica.socket.receive.buffer.bytes).

import (
	"context"
	"crypto/tls"
	"net"

	"github.com/gregor-broker/gregor/internal/connsetup"
	"github.com/gregor-broker/gregor/internal/tlsverify"
)

// interBrokerDialer dials other brokers for one client.
type interBrokerDialer struct {
	b      *Broker
	rcvBuf int // above 0: SO_RCVBUF
	setup  *connsetup.Policy
}

func (b *Broker) newInterBrokerDialer(rcvBuf int) *interBrokerDialer {
	return &interBrokerDialer{b: b, rcvBuf: rcvBuf, setup: b.cfg.connectionSetup()}
}

func (d *interBrokerDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	cfg := d.b.liveConfig()
	if cfg == nil {
		cfg = &d.b.cfg
	}
	ctx, cancel := context.WithTimeout(ctx, d.setup.Timeout(host))
	defer cancel()
	nc, err := d.connect(ctx, network, host, cfg.interBrokerTLS())
	d.setup.Done(host, err)
	return nc, err
}

// connect sets up one connection, over TLS when t is not nil, naming the
// host dialed as the server unless t names one, as franz-go's
// DialTLSConfig does, and checking the certificate names it as Java does
// (tlsverify).
func (d *interBrokerDialer) connect(ctx context.Context, network, host string, t *tls.Config) (net.Conn, error) {
	nd := &net.Dialer{}
	if d.rcvBuf > 0 {
		nd.Control = setReceiveBuffer(d.rcvBuf)
	}
	if t == nil {
		return nd.DialContext(ctx, network, host)
	}
	return (&tls.Dialer{NetDialer: nd, Config: tlsverify.ForHost(t, host)}).DialContext(ctx, network, host)
}
