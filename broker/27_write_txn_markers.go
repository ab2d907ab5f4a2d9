package broker

// WriteTxnMarkers, versions 1-2: a transaction coordinator on another
// broker asks this one to write end-transaction markers into partitions it
// leads (CLUSTER_ACTION, or every partition is refused, as in Kafka). v2
// carries each marker's transaction.version (KIP-1228): a transactions V2
// marker's epoch must be above the producer's, and one at it with no
// transaction open is a retry, answered as written
// (logstore.AppendOptions.MarkerTxnVersion).

import (
	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleWriteTxnMarkers(b *Broker, c *conn, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	// As Kafka: ALTER on the cluster, or CLUSTER_ACTION.
	allowed := c.authorizedClusterProbe(kmsg.ACLOperationAlter) ||
		c.authorizedCluster(kmsg.ACLOperationClusterAction)
	for _, m := range req.Markers {
		rm := kmsg.WriteTxnMarkersResponseMarker{ProducerID: m.ProducerID}
		marker := protocol.EndTxnMarker{Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch}
		for _, t := range m.Topics {
			rt := kmsg.WriteTxnMarkersResponseMarkerTopic{Topic: t.Topic}
			for _, idx := range t.Partitions {
				code := errUnknownTopicOrPartition
				if !allowed {
					code = errClusterAuthorization
				} else if p := b.partitionOf(t.Topic, idx); p != nil {
					code = b.writeMarker(p, m.ProducerID, m.ProducerEpoch, marker, int16(m.TransactionVersion))
				}
				rt.Partitions = append(rt.Partitions, kmsg.WriteTxnMarkersResponseMarkerTopicPartition{Partition: idx, ErrorCode: code})
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}
