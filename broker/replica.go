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
	"context"
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
	now := time.Now()
	for id, f := range p.leader.followers {
		if f.leo >= 0 && f.leo < hw && !slices.Contains(isr, id) && p.leader.mayJoin(id, f, now) {
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
// background; one request per partition is in flight at a time. The answer
// (or the controller's image, whichever comes first) installs the new
// state.
func (b *Broker) alterISR(p *partition, st *replicaState, isr []int32) {
	p.leader.mu.Lock()
	if p.leader.pendingISR != nil || p.leader.epoch != st.leaderEpoch {
		p.leader.mu.Unlock()
		return
	}
	p.leader.pendingISR = isr
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
	go func() {
		defer func() {
			p.leader.mu.Lock()
			p.leader.pendingISR = nil
			p.leader.mu.Unlock()
			p.advanceHighWatermark()
		}()
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
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := b.cluster.client.Send(ctx, req)
		if err != nil {
			b.cluster.partitionLog.Warn("AlterPartition failed", "topic", p.topic.name, "partition", p.index, "err", err)
			return
		}
		r := resp.(*kmsg.AlterPartitionResponse)
		for _, t := range r.Topics {
			for _, rp := range t.Partitions {
				if rp.ErrorCode != 0 {
					b.cluster.partitionLog.Info("AlterPartition refused", "topic", p.topic.name, "partition", p.index, "error", kerr.ErrorForCode(rp.ErrorCode))
					continue
				}
				b.cluster.partitionLog.Info("ISR updated", "topic", p.topic.name, "partition", p.index, "isr", rp.ISR,
					"leader.epoch", rp.LeaderEpoch, "partition.epoch", rp.PartitionEpoch)
				b.installState(p, &replicaState{leader: rp.LeaderID, leaderEpoch: rp.LeaderEpoch, partitionEpoch: rp.PartitionEpoch,
					replicas: st.replicas, isr: rp.ISR})
			}
		}
	}()
}
