package group

import (
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// taskSet is a set of tasks of one kind: partitions by subtopology id,
// each list sorted and without duplicates.
type taskSet map[string][]int32

func (s taskSet) has(subtopology string, p int32) bool {
	ps := s[subtopology]
	i := sort.Search(len(ps), func(i int) bool { return ps[i] >= p })
	return i < len(ps) && ps[i] == p
}

func (s taskSet) count() int {
	n := 0
	for _, ps := range s {
		n += len(ps)
	}
	return n
}

func (s taskSet) add(subtopology string, p int32) {
	ps := s[subtopology]
	i := sort.Search(len(ps), func(i int) bool { return ps[i] >= p })
	if i < len(ps) && ps[i] == p {
		return
	}
	s[subtopology] = slices.Insert(ps, i, p)
}

// each calls fn for every task in subtopology and partition order.
func (s taskSet) each(fn func(subtopology string, p int32)) {
	for _, st := range slices.Sorted(maps.Keys(s)) {
		for _, p := range s[st] {
			fn(st, p)
		}
	}
}

func (s taskSet) equal(o taskSet) bool {
	if s.count() != o.count() {
		return false
	}
	eq := true
	s.each(func(st string, p int32) { eq = eq && o.has(st, p) })
	return eq
}

// anyOf reports whether s holds any task of o.
func (s taskSet) anyOf(o taskSet) bool {
	found := false
	o.each(func(st string, p int32) { found = found || s.has(st, p) })
	return found
}

// taskSetOf reads a request's or record's task lists.
func taskSetOf(ids []kmsg.TaskIDs) taskSet {
	s := taskSet{}
	for _, t := range ids {
		for _, p := range t.Partitions {
			s.add(t.SubtopologyID, p)
		}
	}
	return s
}

// taskIDs lists a set as the protocol does, by subtopology id; never nil.
func (s taskSet) taskIDs() []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, st := range slices.Sorted(maps.Keys(s)) {
		if len(s[st]) > 0 {
			out = append(out, kmsg.TaskIDs{SubtopologyID: st, Partitions: slices.Clone(s[st])})
		}
	}
	return out
}

// streamsTasks are a member's tasks of the three kinds.
type streamsTasks struct {
	active, standby, warmup taskSet
}

func newStreamsTasks() streamsTasks {
	return streamsTasks{active: taskSet{}, standby: taskSet{}, warmup: taskSet{}}
}

func (t streamsTasks) empty() bool {
	return t.active.count() == 0 && t.standby.count() == 0 && t.warmup.count() == 0
}

func (t streamsTasks) equal(o streamsTasks) bool {
	return t.active.equal(o.active) && t.standby.equal(o.standby) && t.warmup.equal(o.warmup)
}

func (t streamsTasks) anyOf(o streamsTasks) bool {
	return t.active.anyOf(o.active) || t.standby.anyOf(o.standby) || t.warmup.anyOf(o.warmup)
}

// streamsAssignee is a member as the task assignor sees it.
type streamsAssignee struct {
	id, process string
	previous    streamsTasks // its target before this assignment
}

// assignTasks is Gregor's task assignor for streams groups, after Kafka's
// sticky one: every task (a subtopology's partition, counts by subtopology
// id) goes active to one member, the members' loads differing by one at
// most, and the tasks of stateful subtopologies balanced on their own
// first, so that a new member takes its share of state too. A task stays
// with its previous member while that keeps the balance; the others go, by
// partition and then subtopology (so that a member has the same partitions
// of every subtopology), to the least loaded. Tasks of stateful
// subtopologies get standbys replicas each, on processes other than the
// active one's and each other's, a member keeping its previous standbys
// where it can, else the member with the fewest standbys taking them.
// Warm-up tasks are not used, as in Kafka. members must be sorted by id.
func assignTasks(members []streamsAssignee, tasks map[string]int32, stateful map[string]bool, standbys int) map[string]streamsTasks {
	out := make(map[string]streamsTasks, len(members))
	for _, m := range members {
		out[m.id] = newStreamsTasks()
	}
	if len(members) == 0 {
		return out
	}
	var all []streamsTaskID
	for _, st := range slices.Sorted(maps.Keys(tasks)) {
		for p := range tasks[st] {
			all = append(all, streamsTaskID{st, p})
		}
	}
	slices.SortFunc(all, func(a, b streamsTaskID) int {
		if a.partition != b.partition {
			return int(a.partition - b.partition)
		}
		return strings.Compare(a.subtopology, b.subtopology)
	})
	owner := map[streamsTaskID]string{}
	for _, m := range members {
		m.previous.active.each(func(st string, p int32) { owner[streamsTaskID{st, p}] = m.id })
	}
	total := newQuota(len(all), len(members))
	for _, class := range [][]streamsTaskID{
		slices.DeleteFunc(slices.Clone(all), func(t streamsTaskID) bool { return !stateful[t.subtopology] }),
		slices.DeleteFunc(slices.Clone(all), func(t streamsTaskID) bool { return stateful[t.subtopology] }),
	} {
		share := newQuota(len(class), len(members))
		take := func(id string, t streamsTaskID) {
			share.take(id)
			total.take(id)
			out[id].active.add(t.subtopology, t.partition)
		}
		var rest []streamsTaskID
		for _, t := range class {
			if id, ok := owner[t]; ok && share.fits(id) && total.fits(id) {
				take(id, t)
			} else {
				rest = append(rest, t)
			}
		}
		for _, t := range rest {
			best := ""
			for _, strict := range []bool{true, false} {
				for _, m := range members {
					if !total.fits(m.id) || strict && !share.fits(m.id) {
						continue
					}
					if best == "" || share.load[m.id] < share.load[best] ||
						share.load[m.id] == share.load[best] && total.load[m.id] < total.load[best] {
						best = m.id
					}
				}
				if best != "" {
					break
				}
			}
			take(best, t)
		}
	}
	if standbys <= 0 {
		return out
	}
	process := map[string]string{}
	for _, m := range members {
		process[m.id] = m.process
	}
	activeOwner := map[streamsTaskID]string{}
	for id, ts := range out {
		ts.active.each(func(st string, p int32) { activeOwner[streamsTaskID{st, p}] = id })
	}
	standbyLoad := map[string]int{}
	for _, t := range all {
		if !stateful[t.subtopology] {
			continue
		}
		used := map[string]bool{process[activeOwner[t]]: true}
		for range standbys {
			best, kept := "", false
			for _, m := range members {
				had := m.previous.standby.has(t.subtopology, t.partition)
				switch {
				case used[m.process]:
				case best == "", had && !kept, had == kept && standbyLoad[m.id] < standbyLoad[best]:
					best, kept = m.id, had
				}
			}
			if best == "" {
				break // fewer processes than replicas
			}
			used[process[best]] = true
			standbyLoad[best]++
			out[best].standby.add(t.subtopology, t.partition)
		}
	}
	return out
}

// streamsTaskID is one task.
type streamsTaskID struct {
	subtopology string
	partition   int32
}

// quota spreads n tasks over m members: floor(n/m) each, and one more
// for n%m of them.
type quota struct {
	floor, extra int
	load         map[string]int
}

func newQuota(n, m int) *quota { return &quota{floor: n / m, extra: n % m, load: map[string]int{}} }

func (q *quota) fits(id string) bool {
	return q.load[id] < q.floor || q.load[id] == q.floor && q.extra > 0
}

func (q *quota) take(id string) {
	if q.load[id] == q.floor {
		q.extra--
	}
	q.load[id]++
}
