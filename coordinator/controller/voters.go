package controller

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/internal/features"
	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Voter changes (KIP-853). A node with the controller role that is not a
// voter starts as an observer: it sends ControllerRegistration with its
// CONTROLLER listener to the active controller, which records it
// (Image.Controllers) and makes it a raft non-voter at that listener, so
// it follows the metadata log. AddRaftVoter (kafka-metadata-quorum
// add-controller) then makes it a voter once it has caught up, and
// RemoveRaftVoter (remove-controller) takes a voter's vote away: the node
// stays an observer, as a removed KRaft voter does. The voters are raft's
// configuration, kept in the raft log; controller.quorum.voters, or the
// voters kafka-storage format --initial-controllers wrote, only bootstrap
// a new quorum.
//
// Only a dynamic quorum (kraft.version 1: its voters came from
// kafka-storage format --initial-controllers, each with a directory id)
// changes its voters; a static one (controller.quorum.voters,
// kraft.version 0, voters without directory ids) answers UNSUPPORTED_VERSION,
// as Kafka does, until it is upgraded (kraft_upgrade.go). One voter change runs at a time; another arriving
// meanwhile gets REQUEST_TIMED_OUT, as from KRaft's leader. A formatted
// voter has the directory id the format gave it, an added voter the one it
// was added with, and RemoveRaftVoter must name the same.

// RegisteredController is a controller's ControllerRegistration, with the
// directory id it votes with.
type RegisteredController struct {
	ID            int32
	IncarnationID [16]byte
	Endpoints     []Endpoint
	DirectoryID   [16]byte
}

// voterChangeWait is how long a voter change waits at most, when the
// request gives no timeout.
const voterChangeWait = 30 * time.Second

// registerController handles ControllerRegistration: it records the
// controller's listeners and makes a node that raft does not know yet a
// non-voter at its CONTROLLER listener; one raft knows at another address
// is reached at the new one.
func (c *Controller) registerController(req *kmsg.ControllerRegistrationRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ControllerRegistrationResponse)
	rc := RegisteredController{ID: req.ControllerID, IncarnationID: req.IncarnationID}
	for _, l := range req.Listeners {
		rc.Endpoints = append(rc.Endpoints, Endpoint{Listener: l.Name, Host: l.Host,
			Port: int32(l.Port), SecurityProtocol: l.SecurityProtocol})
	}
	addr, ok := c.listenerAddress(rc.Endpoints)
	if !ok {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("no endpoint for the controller listener %s", c.cfg.ListenerName))
		return resp
	}
	old := c.Image().Controllers[rc.ID]
	if old == nil || old.IncarnationID != rc.IncarnationID || !slices.Equal(old.Endpoints, rc.Endpoints) {
		if old != nil {
			rc.DirectoryID = old.DirectoryID
		}
		if _, err := c.propose([]Record{{Controller: &rc}}); err != nil {
			return c.proposeFailed(req, err)
		}
	}
	servers, err := c.servers()
	if err != nil {
		return c.proposeFailed(req, err)
	}
	switch i := slices.IndexFunc(servers, func(s raft.Server) bool { return s.ID == serverID(rc.ID) }); {
	case i < 0:
		if err := c.raft.AddNonvoter(serverID(rc.ID), raft.ServerAddress(addr), 0, applyTimeout).Error(); err != nil {
			return c.proposeFailed(req, err)
		}
		c.log.Info("controller: controller added as an observer", "node", rc.ID, "addr", addr)
	case string(servers[i].Address) != addr && routable(addr):
		// The controller came back on another CONTROLLER endpoint: raft
		// reaches it there from now on (AddNonvoter moves a voter and
		// keeps its vote). A dynamic KRaft quorum's voter set takes the
		// new endpoint from UpdateRaftVoter; in a static one the moved
		// voter fetches from the leader at once, from wherever it is,
		// while raft's leader has to send to it.
		if err := c.raft.AddNonvoter(serverID(rc.ID), raft.ServerAddress(addr), 0, applyTimeout).Error(); err != nil {
			return c.proposeFailed(req, err)
		}
		c.log.Info("controller: controller moved to another endpoint", "node", rc.ID, "from", servers[i].Address, "to", addr)
	}
	return resp
}

// addRaftVoter handles AddRaftVoter as KRaft's leader does: the node must
// not be a voter, must name an endpoint for the CONTROLLER listener and a
// directory id, and must catch up with the log within the request's
// timeout; then it becomes a voter. It runs outside c.mu, which it takes
// only to propose, so that heartbeats go on while it waits.
func (c *Controller) addRaftVoter(ctx context.Context, req *kmsg.AddRaftVoterRequest) *kmsg.AddRaftVoterResponse {
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	var endpoints []Endpoint
	for _, l := range req.Listeners {
		endpoints = append(endpoints, Endpoint{Listener: l.Name, Host: l.Host, Port: int32(l.Port)})
	}
	addr, hasAddr := c.listenerAddress(endpoints)
	invalid := ""
	switch {
	case req.VoterDirectoryID == [16]byte{}:
		invalid = "Add voter request didn't include a valid voter"
	case !hasAddr:
		invalid = "Add voter request didn't include the endpoint for the default listener " + c.cfg.ListenerName
	}
	resp.ErrorCode, resp.ErrorMessage = c.changeVoters(req.ClusterID, "adding", invalid, func() (int16, *string) {
		return c.addVoter(ctx, req, endpoints, addr)
	})
	return resp
}

// removeRaftVoter handles RemoveRaftVoter: the voter with that id and
// directory id loses its vote and stays an observer. A leader removing
// itself steps down once the change is committed.
func (c *Controller) removeRaftVoter(req *kmsg.RemoveRaftVoterRequest) *kmsg.RemoveRaftVoterResponse {
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	invalid := ""
	if req.VoterDirectoryID == [16]byte{} {
		invalid = "Remove voter request didn't include a valid voter"
	}
	resp.ErrorCode, resp.ErrorMessage = c.changeVoters(req.ClusterID, "removing", invalid, func() (int16, *string) { return c.removeVoter(req) })
	return resp
}

// changeVoters runs one voter change, after checking what every one
// needs, in KRaft's order: the same cluster id (none given is accepted),
// a valid request (invalid says why not), this node the active
// controller, a dynamic quorum, and no other change in progress.
func (c *Controller) changeVoters(clusterID *string, verb, invalid string, change func() (int16, *string)) (int16, *string) {
	if id := c.Image().ClusterID; clusterID != nil && *clusterID != id {
		return refuse(kerr.InconsistentClusterID, "The given id %q doesn't match the cluster id %q", *clusterID, id)
	}
	if invalid != "" {
		return refuse(kerr.InvalidRequest, "%s", invalid)
	}
	if !c.Active() {
		return refuse(kerr.NotController, "this controller is not the active controller")
	}
	if level := features.Level(c.Image().Features, features.KRaftVersion); level < 1 {
		return refuse(kerr.UnsupportedVersion, "Cluster doesn't support %s voter because the %s feature is %d", verb, features.KRaftVersion, level)
	}
	if !c.voterChange.TryLock() {
		return refuse(kerr.RequestTimedOut, "Request timed out waiting for leader to handle previous voter change request")
	}
	defer c.voterChange.Unlock()
	return change()
}

func refuse(err *kerr.Error, format string, args ...any) (int16, *string) {
	return err.Code, kmsg.StringPtr(fmt.Sprintf(format, args...))
}

// addVoter makes req's node a voter at addr, its CONTROLLER endpoint.
func (c *Controller) addVoter(ctx context.Context, req *kmsg.AddRaftVoterRequest, endpoints []Endpoint, addr string) (int16, *string) {
	servers, err := c.servers()
	if err != nil {
		return refuse(kerr.NotController, "%v", err)
	}
	i := slices.IndexFunc(servers, func(s raft.Server) bool { return s.ID == serverID(req.VoterID) })
	if i >= 0 && servers[i].Suffrage == raft.Voter {
		return refuse(kerr.DuplicateVoter, "The voter id %d is already part of the set of voters %v.", req.VoterID, voterIDs(servers))
	}
	if i >= 0 && c.Image().Controllers[req.VoterID] == nil {
		// A broker-only node following the log: KRaft's leader would only
		// reach out to the endpoint named, never disturb its fetches.
		return refuse(kerr.RequestTimedOut, "Aborted add voter operation for %d since it is not a controller: it follows the metadata log as a broker", req.VoterID)
	}
	var oldAddr raft.ServerAddress
	if i >= 0 {
		oldAddr = servers[i].Address
	}
	if oldAddr != raft.ServerAddress(addr) {
		if err := c.raft.AddNonvoter(serverID(req.VoterID), raft.ServerAddress(addr), 0, applyTimeout).Error(); err != nil {
			return refuse(kerr.NotController, "%v", err)
		}
	}
	wait := voterChangeWait
	if req.TimeoutMillis > 0 {
		wait = time.Duration(req.TimeoutMillis) * time.Millisecond
	}
	if !c.awaitCaughtUp(ctx, req.VoterID, raft.ServerAddress(addr), wait) {
		c.undoAddNonvoter(req.VoterID, oldAddr, raft.ServerAddress(addr))
		return refuse(kerr.RequestTimedOut, "Aborted add voter operation for %d since it is lagging behind", req.VoterID)
	}
	rc := RegisteredController{ID: req.VoterID, Endpoints: endpoints, DirectoryID: req.VoterDirectoryID}
	if old := c.Image().Controllers[req.VoterID]; old != nil {
		rc.IncarnationID = old.IncarnationID
	}
	c.mu.Lock()
	active := c.active
	if active {
		_, err = c.propose([]Record{{Controller: &rc}})
	}
	c.mu.Unlock()
	if !active || err != nil {
		return refuse(kerr.NotController, "the active controller changed")
	}
	if err := c.raft.AddVoter(serverID(req.VoterID), raft.ServerAddress(addr), 0, wait).Error(); err != nil {
		return refuse(kerr.RequestTimedOut, "adding voter %d: %v", req.VoterID, err)
	}
	c.log.Info("controller: voter added", "node", req.VoterID, "addr", addr)
	return 0, nil
}

// undoAddNonvoter takes back what addVoter did to raft's configuration for
// a voter-to-be that did not catch up at addr: raft stops sending to an
// address nobody answers, or sends to the one it had before.
func (c *Controller) undoAddNonvoter(id int32, oldAddr, addr raft.ServerAddress) {
	var err error
	switch {
	case oldAddr == addr:
		return
	case oldAddr == "":
		err = c.raft.RemoveServer(serverID(id), 0, applyTimeout).Error()
	default:
		err = c.raft.AddNonvoter(serverID(id), oldAddr, 0, applyTimeout).Error()
	}
	if err != nil {
		c.log.Warn("controller: undoing the change of a voter-to-be that did not catch up", "node", id, "err", err)
	}
}

func (c *Controller) removeVoter(req *kmsg.RemoveRaftVoterRequest) (int16, *string) {
	servers, err := c.servers()
	if err != nil {
		return refuse(kerr.NotController, "%v", err)
	}
	voters := voterIDs(servers)
	var dir [16]byte
	if rc := c.Image().Controllers[req.VoterID]; rc != nil {
		dir = rc.DirectoryID
	}
	if !slices.Contains(voters, req.VoterID) || dir != req.VoterDirectoryID || len(voters) == 1 {
		return refuse(kerr.VoterNotFound, "Cannot remove voter %d with directory id %s from the set of voters %v",
			req.VoterID, base64.RawURLEncoding.EncodeToString(req.VoterDirectoryID[:]), voters)
	}
	if err := c.raft.DemoteVoter(serverID(req.VoterID), 0, voterChangeWait).Error(); err != nil {
		return refuse(kerr.RequestTimedOut, "removing voter %d: %v", req.VoterID, err)
	}
	c.log.Info("controller: voter removed; it stays an observer", "node", req.VoterID)
	return 0, nil
}

// awaitCaughtUp waits until raft has replicated to node id at addr
// everything the leader had when it started waiting.
func (c *Controller) awaitCaughtUp(ctx context.Context, id int32, addr raft.ServerAddress, wait time.Duration) bool {
	target := int64(c.raft.LastIndex())
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if pr, ok := c.progress.progress(serverID(id), c.raft.CurrentTerm()); ok && pr.addr == addr && pr.endOffset >= target {
			return true
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		case <-c.closed:
			return false
		}
	}
}

// servers is raft's latest configuration.
func (c *Controller) servers() ([]raft.Server, error) {
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	return f.Configuration().Servers, nil
}

// Voters maps the current voters to their CONTROLLER listener addresses,
// from the raft configuration this node knows (nil before it knows one).
func (c *Controller) Voters() map[int32]string {
	servers, err := c.servers()
	if err != nil {
		return nil
	}
	var voters map[int32]string
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			if voters == nil {
				voters = map[int32]string{}
			}
			voters[int32(nodeID(s.ID))] = string(s.Address)
		}
	}
	return voters
}

// isController reports whether node id is a voter or a registered
// controller, which reaches raft on its CONTROLLER listener rather than
// as a broker-only observer does.
func (c *Controller) isController(id int32) bool {
	if _, ok := c.Image().Controllers[id]; ok {
		return true
	}
	servers, err := c.servers()
	return err == nil && slices.ContainsFunc(servers, func(s raft.Server) bool {
		return s.ID == serverID(id) && s.Suffrage == raft.Voter
	})
}

func voterIDs(servers []raft.Server) []int32 {
	var ids []int32
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			ids = append(ids, int32(nodeID(s.ID)))
		}
	}
	slices.Sort(ids)
	return ids
}

// routable reports whether other nodes can dial addr: not the wildcard a
// listener binds to when it is not advertised (0.0.0.0, ::), which would
// reach each dialer itself.
func routable(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsUnspecified()
}

// listenerAddress is the host:port of the endpoint of the CONTROLLER
// listener (the first endpoint when the listener has no name here).
func (c *Controller) listenerAddress(endpoints []Endpoint) (string, bool) {
	for _, e := range endpoints {
		if c.cfg.ListenerName == "" || e.Listener == c.cfg.ListenerName {
			return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), true
		}
	}
	return "", false
}

// unregisterController removes a controller's registration, as Kafka
// 4.4's QuorumController does for kafka-cluster unregister-controller and
// kafka-metadata-quorum remove-controller --unregister: never the active
// controller's own, only from metadata.version 4.4-IV2, and only one that
// is registered.
func (c *Controller) unregisterController(req *kmsg.UnregisterControllerRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.UnregisterControllerResponse)
	img := c.Image()
	refuse := func(code int16, msg string) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		return resp
	}
	switch id := req.ControllerID; {
	case id == c.cfg.NodeID:
		return refuse(kerr.InvalidRequest.Code, "Controller cannot unregister itself while it is active.")
	case features.Level(img.Features, features.MetadataVersion) < features.ControllerUnregistration:
		return refuse(kerr.UnsupportedVersion.Code, "The current MetadataVersion is too old to support controller unregistration.")
	case img.Controllers[id] == nil:
		return refuse(errControllerIDNotRegistered, fmt.Sprintf("Controller ID %d is not currently registered.", id))
	}
	id := req.ControllerID
	if _, err := c.propose([]Record{{UnregisterController: &id}}); err != nil {
		return c.proposeFailed(req, err)
	}
	c.log.Info("controller: controller unregistered", "controller", id)
	return resp
}

// errControllerIDNotRegistered is Kafka 4.4's CONTROLLER_ID_NOT_REGISTERED.
const errControllerIDNotRegistered int16 = 137
