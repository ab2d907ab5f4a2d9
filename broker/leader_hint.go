package broker

// KIP-951: a produce or fetch sent to a broker that does not lead the
// partition is answered NOT_LEADER_OR_FOLLOWER with the current leader's
// id and epoch in the partition, and the leader's address among the
// response's node endpoints, so the client moves in one round trip
// without a metadata refresh.

import (
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// imagePartition finds a partition in the cluster image by topic name, or
// by id when byID; nil on a single node or when it does not exist.
func (b *Broker) imagePartition(name string, id [16]byte, byID bool, index int32) *controller.Partition {
	if b.cluster == nil {
		return nil
	}
	img := b.cluster.image()
	if img == nil {
		return nil
	}
	t := img.Topics[name]
	if byID {
		t = img.TopicsByID[id]
	}
	if t == nil || index < 0 || int(index) >= len(t.Partitions) {
		return nil
	}
	return &t.Partitions[index]
}

// leaderPartition finds a partition this broker must lead to answer for
// it: NOT_LEADER_OR_FOLLOWER when another broker leads it,
// UNKNOWN_TOPIC_OR_PARTITION when it does not exist.
func (b *Broker) leaderPartition(t *topic, name string, index int32) (*partition, int16) {
	p, code := b.replicaPartition(t, name, index)
	if code == 0 && !p.isLeader() {
		return nil, errNotLeaderOrFollower
	}
	return p, code
}

// replicaPartition finds a partition this broker holds a replica of,
// leading or following: NOT_LEADER_OR_FOLLOWER when it is hosted only
// elsewhere, UNKNOWN_TOPIC_OR_PARTITION when it does not exist,
// KAFKA_STORAGE_ERROR when its log dir is offline.
func (b *Broker) replicaPartition(t *topic, name string, index int32) (*partition, int16) {
	p := t.partition(index)
	switch {
	case p == nil && b.imagePartition(name, [16]byte{}, false, index) != nil:
		return nil, errNotLeaderOrFollower
	case p == nil:
		return nil, errUnknownTopicOrPartition
	case p.offline():
		return nil, errKafkaStorageError
	}
	return p, 0
}

// leaderHint fills the current leader's id and epoch of a partition this
// node has a replica of.
func (b *Broker) leaderHint(p *partition, id, epoch *int32) {
	st := p.state.Load()
	*id, *epoch = st.leader, st.leaderEpoch
}

// brokerEndpoint is a broker's address on the listener c came in on.
func (b *Broker) brokerEndpoint(c *conn, id int32) (host string, port int32, rack *string, ok bool) {
	if b.cluster == nil || id < 0 {
		return "", 0, nil, false
	}
	img := b.cluster.image()
	if img == nil || img.Brokers[id] == nil {
		return "", 0, nil, false
	}
	br := img.Brokers[id]
	for _, e := range br.Endpoints {
		if e.Listener == c.listener.name {
			if br.Rack != "" {
				r := br.Rack
				rack = &r
			}
			return e.Host, e.Port, rack, true
		}
	}
	return "", 0, nil, false
}

// addProduceEndpoint adds a leader's address to a produce response once.
func (b *Broker) addProduceEndpoint(resp *kmsg.ProduceResponse, c *conn, id int32) {
	for _, e := range resp.Brokers {
		if e.NodeID == id {
			return
		}
	}
	if host, port, rack, ok := b.brokerEndpoint(c, id); ok {
		resp.Brokers = append(resp.Brokers, kmsg.ProduceResponseBroker{NodeID: id, Host: host, Port: port, Rack: rack})
	}
}

// addFetchEndpoint adds a leader's address to a fetch response once.
func (b *Broker) addFetchEndpoint(resp *kmsg.FetchResponse, c *conn, id int32) {
	for _, e := range resp.Brokers {
		if e.NodeID == id {
			return
		}
	}
	if host, port, rack, ok := b.brokerEndpoint(c, id); ok {
		resp.Brokers = append(resp.Brokers, kmsg.FetchResponseBroker{NodeID: id, Host: host, Port: port, Rack: rack})
	}
}
