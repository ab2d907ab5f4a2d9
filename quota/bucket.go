package quota

import "time"

// Controller mutations (controller_mutation_rate, KIP-599) are measured
// with Kafka's token bucket rather than a sampled rate: a client may
// create or delete a burst of MutationSamples x MutationWindow seconds'
// worth of partitions at once, after which the bucket refills at the quota's rate.
// A request that finds the bucket in debt is refused (from the versions
// where Kafka is strict) or throttled until the debt is paid.

// bucket is one client's token bucket.
type bucket struct {
	tokens, rate, burst float64
	lastMs              int64
}

// refill adds the tokens earned since the bucket was last used.
func (b *bucket) refill(nowMs int64) {
	b.tokens = min(b.burst, b.tokens+b.rate*float64(nowMs-b.lastMs)/1000)
	b.lastMs = nowMs
}

// Mutations takes permits (partitions created, added or deleted) from the
// client's controller_mutation_rate bucket and returns how long until the
// bucket is out of debt: 0 when it is not in debt after taking them, or
// when no quota applies. With permits 0 it only looks.
func (m *Manager) Mutations(user, clientID string, permits float64, now time.Time) time.Duration {
	bound, sk, ok := m.resolve(ControllerMutationRate, user, clientID)
	if !ok {
		return 0
	}
	burst := bound * float64(m.cfg.MutationSamples) * m.cfg.MutationWindow.Seconds()
	ms := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.buckets[sk]
	if b == nil {
		// Full buckets are forgotten: a client coming back gets a full one.
		for k, old := range m.buckets {
			if old.refill(ms); old.tokens >= old.burst {
				delete(m.buckets, k)
			}
		}
		b = &bucket{tokens: burst, lastMs: ms}
		m.buckets[sk] = b
	}
	b.rate, b.burst = bound, burst // the quota may have changed
	b.refill(ms)
	b.tokens -= permits
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens/bound*1000+0.5) * time.Millisecond
}
