package clustertest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestLeaderKill9UnderWrites streams acks=all idempotent writes while the
// leader of partition 0 is killed with SIGKILL and later restarted: a new
// leader is elected from the ISR, writes go on, the ISR heals to three,
// and the full read finds nothing lost, duplicated or reordered.
func TestLeaderKill9UnderWrites(t *testing.T) {
	const topic = "stream"
	c, chk, w := startWriting(t, Options{}, topic)
	victim := killLeader(t, c, topic, 0)
	w.WaitAcked(t, 300, 60*time.Second) // two replicas still meet min.insync.replicas=2

	if err := victim.Restart(); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		c.WaitISR(t, topic, p, 3, 60*time.Second)
	}
	w.WaitAcked(t, 300, 60*time.Second)
	w.Stop()

	ReadAllAndCheck(t, c, chk, topic, "after a leader kill")
}

// startWriting starts a cluster with three brokers, creates topic (three
// partitions of three replicas) and starts three writers on it, which it
// waits to have 300 writes acknowledged.
func startWriting(t *testing.T, opts Options, topic string) (*Cluster, *Checker, *Writers) {
	t.Helper()
	c := Start(t, opts)
	c.WaitBrokers(t, 3, 60*time.Second)
	c.CreateTopic(t, topic, 3, 3, 60*time.Second)
	chk := NewChecker()
	w := StartWriters(t, c, chk, topic, 3)
	w.WaitAcked(t, 300, 60*time.Second)
	return c, chk, w
}

// killLeader waits until the partition's ISR holds all three replicas,
// kills its leader with SIGKILL, and waits for a new leader, which must
// come from that ISR.
func killLeader(t *testing.T, c *Cluster, topic string, partition int32) *Node {
	t.Helper()
	before := c.WaitISR(t, topic, partition, 3, 30*time.Second)
	victim := c.Node(before.Leader)
	victim.Kill()
	after := c.WaitPartition(t, topic, partition, 30*time.Second, "a new leader from the ISR", func(s PartitionState) bool {
		return s.Leader >= 0 && s.Leader != victim.ID && s.LeaderEpoch > before.LeaderEpoch
	})
	if !slices.Contains(before.ISR, after.Leader) {
		t.Fatalf("new leader %d was not in the ISR %v", after.Leader, before.ISR)
	}
	return victim
}

// TestWritesRightAfterCreateTopic starts writing as soon as CreateTopics
// has answered, while the brokers are still learning the new partitions
// from the controller: a broker that does not (yet) lead a partition must
// not acknowledge writes to it, so nothing acknowledged may be lost.
func TestWritesRightAfterCreateTopic(t *testing.T) {
	c := Start(t, Options{})
	c.WaitBrokers(t, 3, 60*time.Second)
	const topic = "fresh"
	adm := kadm.NewClient(c.Client(t))
	Eventually(t, 60*time.Second, "create topic "+topic, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		resp, err := adm.CreateTopic(ctx, 3, 3, nil, topic)
		if err == nil {
			err = resp.Err
		}
		return err
	})
	chk := NewChecker()
	w := StartWriters(t, c, chk, topic, 3)
	w.WaitAcked(t, 500, 60*time.Second)
	w.Stop()
	c.WaitAgreed(t, topic, 3, 3, 60*time.Second)
	ReadAllAndCheck(t, c, chk, topic, "in writes right after topic creation")
}
