package broker

import (
	"math"
	"time"

	"github.com/gregor-broker/gregor/coordinator/txn"
)

// txnKeys are the broker keys of the transaction coordinator and its
// internal topic, __transaction_state.
var txnKeys = []configKey{
	{"transaction.state.log.num.partitions", "INT", "50", "The number of partitions for the transaction topic (should not change after deployment).", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Transactions.NumPartitions = int32(n)
		return err
	}},
	{"transaction.state.log.replication.factor", "SHORT", "3", "The replication factor for the transaction topic; a single node creates it with 1, a cluster with at most its live brokers.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt16)
		c.Cluster.TxnStateReplicationFactor = int16(n)
		return err
	}},
	{"transaction.state.log.min.isr", "INT", "2", "The min.insync.replicas of the transaction topic.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.TxnStateMinISR = n
		return err
	}},
	{"transaction.state.log.segment.bytes", "INT", "104857600", "The transaction topic segment bytes should be kept relatively small in order to facilitate faster log compaction and cache loads.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.TxnStateSegmentBytes = n
		return err
	}},
	{"request.timeout.ms", "INT", "30000", "How long a broker waits for another broker's answer (forwarded share-group state, transaction markers and verification), and how long the transaction coordinator's writes wait for the ISR of its topic.", millis(func(c *Config) *time.Duration { return &c.RequestTimeout })},
	{"transaction.max.timeout.ms", "INT", "900000", "The maximum allowed timeout for transactions; a producer asking for more gets INVALID_TRANSACTION_TIMEOUT.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Transactions.MaxTimeout = time.Duration(n) * time.Millisecond
		return err
	}},
	{"transactional.id.expiration.ms", "INT", "604800000", "The time the transaction coordinator waits without receiving any transaction status updates for the current transaction before expiring its transactional id.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Transactions.IDExpiration = time.Duration(n) * time.Millisecond
		return err
	}},
	{"transaction.abort.timed.out.transaction.cleanup.interval.ms", "INT", "10000", "The interval at which to roll back transactions that have timed out.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Transactions.AbortTimedOutInterval = time.Duration(n) * time.Millisecond
		return err
	}},
	{"transaction.remove.expired.transaction.cleanup.interval.ms", "INT", "3600000", "The interval at which to remove transactions that have expired due to transactional.id.expiration.ms passing.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.Transactions.RemoveExpiredInterval = time.Duration(n) * time.Millisecond
		return err
	}},
	{"add.partitions.to.txn.retry.backoff.ms", "INT", "20", "The server-side retry backoff when the server attempts to add the partition to the transaction.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.AddPartitionsRetryBackoff = time.Duration(n) * time.Millisecond
		return err
	}},
	{"add.partitions.to.txn.retry.backoff.max.ms", "INT", "100", "The maximum allowed timeout for adding partitions to transactions on the server side. It only applies to the actual add partition operations, not the verification.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.AddPartitionsRetryMax = time.Duration(n) * time.Millisecond
		return err
	}},
	{"transaction.partition.verification.enable", "BOOLEAN", "true", "Enable verification that checks that the partition has been added to the transaction before writing transactional records to the partition.", func(c *Config, v string) error {
		on, err := parseBool(v)
		c.TxnPartitionVerification = on
		return err
	}},
}

func init() {
	brokerKeys = append(brokerKeys, txnKeys...)
}

// txnConfig is the transaction coordinator's configuration.
func (c *Config) txnConfig() txn.Config { return c.Transactions }
