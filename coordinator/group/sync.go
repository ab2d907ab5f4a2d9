package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup handles a SyncGroup request. respond is called exactly once:
// at once, or for members of a generation still completing, when the
// leader's assignment has been stored.
func (c *Coordinator) SyncGroup(req *kmsg.SyncGroupRequest, respond func(*kmsg.SyncGroupResponse)) {
	fail := func(code int16) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = code
		respond(resp)
	}
	g, code := c.acquireForMember(req.Group)
	if code != 0 {
		fail(code)
		return
	}
	defer g.mu.Unlock()
	if g.share != nil || g.streams != nil {
		fail(errUnknownMemberID) // Kafka's classicGroupSync for a share or streams group
		return
	}
	if g.consumer != nil {
		if g.consumerEmpty() {
			fail(errUnknownMemberID)
			return
		}
		respond(c.classicSyncToConsumer(g, req))
		return
	}
	if code := c.validateSync(g, req); code != 0 {
		fail(code)
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		fail(errUnknownMemberID)
	case PreparingRebalance:
		fail(errRebalanceInProgress)
	case CompletingRebalance:
		m.awaitingSync = func(r *kmsg.SyncGroupResponse) {
			r.Version = req.Version
			respond(r)
		}
		c.removePendingSync(g, m.id)
		if m.id != g.leader {
			return
		}
		assignments := map[string][]byte{}
		for _, a := range req.GroupAssignment {
			assignments[a.MemberID] = append([]byte{}, a.MemberAssignment...) // the request's buffer is reused
		}
		for _, o := range g.members {
			o.assignment = assignments[o.id]
			if o.assignment == nil {
				o.assignment = []byte{}
			}
		}
		generation := g.generation
		if err := c.storeGroup(g); err != nil {
			c.logger.Warn("storing group assignment failed", "group", g.id, "err", err)
			if g.state == CompletingRebalance && g.generation == generation {
				c.propagate(g, appendErrorCode(err))
				c.prepareRebalance(g)
			}
			return
		}
		c.propagate(g, 0)
		g.transition(Stable, c.clock.Now())
	case Stable:
		c.removePendingSync(g, m.id)
		resp := c.syncResponse(g, m, 0)
		resp.Version = req.Version
		respond(resp)
	default:
		fail(errCoordinatorNotAvail)
	}
}

// validateSync is Kafka's validateSyncGroup.
func (c *Coordinator) validateSync(g *classicGroup, req *kmsg.SyncGroupRequest) int16 {
	if g.state == Dead {
		return errCoordinatorNotAvail
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return errIllegalGeneration
	}
	if inconsistent(req.ProtocolType, g.protocolType) || inconsistent(req.Protocol, g.protocol) {
		return errInconsistentProtocol
	}
	return 0
}

// inconsistent: a protocol type or name given in a request differs from the group's.
func inconsistent(asked *string, group string) bool {
	return asked != nil && group != "" && *asked != group
}

func (c *Coordinator) removePendingSync(g *classicGroup, id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		g.syncTimer.stop()
	}
}

// propagate answers every parked SyncGroup with its member's assignment,
// or with an error.
func (c *Coordinator) propagate(g *classicGroup, code int16) {
	for _, m := range g.members {
		if m.awaitingSync == nil {
			continue
		}
		respond := m.awaitingSync
		m.awaitingSync = nil
		respond(c.syncResponse(g, m, code))
		c.armHeartbeat(g, m, m.sessionTimeout)
	}
}

func (c *Coordinator) syncResponse(g *classicGroup, m *member, code int16) *kmsg.SyncGroupResponse {
	resp := &kmsg.SyncGroupResponse{ErrorCode: code}
	if code == 0 {
		resp.MemberAssignment = m.assignment
		pt, p := g.protocolType, g.protocol
		resp.ProtocolType, resp.Protocol = &pt, &p
	}
	return resp
}

// Heartbeat handles a Heartbeat request: it keeps the member's session
// alive and tells it whether a rebalance is under way.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	g, code := c.acquireForMember(req.Group)
	if code == errLoadInProgress {
		// Kafka answers heartbeats blindly while the group loads.
		return resp
	}
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	defer g.mu.Unlock()
	if g.share != nil || g.streams != nil {
		resp.ErrorCode = errUnknownMemberID // Kafka: "Group g not found."
		return resp
	}
	if g.consumer != nil {
		resp.ErrorCode = c.classicHeartbeatToConsumer(g, req)
		return resp
	}
	switch {
	case g.state == Dead:
		resp.ErrorCode = errCoordinatorNotAvail
		return resp
	case g.validateMember(req.MemberID, req.InstanceID) != 0:
		resp.ErrorCode = g.validateMember(req.MemberID, req.InstanceID)
		return resp
	case req.Generation != g.generation:
		resp.ErrorCode = errIllegalGeneration
		return resp
	}
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		resp.ErrorCode = errUnknownMemberID
	case PreparingRebalance:
		c.armHeartbeat(g, m, m.sessionTimeout)
		resp.ErrorCode = errRebalanceInProgress
	default: // CompletingRebalance and Stable
		c.armHeartbeat(g, m, m.sessionTimeout)
	}
	return resp
}

// LeaveGroup removes members: one by member id before v3, a batch of
// member ids or group instance ids (admin removal of static members) from v3.
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	// A group that is not found (or not one LeaveGroup serves) is
	// UNKNOWN_MEMBER_ID for each member, as Kafka's GroupCoordinatorService
	// answers it; before v3 that is the top-level code.
	notFound := func() *kmsg.LeaveGroupResponse {
		for _, l := range leaving {
			resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{MemberID: l.MemberID, InstanceID: l.InstanceID, ErrorCode: errUnknownMemberID})
		}
		if req.Version < 3 {
			resp.ErrorCode, resp.Members = errUnknownMemberID, nil
		}
		return resp
	}
	g, code := c.acquireForMember(req.Group)
	if code == errUnknownMemberID {
		return notFound()
	}
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	defer g.mu.Unlock()
	switch {
	case g.share != nil, g.streams != nil:
		return notFound() // Kafka: "Group g not found."
	case g.state == Dead:
		resp.ErrorCode = errCoordinatorNotAvail
		return resp
	}
	if g.consumer != nil {
		resp.Members = c.leaveConsumerGroup(g, leaving)
	} else {
		removed := 0
		for _, l := range leaving {
			code := c.leave(g, l)
			if code == 0 {
				removed++
			}
			resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{MemberID: l.MemberID, InstanceID: l.InstanceID, ErrorCode: code})
		}
		if removed > 0 {
			c.afterMemberRemoved(g)
		}
	}
	if req.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
	return resp
}

func (c *Coordinator) leave(g *classicGroup, l kmsg.LeaveGroupRequestMember) int16 {
	if l.MemberID == "" {
		if l.InstanceID == nil {
			return errUnknownMemberID
		}
		id, ok := g.static[*l.InstanceID]
		if !ok {
			return errUnknownMemberID
		}
		c.removeMember(g, g.members[id])
		return 0
	}
	if slot, ok := g.pending[l.MemberID]; ok {
		slot.stop()
		delete(g.pending, l.MemberID)
		return 0
	}
	if code := g.validateMember(l.MemberID, l.InstanceID); code != 0 {
		return code
	}
	c.removeMember(g, g.members[l.MemberID])
	return 0
}

// answerParked answers every parked JoinGroup and SyncGroup of the group
// with an error, for a group this coordinator stops serving as it is.
func (c *Coordinator) answerParked(g *classicGroup, code int16) {
	for _, m := range g.members {
		if m.awaitingJoin != nil {
			m.awaitingJoin(c.errorJoin(m.awaitingJoinVer, code, m.id))
			m.awaitingJoin = nil
		}
		if m.awaitingSync != nil {
			m.awaitingSync(&kmsg.SyncGroupResponse{ErrorCode: code})
			m.awaitingSync = nil
		}
	}
}

// removeMember takes a leaving member out, answering what it had parked.
func (c *Coordinator) removeMember(g *classicGroup, m *member) {
	if m.awaitingJoin != nil {
		m.awaitingJoin(c.errorJoin(m.awaitingJoinVer, errUnknownMemberID, m.id))
	}
	if m.awaitingSync != nil {
		m.awaitingSync(&kmsg.SyncGroupResponse{ErrorCode: errUnknownMemberID})
		m.awaitingSync = nil
	}
	g.remove(m)
}
