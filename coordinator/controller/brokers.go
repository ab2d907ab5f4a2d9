package controller

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// register handles BrokerRegistration. The same incarnation re-registering
// keeps its epoch. A new incarnation is refused with
// DUPLICATE_BROKER_REGISTRATION while the old one holds a session (it is
// unfenced and heartbeated within broker.session.timeout.ms) and the new
// one registers none of the old one's log dirs: two processes given one
// node.id must not take turns. Kafka refuses a restart too until the old
// session ends; one that brings back a log dir of the old incarnation is
// that broker restarted after a crash (the dir's lock keeps two processes
// out of one dir), and Gregor lets it register at once rather than leave
// its partitions leaderless for the rest of the session.
// Otherwise it replaces the old one (whose epoch then no longer matches,
// fencing it) with a new epoch, the raft index of the registration, and
// starts fenced: leadership moves away from the old incarnation as for any
// fenced broker, and if the new one did not find its clean-shutdown epoch,
// it also leaves every ELR.
func (c *Controller) register(req *kmsg.BrokerRegistrationRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	img := c.Image()
	if req.ClusterID != "" && req.ClusterID != img.ClusterID {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp
	}
	if old := img.Brokers[req.BrokerID]; old != nil && old.IncarnationID == req.IncarnationID {
		c.lastSeen[req.BrokerID] = time.Now()
		resp.BrokerEpoch = old.Epoch
		c.addObserver(old)
		return resp
	} else if old != nil && !old.Fenced && time.Since(c.lastSeen[req.BrokerID]) <= c.cfg.SessionTimeout &&
		!slices.ContainsFunc(req.LogDirs, func(d [16]byte) bool { return slices.Contains(old.LogDirs, d) }) {
		resp.ErrorCode = kerr.DuplicateBrokerRegistration.Code
		return resp
	}
	rb := &RegisterBroker{ID: req.BrokerID, IncarnationID: req.IncarnationID, LogDirs: req.LogDirs}
	if req.Rack != nil {
		rb.Rack = *req.Rack
	}
	for _, l := range req.Listeners {
		rb.Endpoints = append(rb.Endpoints, Endpoint{Listener: l.Name, Host: l.Host,
			Port: int32(l.Port), SecurityProtocol: l.SecurityProtocol})
	}
	recs := []Record{{RegisterBroker: rb}}
	// KIP-966: a broker that shut down cleanly wrote its epoch last, and
	// sends it back; any other previous epoch means its log may have lost
	// an unflushed tail, so it is no longer eligible to lead from the ELR.
	old := img.Brokers[req.BrokerID]
	unclean := elrEnabled(img) && old != nil && req.PreviousBrokerEpoch != old.Epoch
	if unclean {
		c.log.Info("controller: broker restarted after an unclean shutdown", "broker", req.BrokerID,
			"previous.epoch", req.PreviousBrokerEpoch, "registered.epoch", old.Epoch)
	}
	if img.usable(req.BrokerID) || unclean {
		recs = append(recs, c.removeBrokerRecords(img, req.BrokerID, unclean)...)
	}
	index, err := c.propose(recs)
	if err != nil {
		return c.proposeFailed(req, err)
	}
	c.lastSeen[req.BrokerID] = time.Now()
	resp.BrokerEpoch = int64(index)
	c.addObserver(c.Image().Brokers[req.BrokerID])
	c.log.Info("controller: broker registered", "broker", req.BrokerID, "epoch", index)
	return resp
}

// heartbeat handles BrokerHeartbeat with Kafka's broker states: fenced,
// unfenced, controlled shutdown, shut down now. Only state changes write
// records; the heartbeat time itself is kept in memory.
func (c *Controller) heartbeat(req *kmsg.BrokerHeartbeatRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	img := c.Image()
	b := img.Brokers[req.BrokerID]
	if b == nil || b.Epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	c.lastSeen[b.ID] = time.Now()
	c.metadataOffsets[b.ID] = req.CurrentMetadataOffset
	var recs []Record
	fenced, shutdownNow, startsShutdown := b.Fenced, false, false
	switch {
	case b.Fenced:
		if req.WantShutdown {
			shutdownNow = true
		} else if !req.WantFence && req.CurrentMetadataOffset >= b.Epoch {
			fenced = false
			recs = append(recs, Record{BrokerState: &BrokerState{ID: b.ID}})
			recs = append(recs, c.leaderlessRecords(img, func(id int32) bool { return id == b.ID || img.usable(id) })...)
		}
	case b.ShuttingDown:
		if !img.LeadsAny(b.ID) && c.othersCaughtUp(img, b.ID) {
			fenced, shutdownNow = true, true
			recs = c.fenceRecords(img, b.ID)
			delete(c.shutdownOffsets, b.ID)
		}
	default:
		switch {
		case req.WantFence:
			fenced, shutdownNow = true, req.WantShutdown
			recs = c.fenceRecords(img, b.ID)
		case req.WantShutdown && img.LeadsAny(b.ID):
			startsShutdown = true
			recs = append(recs, Record{BrokerState: &BrokerState{ID: b.ID, ShuttingDown: true}})
			recs = append(recs, c.removeBrokerRecords(img, b.ID, false)...)
		case req.WantShutdown:
			fenced, shutdownNow = true, true
			recs = c.fenceRecords(img, b.ID)
		}
	}
	if len(req.OfflineLogDirs) > 0 {
		// Judged on the image as the state change above leaves it, so
		// both may change the same partition in one batch.
		after := img
		if len(recs) > 0 {
			after = img.apply(img.Offset, recs)
		}
		recs = append(recs, c.offlineDirRecords(after, after.Brokers[b.ID], req.OfflineLogDirs)...)
	}
	recs = append(recs, cordonedDirRecords(img, b, req.CordonedLogDirs)...)
	index, err := c.propose(recs)
	if err != nil {
		return c.proposeFailed(req, err)
	}
	if startsShutdown {
		c.shutdownOffsets[b.ID] = int64(index)
	}
	resp.IsCaughtUp = req.CurrentMetadataOffset >= b.Epoch
	resp.IsFenced = fenced
	resp.ShouldShutdown = shutdownNow
	return resp
}

// othersCaughtUp reports whether every active broker (unfenced, not
// shutting down) has heartbeated a metadata offset at or past the records
// that started broker id's controlled shutdown, which Kafka's
// BrokerHeartbeatManager waits for (lowestActiveOffset) before it lets
// the broker stop: the new leaders know they lead before it is gone. A
// shutdown this controller did not start (it became active since) counts
// from the current metadata.
func (c *Controller) othersCaughtUp(img *Image, id int32) bool {
	at, ok := c.shutdownOffsets[id]
	if !ok {
		at = int64(img.Offset)
		c.shutdownOffsets[id] = at
	}
	for _, b := range img.Brokers {
		if b.ID == id || b.Fenced || b.ShuttingDown {
			continue
		}
		if offset, ok := c.metadataOffsets[b.ID]; !ok || offset < at {
			return false
		}
	}
	return true
}

// unregisterBroker removes a broker's registration, as Kafka's
// UnregisterBroker does for a decommissioned broker: the broker leaves
// every ISR and ELR and its leaderships move; its replicas stay assigned
// (offline) until reassigned. A live broker so removed is refused its
// next heartbeat and registers again.
// A broker-only node also stops being a raft non-voter.
func (c *Controller) unregisterBroker(req *kmsg.UnregisterBrokerRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	img := c.Image()
	if img.Brokers[req.BrokerID] == nil {
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Broker ID %d is not currently registered", req.BrokerID))
		return resp
	}
	id := req.BrokerID
	recs := append(c.removeBrokerRecords(img, id, true), Record{UnregisterBroker: &id})
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	delete(c.lastSeen, id)
	c.removeObserver(id)
	return resp
}

// fenceRecords fences a broker: its flag, then its leaderships and ISR
// memberships.
func (c *Controller) fenceRecords(img *Image, id int32) []Record {
	recs := []Record{{BrokerState: &BrokerState{ID: id, Fenced: true}}}
	return append(recs, c.removeBrokerRecords(img, id, false)...)
}

// expireSessions fences every unfenced broker whose last heartbeat is more
// than the session timeout ago.
func (c *Controller) expireSessions(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active || ctx.Err() != nil {
		return
	}
	now := time.Now()
	img := c.Image()
	for _, id := range img.SortedBrokerIDs() {
		if img.Brokers[id].Fenced {
			continue
		}
		last, ok := c.lastSeen[id]
		if !ok {
			c.lastSeen[id] = now
			continue
		}
		if now.Sub(last) <= c.cfg.SessionTimeout {
			continue
		}
		c.log.Info("controller: fencing broker after missed heartbeats", "broker", id,
			"since", now.Sub(last).Round(time.Millisecond))
		if _, err := c.propose(c.fenceRecords(img, id)); err != nil {
			c.log.Warn("controller: fencing broker", "broker", id, "err", err)
			return
		}
		img = c.Image()
	}
}

// removeObserver takes an unregistered broker's node out of the raft
// configuration when it is a non-voter; voters stay. A failure is logged.
func (c *Controller) removeObserver(id int32) {
	if c.isController(id) {
		return
	}
	if err := c.raft.RemoveServer(serverID(id), 0, 10*time.Second).Error(); err != nil {
		c.log.Warn("controller: removing an observer from raft", "broker", id, "err", err)
	}
}

// addObserver makes a registered broker that is not a voter a raft
// non-voter at its ObserverListener endpoint, so that its node follows
// the metadata log. A failure is logged; the next registration retries.
func (c *Controller) addObserver(b *Broker) {
	if b == nil {
		return
	}
	if c.isController(b.ID) {
		return
	}
	addr := ""
	for _, e := range b.Endpoints {
		if c.cfg.ObserverListener == "" || e.Listener == c.cfg.ObserverListener {
			addr = net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
			break
		}
	}
	if addr == "" {
		c.log.Warn("controller: broker has no endpoint for the observer listener", "broker", b.ID,
			"listener", c.cfg.ObserverListener)
		return
	}
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		c.log.Warn("controller: reading raft configuration", "err", err)
		return
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == serverID(b.ID) && string(s.Address) == addr {
			return
		}
	}
	if err := c.raft.AddNonvoter(serverID(b.ID), raft.ServerAddress(addr), 0, applyTimeout).Error(); err != nil {
		c.log.Warn("controller: adding observer", "broker", b.ID, "addr", addr, "err", err)
		return
	}
	c.log.Info("controller: observer added", "broker", b.ID, "addr", addr)
}
