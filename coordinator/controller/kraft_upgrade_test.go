package controller

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/internal/features"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func upgradeKRaft(t *testing.T, cl *Client, level int16, typ int8, validateOnly bool) *kmsg.UpdateFeaturesResponse {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.ValidateOnly = validateOnly
	req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: features.KRaftVersion, MaxVersionLevel: level, UpgradeType: typ}}
	return send[*kmsg.UpdateFeaturesResponse](t, cl, req)
}

// A static quorum goes to kraft.version 1 as Kafka 4.1's does: refused
// until every voter has told the leader its directory id and endpoints
// (UpdateRaftVoter, with KRaft's checks), then recorded with them, after
// which it changes its voters; it never goes back to 0.
func TestUpgradeStaticQuorum(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.ListenerName = "CONTROLLER" })
	cl := tc.client()
	leader := tc.ctl(tc.active())
	tc.waitAll("the cluster id on every voter", func(img *Image) bool { return img.ClusterID != "" })
	dirs := map[int32][16]byte{1: {0xa1}, 2: {0xa2}, 3: {0xa3}}
	endpoints := func(id int32) []Endpoint {
		host, port, _ := net.SplitHostPort(tc.voters[id])
		p, _ := strconv.Atoi(port)
		return []Endpoint{{Listener: "CONTROLLER", Host: host, Port: int32(p)}}
	}
	refusal := "The update failed for all features since the following feature had an error: Invalid upgrade of kraft.version to KRAFT_VERSION_1 because not all of the voters support it"
	if r := upgradeKRaft(t, cl, 1, 1, false); r.ErrorCode != kerr.InvalidUpdateVersion.Code || r.ErrorMessage == nil || *r.ErrorMessage != refusal {
		t.Fatalf("upgrade before any voter reported: error %d %v", r.ErrorCode, r.ErrorMessage)
	}

	update := func(id int32) *kmsg.UpdateRaftVoterRequest {
		t.Helper()
		req, term := tc.ctl(int(id-1)).VoterUpdate(dirs[id], endpoints(id))
		if req == nil || term == 0 || req.CurrentLeaderEpoch != int32(term) {
			t.Fatalf("voter %d owes no UpdateRaftVoter at kraft.version 0 (term %d)", id, term)
		}
		return req
	}
	good := update(1)
	if good.VoterID != 1 || good.VoterDirectoryID != dirs[1] || good.KRaftVersionFeature.MaxSupportedVersion != 1 ||
		len(good.Listeners) != 1 || good.ClusterID == nil || *good.ClusterID != leader.Image().ClusterID {
		t.Fatalf("voter 1's UpdateRaftVoter: %+v", good)
	}
	bad := []struct {
		name   string
		change func(*kmsg.UpdateRaftVoterRequest)
		code   int16
	}{
		{"another cluster", func(r *kmsg.UpdateRaftVoterRequest) { r.ClusterID = kmsg.StringPtr("other") }, kerr.InconsistentClusterID.Code},
		{"an older epoch", func(r *kmsg.UpdateRaftVoterRequest) { r.CurrentLeaderEpoch-- }, kerr.FencedLeaderEpoch.Code},
		{"a newer epoch", func(r *kmsg.UpdateRaftVoterRequest) { r.CurrentLeaderEpoch++ }, kerr.UnknownLeaderEpoch.Code},
		{"no directory id", func(r *kmsg.UpdateRaftVoterRequest) { r.VoterDirectoryID = [16]byte{} }, kerr.InvalidRequest.Code},
		{"no CONTROLLER endpoint", func(r *kmsg.UpdateRaftVoterRequest) { r.Listeners[0].Name = "OTHER" }, kerr.InvalidRequest.Code},
		{"a bad range", func(r *kmsg.UpdateRaftVoterRequest) { r.KRaftVersionFeature.MinSupportedVersion = 2 }, kerr.InvalidRequest.Code},
		{"the level outside its range", func(r *kmsg.UpdateRaftVoterRequest) { r.KRaftVersionFeature.MinSupportedVersion = 1 }, kerr.InvalidRequest.Code},
		{"not a voter", func(r *kmsg.UpdateRaftVoterRequest) { r.VoterID = 9 }, kerr.VoterNotFound.Code},
	}
	for _, b := range bad {
		req := update(1)
		b.change(req)
		resp := send[*kmsg.UpdateRaftVoterResponse](t, cl, req)
		if resp.ErrorCode != b.code {
			t.Errorf("UpdateRaftVoter with %s: error %d, want %d", b.name, resp.ErrorCode, b.code)
		}
		if resp.CurrentLeader.LeaderID != leader.cfg.NodeID || resp.CurrentLeader.Port == 0 {
			t.Errorf("UpdateRaftVoter with %s: current leader %+v", b.name, resp.CurrentLeader)
		}
	}
	for _, id := range []int32{1, 2} {
		if r := send[*kmsg.UpdateRaftVoterResponse](t, cl, update(id)); r.ErrorCode != 0 {
			t.Fatalf("voter %d's UpdateRaftVoter: error %d", id, r.ErrorCode)
		}
	}
	if r := upgradeKRaft(t, cl, 1, 1, false); r.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("upgrade with voter 3 silent: error %d", r.ErrorCode)
	}
	if r := send[*kmsg.UpdateRaftVoterResponse](t, cl, update(3)); r.ErrorCode != 0 {
		t.Fatalf("voter 3's UpdateRaftVoter: error %d", r.ErrorCode)
	}
	if r := upgradeKRaft(t, cl, 1, 1, true); r.ErrorCode != 0 || features.Level(leader.Image().Features, features.KRaftVersion) != 0 {
		t.Fatalf("validate-only upgrade: error %d %v, level %d", r.ErrorCode, r.ErrorMessage, features.Level(leader.Image().Features, features.KRaftVersion))
	}
	if r := upgradeKRaft(t, cl, 1, 1, false); r.ErrorCode != 0 {
		t.Fatalf("upgrade after every voter reported: error %d %v", r.ErrorCode, r.ErrorMessage)
	}
	tc.waitAll("kraft.version 1 and the voters' directory ids", func(img *Image) bool {
		for id, dir := range dirs {
			if rc := img.Controllers[id]; rc == nil || rc.DirectoryID != dir || !sameAddresses(rc.Endpoints, endpoints(id)) {
				return false
			}
		}
		return features.Level(img.Features, features.KRaftVersion) == 1
	})

	if req, _ := tc.ctl(0).VoterUpdate(dirs[1], endpoints(1)); req != nil {
		t.Errorf("voter 1 owes an UpdateRaftVoter with its entry recorded: %+v", req)
	}
	if req, _ := tc.ctl(0).VoterUpdate([16]byte{0xbb}, endpoints(1)); req == nil {
		t.Error("voter 1 with another directory id owes no UpdateRaftVoter")
	} else if r := send[*kmsg.UpdateRaftVoterResponse](t, cl, req); r.ErrorCode != kerr.VoterNotFound.Code {
		t.Errorf("UpdateRaftVoter naming another directory id at kraft.version 1: error %d", r.ErrorCode)
	}
	if r := upgradeKRaft(t, cl, 0, 2, false); r.ErrorCode != kerr.InvalidUpdateVersion.Code || r.ErrorMessage == nil ||
		!strings.HasSuffix(*r.ErrorMessage, "Can't downgrade the version of this feature.") {
		t.Errorf("kraft.version back to 0: error %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if r := removeVoter(t, cl, 3, dirs[3]); r.ErrorCode != 0 {
		t.Fatalf("RemoveRaftVoter after the upgrade: error %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if got := voterSet(tc.ctl(tc.active())); len(got) != 2 {
		t.Fatalf("voters after removing 3: %v", got)
	}
}
