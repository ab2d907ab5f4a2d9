package broker

// InitializeShareGroupState (83), ReadShareGroupState (84),
// WriteShareGroupState (85, v0-1), DeleteShareGroupState (86) and
// ReadShareGroupStateSummary (87, v0-1): the share coordinator's API,
// which share-partition leaders and the group coordinator call on the
// leader of a key's __share_group_state partition (share_state.go), served
// by coordinator/sharestate. They are inter-broker requests: CLUSTER_ACTION
// on the cluster is needed, else every share-partition is answered
// CLUSTER_AUTHORIZATION_FAILED, as in Kafka.

import (
	"github.com/gregor-broker/gregor/coordinator/sharestate"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareStateHandler serves one of the share coordinator's requests with
// serve, a method of sharestate.Coordinator.
func shareStateHandler[Req kmsg.Request, Resp kmsg.Response](serve func(*sharestate.Coordinator, Req) Resp) handlerFunc {
	return typed(func(b *Broker, c *conn, req Req) (Resp, error) {
		if !c.authorizedCluster(kmsg.ACLOperationClusterAction) {
			return serve(sharestate.Refusing(errClusterAuthorization), req), nil
		}
		return serve(b.shareState.Coordinator, req), nil
	})
}
