package broker

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetsTopic is Kafka's internal topic of committed offsets and group
// metadata, written by the group coordinator.
const offsetsTopic = "__consumer_offsets"

// adminClientID is the client id allowed to produce to internal topics,
// as in Kafka (AdminUtils.ADMIN_CLIENT_ID).
const adminClientID = "__admin_client"

// groupCoordinator joins the group coordinator to this broker: it creates
// __consumer_offsets on first need (as Kafka does, on the first
// FindCoordinator for a group), loads its partitions, and is the
// coordinator's Log over them. A single node coordinates every group.
type groupCoordinator struct {
	b *Broker
	*group.Coordinator

	ensureMu sync.Mutex // serialises the topic's creation
}

func newGroupCoordinator(b *Broker) *groupCoordinator {
	gc := &groupCoordinator{b: b}
	gc.Coordinator = group.New(b.cfg.groupConfig(), gc, nil, b.logger)
	return gc
}

// start loads the partitions of an existing __consumer_offsets in the
// background; their groups answer COORDINATOR_LOAD_IN_PROGRESS meanwhile.
func (gc *groupCoordinator) start() {
	t := gc.b.topics.get(offsetsTopic)
	if t == nil {
		return
	}
	if err := gc.checkPartitionCount(t); err != nil {
		gc.b.logger.Error("group coordinator not started", "err", err)
		return
	}
	gc.b.wg.Add(1)
	go func() {
		defer gc.b.wg.Done()
		gc.loadAll(t)
	}()
}

func (gc *groupCoordinator) checkPartitionCount(t *topic) error {
	if n := len(t.partitions()); n != int(gc.b.cfg.Groups.NumPartitions) {
		return fmt.Errorf("%s has %d partitions but offsets.topic.num.partitions is %d; it must not change after deployment",
			offsetsTopic, n, gc.b.cfg.Groups.NumPartitions)
	}
	return nil
}

func (gc *groupCoordinator) loadAll(t *topic) {
	for i := range t.partitions() {
		if err := gc.Load(int32(i)); err != nil {
			gc.b.logger.Error("loading group coordinator partition failed", "partition", i, "err", err)
		}
	}
}

// ensureTopic creates __consumer_offsets if it does not exist yet and
// loads it. It returns a Kafka error code: 0, or COORDINATOR_NOT_AVAILABLE.
func (gc *groupCoordinator) ensureTopic() int16 {
	if gc.b.cluster != nil {
		return gc.ensureClusterTopic()
	}
	if gc.b.topics.get(offsetsTopic) != nil {
		return 0
	}
	gc.ensureMu.Lock()
	defer gc.ensureMu.Unlock()
	if gc.b.topics.get(offsetsTopic) != nil {
		return 0
	}
	configs := map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "producer",
		"segment.bytes":    strconv.FormatInt(gc.b.cfg.OffsetsSegmentBytes, 10),
	}
	t, err := gc.b.topics.create(offsetsTopic, gc.b.cfg.Groups.NumPartitions, configs, false)
	if err != nil {
		gc.b.logger.Error("creating "+offsetsTopic+" failed", "err", err)
		return kerr.CoordinatorNotAvailable.Code
	}
	gc.loadAll(t)
	return 0
}

func (gc *groupCoordinator) partition(p int32) (*partition, error) {
	t := gc.b.topics.get(offsetsTopic)
	if t == nil {
		return nil, &logstore.Error{Code: errNotCoordinator, Msg: offsetsTopic + " has no replica here"}
	}
	if pt := t.partition(p); pt != nil {
		return pt, nil
	}
	return nil, &logstore.Error{Code: errUnknownTopicOrPartition, Msg: fmt.Sprintf("%s-%d does not exist", offsetsTopic, p)}
}

// Append writes the coordinator's batch to its partition and returns, with
// the batch's base offset, once the high watermark passes it: at once on a
// single node, when the ISR holds it in a cluster.
func (gc *groupCoordinator) Append(p int32, batch []byte) (int64, error) {
	pt, err := gc.partition(p)
	if err != nil {
		return 0, err
	}
	st := pt.state.Load()
	if st.leader != pt.topic.node {
		return 0, &logstore.Error{Code: errNotCoordinator, Msg: fmt.Sprintf("%s-%d is led by another broker", offsetsTopic, p)}
	}
	res, err := pt.log.Append(batch, logstore.AppendOptions{LogAppendTime: -1, LeaderEpoch: st.leaderEpoch})
	if err != nil {
		return 0, err
	}
	pt.appended()
	return res.BaseOffset, gc.awaitCommitted(pt, st, res.LastOffset+1)
}

// Replay reads the partition from its start to its high watermark.
func (gc *groupCoordinator) Replay(p int32, fn func([]byte) error) error {
	pt, err := gc.partition(p)
	if err != nil {
		return err
	}
	hw := pt.log.HighWatermark()
	for off := pt.log.LogStartOffset(); off < hw; {
		res, err := pt.log.Read(off, 1<<20, hw)
		if err != nil {
			var le *logstore.Error
			if errors.As(err, &le) && le.Code == errOffsetOutOfRange {
				// Retention or cleaning moved the start: go on from there.
				off = pt.log.LogStartOffset()
				continue
			}
			return err
		}
		if len(res.Records) == 0 || res.NextOffset <= off {
			return nil
		}
		if err := fn(res.Records); err != nil {
			return err
		}
		off = res.NextOffset
	}
	return nil
}

// awaitGroupResponse waits for a parked JoinGroup or SyncGroup to be
// answered, or for the connection to close.
func awaitGroupResponse[R kmsg.Response](c *conn, ch <-chan R) (R, error) {
	select {
	case r := <-ch:
		return r, nil
	case <-c.done:
		var none R
		return none, errors.New("connection closed while a group request was parked")
	}
}
