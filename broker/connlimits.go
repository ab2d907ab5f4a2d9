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
//   - listener.name.<listener>.max.connections and
//     listener.name.<listener>.max.connection.creation.rate (the
//     listener's name in lower case): a listener's own maximum and rate,
//     over its own connections only, applied in addition to the broker's:
//     a new connection waits while either says so, the longer delay of
//     the two rates holding it. As Kafka reads a listener's values with
//     its prefixed keys overriding the broker's, a listener without its
//     own key has the broker-wide value as its own limit too (redundant,
//     except for the inter-broker listener below). Such a key naming no
//     listener is left unused, with a warning, as Kafka leaves it; set at
//     runtime a listener's own limit must stay above zero (Kafka's
//     "Invalid dynamic configuration"), which holds for the broker-wide
//     keys too, since every listener without its own key takes them.
//   - The inter-broker listener (inter.broker.listener.name), when there is
//     more than one client listener, is exempt from the broker's maximum
//     and rate: its connections are let through and counted. Its own
//     maximum and rate still hold, which are the broker-wide values
//     unless its listener.name keys say otherwise. Kafka then closes the
//     least recently used connection of another listener to make room
//     (KIP-402); Gregor does not, so the other listeners wait until the
//     count falls below the maximum.
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
// A new connection goes through them in Kafka's order: the broker's and
// its listener's rates and maximums, then its address's rate, then its
// address's maximum. The
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
	"slices"
	"sort"
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

// listenerConnectionSettings are the connection limits a listener may set
// for itself, after "listener.name.<listener>.".
var listenerConnectionSettings = []string{"max.connections", "max.connection.creation.rate"}

func isListenerConnectionSetting(setting string) bool {
	return slices.Contains(listenerConnectionSettings, setting)
}

// ListenerConnectionLimits are one listener's own connection limits.
type ListenerConnectionLimits struct {
	MaxConnections            int
	MaxConnectionCreationRate int // new connections a second
}

// resolveListenerConnectionLimits works out every listener's own limits:
// its listener.name.<listener>.max.connections and
// .max.connection.creation.rate, or, as Kafka reads a listener's values
// with the prefix overriding the broker's key, the broker-wide ones. It
// returns a warning for each such key naming no listener, which Kafka
// leaves unused.
func (c *Config) resolveListenerConnectionLimits() ([]string, error) {
	c.ListenerConnectionLimits = map[string]ListenerConnectionLimits{}
	known := map[string]bool{}
	for _, l := range c.Listeners {
		known[strings.ToLower(l.Name)] = true
		var limits ListenerConnectionLimits
		for _, setting := range listenerConnectionSettings {
			v, key := c.listenerValue(l.Name, setting)
			n, err := parseInt(v, 0, math.MaxInt32)
			if err != nil {
				return nil, fmt.Errorf("invalid value %q for config key %s: %v", v, key, err)
			}
			if setting == "max.connections" {
				limits.MaxConnections = int(n)
			} else {
				limits.MaxConnectionCreationRate = int(n)
			}
		}
		c.ListenerConnectionLimits[l.Name] = limits
	}
	var warnings []string
	for k := range c.listenerProps {
		rest, _ := strings.CutPrefix(k, listenerPrefix)
		name, setting, _ := strings.Cut(rest, ".")
		if isListenerConnectionSetting(setting) && !known[name] {
			warnings = append(warnings, fmt.Sprintf("config key %s is not used: no listener is called %s (the key names its listener in lower case)", k, name))
		}
	}
	sort.Strings(warnings)
	return warnings, nil
}

// validateListenerConnectionChange refuses, as each of Kafka's listener
// connection quotas does when its values change at runtime, a listener's
// own maximum or rate (its prefixed key or, without one, the broker-wide
// key) that would become zero, with Kafka's words (a ConfigException
// wrapped in another).
func validateListenerConnectionChange(cur, next *Config) *configError {
	for _, l := range next.Listeners {
		old, n := cur.ListenerConnectionLimits[l.Name], next.ListenerConnectionLimits[l.Name]
		bad := ""
		switch {
		case old == n:
			continue
		case n.MaxConnections <= 0:
			bad = fmt.Sprintf("max.connections %d", n.MaxConnections)
		case n.MaxConnectionCreationRate <= 0:
			bad = fmt.Sprintf("max.connection.creation.rate %d", n.MaxConnectionCreationRate)
		default:
			continue
		}
		return configErr(errInvalidRequest, "Invalid value org.apache.kafka.common.config.ConfigException: Invalid %s for configuration Invalid dynamic configuration", bad)
	}
	return nil
}

// connCounts is how many connections each address, each pool of
// listeners and each listener holds.
type connCounts struct {
	mu          sync.Mutex
	perIP       map[string]int
	pools       [2]connPool // the client listeners', the controller listener's
	perListener map[string]*connPool
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

// pool is the pool l belongs to, and l's own count and rate.
func (cc *connCounts) pool(l *listener, window quota.Config) (pool, own *connPool) {
	pool = &cc.pools[0]
	if l.controller {
		pool = &cc.pools[1]
	}
	if pool.rate == nil {
		pool.rate = quota.NewConnectionRate(window)
	}
	if own = cc.perListener[l.name]; own == nil {
		if cc.perListener == nil {
			cc.perListener = map[string]*connPool{}
		}
		own = &connPool{rate: quota.NewConnectionRate(window)}
		cc.perListener[l.name] = own
	}
	return pool, own
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
// one client listener, is not held to the broker's maximum and rate (its
// own still hold).
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

// listenerLimits are l's own maximum and rate in cfg.
func listenerLimits(cfg *Config, l *listener) ListenerConnectionLimits {
	if limits, ok := cfg.ListenerConnectionLimits[l.name]; ok {
		return limits
	}
	return ListenerConnectionLimits{cfg.MaxConnections, cfg.MaxConnectionCreationRate}
}

// admitConnection applies the connection limits to a connection just
// accepted on l, waiting while the broker's or the listener's maximum or
// rate says so. It returns the address to release when the connection
// ends, or false when the connection was refused (and is closed, or will
// be).
func (b *Broker) admitConnection(nc net.Conn, l *listener) (string, bool) {
	ip := remoteIP(nc)
	protected := b.protectedListener(l)
	cc := &b.connCounts
	cc.mu.Lock()
	defer cc.mu.Unlock()
	pool, own := cc.pool(l, b.cfg.Quota)
	start := time.Now()
	// Both rates count the connection, the longer delay holds it (Kafka's
	// recordConnectionAndGetThrottleTimeMs).
	cfg := b.connectionConfig()
	throttle := own.rate.Record(float64(listenerLimits(cfg, l).MaxConnectionCreationRate), start)
	if !protected {
		throttle = max(throttle, pool.rate.Record(float64(cfg.MaxConnectionCreationRate), start))
	}
	throttledUntil := start.Add(throttle)
	for {
		if cc.closed {
			nc.Close()
			return "", false
		}
		throttle := time.Until(throttledUntil)
		cfg := b.connectionConfig()
		if throttle <= 0 && own.total < listenerLimits(cfg, l).MaxConnections && (protected || pool.total < cfg.MaxConnections) {
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
		own.rate.Unrecord(now)
		b.logger.Debug("holding a connection over its address's connection_creation_rate", "remote", ip, "hold", d)
		time.AfterFunc(d, func() { nc.Close() })
		return "", false
	}
	cfg = b.connectionConfig()
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
	own.total++
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
	pool, own := cc.pool(l, b.cfg.Quota)
	pool.total--
	own.total--
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

// isDynamicListenerKey reports whether key is a listener's own connection
// limit, which AlterConfigs may change (per broker or cluster-wide, as
// Kafka's), whether or not the listener exists: Kafka accepts a key for a
// listener it does not have, and leaves it unused.
func isDynamicListenerKey(key string) bool {
	rest, ok := strings.CutPrefix(key, listenerPrefix)
	if !ok {
		return false
	}
	name, setting, ok := strings.Cut(rest, ".")
	return ok && name != "" && isListenerConnectionSetting(setting)
}
