package clustertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestControllerKilled kills the active controller: another node is
// elected, partitions the dead node led get new leaders, and topics can
// still be created and written; the node then rejoins.
func TestControllerKilled(t *testing.T) {
	c := Start(t, Options{})
	c.WaitBrokers(t, 3, 60*time.Second)
	c.CreateTopic(t, "before", 3, 3, 60*time.Second)

	old := c.Controller(t, 30*time.Second)
	c.Node(old).Kill()
	Eventually(t, 60*time.Second, "a new controller", func() error {
		resp, err := c.Metadata()
		if err != nil {
			return err
		}
		if resp.ControllerID < 0 || resp.ControllerID == old {
			return fmt.Errorf("controller %d", resp.ControllerID)
		}
		return nil
	})
	c.WaitBrokers(t, 2, 60*time.Second) // the dead node is fenced
	for p := int32(0); p < 3; p++ {
		c.WaitPartition(t, "before", p, 60*time.Second, "a live leader", func(s PartitionState) bool {
			return s.Leader >= 0 && s.Leader != old
		})
	}

	c.CreateTopic(t, "after", 3, 2, 60*time.Second)
	cl := c.Client(t, append(ProducerOpts(), kgo.DefaultProduceTopic("after"))...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("a%d", i))).FirstErr(); err != nil {
			t.Fatalf("write to a topic created after the failover: %v", err)
		}
	}

	if err := c.Node(old).Restart(); err != nil {
		t.Fatal(err)
	}
	c.WaitBrokers(t, 3, 60*time.Second)
	c.CreateTopic(t, "rejoined", 1, 3, 60*time.Second)
}

// groupMember consumes a topic in a consumer group and remembers every
// value it saw.
type groupMember struct {
	mu   sync.Mutex
	seen map[string]bool
}

func startMember(t *testing.T, c *Cluster, group, topic string) *groupMember {
	m := &groupMember{seen: map[string]bool{}}
	cl := c.Client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(500*time.Millisecond),
		kgo.FetchMaxWait(500*time.Millisecond), kgo.SessionTimeout(10*time.Second),
		kgo.HeartbeatInterval(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				m.mu.Lock()
				m.seen[string(r.Value)] = true
				m.mu.Unlock()
			})
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return m
}

func (m *groupMember) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.seen)
}

func (m *groupMember) has(v string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen[v]
}

// committed sums a group's committed offsets. Each call uses a new client,
// which looks the coordinator up afresh.
func committed(c *Cluster, group string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err == nil {
		err = offs.Error()
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	return sum, err
}

// TestGroupCoordinatorFailover kills the coordinator of a consumer group
// while it consumes a stream: another node takes the group over (loading
// it from the replicated __consumer_offsets), committed offsets survive
// and keep advancing, a new member joins through the new coordinator, and
// every acknowledged write is consumed by the group.
func TestGroupCoordinatorFailover(t *testing.T) {
	c := Start(t, Options{})
	c.WaitBrokers(t, 3, 60*time.Second)
	const topic, group = "grp", "g"
	c.CreateTopic(t, topic, 3, 3, 60*time.Second)
	chk := NewChecker()
	w := StartWriters(t, c, chk, topic, 1)
	m1 := startMember(t, c, group, topic)
	Eventually(t, 60*time.Second, "the group consuming", func() error {
		if n := m1.count(); n < 100 {
			return fmt.Errorf("%d consumed", n)
		}
		return nil
	})

	adm := kadm.NewClient(c.Client(t))
	coordinator := func() (int32, error) {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		r, ok := adm.FindGroupCoordinators(ctx, group)[group]
		if !ok {
			return -1, errors.New("no answer")
		}
		return r.NodeID, r.Err
	}
	var old int32
	var before int64
	Eventually(t, 30*time.Second, "the coordinator and a commit", func() error {
		var err error
		if old, err = coordinator(); err != nil {
			return err
		}
		if before, err = committed(c, group); err == nil && before == 0 {
			err = errors.New("nothing committed yet")
		}
		return err
	})
	c.Node(old).Kill()
	Eventually(t, 60*time.Second, "a new coordinator", func() error {
		id, err := coordinator()
		if err == nil && id == old {
			err = fmt.Errorf("still node %d", id)
		}
		return err
	})
	Eventually(t, 60*time.Second, "commits past the failover", func() error {
		now, err := committed(c, group)
		if err == nil && now <= before {
			err = fmt.Errorf("committed %d, %d before the failover", now, before)
		}
		return err
	})

	m2 := startMember(t, c, group, topic)
	Eventually(t, 60*time.Second, "a member joined after the failover consuming", func() error {
		if m2.count() == 0 {
			return errors.New("nothing consumed by the new member")
		}
		return nil
	})
	w.Stop()
	acked := chk.AckedValues()
	Eventually(t, 60*time.Second, "every acknowledged write consumed by the group", func() error {
		missing := 0
		for _, v := range acked {
			if !m1.has(v) && !m2.has(v) {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d not consumed", missing, len(acked))
		}
		return nil
	})
	if err := c.Node(old).Restart(); err != nil {
		t.Fatal(err)
	}
	c.WaitBrokers(t, 3, 60*time.Second)
}
