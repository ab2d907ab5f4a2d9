package controller

import (
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/gregor-broker/gregor/internal/features"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Upgrading a static quorum to a dynamic one (kraft.version 0 to 1), as
// Kafka 4.1 does. A static quorum's voters are only node ids and
// addresses (controller.quorum.voters); a dynamic quorum records each
// voter's directory id and endpoints, which AddRaftVoter and
// RemoveRaftVoter need. Every voter therefore tells each new leader who
// it is (UpdateRaftVoter: its directory id, its CONTROLLER endpoints, the
// kraft.version levels it supports; broker/controller_registration.go
// sends it), and at kraft.version 0 the active controller keeps what it
// was told in memory. UpdateFeatures raising kraft.version to 1 is
// refused until every voter has told it and supports level 1; then the
// voters are recorded with their directory ids (Controller records)
// together with the new level, in one batch. At kraft.version 1 a voter
// sends UpdateRaftVoter only when its recorded directory id or endpoints
// differ from its own; the leader checks it, and ControllerRegistration
// records the endpoints (and moves raft to a new one, voters.go).
// kraft.version never goes back to 0.

// reportedVoter is what a voter told the active controller in
// UpdateRaftVoter.
type reportedVoter struct {
	directoryID [16]byte
	endpoints   []Endpoint
	maxVersion  int16 // the highest kraft.version it supports
}

// VoterUpdate is the UpdateRaftVoter this node owes the leader it follows,
// given its directory id and CONTROLLER endpoints, with the raft term it
// is for (one leader per term), or nil when it owes none: it is not a
// voter, knows no leader, or, at kraft.version 1, its recorded entry
// already matches. At kraft.version 0 a voter owes every leader one.
func (c *Controller) VoterUpdate(directoryID [16]byte, endpoints []Endpoint) (*kmsg.UpdateRaftVoterRequest, uint64) {
	if _, voter := c.Voters()[c.cfg.NodeID]; !voter {
		return nil, 0
	}
	if _, ok := c.LeaderID(); !ok {
		return nil, 0
	}
	img := c.Image()
	if features.Level(img.Features, features.KRaftVersion) >= 1 {
		if rc := img.Controllers[c.cfg.NodeID]; rc != nil && rc.DirectoryID == directoryID && sameAddresses(rc.Endpoints, endpoints) {
			return nil, 0
		}
	}
	term := c.raft.CurrentTerm()
	req := kmsg.NewPtrUpdateRaftVoterRequest()
	if img.ClusterID != "" {
		req.ClusterID = kmsg.StringPtr(img.ClusterID)
	}
	req.CurrentLeaderEpoch = int32(term)
	req.VoterID, req.VoterDirectoryID = c.cfg.NodeID, directoryID
	for _, e := range endpoints {
		req.Listeners = append(req.Listeners, kmsg.UpdateRaftVoterRequestListener{Name: e.Listener, Host: e.Host, Port: uint16(e.Port)})
	}
	kraft := features.Served(features.KRaftVersion)
	req.KRaftVersionFeature.MinSupportedVersion, req.KRaftVersionFeature.MaxSupportedVersion = kraft.Min, kraft.Max
	return req, term
}

// StaleVote returns the directory id this node's id votes with in a
// dynamic quorum when that is not directoryID, the node's own: the node
// came back with another metadata dir (a new disk). KRaft takes such a
// node for an observer, its id's vote for another replica's, which
// RemoveRaftVoter must name before the node can be added again.
func (c *Controller) StaleVote(directoryID [16]byte) ([16]byte, bool) {
	if _, voter := c.Voters()[c.cfg.NodeID]; !voter {
		return [16]byte{}, false
	}
	recorded, known := c.votingDirectory()
	if !known || recorded == directoryID {
		return [16]byte{}, false
	}
	return recorded, true
}

// sameAddresses reports whether two endpoint lists name the same
// listeners at the same hosts and ports (UpdateRaftVoter carries no
// security protocol).
func sameAddresses(a, b []Endpoint) bool {
	return slices.EqualFunc(a, b, func(x, y Endpoint) bool {
		return x.Listener == y.Listener && x.Host == y.Host && x.Port == y.Port
	})
}

// updateRaftVoter handles UpdateRaftVoter with KRaft's checks, in its
// order; the response names this node as the leader.
func (c *Controller) updateRaftVoter(req *kmsg.UpdateRaftVoterRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
	term := c.raft.CurrentTerm()
	resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = c.cfg.NodeID, int32(term)
	if host, port, err := net.SplitHostPort(c.Voters()[c.cfg.NodeID]); err == nil {
		p, _ := strconv.Atoi(port)
		resp.CurrentLeader.Host, resp.CurrentLeader.Port = host, int32(p)
	}
	resp.ErrorCode = c.takeVoterUpdate(req, term)
	return resp
}

func (c *Controller) takeVoterUpdate(req *kmsg.UpdateRaftVoterRequest, term uint64) int16 {
	img := c.Image()
	var endpoints []Endpoint
	for _, l := range req.Listeners {
		endpoints = append(endpoints, Endpoint{Listener: l.Name, Host: l.Host, Port: int32(l.Port)})
	}
	_, hasAddr := c.listenerAddress(endpoints)
	supported := req.KRaftVersionFeature
	level := features.Level(img.Features, features.KRaftVersion)
	switch {
	case req.ClusterID != nil && *req.ClusterID != img.ClusterID:
		return kerr.InconsistentClusterID.Code
	case int64(req.CurrentLeaderEpoch) < int64(term):
		return kerr.FencedLeaderEpoch.Code
	case int64(req.CurrentLeaderEpoch) > int64(term):
		return kerr.UnknownLeaderEpoch.Code
	case req.VoterDirectoryID == [16]byte{} || !hasAddr:
		return kerr.InvalidRequest.Code
	case supported.MinSupportedVersion < 0 || supported.MaxSupportedVersion < supported.MinSupportedVersion:
		return kerr.InvalidRequest.Code
	}
	if !c.voterChange.TryLock() {
		return kerr.RequestTimedOut.Code
	}
	defer c.voterChange.Unlock()
	if level < supported.MinSupportedVersion || level > supported.MaxSupportedVersion {
		return kerr.InvalidRequest.Code
	}
	servers, err := c.servers()
	if err != nil {
		return kerr.NotController.Code
	}
	if !slices.Contains(voterIDs(servers), req.VoterID) {
		return kerr.VoterNotFound.Code
	}
	if level >= 1 {
		if rc := img.Controllers[req.VoterID]; rc == nil || rc.DirectoryID != req.VoterDirectoryID {
			return kerr.VoterNotFound.Code
		}
		return 0
	}
	c.reported[req.VoterID] = reportedVoter{directoryID: req.VoterDirectoryID, endpoints: endpoints,
		maxVersion: supported.MaxSupportedVersion}
	return 0
}

// upgradeKRaftRecords are the records that make a static quorum dynamic:
// every voter with the directory id and endpoints it reported, or, when
// one has not reported or does not support kraft.version 1, Kafka's
// refusal.
func (c *Controller) upgradeKRaftRecords() ([]Record, int16, string) {
	servers, err := c.servers()
	if err != nil {
		return nil, kerr.NotController.Code, err.Error()
	}
	var recs []Record
	for _, id := range voterIDs(servers) {
		r, ok := c.reported[id]
		if !ok || r.maxVersion < 1 {
			return nil, kerr.InvalidUpdateVersion.Code, features.Failed(fmt.Sprintf(
				"Invalid upgrade of %s to KRAFT_VERSION_1 because not all of the voters support it", features.KRaftVersion))
		}
		rc := RegisteredController{ID: id, Endpoints: r.endpoints, DirectoryID: r.directoryID}
		if old := c.Image().Controllers[id]; old != nil {
			rc.IncarnationID, rc.Endpoints = old.IncarnationID, old.Endpoints
		}
		recs = append(recs, Record{Controller: &rc})
	}
	return recs, 0, ""
}
