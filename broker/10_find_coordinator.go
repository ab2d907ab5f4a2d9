package broker

// FindCoordinator, versions 0-6 (batched CoordinatorKeys from v4).
// A group's coordinator is the leader of its __consumer_offsets partition
// and a transactional id's the leader of its __transaction_state
// partition (on a single node, this node), and a share-partition's state's
// the leader of its __share_group_state partition (key type 2, asked by
// brokers, from v6: INVALID_REQUEST before); the first key of each kind
// creates the topic, as in Kafka. From v4 a key's error carries no message,
// as Kafka's answer per key has none, but for the two errors Kafka raises
// for the whole request (an unknown key type, CLUSTER_ACTION refused for
// share keys), whose answer gives each key the error's default message.

import "github.com/twmb/franz-go/pkg/kmsg"

const (
	coordinatorKeyGroup       = 0
	coordinatorKeyTransaction = 1
	coordinatorKeyShare       = 2 // a share-partition's state: "group:topicId:partition"
)

func handleFindCoordinator(b *Broker, c *conn, req *kmsg.FindCoordinatorRequest) (*kmsg.FindCoordinatorResponse, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	answer := func(key string) (int16, int32, string, int32) {
		switch req.CoordinatorType {
		case coordinatorKeyGroup:
			if !c.authorizedGroup(kmsg.ACLOperationDescribe, key) {
				return errGroupAuthorization, -1, "", -1
			}
			return b.groups.coordinator(c, key)
		case coordinatorKeyTransaction:
			if !c.authorizedTxnID(kmsg.ACLOperationDescribe, key) {
				return errTxnIDAuthFailed, -1, "", -1
			}
			return b.txns.coordinator(c, key)
		case coordinatorKeyShare:
			if req.Version < 6 {
				return errInvalidRequest, -1, "", -1
			}
			if !c.authorizedCluster(kmsg.ACLOperationClusterAction) {
				return errClusterAuthorization, -1, "", -1
			}
			return b.shareState.coordinator(c, key)
		}
		return errInvalidRequest, -1, "", -1
	}
	if req.Version >= 4 {
		for _, key := range req.CoordinatorKeys {
			code, node, h, p := answer(key)
			var msg *string
			if code == errClusterAuthorization || code == errInvalidRequest && (req.CoordinatorType < coordinatorKeyGroup || req.CoordinatorType > coordinatorKeyShare) {
				msg = errorMessage(code)
			}
			resp.Coordinators = append(resp.Coordinators, kmsg.FindCoordinatorResponseCoordinator{
				Key: key, NodeID: node, Host: h, Port: p, ErrorCode: code, ErrorMessage: msg,
			})
		}
		return resp, nil
	}
	code, node, h, p := answer(req.CoordinatorKey)
	resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = code, node, h, p
	resp.ErrorMessage = errorMessage(code)
	return resp, nil
}
