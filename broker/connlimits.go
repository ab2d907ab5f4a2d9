package broker

// Connection limits, as Kafka's ConnectionQuotas and Selector apply them:
//
//   - max.connections.per.ip, with max.connections.per.ip.overrides
//     ("host:count,..."): a new connection from an address that already
//     holds its maximum is closed at once.
//   - connection_creation_rate, the client quota of ip entities (KIP-612):
//     a connection over its address's rate is held (at most a quota
//     window) and then closed, so that a client reconnecting in a loop
//     slows down; it is not counted.
//   - connections.max.idle.ms: a connection that sends no request for that
//     long is closed.
//
// The per-address limits are read from the live configuration, so
// AlterConfigs changes them at once, as in Kafka.

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
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

// connCounts is how many connections each address holds.
type connCounts struct {
	mu    sync.Mutex
	perIP map[string]int
}

// admitConnection applies the per-address limits to a connection just
// accepted. It returns the address to release when the connection ends,
// or false when the connection was refused (and is closed, or will be).
func (b *Broker) admitConnection(nc net.Conn) (string, bool) {
	ip := remoteIP(nc)
	if d := b.quotas.Connection(ip, time.Now()); d > 0 {
		b.logger.Debug("holding a connection over its address's connection_creation_rate", "remote", ip, "hold", d)
		time.AfterFunc(d, func() { nc.Close() })
		return "", false
	}
	cfg := b.liveConfig()
	if cfg == nil { // the controller listener accepts before the broker has started
		cfg = &b.cfg
	}
	most, ok := cfg.MaxConnectionsPerIPOverrides[ip]
	if !ok {
		most = cfg.MaxConnectionsPerIP
	}
	b.connCounts.mu.Lock()
	defer b.connCounts.mu.Unlock()
	if b.connCounts.perIP[ip] >= most {
		b.logger.Info("rejected connection: the address already has the configured maximum of connections", "remote", ip, "max", most)
		nc.Close()
		return "", false
	}
	b.connCounts.perIP[ip]++
	return ip, true
}

// releaseConnection counts a connection of ip as closed.
func (b *Broker) releaseConnection(ip string) {
	b.connCounts.mu.Lock()
	defer b.connCounts.mu.Unlock()
	if b.connCounts.perIP[ip]--; b.connCounts.perIP[ip] <= 0 {
		delete(b.connCounts.perIP, ip)
	}
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
