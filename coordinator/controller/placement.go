package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// placeReplicas assigns replicas for count new partitions with replication
// factor rf over the brokers not shutting down with a log dir not
// cordoned, in the spirit of Kafka's StripedReplicaPlacer: each partition
// takes its replicas from the racks in turn (brokers without a rack count
// as one rack), starting at the next rack for each partition, and within
// a rack from its brokers in turn, unfenced ones first. So a partition's
// replicas sit on distinct racks as long as there are as many racks as
// replicas, whatever the racks' sizes, and leaders (first replicas) spread
// over racks and brokers. Fenced brokers count towards rf as Kafka's do:
// one is never a leader, and takes up its replicas when it returns.
func placeReplicas(img *Image, count int32, rf int16) ([][]int32, error) {
	racks := placementRacks(img)
	unfenced, total := 0, 0
	for _, r := range racks {
		unfenced += r.unfenced
		total += len(r.brokers)
	}
	switch {
	case !slices.ContainsFunc(img.SortedBrokerIDs(), img.usable):
		return nil, fmt.Errorf("Unable to replicate the partition %d time(s): All brokers are currently fenced or in controlled shutdown.", rf)
	case unfenced == 0:
		return nil, fmt.Errorf("Unable to replicate the partition %d time(s): All brokers are currently fenced, or have all their log directories cordoned.", rf)
	case int(rf) > total:
		return nil, fmt.Errorf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered or some brokers have all their log directories cordoned.",
			rf, rf, total)
	}
	first := rand.IntN(len(racks))
	for i := range racks {
		racks[i].start = rand.IntN(len(racks[i].brokers))
	}
	out := make([][]int32, count)
	for p := range out {
		out[p] = racks.partition(int(rf), first+p)
	}
	return out, nil
}

// placementRack is one rack's brokers that may take new replicas: the
// unfenced ones (the first unfenced of them) in id order, then the fenced
// ones. Its turns begin at start, moved on by each leader (leads) and
// each follower (follows) it gave.
type placementRack struct {
	brokers               []int32
	unfenced              int
	start, leads, follows int
}

type rackList []placementRack

// placementRacks lists, by rack name, the brokers not shutting down with a
// log dir not cordoned.
func placementRacks(img *Image) rackList {
	byRack := map[string]*placementRack{}
	var names []string
	for _, fenced := range []bool{false, true} {
		for _, id := range img.SortedBrokerIDs() {
			b := img.Brokers[id]
			if b.ShuttingDown || b.Fenced != fenced || !b.hasUncordonedDirs() {
				continue
			}
			r := byRack[b.Rack]
			if r == nil {
				r = &placementRack{}
				byRack[b.Rack] = r
				names = append(names, b.Rack)
			}
			r.brokers = append(r.brokers, id)
			if !fenced {
				r.unfenced++
			}
		}
	}
	slices.Sort(names)
	out := make(rackList, len(names))
	for i, name := range names {
		out[i] = *byRack[name]
	}
	return out
}

// partition places one partition's rf replicas: the leader is the next
// unfenced broker of the first rack from firstRack that has one, the
// others each the next broker not yet chosen of the following racks in
// turn (a rack's unfenced brokers before its fenced ones).
func (racks rackList) partition(rf, firstRack int) []int32 {
	replicas := make([]int32, 0, rf)
	// next is rack r's first broker not chosen yet, counting from turn
	// among its unfenced brokers, then its fenced ones in order.
	next := func(r *placementRack, turn int, unfencedOnly bool) (int32, bool) {
		n := len(r.brokers)
		if unfencedOnly {
			n = r.unfenced
		}
		for i := range n {
			at := i
			if i < r.unfenced {
				at = (turn + i) % r.unfenced
			}
			if id := r.brokers[at]; !slices.Contains(replicas, id) {
				return id, true
			}
		}
		return 0, false
	}
	leaderRack := firstRack % len(racks)
	for {
		r := &racks[leaderRack]
		if id, ok := next(r, r.start+r.leads, true); ok {
			replicas = append(replicas, id)
			r.leads++
			break
		}
		leaderRack = (leaderRack + 1) % len(racks)
	}
	for i := leaderRack + 1; len(replicas) < rf; i++ {
		r := &racks[i%len(racks)]
		if id, ok := next(r, r.start+r.follows, false); ok {
			replicas = append(replicas, id)
			r.follows++
		}
	}
	return replicas
}

// newPartition is a fresh partition on replicas: the ISR is the usable
// replicas, the leader the first of them (none usable: no leader).
func newPartition(img *Image, replicas []int32) Partition {
	p := Partition{Replicas: replicas, Leader: noLeader}
	for _, r := range replicas {
		if img.usable(r) {
			p.ISR = append(p.ISR, r)
		}
	}
	if len(p.ISR) > 0 {
		p.Leader = p.ISR[0]
	}
	return p
}

// AssignedCordoned is Kafka's refusal of a manual assignment or a
// reassignment naming a broker whose log dirs are all cordoned (KIP-1066).
const AssignedCordoned = "The manual partition assignment includes broker %d, but all its log directories are cordoned."

// AssignedBroker is what a manual assignment's check needs to know of a
// broker: whether it is registered, whether every log dir it has is
// cordoned, and whether it can take a new replica now (not fenced, not
// shutting down).
type AssignedBroker func(id int32) (registered, cordoned, usable bool)

// CheckManualAssignment validates the replicas manually given for partition
// index as Kafka 4.4's ReplicationControlManager does, in its words: not
// empty; each broker registered, with a log dir not cordoned, named once;
// as many replicas as the partitions before (want; -1 for the first); and
// at least one of them usable.
func CheckManualAssignment(index int32, replicas []int32, want int, broker AssignedBroker) error {
	usable, err := checkReplicaList(replicas, broker)
	if err != nil {
		return err
	}
	if want >= 0 && len(replicas) != want {
		return fmt.Errorf("The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).",
			len(replicas), want)
	}
	if !usable {
		return fmt.Errorf("All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", index)
	}
	return nil
}

// checkReplicaList is the part of Kafka's validateManualPartitionAssignment
// that a reassignment's target also passes: not empty, each broker (in id
// order) registered, with a log dir not cordoned, named once. It reports whether
// one of them can take a replica now.
func checkReplicaList(replicas []int32, broker AssignedBroker) (usable bool, err error) {
	if len(replicas) == 0 {
		return false, fmt.Errorf("The manual partition assignment includes an empty replica list.")
	}
	seen := map[int32]bool{}
	for _, r := range slices.Sorted(slices.Values(replicas)) { // in id order, as Kafka checks them
		registered, cordoned, up := broker(r)
		switch {
		case !registered:
			return false, fmt.Errorf("The manual partition assignment includes broker %d, but no such broker is registered.", r)
		case cordoned:
			return false, fmt.Errorf(AssignedCordoned, r)
		case seen[r]:
			return false, fmt.Errorf("The manual partition assignment includes the broker %d more than once.", r)
		}
		seen[r] = true
		usable = usable || up
	}
	return usable, nil
}

// ManualAssignmentRefusal checks a CreateTopics entry's manual assignment
// as Kafka 4.4 does, returning the error code and message, or 0: the
// partition count and replication factor left at -1, no partition named
// twice, each partition's replicas valid (CheckManualAssignment), and the
// partitions numbered 0 to N-1.
func ManualAssignmentRefusal(t kmsg.CreateTopicsRequestTopic, broker AssignedBroker) (int16, string) {
	switch {
	case t.ReplicationFactor != -1:
		return kerr.InvalidRequest.Code, "A manual partition assignment was specified, but replication factor was not set to -1."
	case t.NumPartitions != -1:
		return kerr.InvalidRequest.Code, "A manual partition assignment was specified, but numPartitions was not set to -1."
	}
	seen := map[int32]bool{}
	want := -1
	for _, a := range t.ReplicaAssignment {
		if seen[a.Partition] {
			return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Found multiple manual partition assignments for partition %d", a.Partition)
		}
		seen[a.Partition] = true
		if err := CheckManualAssignment(a.Partition, a.Replicas, want, broker); err != nil {
			return kerr.InvalidReplicaAssignment.Code, err.Error()
		}
		want = len(a.Replicas)
	}
	for i := range int32(len(t.ReplicaAssignment)) {
		if !seen[i] {
			return kerr.InvalidReplicaAssignment.Code, "partitions should be a consecutive 0-based integer sequence"
		}
	}
	return 0, ""
}

// assignedBroker answers CheckManualAssignment from the image.
func (img *Image) assignedBroker(id int32) (registered, cordoned, usable bool) {
	b := img.Brokers[id]
	if b == nil {
		return false, false, false
	}
	return true, !b.hasUncordonedDirs(), b.usable()
}
