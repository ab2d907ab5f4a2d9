package txn

import "time"

// Config holds the broker settings the coordinator obeys, named after
// Kafka's keys.
type Config struct {
	// NumPartitions is transaction.state.log.num.partitions (default 50).
	NumPartitions int32
	// MaxTimeout is transaction.max.timeout.ms (15 min): InitProducerId
	// with a longer transaction timeout fails INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms (7 days): an id with
	// no transaction in progress and no update for this long is removed.
	IDExpiration time.Duration
	// AbortTimedOutInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s),
	// how often transactions past their timeout are looked for and aborted.
	// Zero or less disables the check.
	AbortTimedOutInterval time.Duration
	// RemoveExpiredInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms (1 hour),
	// how often expired transactional ids are looked for. Zero or less
	// disables the check.
	RemoveExpiredInterval time.Duration
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		NumPartitions:         50,
		MaxTimeout:            15 * time.Minute,
		IDExpiration:          7 * 24 * time.Hour,
		AbortTimedOutInterval: 10 * time.Second,
		RemoveExpiredInterval: time.Hour,
	}
}
