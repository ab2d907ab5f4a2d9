package broker

import (
	"errors"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetsTopic is Kafka's internal topic of committed offsets and group
// metadata, written by the group coordinator.
const offsetsTopic = "__consumer_offsets"

// adminClientID is the client id allowed to produce to internal topics,
// as in Kafka (AdminUtils.ADMIN_CLIENT_ID).
const adminClientID = "__admin_client"

// groupCoordinator joins the group coordinator to this broker through
// __consumer_offsets, which is the coordinator's Log.
type groupCoordinator struct {
	*coordinatorTopic
	*group.Coordinator
}

func newGroupCoordinator(b *Broker) *groupCoordinator {
	gc := &groupCoordinator{coordinatorTopic: &coordinatorTopic{
		b:                 b,
		name:              offsetsTopic,
		numPartitions:     b.cfg.Groups.NumPartitions,
		replicationFactor: b.cfg.Cluster.OffsetsReplicationFactor,
		configs: map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "producer",
			"segment.bytes":    strconv.FormatInt(b.cfg.OffsetsSegmentBytes, 10),
		},
		notHere:      errNotCoordinator,
		writeTimeout: b.cfg.OffsetsCommitTimeout,
	}}
	gc.load = func(p, _ int32) error { return gc.Load(p) }
	gc.unload = func(p int32) { gc.Unload(p) }
	gc.willLoad = func(p int32) { gc.WillLoad(p) }
	cfg := b.cfg.groupConfig()
	cfg.GroupConfigs = b.groupConfigFor
	gc.Coordinator = group.New(cfg, gc, nil, b.loggers.Logger(groupLoggerName))
	gc.keys = gc.Coordinator
	gc.UseTopics(brokerTopics{b})
	return gc
}

// brokerTopics shows consumer groups the topics: the controller's image in
// a cluster, the topic registry on a single node.
type brokerTopics struct{ b *Broker }

func (t brokerTopics) Topic(name string) ([16]byte, int32, bool) {
	if cl := t.b.cluster; cl != nil {
		img := cl.image()
		if img == nil || img.Topics[name] == nil {
			return [16]byte{}, 0, false
		}
		it := img.Topics[name]
		return it.ID, int32(len(it.Partitions)), true
	}
	tp := t.b.topics.get(name)
	if tp == nil {
		return [16]byte{}, 0, false
	}
	return tp.id, int32(len(tp.partitions())), true
}

// Names lists every topic, internal ones too: Kafka resolves a
// consumer group's regex against all the topics of its metadata image
// (GroupMetadataManager.refreshRegularExpressions), filtered only by the
// member's DESCRIBE rights.
func (t brokerTopics) Names() []string {
	var names []string
	if cl := t.b.cluster; cl != nil {
		if img := cl.image(); img != nil {
			names = img.SortedTopicNames()
		}
	} else {
		for _, tp := range t.b.topics.all() {
			names = append(names, tp.name)
		}
	}
	return names
}

// Append is the group coordinator's write to its partition; it returns
// the batch's base offset.
func (gc *groupCoordinator) Append(p int32, batch []byte) (int64, error) {
	return gc.append(p, batch)
}

// coordinator answers FindCoordinator for a group.
func (gc *groupCoordinator) coordinator(c *conn, groupID string) (int16, int32, string, int32) {
	return gc.coordinatorFor(c, func(n int32) int32 { return group.PartitionFor(groupID, n) })
}

// partitionOf is the __consumer_offsets partition of a group.
func (gc *groupCoordinator) partitionOf(groupID string) int32 {
	return group.PartitionFor(groupID, gc.PartitionCount())
}

// awaitGroupResponse waits for a parked JoinGroup or SyncGroup to be
// answered, or for the connection to close.
func awaitGroupResponse[R kmsg.Response](c *conn, ch <-chan R) (R, error) {
	c.releaseRequestMemory()
	parked := time.Now()
	defer func() { c.waited += time.Since(parked) }()
	select {
	case r := <-ch:
		return r, nil
	case <-c.done:
		var none R
		return none, errors.New("connection closed while a group request was parked")
	}
}
