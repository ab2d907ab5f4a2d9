package broker

import (
	"slices"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/logstore"
)

// replicaState is a partition's replication state as this node last
// learned it: from the controller's image in a cluster, or fixed on a
// single node (this node the only replica, leader epoch 0). It is replaced
// whole, never changed in place.
type replicaState struct {
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
	replicas       []int32
	isr            []int32
}

// singleNodeState is every partition's state on a single node.
func singleNodeState(node int32) *replicaState {
	return &replicaState{leader: node, replicas: []int32{node}, isr: []int32{node}}
}

// newSingleNodePartition is a partition of a single node: its leader and
// whole ISR.
func newSingleNodePartition(t *topic, index int32, l *logstore.Log) *partition {
	p := &partition{topic: t, index: index, log: l}
	p.state.Store(singleNodeState(t.node))
	return p
}

// isLeader reports whether this node leads the partition.
func (p *partition) isLeader() bool { return p.state.Load().leader == p.topic.node }

// checkLeaderEpoch compares a client's current leader epoch with ours, as
// Kafka does for Fetch, ListOffsets and OffsetForLeaderEpoch; -1 means the
// client did not say.
func (p *partition) checkLeaderEpoch(clientEpoch int32) int16 {
	epoch := p.state.Load().leaderEpoch
	switch {
	case clientEpoch < 0 || clientEpoch == epoch:
		return 0
	case clientEpoch > epoch:
		return errUnknownLeaderEpoch
	default:
		return errFencedLeaderEpoch
	}
}

// followerProgress is what a leader knows of one follower: the log end
// offset of its latest fetch and when it was last caught up, Kafka's
// Replica state.
type followerProgress struct {
	leo              int64 // -1 until the follower's first fetch
	logStart         int64 // the follower's log start offset, as its last fetch said
	lastCaughtUp     time.Time
	lastFetch        time.Time
	leaderLEOAtFetch int64 // the leader's log end offset at lastFetch
	// brokerEpoch is the follower's broker epoch as its latest fetch gave
	// it (KIP-903), -1 until one did: the leader sends it with an ISR
	// holding the follower, so the controller refuses a stale incarnation.
	brokerEpoch int64
}

func newFollowerProgress() *followerProgress {
	return &followerProgress{leo: -1, leaderLEOAtFetch: -1, brokerEpoch: -1}
}

// leaderState is a leader's view of its followers; guarded by its mu.
// Lock order: a partition's leader.mu, then its waitMu.
type leaderState struct {
	mu         sync.Mutex
	epoch      int32 // the leader epoch these followers belong to
	epochStart int64 // the log end offset when this node became leader in epoch
	followers  map[int32]*followerProgress
	// pendingISR is the ISR of an AlterPartition in flight (nil if none),
	// change number pendingSeq; the high watermark counts its members too
	// until the outcome is known, so a replica joining the ISR is never
	// below it.
	pendingISR []int32
	pendingSeq uint64
	// mayJoin reports whether a follower outside the ISR may join it
	// (Broker.mayJoinISR); nil on a single node.
	mayJoin func(id int32, f *followerProgress, now time.Time) bool
}

// start is the log end offset at which this node's leader epoch began.
func (ls *leaderState) start() int64 {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.epochStart
}

// reset starts follower tracking for a new leader epoch beginning at
// offset start; every replica in the ISR counts as caught up now, as in
// Kafka's makeLeader. mayJoin becomes leaderState.mayJoin.
func (ls *leaderState) reset(st *replicaState, self int32, start int64, now time.Time,
	mayJoin func(id int32, f *followerProgress, now time.Time) bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.epoch, ls.epochStart, ls.mayJoin = st.leaderEpoch, start, mayJoin
	ls.followers = map[int32]*followerProgress{}
	ls.pendingISR = nil
	for _, id := range st.replicas {
		if id == self {
			continue
		}
		f := newFollowerProgress()
		if slices.Contains(st.isr, id) {
			f.lastCaughtUp = now
		}
		ls.followers[id] = f
	}
}

// syncReplicas installs a new state of a partition this node keeps
// leading: it tracks replicas added (or dropped), as a reassignment does,
// and ends the ISR change in flight.
func (ls *leaderState) syncReplicas(st *replicaState, self int32) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, id := range st.replicas {
		if id != self && ls.followers[id] == nil {
			ls.followers[id] = newFollowerProgress()
		}
	}
	for id := range ls.followers {
		if !slices.Contains(st.replicas, id) {
			delete(ls.followers, id)
		}
	}
	// A new partition state settles the ISR change in flight: it holds
	// that change, or the change can no longer be applied (its partition
	// epoch is past).
	ls.pendingISR = nil
}

// stillPending reports whether change seq is the ISR change in flight: no
// newer state has settled it.
func (ls *leaderState) stillPending(seq uint64) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.pendingISR != nil && ls.pendingSeq == seq
}

// settlePending ends ISR change seq if it is still the one in flight.
func (ls *leaderState) settlePending(seq uint64) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.pendingSeq == seq {
		ls.pendingISR = nil
	}
}
