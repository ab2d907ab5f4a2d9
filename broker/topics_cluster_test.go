package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// A registered broker that is down (fenced) still counts towards the
// replication factor, as in Kafka's StripedReplicaPlacer: it is placed as
// a follower (never the leader, not in the ISR) when the unfenced brokers
// are too few, and it takes up those replicas when it comes back.
func TestClusterCreateTopicPlacesOnFencedBrokers(t *testing.T) {
	c := startCluster(t, 3, nil)
	adm := kadm.NewClient(c.client())
	c.stop(2)
	c.waitFor("broker 3 fenced", func() bool {
		img := c.nodes[0].cluster.image()
		return img.Brokers[3] != nil && img.Brokers[3].Fenced
	})
	res, err := adm.CreateTopic(ctxT(t), 3, 3, nil, "while-down")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("RF 3 with one of three brokers down: %v", err)
	}
	for i, p := range c.nodes[0].cluster.image().Topics["while-down"].Partitions {
		if !slices.Contains(p.Replicas, 3) || p.Leader == 3 || slices.Contains(p.ISR, 3) {
			t.Errorf("partition %d: replicas %v, leader %d, ISR %v", i, p.Replicas, p.Leader, p.ISR)
		}
	}
	if err := c.start(2); err != nil {
		t.Fatal(err)
	}
	c.waitFor("broker 3 back in every ISR of the topic", func() bool {
		for _, p := range c.nodes[0].cluster.image().Topics["while-down"].Partitions {
			if !slices.Contains(p.ISR, 3) {
				return false
			}
		}
		return true
	})
	if ps := c.nodes[2].topics.get("while-down").partitions(); len(ps) != 3 || slices.Contains(ps, nil) {
		t.Errorf("broker 3 holds replicas %v, want all three", ps)
	}
}
