package controller

import (
	"slices"
	"strconv"
	"strings"
)

// This file holds the partition-state rules shared by fencing, unfencing,
// controlled shutdown, elections and reassignment. They compute new
// Partition values; callers turn them into records.

const noLeader int32 = -1

// minISRKey is the config the controller judges eligible leader replicas by.
const minISRKey = "min.insync.replicas"

// uncleanEnabled resolves unclean.leader.election.enable for a topic: the
// topic override, else the cluster-wide dynamic default, else the static
// configuration.
func (c *Controller) uncleanEnabled(img *Image, topic string) bool {
	const key = "unclean.leader.election.enable"
	if v, ok := img.TopicConfig(topic, key); ok {
		return strings.EqualFold(v, "true")
	}
	if v, ok := img.ClusterConfig(key); ok {
		return strings.EqualFold(v, "true")
	}
	return c.cfg.UncleanDefault
}

// minISR is the topic's min.insync.replicas (topic override, else the
// cluster-wide dynamic default, else Config.MinISRDefault) capped at the
// partition's replica count, as Kafka's controller counts it for ELR.
func (c *Controller) minISR(img *Image, topic string, p Partition) int {
	n := c.cfg.MinISRDefault
	if v, ok := img.TopicConfig(topic, minISRKey); ok {
		n, _ = strconv.Atoi(v)
	} else if v, ok := img.ClusterConfig(minISRKey); ok {
		n, _ = strconv.Atoi(v)
	}
	return max(min(n, len(p.Replicas)), 1)
}

// rules are what one partition change is decided under besides the
// partition itself.
type rules struct {
	usable  func(int32) bool // who may lead
	unclean bool             // unclean.leader.election.enable
	minISR  int              // Controller.minISR
	elr     bool             // eligible.leader.replicas.version 1
	// dropped is a broker that lost its eligibility (an unclean shutdown,
	// or unregistered): it leaves the ELR too. noLeader for none.
	dropped int32
}

// settle finishes a change of partition prev into next, whose replicas and
// ISR the caller has set: Kafka's PartitionChangeBuilder with eligible
// leader replicas (KIP-966).
//
// The high watermark only moves while the ISR has min.insync.replicas
// members (broker/replica.go), so when the ISR shrinks below that, the
// replicas leaving it hold every committed record: they become the ELR,
// eligible to lead once the ISR is empty. The ISR may therefore shrink to
// nothing. An ISR back at min.insync.replicas clears the ELR.
//
// The leader stays while it is usable and in the ISR; otherwise the first
// usable replica (in replica order) that is in the ISR, or, with the ISR
// empty, in the ELR, which then becomes the ISR alone. With ISR and ELR
// empty, the last known leader (LastKnownELR, recorded when the ISR
// emptied) leads again once usable, as Kafka did before ELR when every
// replica was offline; with unclean election allowed, else the first
// usable replica. Those two are unclean: the ISR is the new leader alone
// and the ELR is cleared. Without a candidate the partition has no leader.
//
// With eligible leader replicas turned off (eligible.leader.replicas.version
// 0) there is no ELR or last known leader, and the ISR keeps its last
// member rather than empty, as Kafka did before ELR.
func settle(prev, next Partition, r rules) Partition {
	if !r.elr {
		next.ELR, next.LastKnownELR = nil, nil
		leader, unclean := elect(next, r)
		if unclean {
			next.ISR = []int32{leader}
		} else if len(next.ISR) == 0 {
			next.ISR = prev.ISR
		}
		next.Leader = leader
		return next
	}
	if len(next.ISR) >= r.minISR {
		next.ELR = nil
	} else {
		var elr []int32
		for _, id := range append(slices.Clone(next.ELR), prev.ISR...) {
			if id != r.dropped && !slices.Contains(next.ISR, id) && !slices.Contains(elr, id) &&
				slices.Contains(next.Replicas, id) {
				elr = append(elr, id)
			}
		}
		next.ELR = elr
	}

	leader, unclean := elect(next, r)
	if leader != next.Leader {
		switch {
		case leader == noLeader:
		case unclean:
			next.ISR, next.ELR = []int32{leader}, nil
		case !slices.Contains(next.ISR, leader): // from the ELR
			next.ISR, next.ELR = []int32{leader}, without(next.ELR, leader)
		}
		next.Leader = leader
	}

	switch {
	case len(next.ISR) == 0 && len(prev.ISR) > 0 && prev.Leader != noLeader:
		next.LastKnownELR = []int32{prev.Leader}
	case next.Leader != noLeader:
		next.LastKnownELR = nil
	}
	return next
}

// elect picks the leader of next under r (see settle) and reports whether
// the election is unclean.
func elect(next Partition, r rules) (int32, bool) {
	valid := func(id int32) bool {
		if id == r.dropped || !r.usable(id) {
			return false
		}
		return slices.Contains(next.ISR, id) || len(next.ISR) == 0 && slices.Contains(next.ELR, id)
	}
	if next.Leader != noLeader && valid(next.Leader) {
		return next.Leader, false
	}
	for _, id := range next.Replicas {
		if valid(id) {
			return id, false
		}
	}
	if len(next.ISR) == 0 && len(next.ELR) == 0 && len(next.LastKnownELR) == 1 {
		if last := next.LastKnownELR[0]; last != r.dropped && r.usable(last) {
			return last, true
		}
	}
	if r.unclean {
		for _, id := range next.Replicas {
			if id != r.dropped && r.usable(id) {
				return id, true
			}
		}
	}
	return noLeader, false
}

// rules returns the rules of a change to a partition of topic, with
// usable deciding who may lead, among the replicas whose log dir is
// online (dirs.go).
func (c *Controller) rules(img *Image, topic string, p Partition, usable func(int32) bool) rules {
	online := func(id int32) bool { return usable(id) && img.ReplicaOnline(p, id) }
	return rules{usable: online, unclean: c.uncleanEnabled(img, topic), minISR: c.minISR(img, topic, p),
		elr: elrEnabled(img), dropped: noLeader}
}

// bumpEpochs sets the epochs of next relative to prev: the leader epoch
// moves on a leader change, the partition epoch on any change. It reports
// whether anything changed.
func bumpEpochs(prev Partition, next *Partition) bool {
	next.LeaderEpoch, next.PartitionEpoch = prev.LeaderEpoch, prev.PartitionEpoch
	if next.equal(prev) {
		return false
	}
	if next.Leader != prev.Leader {
		next.LeaderEpoch++
	}
	next.PartitionEpoch++
	return true
}

// without returns s minus id (a new slice).
func without(s []int32, id int32) []int32 {
	out := make([]int32, 0, len(s))
	for _, v := range s {
		if v != id {
			out = append(out, v)
		}
	}
	return out
}

// usableExcept is img.usable with one broker treated as unusable.
func usableExcept(img *Image, id int32) func(int32) bool {
	return func(b int32) bool { return b != id && img.usable(b) }
}

// partitionRecords applies change to every partition of every topic and
// returns a record for each partition that changed, in topic-name order.
// change gets the published partition: it may replace its slices but must
// not write into them.
func partitionRecords(img *Image, change func(t *Topic, p Partition) Partition) []Record {
	var recs []Record
	for _, name := range img.SortedTopicNames() {
		t := img.Topics[name]
		for i, p := range t.Partitions {
			next := change(t, p)
			if bumpEpochs(p, &next) {
				recs = append(recs, Record{Partition: &PartitionRecord{TopicID: t.ID, Index: int32(i), Partition: next}})
			}
		}
	}
	return recs
}

// removeBrokerRecords moves leadership away from a broker that is being
// fenced, shut down or unregistered, or that restarted after an unclean
// shutdown, and takes it out of every ISR. With dropped (unregistered, or
// an unclean shutdown, whose log may have lost its unflushed tail) it
// leaves the ELR as well.
func (c *Controller) removeBrokerRecords(img *Image, id int32, dropped bool) []Record {
	usable := usableExcept(img, id)
	return partitionRecords(img, func(t *Topic, p Partition) Partition {
		if !slices.Contains(p.Replicas, id) {
			return p
		}
		next := p.clone()
		next.ISR = without(p.ISR, id)
		r := c.rules(img, t.Name, p, usable)
		if dropped {
			next.ELR, r.dropped = without(p.ELR, id), id
		}
		return settle(p, next, r)
	})
}

// leaderlessRecords elects leaders for partitions that have none, with
// usable deciding who may lead (used when a broker is unfenced).
func (c *Controller) leaderlessRecords(img *Image, usable func(int32) bool) []Record {
	return partitionRecords(img, func(t *Topic, p Partition) Partition {
		if p.Leader != noLeader {
			return p
		}
		return settle(p, p.clone(), c.rules(img, t.Name, p, usable))
	})
}

// clearELRRecords clears the ELR and last known leader of every partition
// of the topics whose min.insync.replicas the config records change, or of
// every topic when they change the cluster-wide default, as Kafka does:
// eligibility was judged against the old value.
func clearELRRecords(img *Image, configs []Record) []Record {
	all, topics := false, map[string]bool{}
	for _, rec := range configs {
		cr := rec.Config
		if cr == nil || cr.Values[minISRKey] == img.Configs[cr.Resource][minISRKey] {
			continue
		}
		switch {
		case cr.Resource.Type == ResourceTopic:
			topics[cr.Resource.Name] = true
		case cr.Resource.Type == ResourceBroker && cr.Resource.Name == "":
			all = true
		}
	}
	if !all && len(topics) == 0 {
		return nil
	}
	return clearELR(img, func(topic string) bool { return all || topics[topic] })
}

// clearELR clears the ELR and last known leader of every partition of the
// topics match accepts.
func clearELR(img *Image, match func(topic string) bool) []Record {
	return partitionRecords(img, func(t *Topic, p Partition) Partition {
		if match(t.Name) {
			p.ELR, p.LastKnownELR = nil, nil
		}
		return p
	})
}
