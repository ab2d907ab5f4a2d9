package broker

import (
	"context"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/coordinator/txn"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// transactionStateTopic is Kafka's internal topic of transaction states,
// written by the transaction coordinator.
const transactionStateTopic = "__transaction_state"

// txnCoordinator joins the transaction coordinator to this broker:
// __transaction_state is its Log, and it writes the end-transaction
// markers (Markers) into the partitions of each transaction: here, with an
// append to the partition's log, or through WriteTxnMarkers to the
// partition's leader in a cluster.
type txnCoordinator struct {
	*coordinatorTopic
	*txn.Coordinator
	peers *peerClients // to the leaders of partitions in transactions, and to coordinators
}

func newTxnCoordinator(b *Broker) *txnCoordinator {
	tc := &txnCoordinator{coordinatorTopic: &coordinatorTopic{
		b:                 b,
		name:              transactionStateTopic,
		numPartitions:     b.cfg.Transactions.NumPartitions,
		replicationFactor: b.cfg.Cluster.TxnStateReplicationFactor,
		configs: map[string]string{
			"cleanup.policy":                 "compact",
			"compression.type":               "uncompressed",
			"min.insync.replicas":            strconv.FormatInt(b.cfg.TxnStateMinISR, 10),
			"segment.bytes":                  strconv.FormatInt(b.cfg.TxnStateSegmentBytes, 10),
			"unclean.leader.election.enable": "false",
		},
		notHere:      errNotCoordinator,
		writeTimeout: b.cfg.RequestTimeout,
	}, peers: newPeerClients(b, "gregor-txn-markers")}
	tc.load = func(p, leaderEpoch int32) error { return tc.Load(p, leaderEpoch) }
	tc.unload = func(p int32) { tc.Unload(p) }
	tc.Coordinator = txn.New(b.cfg.txnConfig(), tc, tc, b.producerIDs.allocate, nil, b.loggers.Logger(txnLoggerName))
	tc.keys = tc.Coordinator
	return tc
}

// Append is the transaction coordinator's write to its partition.
func (tc *txnCoordinator) Append(p int32, batch []byte) error {
	_, err := tc.append(p, batch)
	return err
}

// coordinator answers FindCoordinator for a transactional id.
func (tc *txnCoordinator) coordinator(c *conn, transactionalID string) (int16, int32, string, int32) {
	return tc.coordinatorFor(c, func(n int32) int32 { return group.PartitionFor(transactionalID, n) })
}

// close stops the coordinator and the clients to other brokers.
func (tc *txnCoordinator) close() {
	tc.Close()
	tc.peers.close()
}

// WriteMarkers writes the end-transaction marker into every partition:
// those led here directly, the others through their leader.
func (tc *txnCoordinator) WriteMarkers(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool, txnVersion int16, partitions []txn.TopicPartition) []int16 {
	b := tc.b
	codes := make([]int16, len(partitions))
	remote := map[int32][]int{}
	m := protocol.EndTxnMarker{Commit: commit, CoordinatorEpoch: coordinatorEpoch}
	for i, tp := range partitions {
		p := b.partitionOf(tp.Topic, tp.Partition)
		switch {
		case p == nil:
			// No replica here: in a cluster, its leader writes the marker.
			codes[i] = errUnknownTopicOrPartition
			if ip := b.imagePartition(tp.Topic, [16]byte{}, false, tp.Partition); ip != nil {
				codes[i] = errNotLeaderOrFollower
				if ip.Leader >= 0 {
					remote[ip.Leader] = append(remote[ip.Leader], i)
				}
			}
		case p.state.Load().leader == p.topic.node:
			codes[i] = b.writeMarker(p, producerID, producerEpoch, m, txnVersion)
		case b.cluster != nil && p.state.Load().leader >= 0:
			leader := p.state.Load().leader
			remote[leader] = append(remote[leader], i)
		default:
			codes[i] = errNotLeaderOrFollower
		}
	}
	for leader, idx := range remote {
		tc.sendMarkers(leader, producerID, producerEpoch, m, txnVersion, partitions, idx, codes)
	}
	return codes
}

// sendMarkers asks another broker to write a marker into the partitions
// partitions[idx] it leads, and records its answers in codes.
func (tc *txnCoordinator) sendMarkers(leader int32, producerID int64, producerEpoch int16, m protocol.EndTxnMarker, txnVersion int16, partitions []txn.TopicPartition, idx []int, codes []int16) {
	fail := func(code int16) {
		for _, i := range idx {
			codes[i] = code
		}
	}
	client := tc.peers.clientFor(leader)
	if client == nil {
		fail(errNotLeaderOrFollower)
		return
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	marker := kmsg.NewWriteTxnMarkersRequestMarker()
	marker.ProducerID, marker.ProducerEpoch, marker.Committed, marker.CoordinatorEpoch = producerID, producerEpoch, m.Commit, m.CoordinatorEpoch
	marker.TransactionVersion = int8(txnVersion) // sent from v2, which the client negotiates
	byTopic := map[string]int{}
	for _, i := range idx {
		tp := partitions[i]
		j, ok := byTopic[tp.Topic]
		if !ok {
			j = len(marker.Topics)
			byTopic[tp.Topic] = j
			marker.Topics = append(marker.Topics, kmsg.WriteTxnMarkersRequestMarkerTopic{Topic: tp.Topic})
		}
		marker.Topics[j].Partitions = append(marker.Topics[j].Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, marker)
	ctx, cancel := context.WithTimeout(context.Background(), tc.b.cfg.RequestTimeout)
	defer cancel()
	resp, err := client.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		tc.b.logger.Warn("writing transaction markers through another broker failed", "broker", leader, "err", err)
		fail(errNotLeaderOrFollower)
		return
	}
	got := map[txn.TopicPartition]int16{}
	for _, rm := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, t := range rm.Topics {
			for _, p := range t.Partitions {
				got[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	for _, i := range idx {
		code, ok := got[partitions[i]]
		if !ok {
			code = errUnknownServerError
		}
		codes[i] = code
	}
}

// writeMarker appends an end-transaction marker to a partition led here
// and returns once every in-sync replica has it (markers are written as
// acks=all, as Kafka does). A marker in __consumer_offsets also ends the
// producer's transactional offset commits in the group coordinator.
func (b *Broker) writeMarker(p *partition, producerID int64, producerEpoch int16, m protocol.EndTxnMarker, txnVersion int16) int16 {
	st := p.state.Load()
	if st.leader != p.topic.node {
		return errNotLeaderOrFollower
	}
	batch := protocol.AppendEndTxnMarker(nil, producerID, producerEpoch, m, time.Now().UnixMilli())
	res, err := p.log.Append(batch, logstore.AppendOptions{LogAppendTime: -1, LeaderEpoch: st.leaderEpoch, MarkerTxnVersion: txnVersion})
	if err != nil {
		return logstore.ErrorCode(err)
	}
	p.appended()
	if err := awaitHighWatermark(p, st, res.LastOffset+1, errNotLeaderOrFollower, b.cfg.RequestTimeout); err != nil {
		return logstore.ErrorCode(err)
	}
	if p.topic.name == offsetsTopic {
		b.groups.CompleteTxn(p.index, producerID, m.Commit)
	}
	return 0
}

// partitionExists reports whether a partition exists, with a replica here
// or, in a cluster, anywhere.
func (b *Broker) partitionExists(topic string, index int32) bool {
	return b.partitionOf(topic, index) != nil || b.imagePartition(topic, [16]byte{}, false, index) != nil
}

// partitionOf is a partition with a replica here, or nil.
func (b *Broker) partitionOf(topic string, index int32) *partition {
	t := b.topics.get(topic)
	if t == nil {
		return nil
	}
	return t.partition(index)
}
