package features

import (
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
	if len(av.SupportedFeatures) != 2 || av.SupportedFeatures[0].Name != ELRVersion || av.SupportedFeatures[0].MaxVersion != 1 ||
		av.SupportedFeatures[1].Name != TransactionVersion || av.SupportedFeatures[1].MaxVersion != 2 {
		t.Fatalf("supported %+v", av.SupportedFeatures)
	}
	if len(av.FinalizedFeatures) != 1 || av.FinalizedFeatures[0].Name != TransactionVersion ||
		av.FinalizedFeatures[0].MaxVersionLevel != 1 || av.FinalizedFeatures[0].MinVersionLevel != 1 || av.FinalizedFeaturesEpoch != 7 {
		t.Fatalf("finalized %+v at %d, want transaction.version 1 alone (ELR 0 is left out)", av.FinalizedFeatures, av.FinalizedFeaturesEpoch)
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
	if len(av.SupportedFeatures) != 1 || len(av.FinalizedFeatures) != 1 || av.FinalizedFeatures[0].MaxVersionLevel != 2 {
		t.Fatalf("single node defaults: supported %+v finalized %+v", av.SupportedFeatures, av.FinalizedFeatures)
	}

	for _, v := range []int16{1, 2} {
		req := request(v, update(TransactionVersion, 2, upgrade))
		resp := Response(req, 0, "")
		if want := map[int16]int{1: 1, 2: 0}[v]; resp.ErrorCode != 0 || len(resp.Results) != want {
			t.Fatalf("v%d success: %+v, want %d results", v, resp, want)
		}
	}
}
