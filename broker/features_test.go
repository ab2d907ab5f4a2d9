package broker

import (
	"maps"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// updateFeature sends UpdateFeatures v1 setting one feature's level with
// the given upgrade type (1 upgrade, 2 safe downgrade, 3 unsafe).
func updateFeature(t *testing.T, rc *rawConn, name string, level int16, typ int8) *kmsg.UpdateFeaturesResponse {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.SetVersion(1)
	req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: name, MaxVersionLevel: level, UpgradeType: typ}}
	return rc.request(req).(*kmsg.UpdateFeaturesResponse)
}

func finalizedFeatures(rc *rawConn) (map[string]int16, int64) {
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(4)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw-test", "1.0"
	resp := rc.request(av).(*kmsg.ApiVersionsResponse)
	out := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		out[f.Name] = f.MaxVersionLevel
	}
	return out, resp.FinalizedFeaturesEpoch
}

// TestUpdateFeaturesSingleNode: kafka-features' requests on one node. A
// downgrade of transaction.version needs the downgrade type, is stored
// (ApiVersions shows it, with the epoch counting updates) and survives a
// restart; disabling it leaves it out of the finalized list; upgrades
// above the supported levels and a validate-only change change nothing.
// metadata.version goes down to 4.0 (25) but not across 4.0-IV1 (23).
func TestUpdateFeaturesSingleNode(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir}
	b := startBrokerWith(t, props)
	rc := dialRaw(t, b)
	want := map[string]int16{"eligible.leader.replicas.version": 1, "group.version": 1, "kraft.version": 1,
		"metadata.version": 29, "share.version": 1, "streams.version": 1, "transaction.version": 2}
	if f, epoch := finalizedFeatures(rc); !maps.Equal(f, want) || epoch != 0 {
		t.Fatalf("a new node: finalized %v at %d, want %v at 0", f, epoch, want)
	}
	if r := updateFeature(t, rc, "transaction.version", 1, 1); r.ErrorCode != kerr.InvalidUpdateVersion.Code ||
		r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "upgrade type") {
		t.Fatalf("a downgrade sent as an upgrade: %+v", r)
	}
	for _, refused := range []struct {
		name  string
		level int16
	}{{"transaction.version", 3}, {"metadata.version", 34}} {
		if r := updateFeature(t, rc, refused.name, refused.level, 1); r.ErrorCode != kerr.InvalidUpdateVersion.Code {
			t.Fatalf("%s to %d: %+v", refused.name, refused.level, r)
		}
	}
	validate := kmsg.NewPtrUpdateFeaturesRequest()
	validate.SetVersion(1)
	validate.ValidateOnly = true
	validate.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "transaction.version", MaxVersionLevel: 0, UpgradeType: 3}}
	if r := rc.request(validate).(*kmsg.UpdateFeaturesResponse); r.ErrorCode != 0 {
		t.Fatalf("validate-only: %+v", r)
	}
	if f, epoch := finalizedFeatures(rc); f["transaction.version"] != 2 || epoch != 0 {
		t.Fatalf("after refusals and a validate-only update: finalized %v at %d", f, epoch)
	}

	r := updateFeature(t, rc, "transaction.version", 1, 2)
	if r.ErrorCode != 0 || len(r.Results) != 1 || r.Results[0].Feature != "transaction.version" || r.Results[0].ErrorCode != 0 {
		t.Fatalf("safe downgrade to 1: %+v", r)
	}
	if f, epoch := finalizedFeatures(rc); f["transaction.version"] != 1 || epoch != 1 {
		t.Fatalf("after the downgrade: finalized %v at %d", f, epoch)
	}
	b.Close()
	b = startBrokerWith(t, props)
	rc = dialRaw(t, b)
	if f, epoch := finalizedFeatures(rc); f["transaction.version"] != 1 || epoch != 1 {
		t.Fatalf("after a restart: finalized %v at %d", f, epoch)
	}
	if r := updateFeature(t, rc, "transaction.version", 0, 3); r.ErrorCode != 0 {
		t.Fatalf("disable: %+v", r)
	}
	if f, _ := finalizedFeatures(rc); f["transaction.version"] != 0 || len(f) != 6 {
		t.Fatalf("transaction.version 0 still finalized: %v", f)
	}
	if r := updateFeature(t, rc, "transaction.version", 2, 1); r.ErrorCode != 0 {
		t.Fatalf("upgrade back to 2: %+v", r)
	}
	if f, epoch := finalizedFeatures(rc); f["transaction.version"] != 2 || epoch != 3 {
		t.Fatalf("after the upgrade: finalized %v at %d", f, epoch)
	}
	if r := updateFeature(t, rc, "metadata.version", 25, 2); r.ErrorCode != 0 {
		t.Fatalf("metadata.version down to 25: %+v", r)
	}
	if r := updateFeature(t, rc, "metadata.version", 22, 2); r.ErrorCode != kerr.InvalidUpdateVersion.Code ||
		r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "might delete metadata information") {
		t.Fatalf("metadata.version down to 22: %+v", r)
	}
	if f, epoch := finalizedFeatures(rc); f["metadata.version"] != 25 || epoch != 4 {
		t.Fatalf("after metadata.version 25: finalized %v at %d", f, epoch)
	}
}

// UpdateFeatures at its lowest and highest version: v0 downgrades with
// AllowDowngrade and lists a result per feature, v2 answers with the top
// level alone.
func TestUpdateFeaturesVersions(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	levels := map[int16]int16{0: 1, 2: 2}
	for _, v := range bothEnds(57) {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.SetVersion(v)
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "transaction.version",
			MaxVersionLevel: levels[v], AllowDowngrade: v == 0, UpgradeType: 1}}
		r := rc.request(req).(*kmsg.UpdateFeaturesResponse)
		if wantResults := map[int16]int{0: 1, 2: 0}[v]; r.ErrorCode != 0 || len(r.Results) != wantResults {
			t.Fatalf("v%d: %+v", v, r)
		}
		if f, _ := finalizedFeatures(rc); f["transaction.version"] != levels[v] {
			t.Fatalf("v%d: finalized %v, want transaction.version %d", v, f, levels[v])
		}
	}
}

// group.version 0 turns KIP-848's consumer group protocol off, as in
// Kafka: ConsumerGroupHeartbeat answers UNSUPPORTED_VERSION and
// ConsumerGroupDescribe the same for every group; back at 1 a member joins.
func TestGroupVersionTurnsConsumerProtocolOff(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "gv", 1)
	join := func() *kmsg.ConsumerGroupHeartbeatResponse {
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.SetVersion(1)
		hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "gv-group", "m1", 0, 30000
		hb.SubscribedTopicNames, hb.Topics = []string{"gv"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return rc.request(hb).(*kmsg.ConsumerGroupHeartbeatResponse)
	}
	describe := func() int16 {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"gv-group"}
		resp := rc.request(req).(*kmsg.ConsumerGroupDescribeResponse)
		if len(resp.Groups) != 1 || resp.Groups[0].Group != "gv-group" {
			t.Fatalf("describe: %+v", resp.Groups)
		}
		return resp.Groups[0].ErrorCode
	}

	if r := updateFeature(t, rc, "group.version", 0, 2); r.ErrorCode != 0 {
		t.Fatalf("group.version to 0: %+v", r)
	}
	if f, _ := finalizedFeatures(rc); f["group.version"] != 0 {
		t.Fatalf("group.version 0 still finalized: %v", f)
	}
	if r := join(); r.ErrorCode != errUnsupportedVersion {
		t.Fatalf("a heartbeat with group.version 0: %+v", r)
	}
	if code := describe(); code != errUnsupportedVersion {
		t.Fatalf("describing with group.version 0: error %d", code)
	}

	if r := updateFeature(t, rc, "group.version", 1, 1); r.ErrorCode != 0 {
		t.Fatalf("group.version back to 1: %+v", r)
	}
	findCoordinatorRaw(t, rc, "gv-group")
	if r := join(); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("a heartbeat with group.version 1: %+v", r)
	}
	if code := describe(); code != 0 {
		t.Fatalf("describing with group.version 1: error %d", code)
	}
}
