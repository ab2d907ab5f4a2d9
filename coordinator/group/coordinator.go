package group

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/internal/keyhash"
)

// Log is the coordinator's view of the __consumer_offsets partitions.
type Log interface {
	// Append writes one record batch (base offset 0, as a producer sends
	// it) to the partition and returns once it is committed, with the
	// offset its first record got. The coordinator keeps the log offset of
	// each committed offset's record: a transaction's offsets, committed
	// later by a marker, do not replace a commit written after them.
	Append(partition int32, batch []byte) (baseOffset int64, err error)
	// Replay calls fn with the partition's batches, in order, from its log
	// start offset to its high watermark.
	Replay(partition int32, fn func(batches []byte) error) error
}

type partitionState uint8

const (
	notOwned partitionState = iota
	loading
	loaded
)

// Coordinator coordinates the groups of the __consumer_offsets partitions
// it has loaded.
type Coordinator struct {
	cfg    Config
	log    Log
	clock  Clock
	logger *slog.Logger

	mu     sync.Mutex
	parts  []partitionState
	groups map[string]*classicGroup
	closed bool
	expiry timerSlot
	// topics serves consumer groups; read under a group's lock, hence
	// not guarded by mu.
	topics atomic.Pointer[topicsHolder]

	// txnGroups indexes the groups that may hold pending offsets of each
	// producer's open transaction. Guarded by txnMu, which is taken last
	// (after a group's mu) and held only briefly.
	txnMu     sync.Mutex
	txnGroups map[int64]map[*classicGroup]struct{}
	// lateTxns are the CompleteTxn calls for partitions still loading,
	// applied when the load completes; guarded by mu.
	lateTxns map[int32][]txnEnd
}

// New returns a coordinator that owns no partition yet; Load gives it one.
// A nil clock means the real one.
func New(cfg Config, log Log, clock Clock, logger *slog.Logger) *Coordinator {
	if clock == nil {
		clock = realClock{}
	}
	c := &Coordinator{
		cfg: cfg, log: log, clock: clock, logger: logger,
		parts:     make([]partitionState, cfg.NumPartitions),
		groups:    map[string]*classicGroup{},
		txnGroups: map[int64]map[*classicGroup]struct{}{},
		lateTxns:  map[int32][]txnEnd{},
	}
	c.mu.Lock()
	c.scheduleExpiry()
	c.mu.Unlock()
	return c
}

// PartitionFor is the __consumer_offsets partition of a group: Kafka's
// Utils.abs(groupId.hashCode()) % partitions, with Java's String.hashCode.
func PartitionFor(groupID string, partitions int32) int32 {
	return keyhash.Partition(groupID, partitions)
}

// WillLoad marks a partition this node is about to load: until Load has
// run, requests for its groups get COORDINATOR_LOAD_IN_PROGRESS, as in
// Kafka, whose runtime puts every partition it leads in loading at once.
// A partition already loading or loaded is left as it is.
func (c *Coordinator) WillLoad(partition int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if partition >= 0 && int(partition) < len(c.parts) && c.parts[partition] == notOwned {
		c.parts[partition] = loading
	}
}

// Load replays a partition of __consumer_offsets and starts coordinating
// its groups. Requests for them meanwhile get COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) Load(partition int32) error {
	c.mu.Lock()
	if partition < 0 || int(partition) >= len(c.parts) {
		c.mu.Unlock()
		return fmt.Errorf("partition %d out of range", partition)
	}
	c.parts[partition] = loading
	c.mu.Unlock()

	r := newReplayer(partition)
	if err := c.log.Replay(partition, r.batches); err != nil {
		c.mu.Lock()
		c.parts[partition] = notOwned
		delete(c.lateTxns, partition)
		c.mu.Unlock()
		return fmt.Errorf("loading __consumer_offsets-%d: %w", partition, err)
	}
	groups := r.groups(c.clock.Now())
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, g := range groups {
		c.groups[id] = g
		g.mu.Lock()
		for _, m := range g.members {
			c.armHeartbeat(g, m, m.sessionTimeout)
		}
		if len(g.members) > c.cfg.MaxSize {
			// group.max.size was lowered since the group was stored: its
			// members rejoin, and those over the limit are refused.
			c.logger.Info("loaded group is over group.max.size, rebalancing", "group", id, "members", len(g.members))
			c.prepareRebalance(g)
		}
		if g.consumer != nil {
			c.resumeConsumerGroup(g)
		}
		if g.share != nil {
			c.resumeShareGroup(g)
		}
		if g.streams != nil {
			c.resumeStreamsGroup(g)
		}
		for pid := range g.pendingTxn {
			c.indexTxn(pid, g)
		}
		g.mu.Unlock()
	}
	// Markers appended while the partition loaded, in their order.
	for _, end := range c.lateTxns[partition] {
		for _, g := range c.endTxn(partition, end.producerID, end.commit) {
			g.mu.Lock()
			if c.groups[g.id] == g && g.unused() {
				delete(c.groups, g.id)
			}
			g.mu.Unlock()
		}
	}
	delete(c.lateTxns, partition)
	c.parts[partition] = loaded
	c.logger.Info("loaded group coordinator partition", "partition", partition, "groups", len(groups))
	return nil
}

// Close stops the timers. Parked requests are not answered: the broker
// closes their connections.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	c.expiry.stop()
	groups := make([]*classicGroup, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		g.stopTimers()
		g.mu.Unlock()
	}
}

// stopTimers cancels every timer of the group; g.mu is held.
func (g *classicGroup) stopTimers() {
	g.joinTimer.stop()
	g.syncTimer.stop()
	for _, m := range g.members {
		m.heartbeat.stop()
	}
	for _, p := range g.pending {
		p.stop()
	}
	if g.consumer != nil {
		for _, m := range g.consumer.members {
			m.session.stop()
			m.rebalance.stop()
		}
	}
	if g.share != nil {
		for _, m := range g.share.members {
			m.session.stop()
		}
	}
	if g.streams != nil {
		g.streams.delay.stop()
		for _, m := range g.streams.members {
			m.stopTimers()
		}
	}
}

// acquire finds a group, creating it if asked, and returns it locked, or
// an error code when this coordinator cannot serve it: INVALID_GROUP_ID
// for an empty id, NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, or GROUP_ID_NOT_FOUND when it does not
// exist and create is false.
func (c *Coordinator) acquire(id string, create bool) (*classicGroup, int16) {
	if id == "" {
		return nil, errInvalidGroupID
	}
	return c.acquireOffsets(id, create)
}

// acquireOffsets is acquire for OffsetCommit and OffsetFetch, which take
// the empty group id too: Kafka's GroupCoordinatorService keeps offsets
// for "" (old simple consumers commit there) and refuses only a null id.
func (c *Coordinator) acquireOffsets(id string, create bool) (*classicGroup, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := PartitionFor(id, int32(len(c.parts)))
	if code := c.servesLocked(p); code != 0 {
		return nil, code
	}
	g := c.groups[id]
	if g == nil {
		if !create {
			return nil, errGroupIDNotFound
		}
		g = newGroup(id, p, c.clock.Now())
		c.groups[id] = g
	}
	g.mu.Lock()
	return g, 0
}

// Serves answers 0 when this coordinator has group id's partition loaded,
// else the code a request for the group gets: COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR.
func (c *Coordinator) Serves(id string) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servesLocked(PartitionFor(id, int32(len(c.parts))))
}

// PartitionCount is the number of __consumer_offsets partitions group ids
// map to.
func (c *Coordinator) PartitionCount() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int32(len(c.parts))
}

// SetPartitionCount maps group ids to n partitions from now on instead of
// Config.NumPartitions: an existing __consumer_offsets keeps the count it
// was created with, whatever offsets.topic.num.partitions says now (Kafka
// takes the topic's count when its coordinator starts). It fails while a
// partition is loaded or loading: their groups would move.
func (c *Coordinator) SetPartitionCount(n int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	parts, err := keyhash.Resize("__consumer_offsets", c.parts, n, func(st partitionState) bool { return st != notOwned })
	if err == nil {
		c.parts = parts
	}
	return err
}

func (c *Coordinator) servesLocked(p int32) int16 {
	switch {
	case c.closed:
		return errCoordinatorNotAvail
	case c.parts[p] == loading:
		return errLoadInProgress
	case c.parts[p] != loaded:
		return errNotCoordinator
	}
	return 0
}

// acquireForMember is acquire for requests from a member (SyncGroup,
// Heartbeat, LeaveGroup, a rejoin): a group that does not exist means the
// member is unknown, as Kafka answers.
func (c *Coordinator) acquireForMember(id string) (*classicGroup, int16) {
	g, code := c.acquire(id, false)
	if code == errGroupIDNotFound {
		code = errUnknownMemberID
	}
	return g, code
}

// removeIfDead drops a group the caller just marked Dead. Called without
// the group's lock (lock order).
func (c *Coordinator) removeIfDead(g *classicGroup) {
	c.removeIf(g, func() bool { return g.state == Dead })
}

// removeIfUnused drops a group that holds nothing (classicGroup.unused).
func (c *Coordinator) removeIfUnused(g *classicGroup) {
	c.removeIf(g, g.unused)
}

func (c *Coordinator) removeIf(g *classicGroup, cond func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[g.id] != g {
		return
	}
	g.mu.Lock()
	drop := cond()
	g.mu.Unlock()
	if drop {
		delete(c.groups, g.id)
	}
}

// lockedGroup is the timer callbacks' way in: the group, locked, if it is
// still the one in the map.
func (c *Coordinator) lockedGroup(g *classicGroup) bool {
	c.mu.Lock()
	current := c.groups[g.id] == g && !c.closed
	c.mu.Unlock()
	if !current {
		return false
	}
	g.mu.Lock()
	return true
}

// after arms slot to call f with the group locked after d, unless the slot
// is stopped or re-armed first.
func (c *Coordinator) after(g *classicGroup, slot *timerSlot, d time.Duration, f func()) {
	slot.stop()
	seq := slot.seq
	slot.timer = c.clock.AfterFunc(d, func() {
		if !c.lockedGroup(g) {
			return
		}
		if slot.seq == seq {
			slot.timer = nil
			f()
		}
		g.mu.Unlock()
	})
}
