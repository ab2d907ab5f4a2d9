package quota

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is the measurement of rates: Samples windows of Window each
// (quota.window.num, quota.window.size.seconds), and for
// controller_mutation_rate MutationSamples of MutationWindow
// (controller.quota.window.num, controller.quota.window.size.seconds).
type Config struct {
	Samples         int
	Window          time.Duration
	MutationSamples int
	MutationWindow  time.Duration
}

// DefaultConfig is Kafka's: 11 samples of one second, for both.
func DefaultConfig() Config {
	return Config{Samples: 11, Window: time.Second, MutationSamples: 11, MutationWindow: time.Second}
}

// Manager measures clients against the quotas in force and says how long
// one over its quota must be throttled. It is safe for concurrent use.
type Manager struct {
	cfg    Config
	quotas atomic.Pointer[quotaSet]

	mu      sync.Mutex
	sensors map[sensorKey]*rate
	buckets map[sensorKey]*bucket // controller_mutation_rate (bucket.go)
}

// quotaSet is the quotas in force, replaced whole by Set.
type quotaSet struct {
	byEntity map[string]map[string]float64 // Entity.Key() -> values
	keys     map[string]bool               // the quota keys any entity sets
	hosts    map[string]netip.Addr         // host names of IP entities, resolved once (invalid: did not resolve)
}

// sensorKey names one measured rate: a quota key and the client names of
// the entity that set it, Kafka's metric tags. A default entity measures
// each user or client id on its own; a type the entity lacks is "".
type sensorKey struct {
	key, user, clientID, ip string
}

// usable is cfg with at least one sample of a positive window, for both.
func (cfg Config) usable() Config {
	cfg.Samples = max(cfg.Samples, 1)
	cfg.MutationSamples = max(cfg.MutationSamples, 1)
	if cfg.Window <= 0 {
		cfg.Window = time.Second
	}
	if cfg.MutationWindow <= 0 {
		cfg.MutationWindow = time.Second
	}
	return cfg
}

// NewManager returns a Manager with no quotas.
func NewManager(cfg Config) *Manager {
	m := &Manager{cfg: cfg.usable(), sensors: map[sensorKey]*rate{}, buckets: map[sensorKey]*bucket{}}
	m.Set(nil)
	return m
}

// Set installs the quotas in force: the stored entries, keyed by
// Entity.Key as the broker and the controller keep them.
func (m *Manager) Set(stored map[string]Entry) {
	prev := m.quotas.Load()
	qs := &quotaSet{byEntity: map[string]map[string]float64{}, keys: map[string]bool{}, hosts: map[string]netip.Addr{}}
	for key, e := range stored {
		if len(e.Values) == 0 {
			continue
		}
		if ip, ok := e.Entity.name(IP); ok && ip != nil {
			// As Kafka matches an IP quota by address: ::1 and
			// 0:0:0:0:0:0:0:1 are one entity, and a host name stands
			// for its address; found under the form Connection is given.
			if a := qs.address(prev, *ip); a.IsValid() {
				canonical := a.String()
				key = Entity{{IP, &canonical}}.Key()
			}
		}
		qs.byEntity[key] = e.Values
		for k := range e.Values {
			qs.keys[k] = true
		}
	}
	m.quotas.Store(qs)
}

// address is the address an IP entity's quota applies to, as Kafka's
// ClientQuotaMetadataManager takes it (InetAddress.getByName, once, when
// the quota arrives): the address itself, or a host name's first address,
// IPv4 before IPv6 as Java prefers by default. A host name is looked up
// once and its answer kept while the quota lasts (prev holds the earlier
// answers), so that metadata updates do not wait on DNS; one that did not
// resolve matches nothing.
func (qs *quotaSet) address(prev *quotaSet, name string) netip.Addr {
	if a, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
		return a.Unmap()
	}
	a, ok := netip.Addr{}, false
	if prev != nil {
		a, ok = prev.hosts[name]
	}
	if !ok {
		a = lookupFirst(name)
	}
	qs.hosts[name] = a
	return a
}

func lookupFirst(name string) netip.Addr {
	addrs, err := net.LookupHost(name)
	if err != nil {
		return netip.Addr{}
	}
	var first netip.Addr
	for _, s := range addrs {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		if a = a.Unmap(); a.Is4() {
			return a
		}
		if !first.IsValid() {
			first = a
		}
	}
	return first
}

// Active reports whether any entity sets a quota for key: when none does,
// nothing is measured.
func (m *Manager) Active(key string) bool { return m.quotas.Load().keys[key] }

// resolve finds the quota of key that applies to a client, in Kafka's
// order of precedence: user and client id, user and default client id,
// user, default user and client id, default user and default client id,
// default user, client id, default client id.
func (m *Manager) resolve(key, user, clientID string) (float64, sensorKey, bool) {
	qs := m.quotas.Load()
	if !qs.keys[key] {
		return 0, sensorKey{}, false
	}
	u, c := &user, &clientID
	levels := []struct {
		entity       Entity
		byUser, byID bool
	}{
		{Entity{{ClientID, c}, {User, u}}, true, true},
		{Entity{{ClientID, nil}, {User, u}}, true, true},
		{Entity{{User, u}}, true, false},
		{Entity{{ClientID, c}, {User, nil}}, true, true},
		{Entity{{ClientID, nil}, {User, nil}}, true, true},
		{Entity{{User, nil}}, true, false},
		{Entity{{ClientID, c}}, false, true},
		{Entity{{ClientID, nil}}, false, true},
	}
	for _, l := range levels {
		v, ok := qs.byEntity[l.entity.Key()][key]
		if !ok {
			continue
		}
		sk := sensorKey{key: key}
		if l.byUser {
			sk.user = user
		}
		if l.byID {
			sk.clientID = clientID
		}
		return v, sk, true
	}
	return 0, sensorKey{}, false
}

// Record adds value (bytes) at now to the client's rate for key and
// returns how long the client must wait for that rate to come back to its
// quota: 0 when it is within it or no quota applies.
func (m *Manager) Record(key, user, clientID string, value float64, now time.Time) time.Duration {
	bound, sk, ok := m.resolve(key, user, clientID)
	if !ok {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addLocked(sk, bound, value, now.UnixMilli())
}

// addLocked adds value at ms to the rate sk and returns the delay that
// brings the rate over the window back to bound (KIP-13): 0 when it is
// within it. Called with mu held.
func (m *Manager) addLocked(sk sensorKey, bound, value float64, ms int64) time.Duration {
	r := m.sensors[sk]
	if r == nil {
		m.dropIdle(ms)
		r = &rate{}
		m.sensors[sk] = r
	}
	r.record(value, ms, m.cfg)
	return r.over(bound, ms, m.cfg)
}

// over is the delay that brings the rate back to bound, Kafka's
// QuotaUtils.throttleTime: 0 when it is within it.
func (r *rate) over(bound float64, ms int64, cfg Config) time.Duration {
	observed, windowMs := r.measure(ms, cfg)
	if observed <= bound {
		return 0
	}
	return time.Duration((observed-bound)/bound*float64(windowMs)+0.5) * time.Millisecond
}

// Connection counts a new connection from ip against the
// connection_creation_rate quota of that ip, or else of the default ip
// (KIP-612), and returns how long to hold it before closing it: 0 when
// within the quota (the connection is then counted), otherwise at most a
// quota window, as Kafka bounds it (and the refused connection is not
// counted).
func (m *Manager) Connection(ip string, now time.Time) time.Duration {
	qs := m.quotas.Load()
	if !qs.keys[ConnectionCreationRate] {
		return 0
	}
	bound, ok := qs.byEntity[Entity{{IP, &ip}}.Key()][ConnectionCreationRate]
	if !ok {
		if bound, ok = qs.byEntity[Entity{{IP, nil}}.Key()][ConnectionCreationRate]; !ok {
			return 0
		}
	}
	sk, ms := sensorKey{key: ConnectionCreationRate, ip: ip}, now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.addLocked(sk, bound, 1, ms)
	if d > 0 {
		m.sensors[sk].record(-1, ms, m.cfg)
	}
	return min(d, m.cfg.Window)
}

// ConnectionRate is a connection creation rate with a bound of its own
// rather than a client's: Kafka's broker-wide max.connection.creation.rate
// (KIP-612). It is safe for concurrent use.
type ConnectionRate struct {
	cfg Config
	mu  sync.Mutex
	r   rate
}

// NewConnectionRate measures connections as the client quotas of cfg
// measure bytes.
func NewConnectionRate(cfg Config) *ConnectionRate {
	return &ConnectionRate{cfg: cfg.usable()}
}

// Record counts a new connection at now and returns how long to delay it
// for the rate to come back to bound: 0 within it, otherwise at most a
// quota window, as Kafka bounds connection throttles. The connection stays
// counted either way, as in Kafka.
func (c *ConnectionRate) Record(bound float64, now time.Time) time.Duration {
	ms := now.UnixMilli()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.record(1, ms, c.cfg)
	if bound <= 0 { // Kafka's throttle time is then infinite, capped
		return c.cfg.Window
	}
	return min(c.r.over(bound, ms, c.cfg), c.cfg.Window)
}

// Unrecord takes back a connection counted at now that was not accepted
// after all.
func (c *ConnectionRate) Unrecord(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.record(-1, now.UnixMilli(), c.cfg)
}

// Unrecord takes back value recorded at now, for a response that was not
// sent (a throttled fetch is answered without its records).
func (m *Manager) Unrecord(key, user, clientID string, value float64, now time.Time) {
	_, sk, ok := m.resolve(key, user, clientID)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.sensors[sk]; r != nil {
		r.record(-value, now.UnixMilli(), m.cfg)
	}
}

// WindowBytes is the most a client may take in one response under its
// quota for key: the quota over all but one sample window, as Kafka caps
// a fetch. ok is false when no quota applies.
func (m *Manager) WindowBytes(key, user, clientID string) (int64, bool) {
	bound, _, ok := m.resolve(key, user, clientID)
	if !ok {
		return 0, false
	}
	return int64(bound * float64(m.cfg.Samples-1) * m.cfg.Window.Seconds()), true
}

// dropIdle forgets the rates whose every sample has expired: they measure
// zero, and a client that comes back starts afresh. Called with mu held.
func (m *Manager) dropIdle(nowMs int64) {
	expire := int64(m.cfg.Samples) * m.cfg.Window.Milliseconds()
	for k, r := range m.sensors {
		if nowMs-r.lastMs >= expire {
			delete(m.sensors, k)
		}
	}
}

// rate is Kafka's sampled rate (SampledStat and Rate): values summed into
// up to Samples windows, the oldest reused once all exist; a window older
// than all of them together is cleared; the rate divides the sum by the
// time since the oldest window began, counted as at least Samples-1 whole
// windows so that a new client's first bytes do not read as a huge rate.
type rate struct {
	samples []sample
	current int
	lastMs  int64
}

type sample struct {
	startMs int64
	value   float64
}

func (r *rate) record(v float64, nowMs int64, cfg Config) {
	window := cfg.Window.Milliseconds()
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{startMs: nowMs})
	}
	if nowMs-r.samples[r.current].startMs >= window {
		r.current = (r.current + 1) % cfg.Samples
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, sample{startMs: nowMs})
		} else {
			r.samples[r.current] = sample{startMs: nowMs}
		}
	}
	r.samples[r.current].value += v
	r.lastMs = nowMs
}

// measure returns the rate per second and the window it was measured
// over: at least all windows but one, as Kafka's Rate.
func (r *rate) measure(nowMs int64, cfg Config) (float64, int64) {
	window := cfg.Window.Milliseconds()
	total, oldest := r.total(nowMs, cfg)
	elapsed := nowMs - oldest
	if full, least := elapsed/window, int64(cfg.Samples-1); full < least {
		elapsed += (least - full) * window
	}
	elapsed = max(elapsed, 1) // one sample, just begun
	return total / (float64(elapsed) / 1000), elapsed
}

// measureSimple is Kafka's SimpleRate: the rate per second since the
// oldest sample, over at least one window.
func (r *rate) measureSimple(nowMs int64, cfg Config) float64 {
	total, oldest := r.total(nowMs, cfg)
	return total / (float64(max(nowMs-oldest, cfg.Window.Milliseconds())) / 1000)
}

// total sums the samples still in the window at nowMs (resetting the
// expired ones) and returns it with the start of the oldest.
func (r *rate) total(nowMs int64, cfg Config) (float64, int64) {
	expire := int64(cfg.Samples) * cfg.Window.Milliseconds()
	total, oldest := 0.0, nowMs
	for i := range r.samples {
		if nowMs-r.samples[i].startMs >= expire {
			r.samples[i] = sample{startMs: nowMs}
		}
		total += r.samples[i].value
		oldest = min(oldest, r.samples[i].startMs)
	}
	return total, oldest
}
