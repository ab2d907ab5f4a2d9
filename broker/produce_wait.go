package broker

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// replicationWait is an acks=all partition of a produce request waiting
// for its high watermark to pass the appended batch, with where its answer
// sits in the response.
type replicationWait struct {
	p                *partition
	state            *replicaState // when the batch was appended
	offset           int64         // the high watermark that commits it
	topic, partition int
	answered         bool
}

// awaitReplication parks an acks=all produce until every partition's
// batch is committed, leadership moves, or the request's timeout passes,
// and sets the answers as Kafka's DelayedProduce does: committed with at
// least min.insync.replicas in the ISR is success, committed with fewer is
// NOT_ENOUGH_REPLICAS_AFTER_APPEND, a lost leadership is
// NOT_LEADER_OR_FOLLOWER naming the new leader, a partition deleted or
// moved away meanwhile is answered at once (noLongerHosted), and the
// timeout is REQUEST_TIMED_OUT.
func (b *Broker) awaitReplication(c *conn, waits []replicationWait, timeout time.Duration, resp *kmsg.ProduceResponse) {
	w := c.reuse.parkWaiter()
	for _, rw := range waits {
		rw.p.addWaiter(w)
	}
	timer := c.reuse.startTimer(timeout)
	defer func() {
		timer.Stop()
		for _, rw := range waits {
			rw.p.removeWaiter(w)
		}
	}()
	for {
		pending := 0
		for i := range waits {
			rw := &waits[i]
			if rw.answered {
				continue
			}
			sp := &resp.Topics[rw.topic].Partitions[rw.partition]
			st := rw.p.state.Load()
			gone := b.noLongerHosted(rw.p)
			switch {
			case gone == errUnknownTopicOrPartition: // the topic deleted
				sp.ErrorCode = gone
			case gone != 0 || st.leader != rw.p.topic.node || st.leaderEpoch != rw.state.leaderEpoch: // moved away, or led elsewhere
				sp.ErrorCode = errNotLeaderOrFollower
				// As for any NOT_LEADER_OR_FOLLOWER, the new leader (KIP-951).
				b.leaderHint(rw.p, &sp.CurrentLeader.LeaderID, &sp.CurrentLeader.LeaderEpoch)
				b.addProduceEndpoint(resp, c, sp.CurrentLeader.LeaderID)
			case rw.p.log.HighWatermark() >= rw.offset:
				if len(st.isr) < rw.p.minInsync(st) {
					sp.ErrorCode = errNotEnoughReplicasAfter
				}
			default:
				pending++
				continue
			}
			rw.answered = true
			if sp.ErrorCode != 0 {
				sp.ErrorMessage = errorMessage(sp.ErrorCode)
			}
		}
		if pending == 0 {
			return
		}
		c.releaseRequestMemory()
		parked := time.Now()
		select {
		case <-w.ch:
			c.waited += time.Since(parked)
			continue
		case <-timer.C:
		case <-c.done:
		}
		c.waited += time.Since(parked)
		break
	}
	for _, rw := range waits {
		if !rw.answered {
			sp := &resp.Topics[rw.topic].Partitions[rw.partition]
			sp.ErrorCode = errRequestTimedOut
			sp.ErrorMessage = errorMessage(sp.ErrorCode)
		}
	}
}

// noLongerHosted is the answer for a partition this broker has stopped
// hosting since p was looked up, as Kafka's
// ReplicaManager.getPartitionOrError gives it: UNKNOWN_TOPIC_OR_PARTITION
// once the topic is deleted, NOT_LEADER_OR_FOLLOWER once the replica moved
// away; 0 while p is hosted.
func (b *Broker) noLongerHosted(p *partition) int16 {
	t := b.topics.getByID(p.topic.id)
	switch {
	case t == nil:
		return errUnknownTopicOrPartition
	case t.partition(p.index) != p:
		return errNotLeaderOrFollower
	}
	return 0
}

// tooFewInsync reports whether an acks=all write must be refused before
// the append: the ISR is smaller than min.insync.replicas, capped at the
// replica count as Kafka's Partition.effectiveMinIsr caps it.
func (p *partition) tooFewInsync() bool {
	st := p.state.Load()
	return len(st.isr) < p.minInsync(st)
}
