package broker

// ApiVersions, versions 0-4. The response lists the handler registry.
// A version above 4 is answered in the v0 layout with UNSUPPORTED_VERSION
// by the connection itself (KIP-511), before any decoding. From v3 the
// client software name and version must match Kafka's pattern, else
// INVALID_REQUEST.
//
// From v3 the answer also lists the cluster's features (KIP-584):
// transaction.version, supported 0-2 and finalized at 2, as in a cluster
// made by Kafka 4, so that clients that know it run transactions V2
// (EndTxn v5, produce v12, TxnOffsetCommit v5); and in a cluster
// eligible.leader.replicas.version 1, as Kafka 4.1 finalizes for a new
// cluster: the controller keeps KIP-966's eligible leader replicas
// (coordinator/controller, elect.go). Gregor's features never change, so
// their epoch is always 0.

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// softwareNameRE is the pattern of KIP-511's client software fields.
var softwareNameRE = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func handleApiVersions(b *Broker, c *conn, req *kmsg.ApiVersionsRequest) (*kmsg.ApiVersionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!softwareNameRE.MatchString(req.ClientSoftwareName) || !softwareNameRE.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = errInvalidRequest
		return resp, nil
	}
	resp.ApiKeys = advertisedKeys(c.handlers())
	if req.Version >= 3 {
		resp.SupportedFeatures = []kmsg.ApiVersionsResponseSupportedFeature{
			{Name: transactionVersionFeature, MinVersion: 0, MaxVersion: transactionVersion}}
		resp.FinalizedFeaturesEpoch = 0
		resp.FinalizedFeatures = []kmsg.ApiVersionsResponseFinalizedFeature{
			{Name: transactionVersionFeature, MinVersionLevel: transactionVersion, MaxVersionLevel: transactionVersion}}
		if b.cluster != nil {
			resp.SupportedFeatures = append(resp.SupportedFeatures, kmsg.ApiVersionsResponseSupportedFeature{
				Name: elrVersionFeature, MinVersion: 0, MaxVersion: elrVersion})
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, kmsg.ApiVersionsResponseFinalizedFeature{
				Name: elrVersionFeature, MinVersionLevel: elrVersion, MaxVersionLevel: elrVersion})
		}
	}
	return resp, nil
}

// transactionVersion is the level of the transaction.version feature
// Gregor finalizes: 2, transactions V2.
const (
	transactionVersionFeature = "transaction.version"
	transactionVersion        = 2
)

// elrVersion is the level of eligible.leader.replicas.version a cluster
// finalizes: 1, the controller keeps eligible leader replicas.
const (
	elrVersionFeature = "eligible.leader.replicas.version"
	elrVersion        = 1
)
