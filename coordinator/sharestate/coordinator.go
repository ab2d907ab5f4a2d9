package sharestate

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/internal/keyhash"
)

// Log is the coordinator's view of the __share_group_state partitions; it
// has the shape of the other coordinators' Log.
type Log interface {
	// Append writes one record batch (base offset 0, as a producer sends
	// it) to the partition and returns once it is committed.
	Append(partition int32, batch []byte) error
	// Replay calls fn with the partition's batches, in order, from its log
	// start offset to its high watermark.
	Replay(partition int32, fn func(batches []byte) error) error
}

// Coordinator keeps the state of the share-partitions of the
// __share_group_state partitions it has loaded.
type Coordinator struct {
	log     Log
	now     func() time.Time
	refusal int16 // set by Refusing: every share-partition's answer

	mu    sync.Mutex
	parts []*partition // one per partition of the topic; nil: never loaded here
}

// Refusing is a coordinator that answers every share-partition of every
// request with code, in the shape of its answers: a caller who may not
// make the request (CLUSTER_AUTHORIZATION_FAILED) is answered so.
func Refusing(code int16) *Coordinator {
	return &Coordinator{refusal: code}
}

// partition is one incarnation of a loaded __share_group_state partition:
// Load makes a new one, Unload retires it.
type partition struct {
	id int32

	// Guarded by Coordinator.mu.
	loading  bool
	unloaded bool
	// inflight counts the requests working on this incarnation; a later
	// Load of the partition waits for them, so that every record they
	// append is in the log it replays.
	inflight sync.WaitGroup

	// gone is set when the incarnation is unloaded or replaced; a request
	// that finds it set after its append answers NOT_COORDINATOR.
	gone atomic.Bool

	mu     sync.Mutex // guards states and locks
	states map[spKey]*shareState
	locks  map[spKey]*keyLock
}

// keyLock serialises the requests for one share-partition, from reading
// its state to applying what they appended.
type keyLock struct {
	mu   sync.Mutex
	refs int // requests holding or waiting for mu; guarded by partition.mu
}

// New returns a coordinator for a __share_group_state of numPartitions
// partitions that owns none of them yet; Load gives it one. A nil now
// means time.Now.
func New(log Log, numPartitions int32, now func() time.Time) *Coordinator {
	if now == nil {
		now = time.Now
	}
	return &Coordinator{log: log, now: now, parts: make([]*partition, max(numPartitions, 0))}
}

// PartitionCount is the number of __share_group_state partitions
// share-partitions map to.
func (c *Coordinator) PartitionCount() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int32(len(c.parts))
}

// SetPartitionCount maps share-partitions to n partitions from now on: an
// existing __share_group_state keeps the count it was created with (Kafka
// takes the topic's count when its coordinator starts). It fails while a
// partition is loaded.
func (c *Coordinator) SetPartitionCount(n int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	parts, err := keyhash.Resize("__share_group_state", c.parts, n, func(p *partition) bool { return p != nil && !p.unloaded })
	if err == nil {
		c.parts = parts
	}
	return err
}

// Load replays a partition of __share_group_state, which this node now
// leads, and starts serving its share-partitions (Kafka's onElection).
// Meanwhile their requests get COORDINATOR_LOAD_IN_PROGRESS. Loading a
// partition again starts it over: the requests working on the previous
// load (answered NOT_COORDINATOR if their append returns after this) are
// waited for before the replay.
func (c *Coordinator) Load(n int32) error {
	p := &partition{id: n, loading: true, locks: map[spKey]*keyLock{}}
	c.mu.Lock()
	if n < 0 || int(n) >= len(c.parts) {
		c.mu.Unlock()
		return fmt.Errorf("__share_group_state-%d: partition out of range (%d partitions)", n, len(c.parts))
	}
	old := c.parts[n]
	c.parts[n] = p
	c.mu.Unlock()
	if old != nil {
		old.retire()
		old.inflight.Wait()
	}

	r := &replayer{states: map[spKey]*shareState{}}
	err := c.log.Replay(n, r.batches)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parts[n] != p || p.unloaded {
		return fmt.Errorf("__share_group_state-%d was unloaded while loading", n)
	}
	if err != nil {
		c.parts[n] = nil
		p.gone.Store(true)
		return fmt.Errorf("loading __share_group_state-%d: %w", n, err)
	}
	p.mu.Lock()
	p.states = r.states
	p.mu.Unlock()
	p.loading = false
	return nil
}

// Unload forgets the share-partitions of a partition whose leadership
// this node lost (Kafka's onResignation); their requests then get
// NOT_COORDINATOR, and requests in flight are answered NOT_COORDINATOR
// once their append returns.
func (c *Coordinator) Unload(n int32) {
	c.mu.Lock()
	if n < 0 || int(n) >= len(c.parts) {
		c.mu.Unlock()
		return
	}
	p := c.parts[n]
	if p != nil {
		p.unloaded = true
	}
	c.mu.Unlock()
	if p != nil {
		p.retire()
	}
}

// retire marks an incarnation gone and drops its state.
func (p *partition) retire() {
	p.gone.Store(true)
	p.mu.Lock()
	p.states = nil
	p.mu.Unlock()
}

// held is a share-partition locked for one request.
type held struct {
	p  *partition
	k  spKey
	kl *keyLock
}

// lock finds the loaded partition of k and locks k in it, or returns the
// code the request is answered with: NOT_COORDINATOR for a partition not
// loaded here, COORDINATOR_LOAD_IN_PROGRESS while it loads.
func (c *Coordinator) lock(k spKey) (*held, int16) {
	if c.refusal != 0 {
		return nil, c.refusal
	}
	c.mu.Lock()
	var p *partition
	if len(c.parts) > 0 {
		p = c.parts[PartitionFor(k.group, k.topicID, k.partition, int32(len(c.parts)))]
	}
	switch {
	case p == nil || p.unloaded:
		c.mu.Unlock()
		return nil, errNotCoordinator
	case p.loading:
		c.mu.Unlock()
		return nil, errLoadInProgress
	}
	p.inflight.Add(1)
	c.mu.Unlock()

	p.mu.Lock()
	kl := p.locks[k]
	if kl == nil {
		kl = &keyLock{}
		p.locks[k] = kl
	}
	kl.refs++
	p.mu.Unlock()
	kl.mu.Lock()
	return &held{p: p, k: k, kl: kl}, 0
}

func (h *held) unlock() {
	h.kl.mu.Unlock()
	h.p.mu.Lock()
	if h.kl.refs--; h.kl.refs == 0 {
		delete(h.p.locks, h.k)
	}
	h.p.mu.Unlock()
	h.p.inflight.Done()
}

// current is the share-partition's state, nil if it has none (only the
// holder of its lock changes it), or NOT_COORDINATOR once the partition
// was unloaded.
func (h *held) current() (*shareState, int16) {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	if h.p.gone.Load() {
		return nil, errNotCoordinator
	}
	return h.p.states[h.k], 0
}

// store persists next as the share-partition's state (a snapshot record;
// nil: a tombstone) and then applies it. A failed append changes nothing
// and returns the code to answer, with Kafka's message (op's prefix and
// the reason).
func (c *Coordinator) store(op string, h *held, next *shareState) (int16, string) {
	if h.p.gone.Load() {
		return failed(op, errNotCoordinator)
	}
	var value []byte
	if next != nil {
		value = snapshotValue(&next.offsets)
	}
	if err := c.appendRecord(h.p.id, h.k, value); err != nil {
		return appendErrorCode(err), op + err.Error()
	}
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	if h.p.gone.Load() {
		return failed(op, errNotCoordinator)
	}
	if next == nil {
		delete(h.p.states, h.k)
	} else {
		h.p.states[h.k] = next
	}
	return 0, ""
}

func (c *Coordinator) nowMs() int64 { return c.now().UnixMilli() }
