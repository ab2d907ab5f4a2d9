// Package features is the table of cluster features (KIP-584) Gregor
// finalizes, and UpdateFeatures' rules for changing their levels, shared
// by a single node (which stores the levels in its metadata file) and the
// cluster controller (which stores them as metadata records).
//
// A feature's finalized level is what ApiVersions lists and what the
// clients and the broker act on; level 0 means off, and is left out of
// ApiVersions' finalized list, as Kafka leaves it out. Stored levels are
// only those an operator set: a feature never set is at its default, the
// level Kafka 4.1 finalizes for a new cluster.
//
// UpdateFeatures follows Kafka's FeatureControlManager: every update of a
// request must pass or none is applied (the top-level error then names
// the first failure and v0-1 list no results); a level above the supported
// range, or below 0, is INVALID_UPDATE_VERSION; a lower level needs the
// safe or unsafe downgrade type (v0: AllowDowngrade), a higher one the
// upgrade type.
package features

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Names of the features Gregor serves.
const (
	// TransactionVersion 2 is transactions V2 (KIP-890 part 2): clients
	// that see it finalized use EndTxn v5 and let the coordinator bump the
	// epoch at every transaction's end; below 2 they use V1.
	TransactionVersion = "transaction.version"
	// ELRVersion 1 makes the cluster controller keep eligible leader
	// replicas (KIP-966); 0 elects from the ISR alone, as before Kafka 4.
	ELRVersion = "eligible.leader.replicas.version"
	// GroupVersion 1 enables the consumer group protocol (KIP-848:
	// ConsumerGroupHeartbeat and ConsumerGroupDescribe); at 0 they answer
	// UNSUPPORTED_VERSION, as in Kafka, and only classic groups are served.
	GroupVersion = "group.version"
	// KRaftVersion 1 is a dynamic controller quorum (KIP-853): one that
	// kafka-storage format --initial-controllers set up, whose voters
	// AddRaftVoter and RemoveRaftVoter change. 0 is a static quorum, the
	// voters of controller.quorum.voters, which they refuse as Kafka
	// does. A quorum's level is set at its first start and never changes
	// (Kafka 4.1 can upgrade a static quorum; Gregor cannot).
	KRaftVersion = "kraft.version"
	// ShareVersion 1 enables share groups (KIP-932: ShareGroupHeartbeat,
	// ShareFetch, ...); at 0 they answer UNSUPPORTED_VERSION, as in Kafka.
	// Kafka 4.2 finalizes it at 1 in a new cluster.
	ShareVersion = "share.version"
	// StreamsVersion 1 enables streams groups (KIP-1071:
	// StreamsGroupHeartbeat and StreamsGroupDescribe); at 0 they answer
	// UNSUPPORTED_VERSION, as in Kafka. Kafka 4.2 finalizes it at 1 in a
	// new cluster.
	StreamsVersion = "streams.version"
)

// Feature is one feature: levels 0 to Max are supported, Default is the
// level of a cluster that never changed it.
type Feature struct {
	Name        string
	Max         int16
	Default     int16
	ClusterOnly bool // only a cluster serves it (a single node has no controller)
	Fixed       bool // UpdateFeatures cannot change its level
}

var all = []Feature{
	{Name: ELRVersion, Max: 1, Default: 1, ClusterOnly: true},
	{Name: GroupVersion, Max: 1, Default: 1},
	{Name: KRaftVersion, Max: 1, Default: 0, ClusterOnly: true, Fixed: true},
	{Name: ShareVersion, Max: 1, Default: 1},
	{Name: StreamsVersion, Max: 1, Default: 1},
	{Name: TransactionVersion, Max: 2, Default: 2},
}

// Served returns the features a node serves, in name order.
func Served(cluster bool) []Feature {
	var out []Feature
	for _, f := range all {
		if cluster || !f.ClusterOnly {
			out = append(out, f)
		}
	}
	return out
}

// Level is the finalized level of name given the stored levels.
func Level(stored map[string]int16, name string) int16 {
	if v, ok := stored[name]; ok {
		return v
	}
	for _, f := range all {
		if f.Name == name {
			return f.Default
		}
	}
	return 0
}

// Upgrade types of UpdateFeatures v1+.
const (
	upgrade         = 1
	safeDowngrade   = 2
	unsafeDowngrade = 3
)

// Update applies req's updates to the stored levels, checked as Kafka
// checks them, and returns the new stored levels (a new map), or the
// top-level error code and message of the refusal.
func Update(req *kmsg.UpdateFeaturesRequest, stored map[string]int16, cluster bool) (map[string]int16, int16, string) {
	next := maps.Clone(stored)
	if next == nil {
		next = map[string]int16{}
	}
	for _, u := range req.FeatureUpdates {
		typ := u.UpgradeType
		if req.Version == 0 {
			typ = upgrade
			if u.AllowDowngrade {
				typ = safeDowngrade
			}
		}
		if msg := check(u.Feature, u.MaxVersionLevel, typ, Level(next, u.Feature), cluster); msg != "" {
			return stored, kerr.InvalidUpdateVersion.Code,
				fmt.Sprintf("The update failed for all features since the following feature had an error: "+
					"Invalid update version %d for feature %s. %s", u.MaxVersionLevel, u.Feature, msg)
		}
		next[u.Feature] = u.MaxVersionLevel
	}
	return next, 0, ""
}

// check returns why feature may not go to level from current, or "".
func check(feature string, level int16, typ int8, current int16, cluster bool) string {
	if typ < upgrade || typ > unsafeDowngrade {
		return "The controller does not support the given upgrade type."
	}
	if level < 0 {
		return "A feature version cannot be less than 0."
	}
	served := Served(cluster)
	i := slices.IndexFunc(served, func(f Feature) bool { return f.Name == feature })
	if i < 0 {
		return "This node does not support this feature."
	}
	if max := served[i].Max; level > max {
		return fmt.Sprintf("This node only supports versions 0-%d.", max)
	}
	if served[i].Fixed && level != current {
		return "A quorum's kraft.version is set when it first starts: 1 when kafka-storage format --initial-controllers named its voters, 0 for controller.quorum.voters."
	}
	switch {
	case level < current && typ == upgrade:
		return "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
	case level > current && typ != upgrade:
		return "Can't downgrade to a newer version."
	}
	return ""
}

// Response is UpdateFeatures' answer: the error of Update, or success
// with, before v2, one result per feature.
func Response(req *kmsg.UpdateFeaturesRequest, code int16, msg string) *kmsg.UpdateFeaturesResponse {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	if code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		return resp
	}
	if req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			resp.Results = append(resp.Results, kmsg.UpdateFeaturesResponseResult{Feature: u.Feature})
		}
	}
	return resp
}

// APIVersions fills ApiVersions v3+'s feature lists from the stored levels:
// every served feature as supported, those above level 0 as finalized.
func APIVersions(resp *kmsg.ApiVersionsResponse, stored map[string]int16, epoch int64, cluster bool) {
	resp.FinalizedFeaturesEpoch = epoch
	for _, f := range Served(cluster) {
		resp.SupportedFeatures = append(resp.SupportedFeatures,
			kmsg.ApiVersionsResponseSupportedFeature{Name: f.Name, MinVersion: 0, MaxVersion: f.Max})
		if l := Level(stored, f.Name); l > 0 {
			resp.FinalizedFeatures = append(resp.FinalizedFeatures,
				kmsg.ApiVersionsResponseFinalizedFeature{Name: f.Name, MinVersionLevel: l, MaxVersionLevel: l})
		}
	}
}
