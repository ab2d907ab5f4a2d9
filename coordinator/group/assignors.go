package group

import (
	"slices"
	"sort"
)

// The server-side assignors of consumer groups (KIP-848), named as in
// Kafka's group.consumer.assignors: "uniform" (the default) and "range".
// Both are sticky: a member keeps the partitions of its previous target
// assignment that it may still have, so a rebalance moves only what it
// must. Topics are addressed by id, as in the protocol.

// AssignorNames are the assignors there are, in Kafka's default order of
// group.consumer.assignors; Config.ConsumerAssignors picks among them,
// its first being the default when no member asks for one.
var AssignorNames = []string{"uniform", "range"}

// assignment is a member's partitions by topic id, each list sorted.
type assignment map[[16]byte][]int32

func (a assignment) has(topic [16]byte, p int32) bool {
	ps := a[topic]
	i := sort.Search(len(ps), func(i int) bool { return ps[i] >= p })
	return i < len(ps) && ps[i] == p
}

func (a assignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func (a assignment) equal(b assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		qs, ok := b[t]
		if !ok || len(ps) != len(qs) {
			return false
		}
		for i := range ps {
			if ps[i] != qs[i] {
				return false
			}
		}
	}
	return true
}

// topicPartitionID is one partition of a topic known by id.
type topicPartitionID struct {
	topic     [16]byte
	partition int32
}

// assignmentOf builds an assignment from partitions, sorting each topic's.
func assignmentOf(tps []topicPartitionID) assignment {
	a := assignment{}
	for _, tp := range tps {
		a[tp.topic] = append(a[tp.topic], tp.partition)
	}
	for _, ps := range a {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	}
	return a
}

// assignorMember is what an assignor knows of a member.
type assignorMember struct {
	id       string
	instance *string           // its group.instance.id, nil for a dynamic member
	topics   map[[16]byte]bool // subscribed topics that exist
	previous assignment        // its previous target assignment
}

// assign runs the named assignor. partitions gives each subscribed
// topic's partition count.
func assign(name string, members []assignorMember, partitions map[[16]byte]int32) map[string]assignment {
	if name == "range" {
		sort.Slice(members, func(i, j int) bool { return rangeBefore(members[i], members[j]) })
		return assignRange(members, partitions)
	}
	sort.Slice(members, func(i, j int) bool { return members[i].id < members[j].id })
	return assignUniform(members, partitions)
}

// rangeBefore is the order in which the range assignor hands out ranges,
// Kafka's RangeAssignor.sortMemberIds: static members first, by instance
// id, then dynamic members by member id. A static member's new
// incarnation, which has a new member id, so gets the same ranges.
func rangeBefore(a, b assignorMember) bool {
	switch {
	case a.instance != nil && b.instance != nil:
		return *a.instance < *b.instance
	case a.instance != nil || b.instance != nil:
		return a.instance != nil
	}
	return a.id < b.id
}

// assignUniform spreads every subscribed partition so that no member that
// could take a partition has two fewer than the member holding it. It
// keeps previous owners first, hands the rest to the least loaded eligible
// member, then moves partitions from the most to the least loaded while
// that narrows the gap.
func assignUniform(members []assignorMember, partitions map[[16]byte]int32) map[string]assignment {
	owner := map[topicPartitionID]int{} // member index
	load := make([]int, len(members))
	for i, m := range members {
		for t, ps := range m.previous {
			if !m.topics[t] {
				continue
			}
			for _, p := range ps {
				tp := topicPartitionID{t, p}
				if _, taken := owner[tp]; taken || p >= partitions[t] {
					continue
				}
				owner[tp] = i
				load[i]++
			}
		}
	}
	for _, t := range sortedTopicIDs(partitions) {
		for p := int32(0); p < partitions[t]; p++ {
			tp := topicPartitionID{t, p}
			if _, taken := owner[tp]; taken {
				continue
			}
			best := -1
			for i, m := range members {
				if m.topics[t] && (best < 0 || load[i] < load[best]) {
					best = i
				}
			}
			if best >= 0 {
				owner[tp] = best
				load[best]++
			}
		}
	}
	// Balance: move one partition at a time from a member to an eligible
	// member holding at least two fewer, until no such move exists.
	for moved := true; moved; {
		moved = false
		for _, tp := range sortedPartitionIDs(owner) {
			from := owner[tp]
			to := -1
			for i, m := range members {
				if m.topics[tp.topic] && load[i] < load[from]-1 && (to < 0 || load[i] < load[to]) {
					to = i
				}
			}
			if to >= 0 {
				owner[tp] = to
				load[from]--
				load[to]++
				moved = true
			}
		}
	}
	return byMember(members, owner)
}

// assignRange gives each member a contiguous range of every topic it
// subscribes to, as Kafka's RangeAssignor does: the topic's subscribers in
// the order of rangeBefore, the first (partitions % subscribers) one
// partition more.
func assignRange(members []assignorMember, partitions map[[16]byte]int32) map[string]assignment {
	owner := map[topicPartitionID]int{}
	for _, t := range sortedTopicIDs(partitions) {
		var subs []int
		for i, m := range members {
			if m.topics[t] {
				subs = append(subs, i)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := partitions[t]
		per, extra := n/int32(len(subs)), n%int32(len(subs))
		start := int32(0)
		for k, i := range subs {
			size := per
			if int32(k) < extra {
				size++
			}
			for p := start; p < start+size; p++ {
				owner[topicPartitionID{t, p}] = i
			}
			start += size
		}
	}
	return byMember(members, owner)
}

func byMember(members []assignorMember, owner map[topicPartitionID]int) map[string]assignment {
	tps := make([][]topicPartitionID, len(members))
	for tp, i := range owner {
		tps[i] = append(tps[i], tp)
	}
	out := make(map[string]assignment, len(members))
	for i, m := range members {
		out[m.id] = assignmentOf(tps[i])
	}
	return out
}

func sortedTopicIDs[V any](m map[[16]byte]V) [][16]byte {
	ids := make([][16]byte, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	return ids
}

func sortedPartitionIDs(m map[topicPartitionID]int) []topicPartitionID {
	out := make([]topicPartitionID, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return string(out[i].topic[:]) < string(out[j].topic[:])
		}
		return out[i].partition < out[j].partition
	})
	return out
}

// assignSimple is the assignor of share groups, Kafka's SimpleAssignor
// ("simple"): each topic's partitions are spread over the members that
// subscribe to it, and when a topic has fewer partitions than subscribers
// its partitions are shared, each by ceil(subscribers/partitions)
// members, so that every member gets some and every partition has an
// owner. Per topic, the subscribers' counts differ by at most one, the
// larger counts going to those that held the most before; a member keeps
// the partitions of its previous target within its count and the
// partition's sharing (balance first, then stickiness, as Kafka's), and
// the rest are handed out, first so that every partition has one member,
// then up to its sharing. Like Kafka's, balance is computed per topic.
func assignSimple(members []assignorMember, partitions map[[16]byte]int32) map[string]assignment {
	sort.Slice(members, func(i, j int) bool { return members[i].id < members[j].id })
	tps := make([][]topicPartitionID, len(members))
	for _, t := range sortedTopicIDs(partitions) {
		n := int(partitions[t])
		var subs []int
		for i, m := range members {
			if m.topics[t] {
				subs = append(subs, i)
			}
		}
		if len(subs) == 0 || n <= 0 {
			continue
		}
		prev := make(map[int][]int32, len(subs))
		for _, i := range subs {
			for _, p := range members[i].previous[t] {
				if int(p) < n {
					prev[i] = append(prev[i], p)
				}
			}
		}
		sort.SliceStable(subs, func(a, b int) bool { return len(prev[subs[a]]) > len(prev[subs[b]]) })
		sharing := (len(subs) + n - 1) / n
		total := sharing * n
		quota := make(map[int]int, len(subs))
		for k, i := range subs {
			quota[i] = ceilDiv(total*(k+1), len(subs)) - ceilDiv(total*k, len(subs))
		}
		holders := make([][]int, n)
		count := make(map[int]int, len(subs))
		holds := func(i, p int) bool { return slices.Contains(holders[p], i) }
		give := func(i, p int) {
			holders[p] = append(holders[p], i)
			count[i]++
			tps[i] = append(tps[i], topicPartitionID{t, int32(p)})
		}
		for _, i := range subs {
			for _, p := range prev[i] {
				if count[i] < quota[i] && len(holders[p]) < sharing && !holds(i, int(p)) {
					give(i, int(p))
				}
			}
		}
		for round := 1; round <= sharing; round++ {
			for p := 0; p < n; p++ {
				if len(holders[p]) >= round {
					continue
				}
				best := -1
				for _, i := range subs {
					if count[i] < quota[i] && !holds(i, p) && (best < 0 || quota[i]-count[i] > quota[best]-count[best]) {
						best = i
					}
				}
				if best >= 0 { // else no member can take it: tolerated, as in Kafka
					give(best, p)
				}
			}
		}
	}
	out := make(map[string]assignment, len(members))
	for i, m := range members {
		out[m.id] = assignmentOf(tps[i])
	}
	return out
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
