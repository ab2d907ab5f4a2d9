package compat

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rebalances counts the rebalance notices kcat printed so far.
func (k *kcatMember) rebalances() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return strings.Count(k.stderr.String(), "rebalanced")
}

// TestKcatStaticMemberRestart runs two static members (group.instance.id)
// and, one after the other, kills each with SIGKILL and starts it again
// within its session timeout: the broker hands the new incarnation the old
// one's partitions without a rebalance (the other member sees none) and
// fences the old member id. One of the two is the group's leader, whose new
// incarnation must not be asked to assign again.
func TestKcatStaticMemberRestart(t *testing.T) {
	p := harness.Start(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	const topic, group = "kcat-static", "kcat-static-group"
	adm := newAdmin(t, p.Addr)
	createTopic(t, adm, topic)
	seen := newConsumed()
	static := func(name, instance string) *kcatMember {
		return startKcatMember(t, p.Addr, name, group, topic, seen, "group.instance.id="+instance, "session.timeout.ms=10000")
	}
	members := map[string]*kcatMember{"a": static("a", "a"), "b": static("b", "b")}
	waitStableSplit(t, adm, group, topic, 2)
	var all []string
	all = append(all, produceSpread(t, p.Addr, topic, "first", 10)...)
	waitFor(t, "every record consumed", 20*time.Second, func() bool { return seen.has(all) })
	waitCommittedAtEnd(t, adm, group, topic)

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for round, pair := range [][2]string{{"a", "b"}, {"b", "a"}} {
		instance, otherInstance := pair[0], pair[1]
		before := describe(t, adm, group)
		oldID := ""
		for _, m := range before.Members {
			if m.InstanceID != nil && *m.InstanceID == instance {
				oldID = m.MemberID
			}
		}
		oldParts := assignments(before, topic)[oldID]
		if len(oldParts) != 2 {
			t.Fatalf("%s holds %v, want two partitions", instance, oldParts)
		}
		other := members[otherInstance]
		otherRebalances := other.rebalances()
		if otherRebalances == 0 {
			t.Fatalf("kcat %s printed no rebalance notice for its assignment", other.name)
		}

		members[instance].signal(syscall.SIGKILL)
		restarted := fmt.Sprintf("%s%d", instance, round+2)
		members[instance] = static(restarted, instance)
		waitFor(t, instance+" restarted and back in the group", 20*time.Second, func() bool {
			g := describe(t, adm, group)
			if g.State != "Stable" || len(g.Members) != 2 {
				return false
			}
			for _, m := range g.Members {
				if m.InstanceID != nil && *m.InstanceID == instance && m.MemberID != oldID && m.ClientID == restarted {
					got := assignments(g, topic)[m.MemberID]
					if fmt.Sprint(got) != fmt.Sprint(oldParts) {
						t.Fatalf("restarted %s holds %v, want its old %v", instance, got, oldParts)
					}
					return true
				}
			}
			return false
		})
		batch := produceSpread(t, p.Addr, topic, "after-restart-"+instance, 10)
		all = append(all, batch...)
		waitFor(t, "records produced after the restart consumed", 20*time.Second, func() bool { return seen.has(batch) })
		waitCommittedAtEnd(t, adm, group, topic)
		seen.checkExactlyOnce(t, all)
		if n := other.rebalances(); n != otherRebalances {
			t.Errorf("%s saw %d rebalances after %s restarted, want none", other.name, n-otherRebalances, instance)
		}

		// The old incarnation's member id is fenced.
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Version = 4
		hb.Group, hb.MemberID, hb.InstanceID, hb.Generation = group, oldID, &instance, 1
		resp, err := hb.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != kerr.FencedInstanceID.Code {
			t.Errorf("heartbeat with %s's old member id: error %d, want FENCED_INSTANCE_ID", instance, resp.ErrorCode)
		}
	}
}

// TestKcatGroupSurvivesBrokerKill kills the broker with SIGKILL under two
// running `kcat -G` members and restarts it on the same data and port: the
// coordinator reloads the group from __consumer_offsets with its members
// and committed offsets, the members carry on in their generation, and
// nothing consumed before the kill is consumed again.
func TestKcatGroupSurvivesBrokerKill(t *testing.T) {
	dir := t.TempDir()
	p := harness.Start(t, dir, "group.initial.rebalance.delay.ms=0")
	const topic, group = "kcat-restart", "kcat-restart-group"
	adm := newAdmin(t, p.Addr)
	createTopic(t, adm, topic)
	seen := newConsumed()
	startKcatMember(t, p.Addr, "k1", group, topic, seen, "session.timeout.ms=10000")
	startKcatMember(t, p.Addr, "k2", group, topic, seen, "session.timeout.ms=10000")
	before := waitStableSplit(t, adm, group, topic, 2)
	first := produceSpread(t, p.Addr, topic, "first", 20)
	waitFor(t, "every record consumed", 20*time.Second, func() bool { return seen.has(first) })
	waitCommittedAtEnd(t, adm, group, topic)

	p.Kill()
	p = harness.Start(t, dir, "group.initial.rebalance.delay.ms=0", "listeners=PLAINTEXT://"+p.Addr)
	adm = newAdmin(t, p.Addr)
	if got := committed(t, adm, group, topic); len(got) != groupPartitions || got[0] != 20 || got[3] != 20 {
		t.Fatalf("committed offsets after the restart %v, want 20 on each partition", got)
	}
	second := produceSpread(t, p.Addr, topic, "second", 20)
	waitFor(t, "records produced after the restart consumed", 25*time.Second, func() bool { return seen.has(second) })
	waitCommittedAtEnd(t, adm, group, topic)
	seen.checkExactlyOnce(t, append(first, second...))
	after := describe(t, adm, group)
	if after.State != "Stable" || len(after.Members) != 2 {
		t.Fatalf("group after the restart: %s with %d members", after.State, len(after.Members))
	}
	want := assignments(before, topic)
	for id, ps := range assignments(after, topic) {
		if fmt.Sprint(want[id]) != fmt.Sprint(ps) {
			t.Errorf("member %s holds %v after the restart, before %v (members before: %v)", id, ps, want[id], want)
		}
	}
}
