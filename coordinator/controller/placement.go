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
// cordoned, in the spirit of Kafka's StripedReplicaPlacer: the unfenced
// ones are listed alternating racks (rack A's first, rack B's first, ...,
// rack A's second, ...), a random start is picked, and partition p takes
// rf consecutive brokers of that list from start+p. Leaders (first
// replicas) therefore spread over all unfenced brokers, and with racks set
// a partition's replicas sit on distinct racks as long as there are as
// many racks as replicas. Fenced brokers count towards rf as Kafka's do:
// when the unfenced ones are too few, a partition's last replicas are
// fenced brokers (never its leader), which take them up when they return.
func placeReplicas(img *Image, count int32, rf int16) ([][]int32, error) {
	unfenced := rackAlternated(img, (*Broker).usable)
	fenced := rackAlternated(img, func(b *Broker) bool { return b.Fenced && !b.ShuttingDown })
	total := len(unfenced) + len(fenced)
	switch {
	case !slices.ContainsFunc(img.SortedBrokerIDs(), img.usable):
		return nil, fmt.Errorf("Unable to replicate the partition %d time(s): All brokers are currently fenced or in controlled shutdown.", rf)
	case len(unfenced) == 0:
		return nil, fmt.Errorf("Unable to replicate the partition %d time(s): All brokers are currently fenced, or have all their log directories cordoned.", rf)
	case int(rf) > total:
		return nil, fmt.Errorf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered or some brokers have all their log directories cordoned.",
			rf, rf, total)
	}
	start := rand.IntN(len(unfenced))
	fromUnfenced := min(int(rf), len(unfenced))
	out := make([][]int32, count)
	for p := range out {
		replicas := make([]int32, 0, rf)
		for j := range fromUnfenced {
			replicas = append(replicas, unfenced[(start+p+j)%len(unfenced)])
		}
		for j := range int(rf) - fromUnfenced {
			replicas = append(replicas, fenced[(p+j)%len(fenced)])
		}
		out[p] = replicas
	}
	return out, nil
}

// rackAlternated lists the brokers with a log dir not cordoned that
// include takes so that consecutive entries come from different racks
// where possible. Brokers without a rack count as one rack.
func rackAlternated(img *Image, include func(*Broker) bool) []int32 {
	byRack := map[string][]int32{}
	for _, id := range img.SortedBrokerIDs() {
		b := img.Brokers[id]
		if include(b) && b.hasUncordonedDirs() {
			byRack[b.Rack] = append(byRack[b.Rack], id)
		}
	}
	racks := make([]string, 0, len(byRack))
	for r := range byRack {
		racks = append(racks, r)
	}
	slices.Sort(racks)
	var out []int32
	for i := 0; ; i++ {
		added := false
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
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
