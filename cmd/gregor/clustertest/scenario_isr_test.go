package clustertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// follower picks a replica of the partition other than its leader,
// preferring one that is not the controller, so that pausing it tests
// the ISR and not a controller failover.
func follower(t *testing.T, c *Cluster, s PartitionState) *Node {
	t.Helper()
	ctl := c.Controller(t, 30*time.Second)
	var pick *Node
	for _, id := range s.Replicas {
		if id == s.Leader {
			continue
		}
		if pick == nil || id != ctl {
			pick = c.Node(id)
		}
	}
	if pick == nil {
		t.Fatalf("no follower in %+v", s)
	}
	return pick
}

// TestPausedFollowerLeavesAndRejoinsISR freezes a follower with SIGSTOP
// under a stream of writes: after replica.lag.time.max.ms it leaves the
// ISR while writes go on (two replicas meet min.insync.replicas=2), and
// after SIGCONT it catches up and rejoins.
func TestPausedFollowerLeavesAndRejoinsISR(t *testing.T) {
	c := Start(t, Options{})
	c.WaitBrokers(t, 3, 60*time.Second)
	const topic = "paused"
	c.CreateTopic(t, topic, 1, 3, 60*time.Second)
	chk := NewChecker()
	w := StartWriters(t, c, chk, topic, 2)
	w.WaitAcked(t, 100, 60*time.Second)

	s := c.WaitISR(t, topic, 0, 3, 30*time.Second)
	f := follower(t, c, s)
	if err := f.Pause(); err != nil {
		t.Fatal(err)
	}
	shrunk := c.WaitPartition(t, topic, 0, 60*time.Second, "the paused follower out of the ISR", func(s PartitionState) bool {
		return s.Leader >= 0 && !slices.Contains(s.ISR, f.ID)
	})
	if len(shrunk.ISR) != 2 {
		t.Fatalf("ISR %v after pausing one follower, want the other two", shrunk.ISR)
	}
	w.WaitAcked(t, 100, 60*time.Second)

	if err := f.Resume(); err != nil {
		t.Fatal(err)
	}
	c.WaitPartition(t, topic, 0, 60*time.Second, "the follower back in the ISR", func(s PartitionState) bool {
		return s.Leader >= 0 && len(s.ISR) == 3
	})
	w.WaitAcked(t, 100, 60*time.Second)
	w.Stop()
	ReadAll(t, c, chk, topic, 60*time.Second)
	if r := chk.Check(); !r.OK() {
		t.Fatalf("anomalies:\n%s", r)
	}
}

// standAlone starts a cluster with proxies and brings a 3-replica
// partition of topic to KIP-966's last replica standing: 200 acks=all
// writes (into chk), then the leader's PLAINTEXT
// listener is cut off by its proxy, so its followers cannot fetch, and
// acks=1 writes sent to it directly leave them behind until the ISR
// shrinks to the leader alone (the controller quorum, on the CONTROLLER
// listeners, is intact). With min.insync.replicas=2 an acks=all write to
// it is then refused, not acknowledged. It returns the cluster, the
// leader, still cut off, and its leader epoch.
func standAlone(t *testing.T, chk *Checker, topic string) (*Cluster, *Node, int32) {
	t.Helper()
	c := Start(t, Options{Proxy: true})
	c.WaitBrokers(t, 3, 60*time.Second)
	c.CreateTopic(t, topic, 1, 3, 60*time.Second)
	w := StartWriters(t, c, chk, topic, 2)
	w.WaitAcked(t, 200, 60*time.Second)
	w.Stop()

	s := c.WaitISR(t, topic, 0, 3, 30*time.Second)
	leader := c.Node(s.Leader)
	leader.Proxy.Cut()

	// Clients that reach the leader behind its cut proxy.
	direct := kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
		if host == leader.Proxy.Addr() {
			host = leader.directAddr()
		}
		var d net.Dialer
		return d.DialContext(ctx, network, host)
	})
	// A follower whose log end equals the leader's counts as caught up
	// (Kafka's rule), so acks=1 writes, which the leader takes alone, make
	// the followers fall behind until the leader drops them.
	one := c.Client(t, direct, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProduceRequestTimeout(3*time.Second), kgo.RecordDeliveryTimeout(8*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := 0; ; i++ {
		v := fmt.Sprintf("acks1-%d", i)
		chk.Attempt(v) // acknowledged by the leader alone: not committed, may go
		one.ProduceSync(ctx, kgo.StringRecord(v))
		st, err := c.Partition(topic, 0)
		if err == nil && st.Leader == leader.ID && len(st.ISR) == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the ISR did not shrink to the leader: %+v, %v", st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// One try, not idempotent, so that the broker's own error comes back.
	all := c.Client(t, direct, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(1),
		kgo.ProduceRequestTimeout(3*time.Second), kgo.RecordDeliveryTimeout(8*time.Second))
	chk.Attempt("alone")
	err := all.ProduceSync(ctx, kgo.StringRecord("alone")).FirstErr()
	if err == nil {
		t.Fatal("an acks=all write was acknowledged with the ISR down to one replica")
	}
	if !errors.Is(err, kerr.NotEnoughReplicas) && !errors.Is(err, kerr.NotEnoughReplicasAfterAppend) {
		t.Fatalf("acks=all write to the last replica standing: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	return c, leader, s.LeaderEpoch
}

// TestLastReplicaStanding: the last replica standing (standAlone) is
// killed uncleanly and restarted: nothing that was acknowledged is lost.
func TestLastReplicaStanding(t *testing.T) {
	const topic = "standing"
	chk := NewChecker()
	c, leader, _ := standAlone(t, chk, topic)

	leader.Kill()
	leader.Proxy.Resume()
	if err := leader.Restart(); err != nil {
		t.Fatal(err)
	}
	c.WaitISR(t, topic, 0, 3, 60*time.Second)
	ReadAllAndCheck(t, c, chk, topic, "after the last replica standing restarted")
}

// TestLastReplicaStandingLosesItsTail is the rest of KIP-966's case: the
// last replica standing is killed and, as after a power failure, loses
// the part of its log the kernel had not yet written (here: the second
// half of the partition's segment, cut before it restarts), which holds
// records acknowledged while all three replicas were in the ISR. The
// followers it dropped are its eligible leader replicas: they hold every
// committed record, so one of them is elected, and the restarted node,
// which registers without a clean-shutdown epoch, may not lead from the
// ELR; it truncates to the new leader and catches up. Electing it, as
// the last ISR member, would make the others truncate to its short log
// and lose acknowledged writes; so would letting it act on the leadership
// the metadata still gives its old incarnation before it registers.
func TestLastReplicaStandingLosesItsTail(t *testing.T) {
	const topic = "tail"
	chk := NewChecker()
	c, leader, epoch := standAlone(t, chk, topic)

	leader.Kill()
	segments, err := filepath.Glob(filepath.Join(leader.Dir, topic+"-0", "*.log"))
	if err != nil || len(segments) != 1 {
		t.Fatalf("segments of %s-0 on node %d: %v, %v", topic, leader.ID, segments, err)
	}
	info, err := os.Stat(segments[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segments[0], info.Size()/2); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %d's segment cut from %d to %d bytes", leader.ID, info.Size(), info.Size()/2)
	leader.Proxy.Resume()
	if err := leader.Restart(); err != nil {
		t.Fatal(err)
	}

	s := c.WaitPartition(t, topic, 0, 60*time.Second, "a new leader", func(s PartitionState) bool {
		return s.Leader >= 0 && s.LeaderEpoch > epoch
	})
	if s.Leader == leader.ID {
		t.Fatalf("node %d, restarted after an unclean shutdown, was elected leader: %+v", leader.ID, s)
	}
	c.WaitISR(t, topic, 0, 3, 60*time.Second)
	ReadAllAndCheck(t, c, chk, topic, "after the last replica standing lost its tail")
}
