package broker

import (
	"context"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/coordinator/share"
	"github.com/gregor-broker/gregor/coordinator/sharestate"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareStateTopic is Kafka's internal topic of share-partition state,
// written by the share coordinator.
const shareStateTopic = "__share_group_state"

// shareStateCoordinator joins the share coordinator (coordinator/sharestate)
// to this broker through __share_group_state, and is how a share-partition's
// leader reads and writes its state: here when this broker leads the
// key's partition of the topic, else over the inter-broker listener, with
// Kafka's requests (InitializeShareGroupState, ReadShareGroupState, ...).
type shareStateCoordinator struct {
	*coordinatorTopic
	*sharestate.Coordinator
	peers *peerClients
}

func newShareStateCoordinator(b *Broker) *shareStateCoordinator {
	sc := &shareStateCoordinator{coordinatorTopic: &coordinatorTopic{
		b:                 b,
		name:              shareStateTopic,
		numPartitions:     b.cfg.ShareStateNumPartitions,
		replicationFactor: b.cfg.Cluster.ShareStateReplicationFactor,
		configs: map[string]string{
			// Only whole snapshots and tombstones are written: the
			// latest record of a key is its state.
			"cleanup.policy":                 "compact",
			"compression.type":               "producer",
			"min.insync.replicas":            strconv.FormatInt(b.cfg.ShareStateMinISR, 10),
			"segment.bytes":                  strconv.FormatInt(b.cfg.ShareStateSegmentBytes, 10),
			"unclean.leader.election.enable": "false",
		},
		notHere:      errNotCoordinator,
		writeTimeout: b.cfg.ShareStateWriteTimeout,
	}, peers: newPeerClients(b, "gregor-share-state")}
	sc.load = func(p, _ int32) error { return sc.Load(p) }
	sc.unload = func(p int32) { sc.Unload(p) }
	sc.Coordinator = sharestate.New(sc, b.cfg.ShareStateNumPartitions, time.Now)
	sc.keys = sc.Coordinator
	return sc
}

// Append is the share coordinator's write to its partition.
func (sc *shareStateCoordinator) Append(p int32, batch []byte) error {
	_, err := sc.append(p, batch)
	return err
}

// coordinator answers FindCoordinator for a share coordinator key
// ("group:topicId:partition").
func (sc *shareStateCoordinator) coordinator(c *conn, key string) (int16, int32, string, int32) {
	return sc.coordinatorFor(c, func(n int32) int32 { return group.PartitionFor(key, n) })
}

func (sc *shareStateCoordinator) close() {
	sc.peers.close()
}

// shareKey names a share-partition: a share group's view of one partition.
type shareKey struct {
	group     string
	topicID   [16]byte
	partition int32
}

// shareStateRetry is how long a call waits for the coordinator of a key
// to be elected and loaded.
const shareStateRetry = 10 * time.Second

// call sends req to the coordinator of k, here or on its broker, and
// returns the response, asking again while the coordinator is moving or
// loading. code extracts the share-partition's error code.
func (sc *shareStateCoordinator) call(k shareKey, req kmsg.Request, local func() kmsg.Response, code func(kmsg.Response) int16) (kmsg.Response, int16) {
	deadline := time.Now().Add(shareStateRetry)
	for backoff := 10 * time.Millisecond; ; backoff = min(2*backoff, 500*time.Millisecond) {
		resp, c := sc.callOnce(k, req, local, code)
		switch c {
		case errNotCoordinator, errCoordinatorNotAvailable, kerr.CoordinatorLoadInProgress.Code, kerr.NetworkException.Code:
			if time.Now().Before(deadline) {
				time.Sleep(backoff)
				continue
			}
		}
		return resp, c
	}
}

func (sc *shareStateCoordinator) callOnce(k shareKey, req kmsg.Request, local func() kmsg.Response, code func(kmsg.Response) int16) (kmsg.Response, int16) {
	if c := sc.ensureTopic(); c != 0 {
		return nil, c
	}
	b := sc.b
	if b.cluster == nil {
		resp := local()
		return resp, code(resp)
	}
	leader := sc.leaderOf(b.cluster.image(), func(n int32) int32 { return sharestate.PartitionFor(k.group, k.topicID, k.partition, n) })
	switch {
	case leader < 0:
		return nil, errCoordinatorNotAvailable
	case leader == b.cfg.NodeID:
		resp := local()
		return resp, code(resp)
	}
	client := sc.peers.clientFor(leader)
	if client == nil {
		return nil, errCoordinatorNotAvailable
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.cfg.RequestTimeout)
	defer cancel()
	resp, err := client.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		b.logger.Warn("share state request failed", "broker", leader, "key", req.Key(), "err", err)
		return nil, kerr.NetworkException.Code
	}
	return resp, code(resp)
}

// sharePersisted is a share-partition's state as its coordinator holds it.
type sharePersisted struct {
	stateEpoch int32
	snapshot   share.Snapshot
	// initialized is false when the start offset is unset (-1): the
	// leader then picks it from share.auto.offset.reset.
	initialized bool
}

// readState reads a share-partition's state for its leader, which
// fences older leaders (leaderEpoch). A share-partition never initialized
// (which the share coordinator refuses to read) is initialized without a
// start offset first, as the group coordinator would have.
func (sc *shareStateCoordinator) readState(k shareKey, leaderEpoch int32) (sharePersisted, int16) {
	p, code := sc.readOnce(k, leaderEpoch)
	if code == errInvalidRequest {
		if code = sc.ensureInitialized(k); code == 0 {
			p, code = sc.readOnce(k, leaderEpoch)
		}
	}
	return p, code
}

// ensureInitialized gives a share-partition without state a state with
// no start offset, which its leader sets from share.auto.offset.reset.
func (sc *shareStateCoordinator) ensureInitialized(k shareKey) int16 {
	sum := sc.summary(k)
	if sum.code != 0 || sum.start >= 0 {
		return sum.code
	}
	return sc.initializeState(k, sum.stateEpoch, -1)
}

func (sc *shareStateCoordinator) readOnce(k shareKey, leaderEpoch int32) (sharePersisted, int16) {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = k.group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = k.topicID
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = k.partition, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	var out kmsg.ReadShareGroupStateResponseTopicPartition
	resp, code := sc.call(k, req, func() kmsg.Response { return sc.Read(req) }, func(r kmsg.Response) int16 {
		var c int16
		out, c = readResult(r.(*kmsg.ReadShareGroupStateResponse))
		return c
	})
	if resp == nil || code != 0 {
		return sharePersisted{}, code
	}
	p := sharePersisted{stateEpoch: out.StateEpoch, initialized: out.StartOffset >= 0}
	p.snapshot.StartOffset = out.StartOffset
	for _, sb := range out.StateBatches {
		p.snapshot.Batches = append(p.snapshot.Batches, share.StateBatch{
			FirstOffset: sb.FirstOffset, LastOffset: sb.LastOffset,
			State: share.RecordState(sb.DeliveryState), DeliveryCount: sb.DeliveryCount,
		})
	}
	return p, 0
}

func readResult(r *kmsg.ReadShareGroupStateResponse) (kmsg.ReadShareGroupStateResponseTopicPartition, int16) {
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			return p, p.ErrorCode
		}
	}
	return kmsg.ReadShareGroupStateResponseTopicPartition{}, errUnknownServerError
}

// writeState stores a share-partition's state: its start offset, every
// in-flight batch, and how many of them are done (for the lag).
func (sc *shareStateCoordinator) writeState(k shareKey, stateEpoch, leaderEpoch int32, snap share.Snapshot, deliveryComplete int) int16 {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.Version = 1
	req.GroupID = k.group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = k.topicID
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = k.partition, stateEpoch, leaderEpoch, snap.StartOffset
	rp.DeliveryCompleteCount = int32(deliveryComplete)
	for _, sb := range snap.Batches {
		rp.StateBatches = append(rp.StateBatches, kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{
			FirstOffset: sb.FirstOffset, LastOffset: sb.LastOffset,
			DeliveryState: int8(sb.State), DeliveryCount: sb.DeliveryCount,
		})
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	_, code := sc.call(k, req, func() kmsg.Response { return sc.Write(req) }, func(r kmsg.Response) int16 {
		for _, t := range r.(*kmsg.WriteShareGroupStateResponse).Topics {
			for _, p := range t.Partitions {
				return p.ErrorCode
			}
		}
		return errUnknownServerError
	})
	return code
}

// initializeState sets a share-partition's start offset with a new state
// epoch and no in-flight records (AlterShareGroupOffsets).
func (sc *shareStateCoordinator) initializeState(k shareKey, stateEpoch int32, start int64) int16 {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = k.group
	rt := kmsg.NewInitializeShareGroupStateRequestTopic()
	rt.TopicID = k.topicID
	rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.StartOffset = k.partition, stateEpoch, start
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	_, code := sc.call(k, req, func() kmsg.Response { return sc.Initialize(req) }, func(r kmsg.Response) int16 {
		for _, t := range r.(*kmsg.InitializeShareGroupStateResponse).Topics {
			for _, p := range t.Partitions {
				return p.ErrorCode
			}
		}
		return errUnknownServerError
	})
	return code
}

// deleteState removes a share-partition's state.
func (sc *shareStateCoordinator) deleteState(k shareKey) int16 {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = k.group
	rt := kmsg.NewDeleteShareGroupStateRequestTopic()
	rt.TopicID = k.topicID
	rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	rp.Partition = k.partition
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	_, code := sc.call(k, req, func() kmsg.Response { return sc.Delete(req) }, func(r kmsg.Response) int16 {
		for _, t := range r.(*kmsg.DeleteShareGroupStateResponse).Topics {
			for _, p := range t.Partitions {
				return p.ErrorCode
			}
		}
		return errUnknownServerError
	})
	return code
}

// shareSummary is what ReadShareGroupStateSummary tells of a
// share-partition.
type shareSummary struct {
	stateEpoch       int32
	leaderEpoch      int32 // the leader's that last read or wrote it; -1 after a reset
	start            int64 // -1 when not initialized
	deliveryComplete int32 // records beyond start acknowledged or archived
	code             int16
}

// summary reads a share-partition's state epoch and start offset, for
// DescribeShareGroupOffsets and AlterShareGroupOffsets.
func (sc *shareStateCoordinator) summary(k shareKey) shareSummary {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.Version = 1
	req.GroupID = k.group
	rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	rt.TopicID = k.topicID
	rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = k.partition, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	out := shareSummary{start: -1, leaderEpoch: -1}
	_, out.code = sc.call(k, req, func() kmsg.Response { return sc.ReadSummary(req) }, func(r kmsg.Response) int16 {
		for _, t := range r.(*kmsg.ReadShareGroupStateSummaryResponse).Topics {
			for _, p := range t.Partitions {
				out.stateEpoch, out.leaderEpoch, out.start, out.deliveryComplete = p.StateEpoch, p.LeaderEpoch, p.StartOffset, p.DeliveryCompleteCount
				return p.ErrorCode
			}
		}
		return errUnknownServerError
	})
	return out
}
