package controller

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerController sends node id's ControllerRegistration with its
// CONTROLLER listener at addr.
func registerController(t *testing.T, cl *Client, id int32, addr string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	portNum, _ := strconv.Atoi(port)
	req := kmsg.NewPtrControllerRegistrationRequest()
	req.ControllerID, req.IncarnationID = id, [16]byte{byte(id)}
	req.Listeners = []kmsg.ControllerRegistrationRequestListener{{Name: "CONTROLLER", Host: host, Port: uint16(portNum)}}
	if resp := send[*kmsg.ControllerRegistrationResponse](t, cl, req); resp.ErrorCode != 0 {
		t.Fatalf("controller registration of %d: error %d", id, resp.ErrorCode)
	}
}

func addVoter(t *testing.T, cl *Client, id int32, dir [16]byte, addr string, timeout time.Duration) *kmsg.AddRaftVoterResponse {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	portNum, _ := strconv.Atoi(port)
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.VoterID, req.VoterDirectoryID, req.TimeoutMillis = id, dir, int32(timeout/time.Millisecond)
	req.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: host, Port: uint16(portNum)}}
	return send[*kmsg.AddRaftVoterResponse](t, cl, req)
}

func removeVoter(t *testing.T, cl *Client, id int32, dir [16]byte) *kmsg.RemoveRaftVoterResponse {
	t.Helper()
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.VoterID, req.VoterDirectoryID = id, dir
	return send[*kmsg.RemoveRaftVoterResponse](t, cl, req)
}

// dynamicQuorum makes a test cluster a formatted one (kraft.version 1):
// its voters are initial controllers with directory ids, as kafka-storage
// format --initial-controllers names them.
func dynamicQuorum(c *Config) {
	c.ListenerName = "CONTROLLER"
	c.InitialControllers = nil
	for _, id := range slices.Sorted(maps.Keys(c.Voters)) {
		host, port, _ := net.SplitHostPort(c.Voters[id])
		portNum, _ := strconv.Atoi(port)
		c.InitialControllers = append(c.InitialControllers, RegisteredController{ID: id, DirectoryID: formattedDir(id),
			Endpoints: []Endpoint{{Listener: "CONTROLLER", Host: host, Port: int32(portNum)}}})
	}
}

// formattedDir is the directory id dynamicQuorum gives voter id.
func formattedDir(id int32) [16]byte { return [16]byte{0xd1, byte(id)} }

func voterSet(c *Controller) []int32 {
	var ids []int32
	for id := range c.Voters() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// A controller that is not a voter registers, follows the log as an
// observer, and becomes a voter with AddRaftVoter; a voter removed with
// RemoveRaftVoter keeps following the log without a vote. The quorum
// then commits with the new voter and without the removed one.
func TestAddAndRemoveVoters(t *testing.T) {
	tc := startCluster(t, 3, dynamicQuorum)
	cl := tc.client()
	registerUnfenced(t, cl, 3)
	newNode, addr := tc.addObserver(4)
	registerController(t, cl, 4, addr)
	eventually(t, "the new controller to follow the log", func() bool { return tc.ctl(newNode).Image().ClusterID != "" })
	if tc.ctl(newNode).Active() {
		t.Fatal("a controller that is not a voter became active")
	}

	dir := [16]byte{4, 4, 4}
	wrongCluster := kmsg.NewPtrAddRaftVoterRequest()
	wrongCluster.ClusterID, wrongCluster.VoterID, wrongCluster.VoterDirectoryID = kmsg.StringPtr("other"), 4, dir
	noListener := kmsg.NewPtrAddRaftVoterRequest()
	noListener.VoterID, noListener.VoterDirectoryID = 4, dir
	noListener.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 1}}
	for name, c := range map[string]struct {
		got  int16
		want *kerr.Error
	}{
		"another cluster id":        {send[*kmsg.AddRaftVoterResponse](t, cl, wrongCluster).ErrorCode, kerr.InconsistentClusterID},
		"no CONTROLLER endpoint":    {send[*kmsg.AddRaftVoterResponse](t, cl, noListener).ErrorCode, kerr.InvalidRequest},
		"no directory id":           {addVoter(t, cl, 4, [16]byte{}, addr, time.Second).ErrorCode, kerr.InvalidRequest},
		"a voter already":           {addVoter(t, cl, 1, dir, tc.nodes[0].addr, time.Second).ErrorCode, kerr.DuplicateVoter},
		"a node nobody answers for": {addVoter(t, cl, 5, dir, "127.0.0.1:1", 300*time.Millisecond).ErrorCode, kerr.RequestTimedOut},
		"not a voter":               {removeVoter(t, cl, 4, dir).ErrorCode, kerr.VoterNotFound},
		"removal without its dir":   {removeVoter(t, cl, 1, [16]byte{}).ErrorCode, kerr.InvalidRequest},
	} {
		if c.got != c.want.Code {
			t.Errorf("%s: error %d, want %s", name, c.got, c.want.Message)
		}
	}
	if got := voterSet(tc.ctl(tc.active())); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("voters after refused changes: %v", got)
	}

	if r := addVoter(t, cl, 4, dir, addr, 10*time.Second); r.ErrorCode != 0 {
		t.Fatalf("adding voter 4: error %d %v", r.ErrorCode, r.ErrorMessage)
	}
	tc.waitAll("four voters everywhere", func(*Image) bool {
		for i := range tc.nodes {
			if !slices.Equal(voterSet(tc.ctl(i)), []int32{1, 2, 3, 4}) {
				return false
			}
		}
		return true
	})
	if r := addVoter(t, cl, 4, dir, addr, time.Second); r.ErrorCode != kerr.DuplicateVoter.Code {
		t.Fatalf("adding voter 4 twice: error %d", r.ErrorCode)
	}
	_, p := quorumState(t, cl)
	v, ok := replicaState(p.CurrentVoters, 4)
	if !ok || v.ReplicaDirectoryID != dir || len(p.CurrentVoters) != 4 {
		t.Fatalf("DescribeQuorum voters after the add: %+v", p.CurrentVoters)
	}

	if r := removeVoter(t, cl, 4, [16]byte{9}); r.ErrorCode != kerr.VoterNotFound.Code {
		t.Fatalf("removing voter 4 with another directory id: error %d", r.ErrorCode)
	}
	if r := removeVoter(t, cl, 1, formattedDir(1)); r.ErrorCode != 0 {
		t.Fatalf("removing voter 1: error %d %v", r.ErrorCode, r.ErrorMessage)
	}
	tc.waitAll("voters 2, 3 and 4 everywhere", func(*Image) bool {
		for i := range tc.nodes {
			if !slices.Equal(voterSet(tc.ctl(i)), []int32{2, 3, 4}) {
				return false
			}
		}
		return true
	})
	// Node 1 follows the log as an observer; with node 2 down, voters 3
	// and 4 are a majority of three and commit on their own.
	tc.crash(1)
	cl.AddVoters(tc.ctl(newNode).Voters())
	if r := createTopic(t, cl, "after-the-change", 1, 1, nil); r.ErrorCode != 0 {
		t.Fatalf("creating a topic with voters 3 and 4: error %d", r.ErrorCode)
	}
	eventually(t, "the removed voter to follow the log", func() bool {
		return tc.ctl(0).Image().Topics["after-the-change"] != nil
	})
	if leader := tc.active(); leader == 0 || leader == 1 {
		t.Fatalf("node %d leads", leader+1)
	}
}

// A static quorum (controller.quorum.voters, kraft.version 0) refuses
// voter changes with UNSUPPORTED_VERSION, as Kafka's does, and keeps its
// voters; a request without a directory id is INVALID_REQUEST before that.
func TestStaticQuorumRefusesVoterChanges(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.ListenerName = "CONTROLLER" })
	cl := tc.client()
	registerUnfenced(t, cl, 3)
	_, addr := tc.addObserver(4)
	registerController(t, cl, 4, addr)
	add := addVoter(t, cl, 4, [16]byte{4}, addr, time.Second)
	if add.ErrorCode != kerr.UnsupportedVersion.Code || add.ErrorMessage == nil ||
		*add.ErrorMessage != "Cluster doesn't support adding voter because the kraft.version feature is 0" {
		t.Errorf("AddRaftVoter on a static quorum: error %d %v", add.ErrorCode, add.ErrorMessage)
	}
	remove := removeVoter(t, cl, 1, [16]byte{1})
	if remove.ErrorCode != kerr.UnsupportedVersion.Code || remove.ErrorMessage == nil ||
		*remove.ErrorMessage != "Cluster doesn't support removing voter because the kraft.version feature is 0" {
		t.Errorf("RemoveRaftVoter on a static quorum: error %d %v", remove.ErrorCode, remove.ErrorMessage)
	}
	if r := removeVoter(t, cl, 1, [16]byte{}); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("RemoveRaftVoter without a directory id: error %d", r.ErrorCode)
	}
	if got := voterSet(tc.ctl(tc.active())); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("voters after refused changes: %v", got)
	}
}

// A voter that registers another CONTROLLER endpoint than raft knows it at
// is reached there from then on, in a static quorum as in a dynamic one,
// unless the endpoint is a wildcard address no other node can dial.
func TestRegistrationMovesAVoter(t *testing.T) {
	for _, dynamic := range []bool{false, true} {
		setup := func(c *Config) { c.ListenerName = "CONTROLLER" }
		if dynamic {
			setup = dynamicQuorum
		}
		tc := startCluster(t, 3, setup)
		cl := tc.client()
		leader := tc.ctl(tc.active())
		id := int32(tc.active()+1)%3 + 1 // a follower
		before := leader.Voters()[id]
		registerController(t, cl, id, "0.0.0.0:19093")
		if got := leader.Voters()[id]; got != before {
			t.Errorf("dynamic %v: voter %d registered at 0.0.0.0:19093 moved from %s to %s", dynamic, id, before, got)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		moved := ln.Addr().String()
		ln.Close()
		registerController(t, cl, id, moved)
		if got := leader.Voters()[id]; got != moved {
			t.Errorf("dynamic %v: voter %d registered at %s is at %s", dynamic, id, moved, got)
		}
	}
}

// A leader that removes itself steps down and another voter takes over;
// it keeps following the log.
func TestRemoveTheLeader(t *testing.T) {
	tc := startCluster(t, 3, dynamicQuorum)
	cl := tc.client()
	leader := tc.active()
	id := tc.nodes[leader].id
	if r := removeVoter(t, cl, id, formattedDir(id)); r.ErrorCode != 0 {
		t.Fatalf("removing the leader %d: error %d %v", id, r.ErrorCode, r.ErrorMessage)
	}
	eventually(t, "another leader", func() bool {
		next := tc.active()
		return next != leader
	})
	if got := voterSet(tc.ctl(tc.active())); slices.Contains(got, id) || len(got) != 2 {
		t.Fatalf("voters after removing the leader: %v", got)
	}
	registerUnfenced(t, cl, 3)
	if r := createTopic(t, cl, "t", 1, 1, nil); r.ErrorCode != 0 {
		t.Fatalf("the new leader does not answer: error %d", r.ErrorCode)
	}
	eventually(t, "the old leader to follow the log", func() bool { return tc.ctl(leader).Image().Topics["t"] != nil })
}

// A client that knows the controllers only by address, as from
// controller.quorum.bootstrap.servers (ids -1, -2, ...), reaches the
// active controller whichever address is its.
func TestClientFromBootstrapAddresses(t *testing.T) {
	tc := startCluster(t, 3, nil)
	leader := tc.active()
	for _, first := range []int{leader, (leader + 1) % 3} {
		addrs := map[int32]string{-1: tc.nodes[first].addr}
		for i, j := 0, int32(-2); i < 3; i++ {
			if i != first {
				addrs[j] = tc.nodes[i].addr
				j--
			}
		}
		cl := NewClient(addrs, "bootstrap-test", Security{})
		registerBroker(t, cl, 1, "")
		cl.Close()
	}
}

// UnregisterController, as Kafka 4.4's controller answers it: refused
// before metadata.version 4.4-IV2, for the active controller itself, and
// for an id with no registration; otherwise the registration is gone from
// the metadata.
func TestUnregisterController(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	self := tc.ctl(tc.active()).cfg.NodeID
	registerController(t, cl, 7, "127.0.0.1:9999")
	unregister := func(id int32) *kmsg.UnregisterControllerResponse {
		req := kmsg.NewPtrUnregisterControllerRequest()
		req.ControllerID = id
		return send[*kmsg.UnregisterControllerResponse](t, cl, req)
	}
	refused := func(id int32, code int16, msg string) {
		t.Helper()
		if r := unregister(id); r.ErrorCode != code || r.ErrorMessage == nil || *r.ErrorMessage != msg {
			t.Errorf("unregistering %d: %d %v, want %d %q", id, r.ErrorCode, r.ErrorMessage, code, msg)
		}
	}
	refused(7, kerr.UnsupportedVersion.Code, "The current MetadataVersion is too old to support controller unregistration.")
	uf := kmsg.NewPtrUpdateFeaturesRequest()
	uf.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "metadata.version", MaxVersionLevel: 33, UpgradeType: 1}}
	if r := send[*kmsg.UpdateFeaturesResponse](t, cl, uf); r.ErrorCode != 0 {
		t.Fatalf("metadata.version to 4.4-IV2: %+v", r)
	}
	refused(self, kerr.InvalidRequest.Code, "Controller cannot unregister itself while it is active.")
	refused(8, 137, "Controller ID 8 is not currently registered.")
	if r := unregister(7); r.ErrorCode != 0 {
		t.Fatalf("unregistering 7: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if _, ok := tc.ctl(tc.active()).Image().Controllers[7]; ok {
		t.Fatal("controller 7 still registered")
	}
	refused(7, 137, "Controller ID 7 is not currently registered.")
}
