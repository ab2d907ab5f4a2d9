package broker

// Fetching from the closest replica (KIP-392). A consumer's fetch of
// version 11 or later carries its rack (client.rack), and any replica of
// a partition serves it, up to that replica's high watermark, as Kafka's
// brokers do. With replica.selector.class set to Kafka's
// RackAwareReplicaSelector, the leader answers such a fetch from a client
// in another rack without records, naming as preferred read replica the
// most caught-up in-sync follower in the client's rack (one whose log
// holds the fetch offset); the client then fetches from it. Without a
// selector, or with the leader in the client's rack, the leader serves.

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// rackAwareSelector is the one replica.selector.class Gregor serves.
const rackAwareSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

var readReplicaKeys = []configKey{
	{"replica.selector.class", "STRING", "", "The fully qualified class name that implements ReplicaSelector. This is used by the broker to find the preferred read replica. By default, we use an implementation that returns the leader.", func(c *Config, v string) error {
		if v != "" && v != rackAwareSelector {
			return fmt.Errorf("Gregor serves only %s", rackAwareSelector)
		}
		c.Cluster.RackAwareReads = v != ""
		return nil
	}},
}

func init() {
	brokerKeys = append(brokerKeys, readReplicaKeys...)
}

// preferredReadReplica is the follower that should serve a consumer in
// clientRack reading p at fetchOffset, or -1 for the leader (this node).
func (b *Broker) preferredReadReplica(p *partition, clientRack string, fetchOffset int64, now time.Time) int32 {
	if !b.cfg.Cluster.RackAwareReads || clientRack == "" || b.cluster == nil {
		return -1
	}
	img := b.cluster.image()
	if img == nil {
		return -1
	}
	rackOf := func(id int32) string {
		if br := img.Brokers[id]; br != nil {
			return br.Rack
		}
		return ""
	}
	if rackOf(b.cfg.NodeID) == clientRack {
		return -1
	}
	st := p.state.Load()
	type candidate struct {
		id       int32
		leo      int64
		caughtUp time.Duration
	}
	var best *candidate
	p.leader.mu.Lock()
	for id, f := range p.leader.followers {
		if !slices.Contains(st.isr, id) || rackOf(id) != clientRack || f.leo < fetchOffset || f.logStart > fetchOffset {
			continue
		}
		c := candidate{id: id, leo: f.leo, caughtUp: now.Sub(f.lastCaughtUp)}
		if best == nil || cmp.Or(cmp.Compare(c.leo, best.leo), cmp.Compare(best.caughtUp, c.caughtUp), cmp.Compare(c.id, best.id)) > 0 {
			best = &c
		}
	}
	p.leader.mu.Unlock()
	if best == nil {
		return -1
	}
	return best.id
}
