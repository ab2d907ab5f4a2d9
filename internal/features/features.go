// Package features is the table of cluster features (KIP-584) Gregor
// finalizes, and UpdateFeatures' rules for changing their levels, shared
// by a single node (which stores the levels in its metadata file) and the
// cluster controller (which stores them as metadata records).
//
// A feature's finalized level is what ApiVersions lists and what the
// clients and the broker act on; level 0 means off, and is left out of
// ApiVersions' finalized list, as Kafka leaves it out. Stored levels are
// only those an operator set: a feature never set is at its default, the
// level Kafka 4.2 finalizes for a new cluster.
//
// A single node serves the same features as a cluster: it is a quorum of
// one, as kafka-storage format --standalone makes (kraft.version 1), and
// with every partition on one replica its eligible leader replicas are
// always empty, as in a one-broker Kafka.
//
// UpdateFeatures follows Kafka's FeatureControlManager: every update of a
// request must pass or none is applied (the top-level error then names
// the first failure and v0-1 list no results); a level outside the
// supported range, or below 0, is INVALID_UPDATE_VERSION, and so is any
// update of an unknown feature, even disabling it (its range is level 0
// alone, but Kafka's controller then fails to find it); a lower
// level needs the safe or unsafe downgrade type (v0: AllowDowngrade), a
// higher one the upgrade type; metadata.version may only go down across
// levels that changed no metadata record.
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
	// does. A static quorum is upgraded to 1 as in Kafka 4.1, once every
	// voter has told the leader its directory id (the cluster controller
	// checks that: coordinator/controller/kraft_upgrade.go); it never goes
	// back to 0. A single node is at 1, as a Kafka node formatted
	// --standalone.
	KRaftVersion = "kraft.version"
	// ShareVersion 1 enables share groups (KIP-932: ShareGroupHeartbeat,
	// ShareFetch, ...); at 0 they answer UNSUPPORTED_VERSION, as in Kafka.
	// Kafka 4.2 finalizes it at 1 in a new cluster. 2 (Kafka 4.4, from
	// 4.4-IV0) adds dead-letter queues (KIP-1191): a share group's rejected
	// records, and those that reached the delivery limit, are written to
	// the group's DLQ topic (broker/share_dlq.go).
	ShareVersion = "share.version"
	// MetadataVersion is the cluster's metadata format as a Kafka release
	// names it: level 7 is 3.3-IV3, 27 is 4.1-IV1, 29 is 4.2-IV1, the
	// level Kafka 4.2 formats a new cluster at (and Gregor too). Gregor's own metadata does
	// not depend on it; it is served so that kafka-features upgrade
	// --metadata or --release-version, the last step of Kafka's upgrade
	// instructions, works and describe shows it, with Kafka's rules for
	// changing it. Levels 28 and 29 (4.2-IV0, 4.2-IV1) gate nothing a
	// client sees (Kafka's MetadataVersion: only the ListOffsets version
	// its brokers send each other); 30 (4.3-IV0) gates cordoned log dirs
	// (KIP-1066, CordonedLogDirs), and changed metadata records: a
	// cluster upgraded to it does not come back below. 31 (4.4-IV0) gates
	// nothing itself (it is where Kafka's --release-version turns
	// share.version 2 on); 32 (4.4-IV1) gates CIDR hosts in ACLs (acl/cidr.go), 33
	// (4.4-IV2, Kafka 4.4's newest) UnregisterController; both changed
	// metadata records too.
	MetadataVersion = "metadata.version"
	// StreamsVersion 1 enables streams groups (KIP-1071:
	// StreamsGroupHeartbeat and StreamsGroupDescribe); at 0 they answer
	// UNSUPPORTED_VERSION, as in Kafka. Kafka 4.2 finalizes it at 1 in a
	// new cluster.
	StreamsVersion = "streams.version"
)

// Levels of metadata.version that gate a feature.
const (
	// CordonedLogDirs is the level from which cordoned.log.dirs takes
	// effect and may be changed (4.3-IV0).
	CordonedLogDirs int16 = 30
	// CIDRACLs is the level from which an ACL's host may be a CIDR range
	// (4.4-IV1).
	CIDRACLs int16 = 32
	// ControllerUnregistration is the level from which UnregisterController
	// may remove a controller's registration (4.4-IV2).
	ControllerUnregistration int16 = 33
)

// Feature is one feature: levels Min to Max are supported, Default is
// the level of a cluster that never changed it.
type Feature struct {
	Name        string
	Min, Max    int16
	Default     int16
	NoDowngrade bool // once raised, never lowered
}

// served are the features Gregor serves, in name order (kafka-features
// describe lists them so).
var served = []Feature{
	{Name: ELRVersion, Max: 1, Default: 1},
	{Name: GroupVersion, Max: 1, Default: 1},
	{Name: KRaftVersion, Max: 1, Default: 0, NoDowngrade: true},
	{Name: MetadataVersion, Min: 7, Max: 33, Default: 29},
	{Name: ShareVersion, Max: 2, Default: 1},
	{Name: StreamsVersion, Max: 1, Default: 1},
	{Name: TransactionVersion, Max: 2, Default: 2},
}

// metadataChanged are the metadata.version levels that changed metadata
// records (Kafka's MetadataVersion.didMetadataChange): a downgrade across
// one of them could drop what it added, and is refused.
var metadataChanged = []int16{7, 8, 11, 13, 14, 15, 17, 23, 30, 32, 33}

// Level is the finalized level of name given the stored levels.
func Level(stored map[string]int16, name string) int16 {
	if v, ok := stored[name]; ok {
		return v
	}
	f, _ := feature(name)
	return f.Default
}

// levels are the stored levels of a node: a single node's kraft.version
// is that of a quorum of one formatted --standalone.
func levels(stored map[string]int16, cluster bool) map[string]int16 {
	if _, ok := stored[KRaftVersion]; ok || cluster {
		return stored
	}
	out := maps.Clone(stored)
	if out == nil {
		out = map[string]int16{}
	}
	out[KRaftVersion] = 1
	return out
}

// Upgrade types of UpdateFeatures v1+.
const (
	upgrade         = 1
	safeDowngrade   = 2
	unsafeDowngrade = 3
)

// Update applies req's updates to the stored levels of a node (nodeID,
// named in refusals as Kafka's controller names itself), checked as Kafka
// checks them, and returns the new stored levels (a new map), or the
// top-level error code and message of the refusal.
func Update(req *kmsg.UpdateFeaturesRequest, stored map[string]int16, cluster bool, nodeID int32) (map[string]int16, int16, string) {
	next := maps.Clone(levels(stored, cluster))
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
		f, known := feature(u.Feature)
		if msg := check(f, known, u.MaxVersionLevel, typ, Level(next, u.Feature), nodeID); msg != "" {
			return stored, kerr.InvalidUpdateVersion.Code, Failed(msg)
		}
		if known {
			next[u.Feature] = u.MaxVersionLevel
		}
	}
	return next, 0, ""
}

// feature is the served feature name, or an unknown one (level 0 alone).
func feature(name string) (Feature, bool) {
	i := slices.IndexFunc(served, func(f Feature) bool { return f.Name == name })
	if i < 0 {
		return Feature{Name: name}, false // Kafka's DISABLED range
	}
	return served[i], true
}

// Failed is UpdateFeatures' refusal of a whole request for one
// feature's reason, as Kafka's controller words it.
func Failed(reason string) string {
	return "The update failed for all features since the following feature had an error: " + reason
}

// Served is the entry of the feature Gregor serves by that name: the
// levels it supports (an unknown name supports level 0 alone).
func Served(name string) Feature {
	f, _ := feature(name)
	return f
}

// check returns why f may not go to level from current, or "".
func check(f Feature, known bool, level int16, typ int8, current int16, nodeID int32) string {
	invalid := func(reason string, args ...any) string {
		return fmt.Sprintf("Invalid update version %d for feature %s. ", level, f.Name) + fmt.Sprintf(reason, args...)
	}
	switch {
	case typ < upgrade || typ > unsafeDowngrade:
		return invalid("The controller does not support the given upgrade type.")
	case level < 0:
		return invalid("A feature version cannot be less than 0.")
	case !known && level != 0:
		return invalid("Local controller %d does not support this feature.", nodeID)
	case level < f.Min || level > f.Max:
		return invalid("Local controller %d only supports versions %d-%d", nodeID, f.Min, f.Max)
	case level < current && typ == upgrade:
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case level > current && typ != upgrade:
		return invalid("Can't downgrade to a newer version.")
	case f.NoDowngrade && level < current:
		return invalid("Can't downgrade the version of this feature.")
	case !known:
		// Level 0, within an unknown feature's range; Kafka's controller
		// then looks the feature up to check its dependencies
		// (Feature.featureFromName), which fails.
		return invalid("Feature %s not found.", f.Name)
	case f.Name == MetadataVersion && level < current &&
		slices.ContainsFunc(metadataChanged, func(l int16) bool { return l > level && l <= current }):
		if typ == unsafeDowngrade {
			return fmt.Sprintf("Invalid metadata.version %d. Unsafe metadata downgrade is not supported in this version.", level)
		}
		return fmt.Sprintf("Invalid metadata.version %d. Refusing to perform the requested downgrade because it might delete metadata information.", level)
	}
	// The one dependency among Kafka 4.2's features, eligible leader
	// replicas on metadata.version 4.0-IV1 (23), always holds: no
	// downgrade goes below 23, which changed metadata records.
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
	stored = levels(stored, cluster)
	for _, f := range served {
		resp.SupportedFeatures = append(resp.SupportedFeatures,
			kmsg.ApiVersionsResponseSupportedFeature{Name: f.Name, MinVersion: f.Min, MaxVersion: f.Max})
		if l := Level(stored, f.Name); l > 0 {
			resp.FinalizedFeatures = append(resp.FinalizedFeatures,
				kmsg.ApiVersionsResponseFinalizedFeature{Name: f.Name, MinVersionLevel: l, MaxVersionLevel: l})
		}
	}
}

// Formatted are the stored levels of a cluster that kafka-storage format
// prepared, from the levels its bootstrap snapshot holds: the format
// records metadata.version and every other feature its release (or
// --feature) puts above 0, so a served feature it left out is at 0, as in
// Kafka. A level beyond what Gregor serves (a newer release's) is taken at the nearest served one, and
// adjusted says so for each; kraft.version is the quorum's own and
// features Gregor does not serve are not stored.
func Formatted(formatted map[string]int16) (stored map[string]int16, adjusted []string) {
	stored = map[string]int16{}
	for _, f := range served {
		if f.Name == KRaftVersion {
			continue
		}
		level := formatted[f.Name]
		stored[f.Name] = min(max(level, f.Min), f.Max)
		if stored[f.Name] != level {
			adjusted = append(adjusted, fmt.Sprintf("%s %d formatted, %d served", f.Name, level, stored[f.Name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(formatted)) {
		if _, known := feature(name); !known {
			adjusted = append(adjusted, fmt.Sprintf("%s %d formatted, not served", name, formatted[name]))
		}
	}
	return stored, adjusted
}
