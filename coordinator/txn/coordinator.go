package txn

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/internal/keyhash"
)

// Log is the coordinator's view of the __transaction_state partitions; it
// has the shape of group.Log.
type Log interface {
	// Append writes one record batch (base offset 0, as a producer sends
	// it) to the partition and returns once it is committed.
	Append(partition int32, batch []byte) error
	// Replay calls fn with the partition's batches, in order, from its log
	// start offset to its high watermark.
	Replay(partition int32, fn func(batches []byte) error) error
}

// TopicPartition names a partition taking part in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Markers writes the transaction markers (Kafka's
// TransactionMarkerChannelManager and WriteTxnMarkers requests).
type Markers interface {
	// WriteMarkers appends an end-transaction control batch for the
	// producer to each partition and returns a Kafka error code per
	// partition (0: written). txnVersion is the transaction's
	// transaction.version (WriteTxnMarkers v2): from 2 the partition
	// leaders hold the marker's epoch to the V2 rules. It may block.
	WriteMarkers(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, txnVersion int16, partitions []TopicPartition) []int16
}

// Coordinator coordinates the transactional ids of the __transaction_state
// partitions it has loaded.
type Coordinator struct {
	cfg        Config
	log        Log
	markers    Markers
	allocateID func() (int64, error)
	clock      group.Clock
	logger     *slog.Logger

	mu          sync.Mutex
	parts       []*partition // nil: not ours
	txns        map[string]*txnMetadata
	closed      bool
	abortTimer  group.Timer
	expireTimer group.Timer

	// workersMu (a leaf lock, taken with a txnMetadata's mu held) guards
	// stopping, so that no marker writer starts once Close waits for them.
	workersMu sync.Mutex
	stopping  bool
	workers   sync.WaitGroup
}

// markerRetryBackoff is the first wait before markers that failed with a
// retriable error are written again; it doubles up to maxMarkerBackoff.
const (
	markerRetryBackoff = 100 * time.Millisecond
	maxMarkerBackoff   = 10 * time.Second
)

type realClock struct{}

func (realClock) Now() time.Time                                  { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) group.Timer { return time.AfterFunc(d, f) }

// New returns a coordinator that owns no partition yet; Load gives it one.
// allocateProducerID hands out new producer ids (Kafka's
// ProducerIdManager). A nil clock means the real one, a nil logger
// discards.
func New(cfg Config, log Log, markers Markers, allocateProducerID func() (int64, error), clock group.Clock, logger *slog.Logger) *Coordinator {
	if clock == nil {
		clock = realClock{}
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := &Coordinator{
		cfg: cfg, log: log, markers: markers, allocateID: allocateProducerID, clock: clock, logger: logger,
		parts: make([]*partition, cfg.NumPartitions),
		txns:  map[string]*txnMetadata{},
	}
	c.mu.Lock()
	c.scheduleAbort()
	c.scheduleExpire()
	c.mu.Unlock()
	return c
}

// PartitionFor is the __transaction_state partition of a transactional
// id: Kafka's Utils.abs(transactionalId.hashCode) % partitions, the same
// function the group coordinator uses for group ids.
func (c *Coordinator) PartitionFor(transactionalID string) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.partitionForLocked(transactionalID)
}

func (c *Coordinator) partitionForLocked(transactionalID string) int32 {
	return group.PartitionFor(transactionalID, int32(len(c.parts)))
}

// PartitionCount is the number of __transaction_state partitions
// transactional ids map to.
func (c *Coordinator) PartitionCount() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int32(len(c.parts))
}

// SetPartitionCount maps transactional ids to n partitions from now on
// instead of Config.NumPartitions: an existing __transaction_state keeps
// the count it was created with (Kafka takes the topic's count when its
// coordinator starts). It fails while a partition is loaded.
func (c *Coordinator) SetPartitionCount(n int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	parts, err := keyhash.Resize("__transaction_state", c.parts, n, func(p *partition) bool { return p != nil })
	if err == nil {
		c.parts = parts
	}
	return err
}

// Load replays a partition of __transaction_state, which this node now
// leads at coordinatorEpoch, and starts coordinating its transactional
// ids (Kafka's onElection). Requests for them meanwhile get
// COORDINATOR_LOAD_IN_PROGRESS. Transactions found in PrepareCommit or
// PrepareAbort get their markers written again and are then completed;
// until then they answer CONCURRENT_TRANSACTIONS.
func (c *Coordinator) Load(partitionID int32, coordinatorEpoch int32) error {
	c.mu.Lock()
	if partitionID < 0 || int(partitionID) >= len(c.parts) {
		c.mu.Unlock()
		return fmt.Errorf("partition %d out of range", partitionID)
	}
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("coordinator closed")
	}
	dropped := c.dropPartitionLocked(partitionID)
	p := &partition{id: partitionID, epoch: coordinatorEpoch, state: loading}
	c.parts[partitionID] = p
	c.mu.Unlock()
	markRemoved(dropped)

	r := &replayer{txns: map[string]*txnFields{}}
	err := c.log.Replay(partitionID, r.batches)

	c.mu.Lock()
	if c.parts[partitionID] != p || c.closed {
		c.mu.Unlock()
		return fmt.Errorf("__transaction_state-%d was unloaded while loading", partitionID)
	}
	if err != nil {
		c.parts[partitionID] = nil
		p.gone.Store(true)
		c.mu.Unlock()
		return fmt.Errorf("loading __transaction_state-%d: %w", partitionID, err)
	}
	var toComplete []*txnMetadata
	for id, f := range r.txns {
		t := newTxn(id, p, *f)
		switch t.state {
		case statePrepareCommit:
			t.pending = stateCompleteCommit
			toComplete = append(toComplete, t)
		case statePrepareAbort:
			t.pending = stateCompleteAbort
			toComplete = append(toComplete, t)
		}
		c.txns[id] = t
	}
	p.state = loaded
	c.mu.Unlock()
	c.logger.Info("loaded transaction coordinator partition", "partition", partitionID,
		"coordinator_epoch", coordinatorEpoch, "transactional_ids", len(r.txns), "completing", len(toComplete))
	for _, t := range toComplete {
		t.mu.Lock()
		if !t.removed {
			c.startMarkers(t)
		}
		t.mu.Unlock()
	}
	return nil
}

// Unload stops coordinating the transactional ids of a partition whose
// leadership this node lost (Kafka's onResignation): they are forgotten,
// markers still being written for them are abandoned (the new leader
// writes them again), and their requests get NOT_COORDINATOR.
func (c *Coordinator) Unload(partitionID int32) {
	c.mu.Lock()
	if partitionID < 0 || int(partitionID) >= len(c.parts) {
		c.mu.Unlock()
		return
	}
	dropped := c.dropPartitionLocked(partitionID)
	c.mu.Unlock()
	markRemoved(dropped)
	c.logger.Info("unloaded transaction coordinator partition", "partition", partitionID, "transactional_ids", len(dropped))
}

// dropPartitionLocked forgets a partition and its transactions; c.mu is
// held. The caller marks them removed once it has let go of c.mu.
func (c *Coordinator) dropPartitionLocked(partitionID int32) []*txnMetadata {
	p := c.parts[partitionID]
	if p == nil {
		return nil
	}
	p.gone.Store(true)
	c.parts[partitionID] = nil
	var dropped []*txnMetadata
	for id, t := range c.txns {
		if t.part == p {
			dropped = append(dropped, t)
			delete(c.txns, id)
		}
	}
	return dropped
}

func markRemoved(ts []*txnMetadata) {
	for _, t := range ts {
		t.mu.Lock()
		t.removed = true
		t.mu.Unlock()
	}
}

// Close stops the timers and waits for the rounds of markers in flight:
// the broker must make its pending WriteMarkers calls return. After it,
// every request answers COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	if c.abortTimer != nil {
		c.abortTimer.Stop()
	}
	if c.expireTimer != nil {
		c.expireTimer.Stop()
	}
	c.mu.Unlock()
	c.workersMu.Lock()
	c.stopping = true
	c.workersMu.Unlock()
	c.workers.Wait()
}

// lookup finds a transactional id's metadata (nil if it has none), or the
// code this coordinator answers for it: COORDINATOR_NOT_AVAILABLE when
// closed, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) lookup(id string) (*txnMetadata, *partition, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, nil, errCoordinatorNotAvail
	}
	p := c.parts[c.partitionForLocked(id)]
	switch {
	case p == nil:
		return nil, nil, errNotCoordinator
	case p.state == loading:
		return nil, nil, errLoadInProgress
	}
	return c.txns[id], p, 0
}

// acquire returns the id's metadata locked, nil if there is none, or an
// error code (see lookup).
func (c *Coordinator) acquire(id string) (*txnMetadata, int16) {
	for {
		t, _, code := c.lookup(id)
		if code != 0 || t == nil {
			return nil, code
		}
		t.mu.Lock()
		if !t.removed {
			return t, 0
		}
		t.mu.Unlock()
		c.forget(t)
	}
}

// acquireOrCreate is acquire for InitProducerId: an id without metadata
// gets a new producer id and a fresh, locked metadata with epoch -1, which
// the caller writes (or forgets, with t.removed, if the write fails).
func (c *Coordinator) acquireOrCreate(id string, timeoutMs int32) (*txnMetadata, int16) {
	for {
		t, code := c.acquire(id)
		if code != 0 || t != nil {
			return t, code
		}
		pid, err := c.allocateID()
		if err != nil {
			c.logger.Warn("producer id allocation failed", "transactional_id", id, "err", err)
			return nil, errorCode(err)
		}
		c.mu.Lock()
		p := c.parts[c.partitionForLocked(id)]
		switch {
		case c.closed:
			c.mu.Unlock()
			return nil, errCoordinatorNotAvail
		case p == nil:
			c.mu.Unlock()
			return nil, errNotCoordinator
		case p.state == loading:
			c.mu.Unlock()
			return nil, errLoadInProgress
		case c.txns[id] != nil:
			c.mu.Unlock()
			continue // created meanwhile; the producer id is wasted, as in Kafka's race
		}
		t = newTxn(id, p, txnFields{
			producerID: pid, prevProducerID: -1, nextProducerID: -1, producerEpoch: -1, lastProducerEpoch: -1,
			timeoutMs: timeoutMs, state: stateEmpty, startTime: -1, lastUpdate: c.clock.Now().UnixMilli(),
		})
		t.fresh = true
		t.mu.Lock() // nobody else can hold it yet
		c.txns[id] = t
		c.mu.Unlock()
		return t, 0
	}
}

// forget drops a removed metadata from the map if it is still there.
// Called without t.mu (lock order).
func (c *Coordinator) forget(t *txnMetadata) {
	c.mu.Lock()
	if c.txns[t.id] == t {
		delete(c.txns, t.id)
	}
	c.mu.Unlock()
}

// snapshot lists the metadata of the loaded partitions, and whether some
// partition is still loading.
func (c *Coordinator) snapshot() ([]*txnMetadata, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var loadingAny bool
	for _, p := range c.parts {
		if p != nil && p.state == loading {
			loadingAny = true
		}
	}
	out := make([]*txnMetadata, 0, len(c.txns))
	for _, t := range c.txns {
		out = append(out, t)
	}
	return out, loadingAny
}

// spawn runs f in a goroutine that Close waits for, unless closing.
func (c *Coordinator) spawn(f func()) {
	c.workersMu.Lock()
	defer c.workersMu.Unlock()
	if c.stopping {
		return
	}
	c.workers.Add(1)
	go func() {
		defer c.workers.Done()
		f()
	}()
}
