package logstore

import (
	"time"
)

// Producer id expiration, as Kafka's ProducerStateManager: a producer
// with no open transaction whose last batch is producer.id.expiration.ms
// old is forgotten, so the state (and its snapshots) of a log written by
// many short-lived idempotent producers stays bounded. A producer that
// comes back after that is treated as new. The Dir checks every log each
// producer.id.expiration.check.interval.ms, and once as soon as the
// broker sets the expiration, which drops what a snapshot loaded at start
// holds of long-gone producers.

// Kafka's defaults.
const (
	DefaultProducerIDExpiration    = 24 * time.Hour
	DefaultProducerIDCheckInterval = 10 * time.Minute
)

// removeExpiredProducers forgets the producers idle for expiration ms or
// more at nowMs, and returns how many.
func (l *Log) removeExpiredProducers(nowMs, expirationMs int64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for pid, e := range l.producers.producers {
		if e.txnFirstOffset < 0 && nowMs-e.lastTimestamp >= expirationMs {
			delete(l.producers.producers, pid)
			n++
		}
	}
	l.producers.removeExpiredVerifications(nowMs, expirationMs)
	return n
}

// SetProducerIDExpiration sets producer.id.expiration.ms and
// producer.id.expiration.check.interval.ms (at least a millisecond each)
// and runs a check soon.
func (d *Dir) SetProducerIDExpiration(expiration, checkInterval time.Duration) {
	d.timing.Lock()
	d.producerExpiration = max(expiration, time.Millisecond)
	d.producerCheckInterval = max(checkInterval, time.Millisecond)
	d.timing.Unlock()
	kick(d.kickProducerExpiry)
}

func (d *Dir) producerCheckEvery() time.Duration {
	d.timing.Lock()
	defer d.timing.Unlock()
	return d.producerCheckInterval
}

// producerExpiryCheck is the expiration worker's pass.
func (d *Dir) producerExpiryCheck() {
	d.timing.Lock()
	expiration := d.producerExpiration
	d.timing.Unlock()
	d.RemoveExpiredProducers(time.Now(), expiration)
}

// RemoveExpiredProducers runs one expiration check over every log as of
// now and returns how many producers it forgot.
func (d *Dir) RemoveExpiredProducers(now time.Time, expiration time.Duration) int {
	n := 0
	for _, l := range d.Logs() {
		n += l.removeExpiredProducers(now.UnixMilli(), expiration.Milliseconds())
	}
	return n
}
