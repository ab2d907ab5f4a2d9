package broker

// The leader's side of Kafka's replication protocol. Followers fetch from
// the leader like consumers but name themselves (the replica id), and read
// up to the log end offset instead of the high watermark. Each fetch tells
// the leader the follower's log end offset (its fetch offset); from these
// the leader moves the high watermark to the smallest log end offset in
// the ISR (and of the caught-up followers that may join it), but only
// while the ISR has at least min.insync.replicas members
// (capped at the replica count), so a record is committed only once that
// many replicas hold it. A follower that has not caught up with the
// leader's log end offset for replica.lag.time.max.ms leaves the ISR; one
// that reaches the high watermark rejoins it. ISR changes go to the
// controller as AlterPartition and take effect when it answers.
//
// On a single node the partition has no followers and its ISR is this
// node, so the same rules make the high watermark the log end offset.

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// appended is called after a leader appends to p: parked fetches wake
// (followers read up to the log end) and the high watermark moves if the
// ISR allows it.
func (p *partition) appended() {
	p.advanceHighWatermark()
	p.wake()
}

// effectiveISR is the ISR counted for the high watermark: the committed
// one plus the members of an AlterPartition in flight.
func (ls *leaderState) effectiveISR(st *replicaState) []int32 {
	if ls.pendingISR == nil {
		return st.isr
	}
	out := slices.Clone(st.isr)
	for _, id := range ls.pendingISR {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// advanceHighWatermark moves the high watermark as far as the ISR allows
// and wakes parked requests if it moved. As Kafka's
// Partition.maybeIncrementLeaderHW, it also waits for the followers
// outside the ISR that may join it (leaderState.mayJoin): otherwise, with
// writes coming steadily, the high watermark would stay ahead of such a
// follower's every fetch and it would never rejoin.
func (p *partition) advanceHighWatermark() {
	st := p.state.Load()
	self := p.topic.node
	if st.leader != self {
		return
	}
	hw := p.log.LogEndOffset()
	p.leader.mu.Lock()
	isr := p.leader.effectiveISR(st)
	for _, id := range isr {
		if id == self {
			continue
		}
		f := p.leader.followers[id]
		if f == nil || f.leo < 0 {
			p.leader.mu.Unlock()
			return
		}
		hw = min(hw, f.leo)
	}
	var now time.Time // read only when a follower outside the ISR is behind
	for id, f := range p.leader.followers {
		if f.leo < 0 || f.leo >= hw || slices.Contains(isr, id) {
			continue
		}
		if now.IsZero() {
			now = time.Now()
		}
		if p.leader.mayJoin(id, f, now) {
			hw = f.leo
		}
	}
	p.leader.mu.Unlock()
	if len(st.isr) < p.minInsync(st) { // the committed ISR, as Kafka's isUnderMinIsr
		return
	}
	p.waitMu.Lock()
	moved := hw > p.log.HighWatermark()
	if moved {
		p.log.SetHighWatermark(hw)
	}
	p.waitMu.Unlock()
	if moved {
		p.wake()
	}
}

// minInsync is min.insync.replicas capped at the replica count.
func (p *partition) minInsync(st *replicaState) int {
	return min(p.topic.settings.Load().minInsync, len(st.replicas))
}

// followerFetched records a follower's fetch at fetchOffset, Kafka's
// Replica.updateFetchState: the follower is caught up if it asked for the
// leader's log end offset, or for what was the end at its previous fetch.
// It may move the high watermark and bring the follower back into the ISR.
func (b *Broker) followerFetched(p *partition, replica int32, brokerEpoch, fetchOffset, logStart int64, now time.Time) {
	st := p.state.Load()
	if st.leader != p.topic.node {
		return
	}
	leo := p.log.LogEndOffset()
	p.leader.mu.Lock()
	f := p.leader.followers[replica]
	if f == nil || p.leader.epoch != st.leaderEpoch {
		p.leader.mu.Unlock()
		return
	}
	if fetchOffset >= leo {
		f.lastCaughtUp = now
	} else if f.leaderLEOAtFetch >= 0 && fetchOffset >= f.leaderLEOAtFetch {
		f.lastCaughtUp = f.lastFetch
	}
	f.leo, f.logStart, f.lastFetch, f.leaderLEOAtFetch, f.brokerEpoch = fetchOffset, logStart, now, leo, brokerEpoch
	expand := !slices.Contains(st.isr, replica) && p.leader.pendingISR == nil &&
		fetchOffset >= p.log.HighWatermark() && fetchOffset >= p.leader.epochStart
	p.leader.mu.Unlock()
	p.advanceHighWatermark()
	if expand && b.isrEligible(replica, brokerEpoch) {
		isr := append(slices.Clone(st.isr), replica)
		b.cluster.partitionLog.Info("expanding ISR", "topic", p.topic.name, "partition", p.index, "from", st.isr, "to", isr,
			"high.watermark", p.log.HighWatermark(), "end.offset", leo)
		b.alterISR(p, st, isr)
	}
}

// mayJoinISR reports whether a follower outside the ISR is caught up, by
// Kafka's Replica.isCaughtUp (within replica.lag.time.max.ms), and
// eligible to join it: the leader's high watermark waits for it.
func (b *Broker) mayJoinISR(replica int32, f *followerProgress, now time.Time) bool {
	return now.Sub(f.lastCaughtUp) <= b.cfg.Cluster.ReplicaLagTimeMax && b.isrEligible(replica, f.brokerEpoch)
}

// isrEligible reports whether a caught-up follower may join the ISR, as
// Kafka's leader asks its metadata before it proposes: the broker is
// registered, neither fenced nor shutting down, and the epoch its fetch
// gave (if any) is the one it registered with. The controller refuses
// such an ISR anyway (INELIGIBLE_REPLICA); asking first spares it a
// request at each of the follower's fetches while, say, a restarted
// broker catches up.
func (b *Broker) isrEligible(replica int32, brokerEpoch int64) bool {
	br := b.cluster.image().Brokers[replica]
	return br != nil && !br.Fenced && !br.ShuttingDown && (brokerEpoch < 0 || brokerEpoch == br.Epoch)
}

// shrinkISRs drops the followers that have lagged for longer than
// replica.lag.time.max.ms from the ISR of every partition this node leads;
// a follower at the log end offset has not lagged.
func (b *Broker) shrinkISRs(now time.Time) {
	lag := b.cfg.Cluster.ReplicaLagTimeMax
	for _, t := range b.topics.all() {
		for _, p := range t.partitions() {
			if p == nil {
				continue
			}
			st := p.state.Load()
			if st.leader != t.node {
				continue
			}
			leo := p.log.LogEndOffset()
			p.leader.mu.Lock()
			var keep []int32
			for _, id := range st.isr {
				// At the log end it is in sync, however long ago it last
				// caught up (Kafka's Replica.isCaughtUp).
				f := p.leader.followers[id]
				if id == t.node || (f != nil && (f.leo == leo || now.Sub(f.lastCaughtUp) <= lag)) {
					keep = append(keep, id)
				}
			}
			shrink := len(keep) < len(st.isr) && p.leader.pendingISR == nil
			p.leader.mu.Unlock()
			// A follower the high watermark waited for may have stopped
			// catching up.
			p.advanceHighWatermark()
			if shrink {
				b.cluster.partitionLog.Info("shrinking ISR", "topic", t.name, "partition", p.index, "from", st.isr, "to", keep,
					"high.watermark", p.log.HighWatermark(), "end.offset", p.log.LogEndOffset())
				b.alterISR(p, st, keep)
			}
		}
	}
}

// alterISR asks the controller to set the partition's ISR, in the
// background; one request per partition is in flight at a time, and its
// ISR counts for the high watermark (pendingISR) until its outcome is
// known, as Kafka's Partition.submitAlterPartition keeps the pending
// state: the answer, or the controller's image, whichever comes first,
// installs the new state.
func (b *Broker) alterISR(p *partition, st *replicaState, isr []int32) {
	p.leader.mu.Lock()
	if p.leader.pendingISR != nil || p.leader.epoch != st.leaderEpoch {
		p.leader.mu.Unlock()
		return
	}
	p.leader.pendingISR = isr
	p.leader.pendingSeq++
	seq := p.leader.pendingSeq
	epochs := make([]int64, len(isr))
	for i, id := range isr {
		switch f := p.leader.followers[id]; {
		case id == b.cfg.NodeID:
			epochs[i] = b.cluster.brokerEpoch()
		case f != nil:
			epochs[i] = f.brokerEpoch
		default:
			epochs[i] = -1
		}
	}
	p.leader.mu.Unlock()
	go b.sendAlterISR(p, st, seq, isr, epochs)
}

// alterISRRetry is how long the leader waits before it sends an
// AlterPartition again that had no answer.
const alterISRRetry = 100 * time.Millisecond

// sendAlterISR sends the AlterPartition of an ISR change until it has an
// answer and settles the pending ISR by it, as Kafka's
// Partition.handleAlterPartitionError does: a refusal that says the change
// was not applied (INELIGIBLE_REPLICA, OPERATION_NOT_ATTEMPTED) drops it;
// one that says the controller has moved on (awaitsMetadata: perhaps by
// applying this very change, whose first answer was lost) keeps it until
// the image brings the partition's new state (installState); a request
// without an answer, or with another error, is sent again.
func (b *Broker) sendAlterISR(p *partition, st *replicaState, seq uint64, isr []int32, epochs []int64) {
	// A new leader epoch ends it too: the change can no longer be applied.
	for p.leader.stillPending(seq) && p.state.Load().leaderEpoch == st.leaderEpoch {
		code, next, err := b.requestAlterISR(p, st, isr, epochs)
		switch {
		case err == nil && code == 0:
			b.cluster.partitionLog.Info("ISR updated", "topic", p.topic.name, "partition", p.index, "isr", next.isr,
				"leader.epoch", next.leaderEpoch, "partition.epoch", next.partitionEpoch)
			b.installState(p, next)
		case err == nil && (code == kerr.IneligibleReplica.Code || code == kerr.OperationNotAttempted.Code):
			b.cluster.partitionLog.Info("AlterPartition refused", "topic", p.topic.name, "partition", p.index, "error", kerr.ErrorForCode(code))
		case err == nil && awaitsMetadata(code):
			b.cluster.partitionLog.Info("AlterPartition refused", "topic", p.topic.name, "partition", p.index, "error", kerr.ErrorForCode(code))
			return
		default:
			if err == nil {
				err = kerr.ErrorForCode(code)
			}
			b.cluster.partitionLog.Warn("AlterPartition failed", "topic", p.topic.name, "partition", p.index, "err", err)
			select {
			case <-b.cluster.stop:
				return
			case <-time.After(alterISRRetry):
			}
			continue
		}
		p.leader.settlePending(seq)
		p.advanceHighWatermark()
		return
	}
}

// awaitsMetadata reports whether an AlterPartition refusal means the
// leader's view of the partition is out of date, so that it waits for
// the metadata (Kafka's Partition.handleAlterPartitionError).
func awaitsMetadata(code int16) bool {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code, kerr.FencedLeaderEpoch.Code,
		kerr.InvalidUpdateVersion.Code, kerr.InvalidRequest.Code, kerr.NewLeaderElected.Code:
		return true
	}
	return false
}

// requestAlterISR sends one AlterPartition for the ISR change and returns
// the partition's error code and, without one, its new state; err when
// there was no answer for the partition.
func (b *Broker) requestAlterISR(p *partition, st *replicaState, isr []int32, epochs []int64) (int16, *replicaState, error) {
	req := newest(kmsg.NewPtrAlterPartitionRequest())
	req.BrokerID = b.cfg.NodeID
	req.BrokerEpoch = b.cluster.brokerEpoch()
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic, rt.TopicID = p.topic.name, p.topic.id
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = p.index, st.leaderEpoch, st.partitionEpoch
	rp.NewISR = isr
	for i, id := range isr {
		rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: id, BrokerEpoch: epochs[i]})
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := b.cluster.sendContext(30 * time.Second)
	defer cancel()
	resp, err := b.cluster.client.Send(ctx, req)
	if err != nil {
		return 0, nil, err
	}
	r := resp.(*kmsg.AlterPartitionResponse)
	if r.ErrorCode != 0 {
		return 0, nil, kerr.ErrorForCode(r.ErrorCode)
	}
	for _, t := range r.Topics {
		for _, rp := range t.Partitions {
			if rp.Partition == p.index {
				return rp.ErrorCode, &replicaState{leader: rp.LeaderID, leaderEpoch: rp.LeaderEpoch, partitionEpoch: rp.PartitionEpoch,
					replicas: st.replicas, isr: rp.ISR}, nil
			}
		}
	}
	return 0, nil, fmt.Errorf("no answer for partition %d", p.index)
}
