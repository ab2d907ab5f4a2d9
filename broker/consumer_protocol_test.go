package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumerProtocolProps lets consumer-protocol members heartbeat every
// 200 ms, so that reconciliation takes a few heartbeats of a test.
var consumerProtocolProps = map[string]string{
	"group.consumer.heartbeat.interval.ms":     "200",
	"group.consumer.min.heartbeat.interval.ms": "200",
}

// waitConsumerStable waits until ConsumerGroupDescribe reports the group
// Stable with these members, and the clients own every partition once.
func waitConsumerStable(t *testing.T, adm *kadm.Client, group string, members []*groupConsumer, partitions int) kadm.DescribedConsumerGroup {
	t.Helper()
	var dg kadm.DescribedConsumerGroup
	waitUntil(t, "a stable consumer group", 30*time.Second, func() bool {
		described, err := adm.DescribeConsumerGroups(context.Background(), group)
		if err != nil {
			return false
		}
		dg = described[group]
		if dg.Err != nil || dg.State != "Stable" || len(dg.Members) != len(members) {
			return false
		}
		owned := map[int32]int{}
		for _, m := range members {
			for _, p := range m.partitions() {
				owned[p]++
			}
		}
		for p := int32(0); p < int32(partitions); p++ {
			if owned[p] != 1 {
				return false
			}
		}
		return true
	})
	return dg
}

// A group of franz-go members using the consumer protocol (KIP-848)
// consumes every record once, hands partitions over when members come and
// go, and commits offsets that leave no lag.
func TestConsumerProtocolGroup(t *testing.T) {
	const partitions = 6
	b := startBroker(t, consumerProtocolProps)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), partitions, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	producer := newClient(t, b, kgo.DefaultProduceTopic("t"))
	seen := newSeenRecords()
	opts := []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer())}
	c1 := startConsumer(t, b, "c1", "g", seen, opts...)
	c2 := startConsumer(t, b, "c2", "g", seen, opts...)
	c3 := startConsumer(t, b, "c3", "g", seen, opts...)
	dg := waitConsumerStable(t, adm, "g", []*groupConsumer{c1, c2, c3}, partitions)
	if dg.AssignorName != "uniform" || dg.Epoch < 3 || dg.AssignmentEpoch != dg.Epoch {
		t.Errorf("described group: assignor %q, epoch %d, assignment epoch %d", dg.AssignorName, dg.Epoch, dg.AssignmentEpoch)
	}
	for _, m := range dg.Members {
		if n := len(m.Assignment["t"]); n != 2 {
			t.Errorf("member %s (%s) has %d partitions, want 2 of 6", m.MemberID, m.ClientID, n)
		}
	}

	produceValues(t, producer, 0, 3000)
	waitUntil(t, "3000 records consumed", 30*time.Second, func() bool { return seen.distinct() == 3000 })
	seen.mu.Lock()
	for v, n := range seen.counts {
		if n != 1 {
			t.Errorf("record %s consumed %d times in a stable group", v, n)
		}
	}
	seen.mu.Unlock()

	c4 := startConsumer(t, b, "c4", "g", seen, opts...)
	produceValues(t, producer, 3000, 4000)
	c1.stop()
	produceValues(t, producer, 4000, 6000)
	waitConsumerStable(t, adm, "g", []*groupConsumer{c2, c3, c4}, partitions)
	waitUntil(t, "6000 records consumed", 30*time.Second, func() bool { return seen.distinct() == 6000 })

	for _, c := range []*groupConsumer{c2, c3, c4} {
		c.stop()
	}
	// kadm's Lag describes with DescribeGroups, which (as in Kafka) knows
	// only classic groups: compare the commits with the end offsets.
	committed, err := adm.FetchOffsets(ctxT(t), "g")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctxT(t), "t")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < partitions; p++ {
		c, ok := committed.Lookup("t", p)
		e, _ := ends.Lookup("t", p)
		if !ok || c.At != e.Offset || e.Offset <= 0 {
			t.Errorf("partition %d: committed %d (found %v), end offset %d", p, c.At, ok, e.Offset)
		}
	}
	listed, err := adm.ListGroups(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if lg := listed["g"]; lg.State != "Empty" || lg.ProtocolType != "consumer" {
		t.Errorf("listed group: %+v", lg)
	}
}
