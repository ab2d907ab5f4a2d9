package features

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func request(version int16, updates ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesRequest {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version, req.FeatureUpdates = version, updates
	return req
}

func update(name string, level int16, typ int8) kmsg.UpdateFeaturesRequestFeatureUpdate {
	return kmsg.UpdateFeaturesRequestFeatureUpdate{Feature: name, MaxVersionLevel: level, UpgradeType: typ}
}

// UpdateFeatures' refusals, each with the reason Kafka 4.1 gives, and a
// refusal of one update applies none of the others.
func TestUpdateRefusals(t *testing.T) {
	cases := []struct {
		name    string
		req     *kmsg.UpdateFeaturesRequest
		cluster bool
		reason  string
	}{
		{"unknown feature", request(1, update("foo.version", 1, upgrade)), true, "Invalid update version 1 for feature foo.version. Local controller 3 does not support this feature."},
		{"unknown feature disabled", request(1, update("foo.version", 0, safeDowngrade)), true, "Invalid update version 0 for feature foo.version. Feature foo.version not found."},
		{"above the supported range", request(1, update(TransactionVersion, 3, upgrade)), false, "Invalid update version 3 for feature transaction.version. Local controller 3 only supports versions 0-2"},
		{"metadata.version above", request(1, update(MetadataVersion, 34, upgrade)), true, "Invalid update version 34 for feature metadata.version. Local controller 3 only supports versions 7-33"},
		{"metadata.version below", request(1, update(MetadataVersion, 6, safeDowngrade)), false, "Local controller 3 only supports versions 7-33"},
		{"metadata.version disabled", request(1, update(MetadataVersion, 0, unsafeDowngrade)), true, "Local controller 3 only supports versions 7-33"},
		{"metadata.version across 4.0-IV1", request(1, update(MetadataVersion, 22, safeDowngrade)), true, "Invalid metadata.version 22. Refusing to perform the requested downgrade because it might delete metadata information."},
		{"metadata.version unsafely", request(1, update(MetadataVersion, 21, unsafeDowngrade)), false, "Invalid metadata.version 21. Unsafe metadata downgrade is not supported in this version."},
		{"below 0", request(1, update(TransactionVersion, -1, safeDowngrade)), false, "A feature version cannot be less than 0."},
		{"downgrade as an upgrade", request(1, update(TransactionVersion, 1, upgrade)), false, "without setting the upgrade type"},
		{"v0 downgrade without AllowDowngrade", request(0, update(TransactionVersion, 1, 0)), false, "without setting the upgrade type"},
		{"upgrade as a downgrade", request(1, update(TransactionVersion, 2, safeDowngrade)), false, "Invalid update version 2 for feature transaction.version. Can't downgrade to a newer version."},
		{"unknown upgrade type", request(1, update(TransactionVersion, 1, 0)), false, "does not support the given upgrade type"},
		{"one bad update of two", request(1, update(TransactionVersion, 1, safeDowngrade), update("nope", 1, upgrade)), false, "does not support this feature"},
		{"kraft.version down", request(1, update(KRaftVersion, 0, safeDowngrade)), false, "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature."},
	}
	for _, c := range cases {
		stored := map[string]int16{TransactionVersion: 1}
		if c.name != "upgrade as a downgrade" {
			stored = nil
		}
		next, code, msg := Update(c.req, stored, c.cluster, 3)
		if code != kerr.InvalidUpdateVersion.Code || !strings.Contains(msg, c.reason) ||
			!strings.HasPrefix(msg, "The update failed for all features since the following feature had an error: Invalid ") {
			t.Errorf("%s: code %d %q, want INVALID_UPDATE_VERSION saying %q", c.name, code, msg, c.reason)
		}
		if len(next) != len(stored) || Level(next, TransactionVersion) != Level(stored, TransactionVersion) {
			t.Errorf("%s: levels changed to %v", c.name, next)
		}
		resp := Response(c.req, code, msg)
		if resp.ErrorCode != code || resp.ErrorMessage == nil || len(resp.Results) != 0 {
			t.Errorf("%s: response %+v", c.name, resp)
		}
	}
}

// metadata.version goes up to 33 and down only across levels that changed
// no metadata record (29 to 23, not to 22; not below 30 once there), as
// in Kafka 4.3; a new cluster is at 29, as Kafka 4.2's.
func TestMetadataVersion(t *testing.T) {
	next, code, msg := Update(request(1, update(MetadataVersion, 23, safeDowngrade)), nil, true, 1)
	if code != 0 || Level(next, MetadataVersion) != 23 || len(next) != 1 {
		t.Fatalf("29 to 23: %v %d %q", next, code, msg)
	}
	if _, code, _ := Update(request(1, update(MetadataVersion, 22, safeDowngrade)), next, true, 1); code != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("23 to 22: %d", code)
	}
	up, code, msg := Update(request(1, update(MetadataVersion, 29, upgrade)), next, true, 1)
	if code != 0 || Level(up, MetadataVersion) != 29 {
		t.Fatalf("23 to 29: %v %d %q", up, code, msg)
	}
	var av kmsg.ApiVersionsResponse
	APIVersions(&av, next, 0, true)
	if !strings.Contains(supported(av), "metadata.version:7-33") || !strings.Contains(finalized(av), "metadata.version:23-23") {
		t.Fatalf("ApiVersions: supported %s, finalized %s", supported(av), finalized(av))
	}
	var fresh kmsg.ApiVersionsResponse
	APIVersions(&fresh, nil, 0, true)
	if !strings.Contains(finalized(fresh), "metadata.version:29-29") {
		t.Fatalf("ApiVersions of a new cluster: finalized %s, want metadata.version 29 (4.2-IV1)", finalized(fresh))
	}
	at30, code, msg := Update(request(1, update(MetadataVersion, 30, upgrade)), nil, true, 1)
	if code != 0 || Level(at30, MetadataVersion) != 30 {
		t.Fatalf("29 to 30: %v %d %q", at30, code, msg)
	}
	if _, code, msg := Update(request(1, update(MetadataVersion, 29, safeDowngrade)), at30, true, 1); code != kerr.InvalidUpdateVersion.Code || !strings.Contains(msg, "might delete metadata information") {
		t.Fatalf("30 to 29: %d %q; 4.3-IV0 changed metadata records", code, msg)
	}
}

// kraft.version goes from 0 (a static quorum) to 1 as any feature goes up
// (whether the voters allow it is the cluster controller's check), and a
// single node is at 1 already; it never goes back.
func TestKRaftVersion(t *testing.T) {
	up, code, msg := Update(request(1, update(KRaftVersion, 1, upgrade)), nil, true, 1)
	if code != 0 || Level(up, KRaftVersion) != 1 {
		t.Fatalf("a static quorum's kraft.version to 1: %v %d %q", up, code, msg)
	}
	for _, typ := range []int8{safeDowngrade, unsafeDowngrade} {
		if _, code, msg := Update(request(1, update(KRaftVersion, 0, typ)), up, true, 1); code != kerr.InvalidUpdateVersion.Code ||
			!strings.HasSuffix(msg, "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature.") {
			t.Fatalf("kraft.version back to 0 (type %d): %d %q", typ, code, msg)
		}
	}
	single, code, _ := Update(request(1, update(KRaftVersion, 1, upgrade)), nil, false, 1)
	if code != 0 || Level(single, KRaftVersion) != 1 {
		t.Fatalf("a single node's kraft.version: %v %d", single, code)
	}
	if Served(KRaftVersion).Max != 1 || Served(KRaftVersion).Min != 0 {
		t.Fatalf("kraft.version supports %+v", Served(KRaftVersion))
	}
}

// Downgrades need a downgrade type (v0: AllowDowngrade), upgrades the
// upgrade type; the stored levels are a new map; ApiVersions lists every
// served feature as supported and only those above 0 as finalized.
func TestUpdateAndAPIVersions(t *testing.T) {
	stored := map[string]int16{}
	next, code, msg := Update(request(1, update(TransactionVersion, 1, safeDowngrade), update(ELRVersion, 0, unsafeDowngrade)), stored, true, 1)
	if code != 0 || next[TransactionVersion] != 1 || next[ELRVersion] != 0 || len(stored) != 0 {
		t.Fatalf("downgrade: %v %d %q (stored %v)", next, code, msg, stored)
	}
	var av kmsg.ApiVersionsResponse
	APIVersions(&av, next, 7, true)
	if got, want := supported(av), "eligible.leader.replicas.version:0-1 group.version:0-1 kraft.version:0-1 metadata.version:7-33 share.version:0-2 streams.version:0-1 transaction.version:0-2"; got != want {
		t.Fatalf("supported %s, want %s", got, want)
	}
	if got, want := finalized(av), "group.version:1-1 metadata.version:29-29 share.version:1-1 streams.version:1-1 transaction.version:1-1"; got != want || av.FinalizedFeaturesEpoch != 7 {
		t.Fatalf("finalized %s at %d, want %s at 7 (ELR 0 and a static quorum's kraft.version 0 are left out)", got, av.FinalizedFeaturesEpoch, want)
	}

	back, code, _ := Update(request(0, kmsg.UpdateFeaturesRequestFeatureUpdate{Feature: TransactionVersion, MaxVersionLevel: 2}), next, false, 1)
	if code != 0 || back[TransactionVersion] != 2 {
		t.Fatalf("v0 upgrade: %v %d", back, code)
	}
	down, code, _ := Update(request(0, kmsg.UpdateFeaturesRequestFeatureUpdate{Feature: TransactionVersion, MaxVersionLevel: 0, AllowDowngrade: true}), back, false, 1)
	if code != 0 || down[TransactionVersion] != 0 {
		t.Fatalf("v0 downgrade with AllowDowngrade: %v %d", down, code)
	}

	// A single node is a quorum of one formatted --standalone.
	av = kmsg.ApiVersionsResponse{}
	APIVersions(&av, nil, 0, false)
	if s, f := supported(av), finalized(av); s != "eligible.leader.replicas.version:0-1 group.version:0-1 kraft.version:0-1 metadata.version:7-33 share.version:0-2 streams.version:0-1 transaction.version:0-2" ||
		f != "eligible.leader.replicas.version:1-1 group.version:1-1 kraft.version:1-1 metadata.version:29-29 share.version:1-1 streams.version:1-1 transaction.version:2-2" {
		t.Fatalf("single node defaults: supported %s, finalized %s", s, f)
	}
	if same, code, msg := Update(request(1, update(KRaftVersion, 1, upgrade)), nil, false, 1); code != 0 || same[KRaftVersion] != 1 {
		t.Errorf("a single node's kraft.version 1 to 1: %d %q", code, msg)
	}

	// A dynamic quorum lists kraft.version 1; an update to the same level
	// is no change.
	av = kmsg.ApiVersionsResponse{}
	dynamic := map[string]int16{KRaftVersion: 1}
	APIVersions(&av, dynamic, 0, true)
	if f := finalized(av); !strings.Contains(f, "kraft.version:1-1") {
		t.Fatalf("a dynamic quorum's finalized features: %s", f)
	}
	if same, code, msg := Update(request(1, update(KRaftVersion, 1, upgrade)), dynamic, true, 1); code != 0 || same[KRaftVersion] != 1 {
		t.Errorf("kraft.version 1 to 1: %d %q", code, msg)
	}

	for _, v := range []int16{1, 2} {
		req := request(v, update(TransactionVersion, 2, upgrade))
		resp := Response(req, 0, "")
		if want := map[int16]int{1: 1, 2: 0}[v]; resp.ErrorCode != 0 || len(resp.Results) != want {
			t.Fatalf("v%d success: %+v, want %d results", v, resp, want)
		}
	}
}

// supported and finalized list ApiVersions' features as name:min-max.
func supported(av kmsg.ApiVersionsResponse) string {
	var out []string
	for _, f := range av.SupportedFeatures {
		out = append(out, fmt.Sprintf("%s:%d-%d", f.Name, f.MinVersion, f.MaxVersion))
	}
	return strings.Join(out, " ")
}

func finalized(av kmsg.ApiVersionsResponse) string {
	var out []string
	for _, f := range av.FinalizedFeatures {
		out = append(out, fmt.Sprintf("%s:%d-%d", f.Name, f.MinVersionLevel, f.MaxVersionLevel))
	}
	return strings.Join(out, " ")
}

// A formatted cluster starts at the levels its format recorded, a served
// feature it left out at 0; levels of a newer release come down to the
// highest served, and what Gregor does not serve is reported.
func TestFormatted(t *testing.T) {
	// Kafka 4.4's defaults.
	stored, adjusted := Formatted(map[string]int16{MetadataVersion: 33, ELRVersion: 1, GroupVersion: 1,
		ShareVersion: 2, StreamsVersion: 1, TransactionVersion: 2, KRaftVersion: 1, "future.version": 3})
	want := map[string]int16{MetadataVersion: 33, ELRVersion: 1, GroupVersion: 1, ShareVersion: 2, StreamsVersion: 1, TransactionVersion: 2}
	if !reflect.DeepEqual(stored, want) {
		t.Errorf("4.4 defaults: stored %v, want %v", stored, want)
	}
	wantAdjusted := []string{"future.version 3 formatted, not served"}
	if !reflect.DeepEqual(adjusted, wantAdjusted) {
		t.Errorf("adjusted %q, want %q", adjusted, wantAdjusted)
	}
	// --release-version 3.9: only metadata.version; the rest are off.
	stored, adjusted = Formatted(map[string]int16{MetadataVersion: 21})
	want = map[string]int16{MetadataVersion: 21, ELRVersion: 0, GroupVersion: 0, ShareVersion: 0, StreamsVersion: 0, TransactionVersion: 0}
	if !reflect.DeepEqual(stored, want) || adjusted != nil {
		t.Errorf("3.9: stored %v, adjusted %q; want %v", stored, adjusted, want)
	}
	if Level(stored, GroupVersion) != 0 || Level(stored, MetadataVersion) != 21 {
		t.Errorf("levels after a 3.9 format: group.version %d, metadata.version %d", Level(stored, GroupVersion), Level(stored, MetadataVersion))
	}
}
