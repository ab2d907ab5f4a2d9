package broker

import (
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A node with the controller role registers its CONTROLLER listener with
// the active controller (ControllerRegistration), as KRaft's controllers
// do. For a node that is not a voter yet this is how it joins: the active
// controller makes it a raft observer at that listener, and
// kafka-metadata-quorum add-controller can then make it a voter
// (coordinator/controller/voters.go). A controller-only node also writes
// the meta.properties that add-controller reads its directory id from,
// once it knows the cluster id. A voter then tells every new leader that
// directory id (UpdateRaftVoter), which upgrading a static quorum to a
// dynamic one needs (coordinator/controller/kraft_upgrade.go).

// registerControllerLoop sends ControllerRegistration until it is
// accepted or the node stops.
func (cl *cluster) registerControllerLoop() {
	b := cl.b
	req := newest(kmsg.NewPtrControllerRegistrationRequest())
	req.ControllerID, req.IncarnationID = b.cfg.NodeID, cl.incarnation
	for _, e := range cl.controllerEndpoints() {
		req.Listeners = append(req.Listeners, kmsg.ControllerRegistrationRequestListener{Name: e.Listener, Host: e.Host, Port: uint16(e.Port)})
	}
	started, warned := time.Now(), false
	for {
		if !warned && len(b.cfg.Cluster.Voters) == 0 && time.Since(started) > 10*time.Second {
			// Nobody bootstraps a quorum of controllers that all
			// expect to be added to one.
			b.logger.Warn("no active controller has taken this controller's registration through controller.quorum.bootstrap.servers yet; the first controllers of a new cluster need kafka-storage format --initial-controllers or controller.quorum.voters",
				"bootstrap.servers", b.cfg.Cluster.Bootstrap)
			warned = true
		}
		cl.client.AddVoters(cl.ctl.Voters())
		ctx, cancel := cl.sendContext(5 * time.Second)
		resp, err := cl.client.Send(ctx, req)
		cancel()
		if err == nil && resp.(*kmsg.ControllerRegistrationResponse).ErrorCode == 0 {
			break
		}
		if err == nil {
			b.logger.Warn("controller registration refused", "err", errorMessageText(resp.(*kmsg.ControllerRegistrationResponse).ErrorCode))
		}
		select {
		case <-cl.stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	if b.cfg.hasRole("broker") && b.cfg.metadataDirIsALogDir() {
		return // the broker's log dirs have their meta.properties
	}
	for {
		changed := cl.ctl.Changed()
		if id := cl.ctl.Image().ClusterID; id != "" {
			if _, err := logstore.EnsureMetaProperties(b.cfg.metadataDir(), id, b.cfg.NodeID); err != nil {
				b.logger.Error("writing the controller's meta.properties", "err", err)
			}
			return
		}
		select {
		case <-cl.stop:
			return
		case <-changed:
		}
	}
}

// controllerEndpoints are this node's CONTROLLER listeners as it
// advertises them.
func (cl *cluster) controllerEndpoints() []controller.Endpoint {
	var out []controller.Endpoint
	for _, l := range cl.b.listeners {
		if l.controller {
			host, port := cl.b.cfg.advertised(l.name, l.ln.Addr().(*net.TCPAddr))
			out = append(out, controller.Endpoint{Listener: l.name, Host: host, Port: int32(port)})
		}
	}
	return out
}

// updateVoterLoop tells each leader this voter follows its directory id,
// CONTROLLER endpoints and supported kraft.version levels
// (UpdateRaftVoter), as a KRaft voter does, from the moment its metadata
// dir's meta.properties has a directory id: a static quorum's leader
// upgrades to kraft.version 1 only once every voter has
// (coordinator/controller/kraft_upgrade.go). With
// controller.quorum.auto.join.enable, a controller that is not a voter
// asks to become one instead (autoJoin). A controller whose id votes
// with another directory id (it came back with a new disk) is no voter
// to KRaft: auto-join first removes that vote, as KRaft's observer does;
// without it the operator's remove-controller and add-controller do.
func (cl *cluster) updateVoterLoop() {
	var dirID [16]byte
	var told uint64       // the raft term whose leader was told
	var joinRefused int16 // the last refusal of an auto-join, logged once
	var staleLogged bool
	for {
		select {
		case <-cl.stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
		if dirID == [16]byte{} {
			if dirID = cl.metadataDirectoryID(); dirID == [16]byte{} {
				continue
			}
		}
		oldDir, stale := cl.ctl.StaleVote(dirID)
		switch {
		case stale && cl.b.cfg.Cluster.AutoJoin:
			joinRefused = cl.leaveStaleVote(oldDir, joinRefused)
			continue
		case stale:
			if !staleLogged {
				cl.b.logger.Warn("this controller's id votes with another directory id: remove that voter (kafka-metadata-quorum remove-controller) and add this one (add-controller), or set controller.quorum.auto.join.enable",
					"directory.id", logstore.UUIDString(dirID), "voting.directory.id", logstore.UUIDString(oldDir))
				staleLogged = true
			}
			continue
		}
		if _, voter := cl.ctl.Voters()[cl.b.cfg.NodeID]; !voter {
			if cl.b.cfg.Cluster.AutoJoin {
				joinRefused = cl.autoJoin(dirID, joinRefused)
			}
			continue
		}
		req, term := cl.ctl.VoterUpdate(dirID, cl.controllerEndpoints())
		if req == nil || term == told {
			continue
		}
		ctx, cancel := cl.sendContext(5 * time.Second)
		resp, err := cl.client.Send(ctx, req)
		cancel()
		if err != nil {
			continue
		}
		switch code := resp.(*kmsg.UpdateRaftVoterResponse).ErrorCode; code {
		case 0, kerr.UnsupportedVersion.Code:
			told = term
		case kerr.FencedLeaderEpoch.Code, kerr.UnknownLeaderEpoch.Code, kerr.RequestTimedOut.Code:
			// The leader changed or is busy: asked again at the next tick.
		default:
			cl.b.logger.Warn("the active controller refused this voter's UpdateRaftVoter", "error", errorMessageText(code))
			told = term
		}
	}
}

// metadataDirectoryID is the directory id of this node's metadata dir's
// meta.properties, zero until the file has one; once read it is kept.
func (cl *cluster) metadataDirectoryID() [16]byte {
	if id := cl.metadataDirID.Load(); id != nil {
		return *id
	}
	id, _ := logstore.DirectoryID(cl.b.cfg.metadataDir())
	if id != [16]byte{} {
		cl.metadataDirID.Store(&id)
	}
	return id
}

// autoJoin asks the active controller to make this controller a voter
// with its directory id and CONTROLLER endpoints (AddRaftVoter), as a
// KRaft observer does with controller.quorum.auto.join.enable; it is asked
// again at every tick while this node is not a voter (one removed joins
// again, as in Kafka). A refusal is logged when it differs from the last
// one, whose code it returns; a static quorum refuses every time
// (UNSUPPORTED_VERSION), a lagging observer until it has caught up.
func (cl *cluster) autoJoin(dirID [16]byte, lastRefusal int16) int16 {
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.ClusterID = kmsg.StringPtr(cl.ctl.Image().ClusterID)
	req.VoterID, req.VoterDirectoryID, req.TimeoutMillis = cl.b.cfg.NodeID, dirID, 5000
	for _, e := range cl.controllerEndpoints() {
		req.Listeners = append(req.Listeners, kmsg.AddRaftVoterRequestListener{Name: e.Listener, Host: e.Host, Port: uint16(e.Port)})
	}
	return cl.sendVoterChange(req, lastRefusal, "joined the controller quorum as a voter (controller.quorum.auto.join.enable)", dirID)
}

// leaveStaleVote asks the active controller to remove the vote this
// node's id holds with its former directory id (RemoveRaftVoter), so that
// autoJoin can add it back with its own.
func (cl *cluster) leaveStaleVote(oldDir [16]byte, lastRefusal int16) int16 {
	req := kmsg.NewPtrRemoveRaftVoterRequest()
	req.ClusterID = kmsg.StringPtr(cl.ctl.Image().ClusterID)
	req.VoterID, req.VoterDirectoryID = cl.b.cfg.NodeID, oldDir
	return cl.sendVoterChange(req, lastRefusal, "removed this controller's vote with its former directory id (controller.quorum.auto.join.enable)", oldDir)
}

// sendVoterChange sends an auto-join's AddRaftVoter or RemoveRaftVoter and
// logs its outcome: done, or a refusal that differs from the last one,
// whose code it returns.
func (cl *cluster) sendVoterChange(req kmsg.Request, lastRefusal int16, done string, dirID [16]byte) int16 {
	ctx, cancel := cl.sendContext(10 * time.Second)
	resp, err := cl.client.Send(ctx, req)
	cancel()
	if err != nil {
		return lastRefusal
	}
	var code int16
	var message *string
	switch r := resp.(type) {
	case *kmsg.AddRaftVoterResponse:
		code, message = r.ErrorCode, r.ErrorMessage
	case *kmsg.RemoveRaftVoterResponse:
		code, message = r.ErrorCode, r.ErrorMessage
	}
	switch {
	case code == 0:
		cl.b.logger.Info(done, "directory.id", logstore.UUIDString(dirID))
	case code != lastRefusal && code != kerr.NotController.Code:
		msg := errorMessageText(code)
		if message != nil {
			msg = *message
		}
		cl.b.logger.Warn("the active controller refused this controller's auto-join", "error", msg)
	}
	return code
}

// formattedQuorum returns the voters that bootstrap this node's quorum:
// controller.quorum.voters, or, without them, the voters kafka-storage
// format --initial-controllers (or --standalone) wrote into the first log
// dir when this node is one of them, each at its endpoint of the
// CONTROLLER listener, with their directory ids to record.
func formattedQuorum(cfg Config, formatted []logstore.FormattedVoter) (map[int32]string, []controller.RegisteredController) {
	if len(cfg.Cluster.Voters) > 0 || !cfg.hasRole("controller") {
		return cfg.Cluster.Voters, nil
	}
	if !slices.ContainsFunc(formatted, func(v logstore.FormattedVoter) bool { return v.ID == cfg.NodeID }) {
		return nil, nil // a controller to be added (--no-initial-controllers)
	}
	voters := map[int32]string{}
	var initial []controller.RegisteredController
	for _, v := range formatted {
		rc := controller.RegisteredController{ID: v.ID, DirectoryID: v.DirectoryID}
		for _, e := range v.Endpoints {
			rc.Endpoints = append(rc.Endpoints, controller.Endpoint{Listener: e.Name, Host: e.Host, Port: int32(e.Port)})
			if _, ok := voters[v.ID]; !ok || slices.Contains(cfg.ControllerListenerNames, e.Name) {
				voters[v.ID] = net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
			}
		}
		initial = append(initial, rc)
	}
	return voters, initial
}
