package broker

// Connection limits, as Kafka's ConnectionQuotas and Selector apply them:
//
//   - max.connections: at most this many connections at once. When it is
//     reached the listener's accept loop waits, holding the connection it
//     has just accepted, until one closes or the limit is raised; the
//     connections after it wait in the kernel's backlog. A combined node's
//     controller listener counts apart from the client listeners, as
//     Kafka's controller runs a socket server of its own.
//   - max.connection.creation.rate: a new connection that takes the
//     broker's rate of new connections over it is served only after the
//     delay that brings the rate back (at most a quota window), during
//     which the accept loop waits too (KIP-612).
//   - The inter-broker listener (the first client listener), when there is
//     more than one client listener, is exempt from both: its connections
//     are let through and counted. Kafka then closes the least recently
//     used connection of another listener to make room (KIP-402); Gregor
//     does not, so the other listeners wait until the count falls below
//     the maximum.
//   - max.connections.per.ip, with max.connections.per.ip.overrides
//     ("host:count,..."): a new connection from an address that already
//     holds its maximum is closed at once.
//   - connection_creation_rate, the client quota of ip entities (KIP-612):
//     a connection over its address's rate is held (at most a quota
//     window) and then closed, so that a client reconnecting in a loop
//     slows down; it is not counted, nor in the broker's rate.
//   - connections.max.idle.ms: a connection that sends no request for that
//     long is closed.
//
// A new connection goes through them in Kafka's order: the broker's rate
// and maximum, then its address's rate, then its address's maximum. The
// limits are read from the live configuration, so AlterConfigs changes
// them at once, as in Kafka; an accept loop waiting for a slot looks
// again when a connection closes, the configuration changes or the broker
// closes.
//
// A broker-only node's controllers reach it for raft on its first client
// listener, which goes through the same accept loop: while that listener
// is full, a controller's new raft stream waits like any connection. It
// holds its slot only until it is handed to raft.

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/quota"
)

var connectionKeys = []configKey{
	{"max.connections.per.ip", "INT", "2147483647", "The maximum number of connections we allow from each ip address.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.MaxConnectionsPerIP = int(n)
		return err
	}},
	{"max.connections.per.ip.overrides", "STRING", "", "A comma-separated list of per-ip or hostname overrides to the default maximum number of connections, host:count.", func(c *Config, v string) error {
		var err error
		c.MaxConnectionsPerIPOverrides, err = parseConnectionOverrides(v)
		return err
	}},
	{"max.connections", "INT", "2147483647", "The maximum number of connections we allow in the broker at any time, in addition to the per-ip limits. New connections wait once it is reached; connections on the inter-broker listener are permitted even then.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.MaxConnections = int(n)
		return err
	}},
	{"max.connection.creation.rate", "INT", "2147483647", "The maximum connection creation rate we allow in the broker at any time. New connections over it are throttled, except on the inter-broker listener.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.MaxConnectionCreationRate = int(n)
		return err
	}},
	{"connections.max.idle.ms", "LONG", "600000", "Idle connections timeout: the server socket processor threads close the connections that idle more than this.", func(c *Config, v string) error {
		n, err := parseInt(v, -1, math.MaxInt64)
		c.ConnectionsMaxIdle = time.Duration(n) * time.Millisecond
		return err
	}},
}

func init() {
	brokerKeys = append(brokerKeys, connectionKeys...)
}

// parseConnectionOverrides reads "host:count,..." into counts by address;
// host names are resolved now, as Kafka resolves them.
func parseConnectionOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, item := range splitList(v) {
		i := strings.LastIndex(item, ":")
		if i <= 0 {
			return nil, fmt.Errorf("%q is not host:count", item)
		}
		n, err := strconv.Atoi(strings.TrimSpace(item[i+1:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: the count must be a non-negative number", item)
		}
		host := strings.Trim(strings.TrimSpace(item[:i]), "[]")
		addrs := []string{host}
		if net.ParseIP(host) == nil {
			if addrs, err = net.LookupHost(host); err != nil {
				return nil, fmt.Errorf("max.connections.per.ip.overrides contains invalid addresses : %s", host)
			}
		}
		for _, a := range addrs {
			out[net.ParseIP(a).String()] = n
		}
	}
	return out, nil
}

// validateConnectionLimits is Kafka's rule: a default of zero needs
// overrides, or nobody could connect.
func (c *Config) validateConnectionLimits() error {
	if c.MaxConnectionsPerIP == 0 && len(c.MaxConnectionsPerIPOverrides) == 0 {
		return fmt.Errorf("max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.")
	}
	return nil
}

// connCounts is how many connections each address, and each pool of
// listeners, holds.
type connCounts struct {
	mu    sync.Mutex
	perIP map[string]int
	pools [2]connPool // the client listeners', the controller listener's
	// changed is closed when an accept loop waiting for a slot should look
	// again; the first to wait makes it.
	changed chan struct{}
	closed  bool
}

// connPool is the listeners that share max.connections and
// max.connection.creation.rate: Kafka's ConnectionQuotas of one socket
// server.
type connPool struct {
	total int
	rate  *quota.ConnectionRate // made on the first connection
}

func (cc *connCounts) pool(l *listener, window quota.Config) *connPool {
	p := &cc.pools[0]
	if l.controller {
		p = &cc.pools[1]
	}
	if p.rate == nil {
		p.rate = quota.NewConnectionRate(window)
	}
	return p
}

// waitLocked lets go of mu until an accept loop should look again or, if
// d > 0, d has passed.
func (cc *connCounts) waitLocked(d time.Duration) {
	if cc.changed == nil {
		cc.changed = make(chan struct{})
	}
	changed := cc.changed
	cc.mu.Unlock()
	defer cc.mu.Lock()
	if d <= 0 {
		<-changed
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	}
}

func (cc *connCounts) changedLocked() {
	if cc.changed != nil {
		close(cc.changed)
		cc.changed = nil
	}
}

// limitsChanged wakes the accept loops waiting for a slot, after a change
// of the configuration.
func (cc *connCounts) limitsChanged() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.changedLocked()
}

// shut ends every wait for a slot: the broker is closing.
func (cc *connCounts) shut() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.closed = true
	cc.changedLocked()
}

// connectionConfig is the configuration the limits are read from.
func (b *Broker) connectionConfig() *Config {
	if cfg := b.liveConfig(); cfg != nil {
		return cfg
	}
	return &b.cfg // the controller listener accepts before the broker has started
}

// protectedListener is Kafka's: the inter-broker listener, among more than
// one client listener, is not held to the broker's maximum and rate.
func (b *Broker) protectedListener(l *listener) bool {
	ib, _, ok := b.cfg.interBrokerListener()
	if l.controller || !ok || ib.Name != l.name {
		return false
	}
	clients := 0
	for _, o := range b.listeners {
		if !o.controller {
			clients++
		}
	}
	return clients > 1
}

// admitConnection applies the connection limits to a connection just
// accepted on l, waiting while the broker's maximum or rate says so. It
// returns the address to release when the connection ends, or false when
// the connection was refused (and is closed, or will be).
func (b *Broker) admitConnection(nc net.Conn, l *listener) (string, bool) {
	ip := remoteIP(nc)
	protected := b.protectedListener(l)
	cc := &b.connCounts
	cc.mu.Lock()
	defer cc.mu.Unlock()
	pool := cc.pool(l, b.cfg.Quota)
	start := time.Now()
	throttledUntil := start
	if !protected {
		throttledUntil = start.Add(pool.rate.Record(float64(b.connectionConfig().MaxConnectionCreationRate), start))
	}
	for {
		if cc.closed {
			nc.Close()
			return "", false
		}
		throttle := time.Until(throttledUntil)
		if throttle <= 0 && (protected || pool.total < b.connectionConfig().MaxConnections) {
			break
		}
		cc.waitLocked(throttle)
	}
	if waited := time.Since(start); waited >= time.Millisecond {
		b.logger.Debug("a new connection waited for max.connections or max.connection.creation.rate", "listener", l.name, "remote", ip, "waited", waited)
	}
	now := time.Now()
	if d := b.quotas.Connection(ip, now); d > 0 {
		if !protected {
			pool.rate.Unrecord(now)
		}
		b.logger.Debug("holding a connection over its address's connection_creation_rate", "remote", ip, "hold", d)
		time.AfterFunc(d, func() { nc.Close() })
		return "", false
	}
	cfg := b.connectionConfig()
	most, ok := cfg.MaxConnectionsPerIPOverrides[ip]
	if !ok {
		most = cfg.MaxConnectionsPerIP
	}
	if cc.perIP[ip] >= most {
		b.logger.Info("rejected connection: the address already has the configured maximum of connections", "remote", ip, "max", most)
		nc.Close()
		return "", false
	}
	cc.perIP[ip]++
	pool.total++
	return ip, true
}

// releaseConnection counts a connection of ip on l as closed.
func (b *Broker) releaseConnection(ip string, l *listener) {
	cc := &b.connCounts
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.perIP[ip]--; cc.perIP[ip] <= 0 {
		delete(cc.perIP, ip)
	}
	cc.pool(l, b.cfg.Quota).total--
	cc.changedLocked()
}

// remoteIP is the address a connection comes from, without its port.
func remoteIP(nc net.Conn) string {
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return net.ParseIP(host).String()
}

// extendIdleDeadline pushes the connection's read deadline to
// connections.max.idle.ms from now, at most once a second (the deadline
// is a timer update; a request rate of thousands a second need not pay
// for it each time).
func (c *conn) extendIdleDeadline() {
	idle := c.b.cfg.ConnectionsMaxIdle
	if idle <= 0 {
		return
	}
	if now := time.Now(); now.Sub(c.idleDeadlineSet) >= time.Second {
		c.nc.SetReadDeadline(now.Add(idle))
		c.idleDeadlineSet = now
	}
}
