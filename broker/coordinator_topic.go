package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// coordinatorTopic is an internal topic a coordinator keeps its state in
// (__consumer_offsets for groups, __transaction_state for transactions),
// as Kafka does: it is created on first need (the first FindCoordinator),
// its partitions are loaded by whoever leads them (every partition on a
// single node), and it is the coordinator's log: appends go through the
// partition's log and return once the high watermark passes them.
type coordinatorTopic struct {
	b                 *Broker
	name              string
	numPartitions     int32 // configured: what the topic is created with
	replicationFactor int16 // in a cluster
	configs           map[string]string
	load              func(partition, leaderEpoch int32) error
	unload            func(partition int32)
	// willLoad, when set, marks a partition about to be loaded, so that
	// its keys answer as loading until load has run
	willLoad func(partition int32)
	// what a partition not led here is answered
	notHere int16
	// how long an append waits for the ISR before REQUEST_TIMED_OUT
	writeTimeout time.Duration

	ensureMu sync.Mutex // serialises the topic's creation

	// keys is the coordinator's count of partitions it maps keys to,
	// taken from the topic of id countOf
	keys    partitionCounter
	countMu sync.Mutex
	countOf [16]byte
}

// partitionCounter is a coordinator's count of the topic's partitions it
// maps keys to.
type partitionCounter interface {
	PartitionCount() int32
	SetPartitionCount(n int32) error
}

// start loads the partitions of an existing topic in the background on a
// single node; its keys answer COORDINATOR_LOAD_IN_PROGRESS meanwhile.
func (ct *coordinatorTopic) start() {
	t := ct.b.topics.get(ct.name)
	if t == nil {
		return
	}
	ct.takeCount(t.id, int32(len(t.partitions())))
	ct.markLoading(t)
	ct.b.wg.Add(1)
	go func() {
		defer ct.b.wg.Done()
		ct.loadAll(t)
	}()
}

// markLoading marks every partition of the topic as loading before the
// first is loaded, as Kafka's runtime schedules all their loads at once.
func (ct *coordinatorTopic) markLoading(t *topic) {
	if ct.willLoad == nil {
		return
	}
	for i := range t.partitions() {
		ct.willLoad(int32(i))
	}
}

// takeCount makes the coordinator map keys to the n partitions topic id
// has when this process first sees it, before any of them is loaded: as
// in Kafka, whose coordinators take an existing topic's count at start,
// the configured count (offsets.topic.num.partitions, ...) only creates
// the topic, and a count changed later (partitions added) counts from the
// next start. A topic of the name made again (another id) brings its own.
func (ct *coordinatorTopic) takeCount(id [16]byte, n int32) {
	ct.countMu.Lock()
	defer ct.countMu.Unlock()
	if ct.countOf == id {
		return
	}
	ct.countOf = id
	if n == ct.keys.PartitionCount() {
		return
	}
	if err := ct.keys.SetPartitionCount(n); err != nil {
		ct.b.logger.Error("the coordinator cannot take the topic's partition count", "topic", ct.name, "partitions", n, "err", err)
		return
	}
	ct.b.logger.Warn("the topic's partition count differs from the configured one; keys map to the topic's, as it was created",
		"topic", ct.name, "partitions", n, "configured", ct.numPartitions)
}

// deleted unloads the partitions of the coordinator's deleted topic, as
// Kafka's coordinators resign them: their keys are gone with it.
func (ct *coordinatorTopic) deleted(t *topic) {
	if t.name != ct.name {
		return
	}
	for i := range t.partitions() {
		ct.unload(int32(i))
	}
}

// coordinatorTopics are the internal topics of the coordinators (none
// before they start).
func (b *Broker) coordinatorTopics() []*coordinatorTopic {
	if b.groups == nil || b.txns == nil || b.shareState == nil {
		return nil
	}
	return []*coordinatorTopic{b.groups.coordinatorTopic, b.txns.coordinatorTopic, b.shareState.coordinatorTopic}
}

// coordinatorTopicNamed is the coordinator topic of that name, or nil.
func (b *Broker) coordinatorTopicNamed(name string) *coordinatorTopic {
	for _, ct := range b.coordinatorTopics() {
		if ct.name == name {
			return ct
		}
	}
	return nil
}

// leaderOf is the node leading the partition a key maps to in the image
// (partitionFor maps it, given the coordinator's count), or -1.
func (ct *coordinatorTopic) leaderOf(img *controller.Image, partitionFor func(n int32) int32) int32 {
	if img == nil || img.Topics[ct.name] == nil {
		return -1
	}
	parts := img.Topics[ct.name].Partitions
	p := partitionFor(ct.keys.PartitionCount())
	if p < 0 || int(p) >= len(parts) {
		return -1
	}
	return parts[p].Leader
}

func (ct *coordinatorTopic) loadAll(t *topic) {
	ct.markLoading(t)
	for i, p := range t.partitions() {
		if err := ct.load(int32(i), p.state.Load().leaderEpoch); err != nil {
			ct.b.logger.Error("loading coordinator partition failed", "topic", ct.name, "partition", i, "err", err)
		}
	}
}

// ensureTopic creates the topic if it does not exist yet and, on a single
// node, loads it. It returns a Kafka error code: 0, or COORDINATOR_NOT_AVAILABLE.
func (ct *coordinatorTopic) ensureTopic() int16 {
	if ct.b.cluster != nil {
		return ct.ensureClusterTopic()
	}
	if ct.b.topics.get(ct.name) != nil {
		return 0
	}
	ct.ensureMu.Lock()
	defer ct.ensureMu.Unlock()
	if ct.b.topics.get(ct.name) != nil {
		return 0
	}
	t, err := ct.b.topics.create(ct.name, ct.numPartitions, ct.configs, false)
	if err != nil {
		ct.b.logger.Error("creating "+ct.name+" failed", "err", err)
		return errCoordinatorNotAvailable
	}
	ct.created(t)
	return 0
}

// created makes the coordinator take a topic of its name just created on
// a single node, by ensureTopic or by a client's CreateTopics (which Kafka
// allows): it maps keys to the topic's partitions and loads them.
func (ct *coordinatorTopic) created(t *topic) {
	if t.name != ct.name || ct.b.cluster != nil {
		return
	}
	ct.takeCount(t.id, int32(len(t.partitions())))
	ct.loadAll(t)
}

// ensureClusterTopic creates the topic through the controller.
func (ct *coordinatorTopic) ensureClusterTopic() int16 {
	b := ct.b
	if img := b.cluster.image(); img != nil && img.Topics[ct.name] != nil {
		return 0
	}
	ct.ensureMu.Lock()
	defer ct.ensureMu.Unlock()
	req := newest(kmsg.NewPtrCreateTopicsRequest())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = ct.name
	rt.NumPartitions = ct.numPartitions
	rt.ReplicationFactor = ct.replicationFactor
	for k, v := range ct.configs {
		rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: kmsg.StringPtr(v)})
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := b.cluster.client.Send(ctx, req)
	if err != nil {
		b.logger.Warn("creating "+ct.name+" failed", "err", err)
		return errCoordinatorNotAvailable
	}
	for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
		if t.ErrorCode != 0 && t.ErrorCode != errTopicAlreadyExists {
			b.logger.Warn("creating "+ct.name+" refused", "error", errorMessageText(t.ErrorCode))
			return errCoordinatorNotAvailable
		}
	}
	return 0
}

// coordinatorFor answers FindCoordinator for a key living in partition p
// (partitionFor maps the key, given the partition count): this node on a
// single node, the partition's leader in a cluster.
func (ct *coordinatorTopic) coordinatorFor(c *conn, partitionFor func(n int32) int32) (int16, int32, string, int32) {
	if code := ct.ensureTopic(); code != 0 {
		return code, -1, "", -1
	}
	b := ct.b
	if b.cluster == nil {
		host, port := b.advertisedAddr(c)
		return 0, b.cfg.NodeID, host, int32(port)
	}
	leader := ct.leaderOf(b.cluster.image(), partitionFor)
	host, port, _, ok := b.brokerEndpoint(c, leader)
	if !ok {
		return errCoordinatorNotAvailable, -1, "", -1
	}
	return 0, leader, host, port
}

func (ct *coordinatorTopic) partition(p int32) (*partition, error) {
	t := ct.b.topics.get(ct.name)
	if t == nil {
		return nil, &logstore.Error{Code: ct.notHere, Msg: ct.name + " has no replica here"}
	}
	if pt := t.partition(p); pt != nil {
		return pt, nil
	}
	return nil, &logstore.Error{Code: errUnknownTopicOrPartition, Msg: fmt.Sprintf("%s-%d does not exist", ct.name, p)}
}

// append writes the coordinator's batch to its partition and returns its
// base offset once the high watermark passes it: at once on a single
// node, when the ISR holds it in a cluster.
func (ct *coordinatorTopic) append(p int32, batch []byte) (int64, error) {
	pt, err := ct.partition(p)
	if err != nil {
		return -1, err
	}
	st := pt.state.Load()
	if st.leader != pt.topic.node {
		return -1, &logstore.Error{Code: ct.notHere, Msg: fmt.Sprintf("%s-%d is led by another broker", ct.name, p)}
	}
	res, err := pt.log.Append(batch, logstore.AppendOptions{LogAppendTime: -1, LeaderEpoch: st.leaderEpoch})
	if err != nil {
		return -1, err
	}
	pt.appended()
	return res.BaseOffset, awaitHighWatermark(pt, st, res.LastOffset+1, ct.notHere, ct.writeTimeout)
}

// Replay reads the partition from its start to its high watermark.
func (ct *coordinatorTopic) Replay(p int32, fn func([]byte) error) error {
	pt, err := ct.partition(p)
	if err != nil {
		return err
	}
	return pt.log.ReplayCommitted(fn)
}

// awaitHighWatermark waits until the partition's high watermark reaches
// end, or fails: with notLeader when leadership moves, with
// REQUEST_TIMED_OUT when timeout passes.
func awaitHighWatermark(p *partition, st *replicaState, end int64, notLeader int16, timeout time.Duration) error {
	if p.log.HighWatermark() >= end {
		return nil
	}
	w := newWaiter()
	p.addWaiter(w)
	defer p.removeWaiter(w)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for p.log.HighWatermark() < end {
		if cur := p.state.Load(); cur.leader != p.topic.node || cur.leaderEpoch != st.leaderEpoch {
			return &logstore.Error{Code: notLeader, Msg: fmt.Sprintf("leadership of %s-%d moved", p.topic.name, p.index)}
		}
		select {
		case <-w.ch:
		case <-timer.C:
			return &logstore.Error{Code: errRequestTimedOut, Msg: "the write was not replicated in time"}
		}
	}
	return nil
}

// partitionLed loads a partition this node now leads, once its high
// watermark reaches the log end offset it had when it became leader.
func (ct *coordinatorTopic) partitionLed(p *partition) {
	if p.topic.name != ct.name {
		return
	}
	st := p.state.Load()
	end := p.log.LogEndOffset()
	if ct.willLoad != nil {
		ct.willLoad(p.index)
	}
	ct.b.wg.Add(1)
	go func() {
		defer ct.b.wg.Done()
		for p.log.HighWatermark() < end {
			if cur := p.state.Load(); cur.leaderEpoch != st.leaderEpoch {
				return
			}
			select {
			case <-ct.b.cluster.stop: // shutting down before it caught up
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		if err := ct.load(p.index, st.leaderEpoch); err != nil {
			ct.b.logger.Error("loading coordinator partition failed", "topic", ct.name, "partition", p.index, "err", err)
		}
	}()
}

// partitionLost unloads a partition led elsewhere now.
func (ct *coordinatorTopic) partitionLost(p *partition) {
	if p.topic.name == ct.name {
		ct.unload(p.index)
	}
}
