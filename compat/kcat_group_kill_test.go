package compat

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
)

// TestKcatGroupMemberKilled kills one of two `kcat -G` processes with
// SIGKILL, so that it never leaves the group: the broker must drop it once
// its session times out and give its partitions to the survivor, which then
// consumes everything produced after the kill. Eager (range) and
// cooperative-sticky groups are checked, and a member killed just as a
// rebalance starts.
func TestKcatGroupMemberKilled(t *testing.T) {
	p := harness.Start(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	for _, assignor := range []string{"range", "cooperative-sticky"} {
		t.Run(assignor, func(t *testing.T) {
			t.Parallel()
			testKcatMemberKilled(t, p, assignor)
		})
	}
	t.Run("during-rebalance", func(t *testing.T) {
		t.Parallel()
		testKcatMemberKilledDuringRebalance(t, p)
	})
}

// checkSessionExpiredLogged fails unless the broker logged the session
// expiry of memberID.
func checkSessionExpiredLogged(t *testing.T, p *harness.Process, memberID string) {
	t.Helper()
	logs, err := os.ReadFile(p.Logs)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(logs), "\n") {
		if strings.Contains(line, "member session expired") && strings.Contains(line, memberID) {
			return
		}
	}
	t.Errorf("the broker log does not show %s's session expiring:\n%s", memberID, logs)
}

// testKcatMemberKilledDuringRebalance kills a member and at once starts a
// new one, whose join starts a rebalance that the dead member will never
// rejoin. Its session timeout (6 s), not its rebalance timeout (librdkafka's
// max.poll.interval.ms, 300 s), must end the wait: the survivor and the
// newcomer then share the partitions.
func testKcatMemberKilledDuringRebalance(t *testing.T, p *harness.Process) {
	const topic, group = "kcat-kill-rebalance", "kcat-kill-rebalance-group"
	adm := newAdmin(t, p.Addr)
	createTopic(t, adm, topic)
	seen := newConsumed()
	slowPoll := "max.poll.interval.ms=300000"
	startKcatMember(t, p.Addr, "survivor", group, topic, seen, slowPoll)
	victim := startKcatMember(t, p.Addr, "victim", group, topic, seen, slowPoll)
	before := waitStableSplit(t, adm, group, topic, 2)
	var victimID string
	for _, m := range before.Members {
		if m.ClientID == "victim" {
			victimID = m.MemberID
		}
	}
	first := produceSpread(t, p.Addr, topic, "first", 20)
	waitFor(t, "every record consumed", 20*time.Second, func() bool { return seen.has(first) })
	waitCommittedAtEnd(t, adm, group, topic)

	victim.signal(syscall.SIGKILL)
	startKcatMember(t, p.Addr, "newcomer", group, topic, seen, slowPoll)
	waitFor(t, "survivor and newcomer sharing the partitions", 30*time.Second, func() bool {
		g := describe(t, adm, group)
		got := byClient(g, topic)
		return g.State == "Stable" && len(g.Members) == 2 && len(got["survivor"]) == 2 && len(got["newcomer"]) == 2
	})
	checkSessionExpiredLogged(t, p, victimID)
	second := produceSpread(t, p.Addr, topic, "second", 20)
	waitFor(t, "records produced after the rebalance consumed", 20*time.Second, func() bool { return seen.has(second) })
	waitCommittedAtEnd(t, adm, group, topic)
	seen.checkExactlyOnce(t, append(first, second...))
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.by["newcomer"]) == 0 {
		t.Error("the newcomer consumed nothing")
	}
}

func testKcatMemberKilled(t *testing.T, p *harness.Process, assignor string) {
	topic, group := "kcat-kill-"+assignor, "kcat-kill-group-"+assignor
	const session = 6 * time.Second // as startKcatMember configures it
	adm := newAdmin(t, p.Addr)
	createTopic(t, adm, topic)
	seen := newConsumed()
	strategy := "partition.assignment.strategy=" + assignor
	startKcatMember(t, p.Addr, "survivor", group, topic, seen, strategy)
	victim := startKcatMember(t, p.Addr, "victim", group, topic, seen, strategy)
	before := waitStableSplit(t, adm, group, topic, 2)
	var victimID string
	for _, m := range before.Members {
		if m.ClientID == "victim" {
			victimID = m.MemberID
		}
	}
	victimParts := assignments(before, topic)[victimID]
	if len(victimParts) != 2 {
		t.Fatalf("victim holds %v, want two partitions", victimParts)
	}
	first := produceSpread(t, p.Addr, topic, "first", 20)
	waitFor(t, "every record consumed", 20*time.Second, func() bool { return seen.has(first) })
	waitCommittedAtEnd(t, adm, group, topic)

	victim.signal(syscall.SIGKILL)
	killed := time.Now()
	// Produced while the dead member still owns its partitions.
	second := produceSpread(t, p.Addr, topic, "second", 20)

	var after map[string][]int32
	waitFor(t, "the survivor holding every partition", 30*time.Second, func() bool {
		g := describe(t, adm, group)
		after = byClient(g, topic)
		return g.State == "Stable" && len(g.Members) == 1 && len(after["survivor"]) == groupPartitions
	})
	if g := describe(t, adm, group); g.Protocol != assignor {
		t.Errorf("protocol %q, want %q", g.Protocol, assignor)
	}
	// The member could not have been dropped before a session timeout after
	// its last heartbeat, which came at most a few heartbeat intervals
	// before the kill.
	if waited := time.Since(killed); waited < session/2 {
		t.Errorf("the dead member was dropped %v after the kill, before its %v session timeout", waited, session)
	}
	checkSessionExpiredLogged(t, p, victimID)

	waitFor(t, "the survivor consuming what was produced after the kill", 20*time.Second, func() bool { return seen.has(second) })
	waitCommittedAtEnd(t, adm, group, topic)
	seen.checkExactlyOnce(t, append(first, second...))
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for _, v := range second {
		if !seen.by["survivor"][v] {
			t.Errorf("%s, produced after the kill, not consumed by the survivor", v)
		}
	}
	held := map[int32]bool{}
	for _, part := range after["survivor"] {
		held[part] = true
	}
	for _, part := range victimParts {
		if !held[part] {
			t.Errorf("partition %d of the dead member did not move to the survivor (holds %v)", part, after["survivor"])
		}
	}
}
