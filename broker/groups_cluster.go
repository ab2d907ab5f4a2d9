package broker

import (
	"context"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// In a cluster a group's coordinator is the leader of its
// __consumer_offsets partition: the broker that becomes leader loads the
// partition's groups (once its high watermark covers everything the
// previous leader wrote), and one that loses leadership unloads them.
// Writes wait until the ISR holds them.

// commitTimeout bounds how long a coordinator write waits for the ISR.
const commitTimeout = 10 * time.Second

// awaitCommitted waits until the partition's high watermark reaches end,
// or fails when leadership moves or the timeout passes.
func (gc *groupCoordinator) awaitCommitted(p *partition, st *replicaState, end int64) error {
	if p.log.HighWatermark() >= end {
		return nil
	}
	w := newWaiter()
	p.addWaiter(w)
	defer p.removeWaiter(w)
	timer := time.NewTimer(commitTimeout)
	defer timer.Stop()
	for p.log.HighWatermark() < end {
		if cur := p.state.Load(); cur.leader != p.topic.node || cur.leaderEpoch != st.leaderEpoch {
			return &logstore.Error{Code: errNotCoordinator, Msg: "leadership of the group's partition moved"}
		}
		select {
		case <-w.ch:
		case <-timer.C:
			return &logstore.Error{Code: errRequestTimedOut, Msg: "the group's write was not replicated in time"}
		}
	}
	return nil
}

// partitionLed loads the groups of a __consumer_offsets partition this
// node now leads, once its high watermark reaches the log end offset it
// had when it became leader.
func (gc *groupCoordinator) partitionLed(p *partition) {
	if p.topic.name != offsetsTopic {
		return
	}
	st := p.state.Load()
	end := p.log.LogEndOffset()
	gc.b.wg.Add(1)
	go func() {
		defer gc.b.wg.Done()
		for p.log.HighWatermark() < end {
			if cur := p.state.Load(); cur.leaderEpoch != st.leaderEpoch {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := gc.Load(p.index); err != nil {
			gc.b.logger.Error("loading group coordinator partition failed", "partition", p.index, "err", err)
		}
	}()
}

// partitionLost unloads the groups of a partition led elsewhere now.
func (gc *groupCoordinator) partitionLost(p *partition) {
	if p.topic.name == offsetsTopic {
		gc.Unload(p.index)
	}
}

// ensureClusterTopic creates __consumer_offsets through the controller
// with offsets.topic.replication.factor replicas.
func (gc *groupCoordinator) ensureClusterTopic() int16 {
	b := gc.b
	if img := b.cluster.image(); img != nil && img.Topics[offsetsTopic] != nil {
		return 0
	}
	gc.ensureMu.Lock()
	defer gc.ensureMu.Unlock()
	req := newest(kmsg.NewPtrCreateTopicsRequest())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = offsetsTopic
	rt.NumPartitions = b.cfg.Groups.NumPartitions
	rt.ReplicationFactor = b.cfg.Cluster.OffsetsReplicationFactor
	for k, v := range map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "producer",
		"segment.bytes":    strconv.FormatInt(b.cfg.OffsetsSegmentBytes, 10),
	} {
		rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: kmsg.StringPtr(v)})
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := b.cluster.client.Send(ctx, req)
	if err != nil {
		b.logger.Warn("creating "+offsetsTopic+" failed", "err", err)
		return errCoordinatorNotAvailable
	}
	for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
		if t.ErrorCode != 0 && t.ErrorCode != errTopicAlreadyExists {
			b.logger.Warn("creating "+offsetsTopic+" refused", "error", errorMessageText(t.ErrorCode))
			return errCoordinatorNotAvailable
		}
	}
	return 0
}

// clusterCoordinator answers FindCoordinator for a group in a cluster: the
// leader of the group's __consumer_offsets partition.
func (b *Broker) clusterCoordinator(c *conn, groupID string) (int16, int32, string, int32) {
	if code := b.groups.ensureTopic(); code != 0 {
		return code, -1, "", -1
	}
	img := b.cluster.image()
	t := img.Topics[offsetsTopic]
	if t == nil {
		return errCoordinatorNotAvailable, -1, "", -1
	}
	p := group.PartitionFor(groupID, int32(len(t.Partitions)))
	leader := t.Partitions[p].Leader
	host, port, _, ok := b.brokerEndpoint(c, leader)
	if !ok {
		return errCoordinatorNotAvailable, -1, "", -1
	}
	return 0, leader, host, port
}
