package clustertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestTimeout bounds one request to one node, so that a paused or cut
// node costs a poll round, not the test.
const requestTimeout = 3 * time.Second

// Eventually calls cond every 100 ms until it returns nil, and fails the
// test with cond's last error when timeout passes first. Conditions that
// take over a second are logged with their duration, to show where a
// scenario spends its time.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := cond()
		if err == nil {
			if d := time.Since(start); d > time.Second {
				t.Logf("%s: after %v", what, d.Round(10*time.Millisecond))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Metadata asks node n for the brokers, the controller and the given
// topics (all topics when none are named).
func (n *Node) Metadata(topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	if len(topics) > 0 {
		for _, name := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := n.Request(req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// Metadata asks the running brokers whose proxy is not cut in turn and
// returns the first answer.
func (c *Cluster) Metadata(topics ...string) (*kmsg.MetadataResponse, error) {
	err := errors.New("no node is running and reachable")
	for _, n := range c.Running() {
		if n.Proxy != nil && n.Proxy.IsCut() || !n.broker() {
			continue
		}
		var resp *kmsg.MetadataResponse
		if resp, err = n.Metadata(topics...); err == nil {
			return resp, nil
		}
	}
	return nil, err
}

// QuorumLeader waits until a running controller names the leader of the
// metadata quorum (DescribeQuorum on its CONTROLLER listener), and
// returns that node's id.
func (c *Cluster) QuorumLeader(t testing.TB, timeout time.Duration) int32 {
	t.Helper()
	leader := int32(-1)
	Eventually(t, timeout, "a quorum leader", func() error {
		err := errors.New("no controller is running")
		for _, n := range c.Running() {
			if !n.hasRole(rolesController) {
				continue
			}
			req := kmsg.NewPtrDescribeQuorumRequest()
			topic := kmsg.NewDescribeQuorumRequestTopic()
			topic.Topic = controller.MetadataTopic
			topic.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
			req.Topics = append(req.Topics, topic)
			var resp kmsg.Response
			if resp, err = n.ControllerRequest(req); err != nil {
				continue
			}
			for _, topic := range resp.(*kmsg.DescribeQuorumResponse).Topics {
				for _, p := range topic.Partitions {
					if p.LeaderID >= 0 && c.Node(p.LeaderID).State() == StateRunning {
						leader = p.LeaderID
						return nil
					}
				}
			}
			err = fmt.Errorf("node %d knows no running leader", n.ID)
		}
		return err
	})
	return leader
}

// PartitionState is a partition as one node's metadata describes it.
type PartitionState struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
}

// Partition returns the state of one partition from a running node.
func (c *Cluster) Partition(topic string, partition int32) (PartitionState, error) {
	resp, err := c.Metadata(topic)
	if err != nil {
		return PartitionState{}, err
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return PartitionState{}, fmt.Errorf("topic %s: %w", topic, err)
		}
		for _, p := range t.Partitions {
			if p.Partition == partition {
				return PartitionState{p.Leader, p.LeaderEpoch, sorted(p.Replicas), sorted(p.ISR)}, nil
			}
		}
	}
	return PartitionState{}, fmt.Errorf("%s/%d not in metadata", topic, partition)
}

func sorted(ids []int32) []int32 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}

// WaitBrokers waits until a running node's metadata lists want live
// brokers and a controller.
func (c *Cluster) WaitBrokers(t testing.TB, want int, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, fmt.Sprintf("%d brokers registered", want), func() error {
		resp, err := c.Metadata()
		if err != nil {
			return err
		}
		if len(resp.Brokers) != want || resp.ControllerID < 0 {
			return fmt.Errorf("%d brokers, controller %d", len(resp.Brokers), resp.ControllerID)
		}
		return nil
	})
}

// WaitPartition waits until ok accepts the partition's state and returns
// that state.
func (c *Cluster) WaitPartition(t testing.TB, topic string, partition int32, timeout time.Duration,
	what string, ok func(PartitionState) bool) PartitionState {
	t.Helper()
	var got PartitionState
	Eventually(t, timeout, fmt.Sprintf("%s/%d: %s", topic, partition, what), func() error {
		s, err := c.Partition(topic, partition)
		if err != nil {
			return err
		}
		if !ok(s) {
			return fmt.Errorf("state %+v", s)
		}
		got = s
		return nil
	})
	return got
}

// WaitISR waits until the partition has a leader and exactly want
// replicas in its ISR.
func (c *Cluster) WaitISR(t testing.TB, topic string, partition int32, want int, timeout time.Duration) PartitionState {
	t.Helper()
	return c.WaitPartition(t, topic, partition, timeout, fmt.Sprintf("leader and %d in ISR", want),
		func(s PartitionState) bool { return s.Leader >= 0 && len(s.ISR) == want })
}

// Controller returns the controller id a running node reports.
func (c *Cluster) Controller(t testing.TB, timeout time.Duration) int32 {
	t.Helper()
	var id int32
	Eventually(t, timeout, "a controller", func() error {
		resp, err := c.Metadata()
		if err != nil {
			return err
		}
		if resp.ControllerID < 0 {
			return errors.New("no controller reported")
		}
		id = resp.ControllerID
		return nil
	})
	return id
}

// Client returns a franz-go client seeded with every node, closed when
// the test ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// CreateTopic creates a topic through any node, retrying while the
// cluster settles, and waits until every running node agrees on every
// partition's leader and sees a full ISR, so that a scenario starts from
// a settled cluster. (TestWritesRightAfterCreateTopic covers writes that
// do not wait.)
func (c *Cluster) CreateTopic(t testing.TB, topic string, partitions int32, rf int16, timeout time.Duration) {
	t.Helper()
	adm := kadm.NewClient(c.Client(t))
	Eventually(t, timeout, "create topic "+topic, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		resp, err := adm.CreateTopic(ctx, partitions, rf, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			return nil // an earlier attempt that timed out went through
		}
		return err
	})
	c.WaitAgreed(t, topic, partitions, int(rf), timeout)
}

// WaitAgreed waits until every running broker reachable by clients has
// registered in its current process and reports the same leader and
// leader epoch for each of the topic's partitions, with isr replicas in
// sync.
func (c *Cluster) WaitAgreed(t testing.TB, topic string, partitions int32, isr int, timeout time.Duration) {
	t.Helper()
	Eventually(t, timeout, fmt.Sprintf("all nodes agree on %s's leaders, ISR of %d", topic, isr), func() error {
		var first map[int32]PartitionState
		for _, n := range c.Running() {
			if n.Proxy != nil && n.Proxy.IsCut() || !n.broker() {
				continue
			}
			if !n.Registered() {
				return fmt.Errorf("node %d has not registered since it started", n.ID)
			}
			resp, err := n.Metadata(topic)
			if err != nil {
				return fmt.Errorf("node %d: %w", n.ID, err)
			}
			states := map[int32]PartitionState{}
			for _, rt := range resp.Topics {
				if rt.Topic == nil || *rt.Topic != topic || rt.ErrorCode != 0 {
					continue
				}
				for _, rp := range rt.Partitions {
					states[rp.Partition] = PartitionState{rp.Leader, rp.LeaderEpoch, sorted(rp.Replicas), sorted(rp.ISR)}
				}
			}
			for p := int32(0); p < partitions; p++ {
				s, ok := states[p]
				if !ok || s.Leader < 0 || len(s.ISR) != isr {
					return fmt.Errorf("node %d sees %s/%d as %+v", n.ID, topic, p, s)
				}
				if first != nil && (first[p].Leader != s.Leader || first[p].LeaderEpoch != s.LeaderEpoch) {
					return fmt.Errorf("node %d sees %s/%d as %+v, another node as %+v", n.ID, topic, p, s, first[p])
				}
			}
			if first == nil {
				first = states
			}
		}
		if first == nil {
			return errors.New("no node is running and reachable")
		}
		return nil
	})
}
