package controller

import (
	"slices"
	"strings"
)

// This file holds the partition-state rules shared by fencing, unfencing,
// controlled shutdown, elections and reassignment. They compute new
// Partition values; callers turn them into records.

const noLeader int32 = -1

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

// chooseLeader elects a leader as Kafka's PartitionChangeBuilder does for
// an online election: the current leader while it is usable and in the ISR,
// else the first replica (in replica order) that is in the ISR and usable;
// with unclean election allowed, else the first usable replica, which
// becomes the whole ISR. Without a candidate the partition is left with no
// leader and its ISR as it is. It returns the new leader and ISR.
func chooseLeader(p Partition, usable func(int32) bool, unclean bool) (int32, []int32) {
	if p.Leader != noLeader && usable(p.Leader) && slices.Contains(p.ISR, p.Leader) {
		return p.Leader, p.ISR
	}
	for _, r := range p.Replicas {
		if slices.Contains(p.ISR, r) && usable(r) {
			return r, p.ISR
		}
	}
	if unclean {
		for _, r := range p.Replicas {
			if usable(r) {
				return r, []int32{r}
			}
		}
	}
	return noLeader, p.ISR
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
// fenced or shut down and takes it out of every ISR it is not alone in.
func (c *Controller) removeBrokerRecords(img *Image, id int32) []Record {
	usable := usableExcept(img, id)
	return partitionRecords(img, func(t *Topic, p Partition) Partition {
		if !slices.Contains(p.Replicas, id) {
			return p
		}
		if len(p.ISR) > 1 {
			p.ISR = without(p.ISR, id)
		}
		if p.Leader == id {
			p.Leader, p.ISR = chooseLeader(p, usable, c.uncleanEnabled(img, t.Name))
		}
		return p
	})
}

// leaderlessRecords elects leaders for partitions that have none, with
// usable deciding who may lead (used when a broker is unfenced).
func (c *Controller) leaderlessRecords(img *Image, usable func(int32) bool) []Record {
	return partitionRecords(img, func(t *Topic, p Partition) Partition {
		if p.Leader == noLeader {
			p.Leader, p.ISR = chooseLeader(p, usable, c.uncleanEnabled(img, t.Name))
		}
		return p
	})
}
