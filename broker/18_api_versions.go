package broker

// ApiVersions, versions 0-5. The response lists the handler registry.
// A version above 5 (or below 0) is answered in the v0 layout with
// UNSUPPORTED_VERSION by the connection itself (KIP-511), before any
// decoding. From v3 the
// client software name and version must match Kafka's pattern, else
// INVALID_REQUEST.
//
// From v5 (KIP-1242, Kafka 4.4) a client names the cluster and node it
// means to reach, both or neither (else INVALID_REQUEST); on a client
// listener, a cluster id or node id that is not this node's answers
// REBOOTSTRAP_REQUIRED, so that a client whose address now leads to
// another node or cluster looks again from its bootstrap servers. As in
// Kafka's ControllerApis, the CONTROLLER listener checks only the pairing.
//
// From v3 the answer also lists the cluster's features (KIP-584, package
// internal/features): transaction.version, finalized at 2 as in a cluster
// made by Kafka 4, so that clients that know it run transactions V2
// (EndTxn v5, produce v12, TxnOffsetCommit v5); and in a cluster
// eligible.leader.replicas.version, finalized at 1 as Kafka 4.1 does for a
// new cluster: the controller keeps KIP-966's eligible leader replicas;
// and in a cluster kraft.version, finalized at 1 for a quorum formatted
// with --initial-controllers, whose voters can change (KIP-853).
// UpdateFeatures changes the others; the epoch is the metadata offset in a
// cluster and the number of updates on a single node. As in Kafka, a v3
// answer leaves out the supported features whose range starts at 0 (all
// but metadata.version), which older clients cannot read.

import (
	"regexp"
	"slices"

	"github.com/gregor-broker/gregor/internal/features"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// softwareNameRE is the pattern of KIP-511's client software fields.
var softwareNameRE = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func handleApiVersions(b *Broker, c *conn, req *kmsg.ApiVersionsRequest) (*kmsg.ApiVersionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 5 && (req.ClusterID == nil) != (req.NodeID == -1) {
		resp.ErrorCode = errInvalidRequest
		return resp, nil
	}
	if req.Version >= 3 && (!softwareNameRE.MatchString(req.ClientSoftwareName) || !softwareNameRE.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = errInvalidRequest
		return resp, nil
	}
	if req.Version >= 5 && req.ClusterID != nil && !c.onControllerListener() && (*req.ClusterID != b.ClusterID() || req.NodeID != b.cfg.NodeID) {
		resp.ErrorCode = errRebootstrapRequired
		return resp, nil
	}
	if c.auth != nil {
		c.auth.versionsAnswered = true // SASL: the next must be the handshake
	}
	resp.ApiKeys = advertisedKeys(c.handlers())
	if req.Version >= 3 {
		stored, epoch := b.featureLevels()
		features.APIVersions(resp, stored, epoch, b.cluster != nil)
	}
	if req.Version < 4 {
		omitFeaturesSupportedFromZero(resp)
	}
	return resp, nil
}

// omitFeaturesSupportedFromZero drops the supported features whose range
// starts at level 0 from a v3 answer, as Kafka's ApiVersionsResponse does
// (KAFKA-17492): older Java clients refuse such a range (3.5 to 3.7 in
// every connection's ApiVersions, admin clients up to 3.2 in
// describeFeatures). v4 (3.9+) takes it.
func omitFeaturesSupportedFromZero(resp *kmsg.ApiVersionsResponse) {
	resp.SupportedFeatures = slices.DeleteFunc(resp.SupportedFeatures, func(f kmsg.ApiVersionsResponseSupportedFeature) bool {
		return f.MinVersion == 0
	})
}

// featureLevels are the stored feature levels and their epoch: the
// metadata image's in a cluster, the metadata file's on a single node.
func (b *Broker) featureLevels() (map[string]int16, int64) {
	if b.cluster != nil {
		if img := b.cluster.image(); img != nil {
			return img.Features, int64(img.Offset)
		}
		return nil, 0
	}
	return b.meta.features()
}
