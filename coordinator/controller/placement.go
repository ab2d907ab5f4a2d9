package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// placeReplicas assigns replicas for count new partitions with replication
// factor rf over the usable brokers with a log dir not cordoned, in the
// spirit of Kafka's
// StripedReplicaPlacer: brokers are listed alternating racks (rack A's
// first, rack B's first, ..., rack A's second, ...), a random start is
// picked, and partition p takes rf consecutive brokers of that list from
// start+p. Leaders (first replicas) therefore spread over all brokers, and
// with racks set a partition's replicas sit on distinct racks as long as
// there are as many racks as replicas.
func placeReplicas(img *Image, count int32, rf int16) ([][]int32, error) {
	striped := rackAlternated(img)
	switch {
	case !slices.ContainsFunc(img.SortedBrokerIDs(), img.usable):
		return nil, fmt.Errorf("Unable to replicate the partition %d time(s): All brokers are currently fenced or in controlled shutdown.", rf)
	case len(striped) == 0:
		return nil, fmt.Errorf("Unable to replicate the partition %d time(s): All brokers are currently fenced, or have all their log directories cordoned.", rf)
	case int(rf) > len(striped):
		return nil, fmt.Errorf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered or some brokers have all their log directories cordoned.",
			rf, rf, len(striped))
	}
	start := rand.IntN(len(striped))
	out := make([][]int32, count)
	for p := range out {
		replicas := make([]int32, rf)
		for j := range replicas {
			replicas[j] = striped[(start+p+j)%len(striped)]
		}
		out[p] = replicas
	}
	return out, nil
}

// rackAlternated lists the usable brokers with a log dir not cordoned so
// that consecutive entries come from different racks where possible.
// Brokers without a rack count as one rack.
func rackAlternated(img *Image) []int32 {
	byRack := map[string][]int32{}
	for _, id := range img.SortedBrokerIDs() {
		b := img.Brokers[id]
		if b.usable() && b.hasUncordonedDirs() {
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

// checkAssignment validates manually given replicas: not empty, no
// duplicates, registered brokers with a log dir not cordoned, at least one
// usable.
func checkAssignment(img *Image, replicas []int32) error {
	if len(replicas) == 0 {
		return fmt.Errorf("The manual partition assignment includes an empty replica list.")
	}
	seen := map[int32]bool{}
	usable := false
	for _, r := range replicas {
		if seen[r] {
			return fmt.Errorf("The manual partition assignment includes the broker %d more than once.", r)
		}
		seen[r] = true
		if img.Brokers[r] == nil {
			return fmt.Errorf("The manual partition assignment includes broker %d, but no such broker is registered.", r)
		}
		if !img.Brokers[r].hasUncordonedDirs() {
			return fmt.Errorf(AssignedCordoned, r)
		}
		usable = usable || img.usable(r)
	}
	if !usable {
		return fmt.Errorf("All brokers specified in the manual partition assignment are fenced or in controlled shutdown.")
	}
	return nil
}
