package group

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAssignTasksProperties checks the task assignor over random groups:
// every task is active on exactly one member, loads differ by one at most,
// an unchanged group keeps its assignment, a member leaving moves only its
// own tasks, and standbys (stateful subtopologies only) are never on the
// active task's process nor twice on one process, as many as the other
// processes allow.
func TestAssignTasksProperties(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		tasks := map[string]int32{}
		stateful := map[string]bool{}
		for i := range 1 + r.IntN(3) {
			st := fmt.Sprint(i)
			tasks[st] = int32(r.IntN(9))
			stateful[st] = r.IntN(2) == 0
		}
		var members []streamsAssignee
		processes := 1 + r.IntN(4)
		for i := range 1 + r.IntN(6) {
			members = append(members, streamsAssignee{id: fmt.Sprintf("m%d", i), process: fmt.Sprintf("p%d", r.IntN(processes)),
				previous: newStreamsTasks()})
		}
		standbys := r.IntN(3)
		check := func(what string, ms []streamsAssignee, got map[string]streamsTasks) {
			t.Helper()
			process := map[string]string{}
			for _, m := range ms {
				process[m.id] = m.process
			}
			total, lo, hi := 0, 1<<30, 0
			for _, m := range ms {
				n := got[m.id].active.count()
				total += n
				lo, hi = min(lo, n), max(hi, n)
			}
			want := 0
			for _, n := range tasks {
				want += int(n)
			}
			if total != want || hi-lo > 1 {
				t.Fatalf("seed %d %s: %d active tasks of %d, loads %d-%d", seed, what, total, want, lo, hi)
			}
			distinct := map[string]bool{}
			for _, m := range ms {
				distinct[m.process] = true
			}
			for st, n := range tasks {
				for p := range n {
					var owners []string
					used := map[string]bool{}
					standbyCount := 0
					for _, m := range ms {
						if got[m.id].active.has(st, p) {
							owners = append(owners, m.id)
							used[m.process] = true
						}
					}
					if len(owners) != 1 {
						t.Fatalf("seed %d %s: task %s_%d active on %v", seed, what, st, p, owners)
					}
					for _, m := range ms {
						if !got[m.id].standby.has(st, p) {
							continue
						}
						if used[m.process] {
							t.Fatalf("seed %d %s: standby of %s_%d on process %s, which has it already", seed, what, st, p, m.process)
						}
						used[m.process] = true
						standbyCount++
					}
					wantStandbys := 0
					if stateful[st] {
						wantStandbys = min(standbys, len(distinct)-1)
					}
					if standbyCount != wantStandbys {
						t.Fatalf("seed %d %s: task %s_%d has %d standbys, want %d", seed, what, st, p, standbyCount, wantStandbys)
					}
				}
			}
		}
		first := assignTasks(members, tasks, stateful, standbys)
		check("first", members, first)
		for i := range members {
			members[i].previous = first[members[i].id]
		}
		again := assignTasks(members, tasks, stateful, standbys)
		for _, m := range members {
			if !again[m.id].equal(first[m.id]) {
				t.Fatalf("seed %d: unchanged group moved tasks of %s: %v -> %v", seed, m.id, first[m.id], again[m.id])
			}
		}
		if len(members) < 2 {
			continue
		}
		gone := r.IntN(len(members))
		rest := slices.Delete(slices.Clone(members), gone, gone+1)
		after := assignTasks(rest, tasks, stateful, standbys)
		check("after a leave", rest, after)
		moved := 0
		for _, m := range rest {
			first[m.id].active.each(func(st string, p int32) {
				if !after[m.id].active.has(st, p) {
					moved++
				}
			})
		}
		// A survivor gives up a task only when the balance needs it:
		// at most one each, when the leaver's load had to go somewhere.
		if moved > len(rest) {
			t.Fatalf("seed %d: %d active tasks of staying members moved", seed, moved)
		}
	}
}
