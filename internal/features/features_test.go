package features

import (
	"fmt"
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

// UpdateFeatures' refusals, each with Kafka's reason, and a refusal of one
// update applies none of the others.
func TestUpdateRefusals(t *testing.T) {
	cases := []struct {
		name    string
		req     *kmsg.UpdateFeaturesRequest
		cluster bool
		reason  string
	}{
		{"unknown feature", request(1, update("metadata.version", 20, upgrade)), true, "does not support this feature"},
		{"ELR on a single node", request(1, update(ELRVersion, 1, upgrade)), false, "does not support this feature"},
		{"above the supported range", request(1, update(TransactionVersion, 3, upgrade)), false, "only supports versions 0-2"},
		{"below 0", request(1, update(TransactionVersion, -1, safeDowngrade)), false, "cannot be less than 0"},
		{"downgrade as an upgrade", request(1, update(TransactionVersion, 1, upgrade)), false, "without setting the upgrade type"},
		{"v0 downgrade without AllowDowngrade", request(0, update(TransactionVersion, 1, 0)), false, "without setting the upgrade type"},
		{"upgrade as a downgrade", request(1, update(TransactionVersion, 2, safeDowngrade)), false, ""},
		{"unknown upgrade type", request(1, update(TransactionVersion, 1, 0)), false, "does not support the given upgrade type"},
		{"one bad update of two", request(1, update(TransactionVersion, 1, safeDowngrade), update("nope", 1, upgrade)), false, "does not support this feature"},
	}
	for _, c := range cases {
		stored := map[string]int16{TransactionVersion: 1}
		if c.name != "upgrade as a downgrade" {
			stored = nil
		}
		next, code, msg := Update(c.req, stored, c.cluster)
		if c.reason == "" {
			c.reason = "Can't downgrade to a newer version"
		}
		if code != kerr.InvalidUpdateVersion.Code || !strings.Contains(msg, c.reason) ||
			!strings.HasPrefix(msg, "The update failed for all features since the following feature had an error: Invalid update version") {
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

// Downgrades need a downgrade type (v0: AllowDowngrade), upgrades the
// upgrade type; the stored levels are a new map; ApiVersions lists every
// served feature as supported and only those above 0 as finalized.
func TestUpdateAndAPIVersions(t *testing.T) {
	stored := map[string]int16{}
	next, code, msg := Update(request(1, update(TransactionVersion, 1, safeDowngrade), update(ELRVersion, 0, unsafeDowngrade)), stored, true)
	if code != 0 || next[TransactionVersion] != 1 || next[ELRVersion] != 0 || len(stored) != 0 {
		t.Fatalf("downgrade: %v %d %q (stored %v)", next, code, msg, stored)
	}
	var av kmsg.ApiVersionsResponse
	APIVersions(&av, next, 7, true)
	if got, want := supported(av), "eligible.leader.replicas.version:0-1 group.version:0-1 kraft.version:0-1 share.version:0-1 streams.version:0-1 transaction.version:0-2"; got != want {
		t.Fatalf("supported %s, want %s", got, want)
	}
	if got, want := finalized(av), "group.version:1-1 share.version:1-1 streams.version:1-1 transaction.version:1-1"; got != want || av.FinalizedFeaturesEpoch != 7 {
		t.Fatalf("finalized %s at %d, want %s at 7 (ELR 0 is left out)", got, av.FinalizedFeaturesEpoch, want)
	}

	back, code, _ := Update(request(0, kmsg.UpdateFeaturesRequestFeatureUpdate{Feature: TransactionVersion, MaxVersionLevel: 2}), next, false)
	if code != 0 || back[TransactionVersion] != 2 {
		t.Fatalf("v0 upgrade: %v %d", back, code)
	}
	down, code, _ := Update(request(0, kmsg.UpdateFeaturesRequestFeatureUpdate{Feature: TransactionVersion, MaxVersionLevel: 0, AllowDowngrade: true}), back, false)
	if code != 0 || down[TransactionVersion] != 0 {
		t.Fatalf("v0 downgrade with AllowDowngrade: %v %d", down, code)
	}
	av = kmsg.ApiVersionsResponse{}
	APIVersions(&av, nil, 0, false)
	if s, f := supported(av), finalized(av); s != "group.version:0-1 share.version:0-1 streams.version:0-1 transaction.version:0-2" || f != "group.version:1-1 share.version:1-1 streams.version:1-1 transaction.version:2-2" {
		t.Fatalf("single node defaults: supported %s, finalized %s", s, f)
	}

	// A dynamic quorum lists kraft.version 1; no update changes a
	// quorum's level, though one to the same level is no change.
	av = kmsg.ApiVersionsResponse{}
	dynamic := map[string]int16{KRaftVersion: 1}
	APIVersions(&av, dynamic, 0, true)
	if f := finalized(av); !strings.Contains(f, "kraft.version:1-1") {
		t.Fatalf("a dynamic quorum's finalized features: %s", f)
	}
	for _, c := range []struct {
		stored map[string]int16
		level  int16
		typ    int8
	}{{nil, 1, upgrade}, {dynamic, 0, safeDowngrade}, {dynamic, 0, unsafeDowngrade}} {
		if _, code, msg := Update(request(1, update(KRaftVersion, c.level, c.typ)), c.stored, true); code != kerr.InvalidUpdateVersion.Code ||
			!strings.Contains(msg, "kraft.version is set when it first starts") {
			t.Errorf("kraft.version %v to %d: %d %q", c.stored, c.level, code, msg)
		}
	}
	if same, code, msg := Update(request(1, update(KRaftVersion, 1, upgrade)), dynamic, true); code != 0 || same[KRaftVersion] != 1 {
		t.Errorf("kraft.version 1 to 1: %d %q", code, msg)
	}
	if _, code, _ := Update(request(1, update(KRaftVersion, 1, upgrade)), nil, false); code != kerr.InvalidUpdateVersion.Code {
		t.Errorf("kraft.version on a single node: %d", code)
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
