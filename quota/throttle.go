package quota

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Throttle is a byte rate held under a bound of its own: Kafka's
// ReplicationQuotaManager, which throttles the replication of the replicas
// a topic lists (leader.replication.throttled.rate and
// follower.replication.throttled.rate, KIP-73) and moves between log dirs
// (replica.alter.log.dirs.io.max.bytes.per.second, KIP-113). The rate is
// measured as Kafka's SimpleRate: over the samples kept, and over at least
// one window, so a throttle lets at most one window's worth through at
// once. It is safe for concurrent use.
type Throttle struct {
	cfg   Config
	bound atomic.Int64 // bytes per second; math.MaxInt64 is none

	mu sync.Mutex
	r  rate
}

// NewThrottle measures a rate over cfg's samples, with no bound yet.
func NewThrottle(cfg Config) *Throttle {
	t := &Throttle{cfg: cfg.usable()}
	t.bound.Store(math.MaxInt64)
	return t
}

// SetBound sets the bound in bytes per second; math.MaxInt64 lifts it.
func (t *Throttle) SetBound(bytesPerSecond int64) { t.bound.Store(bytesPerSecond) }

// Bound is the bound in bytes per second.
func (t *Throttle) Bound() int64 { return t.bound.Load() }

// Exceeded reports whether the rate measured at now is above the bound.
func (t *Throttle) Exceeded(now time.Time) bool {
	bound := t.bound.Load()
	if bound == math.MaxInt64 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.r.measureSimple(now.UnixMilli(), t.cfg) > float64(bound)
}

// Record counts bytes moved at now.
func (t *Throttle) Record(bytes int64, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.r.record(float64(bytes), now.UnixMilli(), t.cfg)
}
