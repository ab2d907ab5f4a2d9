package controller

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// replicaProgress is what the raft leader knows of one follower's copy of
// the metadata log, kept as Kafka's LeaderState.ReplicaState is: Kafka
// learns it from each Fetch a follower sends, the raft leader here from
// each answer to its AppendEntries (heartbeats included). Offsets are raft
// indexes: entries 1..n are offsets 0..n-1, so a log whose last index is n
// ends at offset n.
type replicaProgress struct {
	term      uint64             // the leader's term the answer was for
	addr      raft.ServerAddress // where the follower answered
	endOffset int64
	lastFetch time.Time
	// lastCaughtUp is the last time the follower's log reached the
	// leader's end, as Kafka's rule decides it (see record).
	lastCaughtUp         time.Time
	leaderEndAtLastFetch int64
}

// progressTransport is raft's NetworkTransport, recording on the leader
// every follower's answers. hashicorp/raft keeps its followers' match
// indexes to itself; DescribeQuorum needs them.
type progressTransport struct {
	*raft.NetworkTransport
	raft atomic.Pointer[raft.Raft]

	mu    sync.Mutex
	peers map[raft.ServerID]*replicaProgress
}

func newProgressTransport(inner *raft.NetworkTransport) *progressTransport {
	return &progressTransport{NetworkTransport: inner, peers: map[raft.ServerID]*replicaProgress{}}
}

func (t *progressTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress,
	args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := t.NetworkTransport.AppendEntries(id, target, args, resp)
	if err == nil {
		t.record(id, target, args, resp, time.Now())
	}
	return err
}

func (t *progressTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	inner, err := t.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	p := &progressPipeline{AppendPipeline: inner, t: t, id: id, target: target,
		done: make(chan raft.AppendFuture, cap(inner.Consumer())), closed: make(chan struct{})}
	go p.forward()
	return p, nil
}

// record takes in one AppendEntries answer from follower id at target
// (a follower raft reaches at a new address starts afresh). Kafka's rule
// for the caught-up time: a follower whose log reaches the leader's
// current end is caught up now; one that reaches the end the leader had
// at its previous answer was caught up at that previous answer.
func (t *progressTransport) record(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, now time.Time) {
	if resp.Term > args.Term {
		return // this leader has been deposed
	}
	end := int64(resp.LastLog) // the follower's last index before this append
	if resp.Success && len(args.Entries) > 0 {
		end = max(end, int64(args.Entries[len(args.Entries)-1].Index))
	}
	var leaderEnd int64
	if r := t.raft.Load(); r != nil {
		leaderEnd = int64(r.LastIndex())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peers[id]
	if p == nil || p.term != args.Term || p.addr != target {
		p = &replicaProgress{term: args.Term, addr: target, leaderEndAtLastFetch: -1}
		t.peers[id] = p
	}
	if end >= leaderEnd {
		p.lastCaughtUp = now
	} else if p.leaderEndAtLastFetch > 0 && end >= p.leaderEndAtLastFetch && p.lastFetch.After(p.lastCaughtUp) {
		p.lastCaughtUp = p.lastFetch
	}
	p.leaderEndAtLastFetch = leaderEnd
	p.lastFetch = now
	p.endOffset = end
}

// progress returns a copy of what is known of follower id in term, if any.
func (t *progressTransport) progress(id raft.ServerID, term uint64) (replicaProgress, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.peers[id]
	if p == nil || p.term != term {
		return replicaProgress{}, false
	}
	return *p, true
}

// progressPipeline passes a pipeline's completed appends on to raft after
// recording them.
type progressPipeline struct {
	raft.AppendPipeline
	t         *progressTransport
	id        raft.ServerID
	target    raft.ServerAddress
	done      chan raft.AppendFuture
	closeOnce sync.Once
	closed    chan struct{}
}

func (p *progressPipeline) Consumer() <-chan raft.AppendFuture { return p.done }

func (p *progressPipeline) Close() error {
	p.closeOnce.Do(func() { close(p.closed) })
	return p.AppendPipeline.Close()
}

func (p *progressPipeline) forward() {
	for {
		select {
		case f := <-p.AppendPipeline.Consumer():
			if f.Error() == nil {
				p.t.record(p.id, p.target, f.Request(), f.Response(), time.Now())
			}
			select {
			case p.done <- f:
			case <-p.closed:
				return
			}
		case <-p.closed:
			return
		}
	}
}
