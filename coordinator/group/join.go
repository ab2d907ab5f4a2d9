package group

import (
	"crypto/rand"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup handles a JoinGroup request. respond is called exactly once:
// at once for errors and for members that need no rebalance, otherwise
// when the rebalance's join phase completes.
func (c *Coordinator) JoinGroup(req *kmsg.JoinGroupRequest, clientID, clientHost string, respond func(*kmsg.JoinGroupResponse)) {
	j := joinRequest{req: req, clientID: clientID, clientHost: clientHost, respond: respond}
	if req.Group == "" {
		j.fail(errInvalidGroupID, req.MemberID)
		return
	}
	// The request's bytes belong to the connection's read buffer; keep copies.
	req.Protocols = cloneProtocols(req.Protocols)
	j.session = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if j.session < c.cfg.MinSessionTimeout || j.session > c.cfg.MaxSessionTimeout {
		j.fail(errInvalidSessionTimeout, req.MemberID)
		return
	}
	j.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 {
		j.rebalance = j.session // v0 has no rebalance timeout: Kafka uses the session timeout
	}
	acquire := c.acquireForMember
	if req.MemberID == "" {
		acquire = func(id string) (*classicGroup, int16) { return c.acquire(id, true) }
	}
	g, code := acquire(req.Group)
	if code != 0 {
		j.fail(code, req.MemberID)
		return
	}
	if g.streams != nil && len(g.streams.members) == 0 {
		// An empty streams group becomes a classic group, as in Kafka.
		g.streams.delay.stop()
		g.streams = nil
		c.persistOrLog(g) // tombstones for its records
		c.logger.Info("converted the empty streams group to a classic group", "group", g.id)
	}
	if g.share != nil || g.streams != nil {
		// Kafka's classicGroupJoin: a share or non-empty streams group
		// takes no JoinGroup.
		j.fail(errInconsistentProtocol, "")
		g.mu.Unlock()
		return
	}
	if g.consumer != nil {
		// A consumer group with members takes classic members in
		// (migration.go); an empty one becomes classic.
		if !g.consumerEmpty() {
			c.classicJoinToConsumer(g, &j)
			g.mu.Unlock()
			return
		}
		g.consumer = nil
		c.persistOrLog(g) // tombstones for its records
	}
	switch {
	case !c.acceptsJoin(g, req.MemberID):
		c.refuseJoin(g, &j)
	case req.MemberID == "":
		c.joinNewMember(g, &j)
	default:
		c.joinExistingMember(g, &j)
	}
	unused := g.unused()
	g.mu.Unlock()
	if unused {
		c.removeIfUnused(g) // a refused first join leaves nothing behind
	}
}

type joinRequest struct {
	req                  *kmsg.JoinGroupRequest
	clientID, clientHost string
	session, rebalance   time.Duration
	respond              func(*kmsg.JoinGroupResponse)
}

// acceptsJoin applies group.max.size as Kafka's acceptJoiningMember does.
func (c *Coordinator) acceptsJoin(g *classicGroup, memberID string) bool {
	m := g.members[memberID]
	switch g.state {
	case PreparingRebalance:
		return (m != nil && m.awaitingJoin != nil) || g.awaiting < c.cfg.MaxSize
	case CompletingRebalance, Stable:
		return m != nil || len(g.members) < c.cfg.MaxSize
	}
	return true
}

// refuseJoin answers GROUP_MAX_SIZE_REACHED and, as Kafka does, removes the
// member: in a rebalance of a full group, the last members to rejoin are
// out, static ones too (a static member that does not rejoin stays).
func (c *Coordinator) refuseJoin(g *classicGroup, j *joinRequest) {
	id := j.req.MemberID
	if m := g.members[id]; m != nil {
		g.remove(m) // it has no parked JoinGroup, or it would be accepted
	}
	if slot, ok := g.pending[id]; ok {
		slot.stop()
		delete(g.pending, id)
	}
	j.fail(errGroupMaxSizeReached, "")
}

func (c *Coordinator) joinNewMember(g *classicGroup, j *joinRequest) {
	req := j.req
	switch {
	case g.state == Dead:
		j.fail(errCoordinatorNotAvail, "")
		return
	case !g.supports(req.ProtocolType, req.Protocols):
		j.fail(errInconsistentProtocol, "")
		return
	}
	prefix := j.clientID
	if req.InstanceID != nil {
		prefix = *req.InstanceID
	}
	newID := prefix + "-" + randomUUID()
	if req.InstanceID != nil {
		if old, ok := g.static[*req.InstanceID]; ok {
			c.replaceStaticMember(g, j, g.members[old], newID)
			return
		}
		c.addMemberAndRebalance(g, j, newID)
		return
	}
	if req.Version >= 4 {
		// KIP-394: hand out the id and wait for the member to come back
		// with it; it must within its session timeout.
		slot := &timerSlot{}
		g.pending[newID] = slot
		c.after(g, slot, j.session, func() { c.expirePending(g, newID) })
		j.fail(errMemberIDRequired, newID)
		return
	}
	c.addMemberAndRebalance(g, j, newID)
}

func (j *joinRequest) fail(code int16, memberID string) {
	resp := j.req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode, resp.MemberID, resp.Generation = code, memberID, -1
	j.respond(resp)
}

func (c *Coordinator) joinExistingMember(g *classicGroup, j *joinRequest) {
	req := j.req
	id := req.MemberID
	switch {
	case g.state == Dead:
		j.fail(errCoordinatorNotAvail, id)
		return
	case !g.supports(req.ProtocolType, req.Protocols):
		j.fail(errInconsistentProtocol, id)
		return
	}
	if slot, ok := g.pending[id]; ok {
		slot.stop()
		delete(g.pending, id)
		c.addMemberAndRebalance(g, j, id)
		return
	}
	if code := g.validateMember(id, req.InstanceID); code != 0 {
		j.fail(code, id)
		return
	}
	m := g.members[id]
	switch g.state {
	case PreparingRebalance:
		c.updateMemberAndRebalance(g, m, j)
	case CompletingRebalance:
		if m.sameProtocols(req.Protocols) {
			// The member lost the join response: give it again.
			j.respond(c.joinResponse(g, m, req.Version, g.leader == id, false))
		} else {
			c.updateMemberAndRebalance(g, m, j)
		}
	case Stable:
		if g.leader == id || !m.sameProtocols(req.Protocols) {
			// A leader's rejoin asks for a new assignment (say, topics changed).
			c.updateMemberAndRebalance(g, m, j)
		} else {
			j.respond(c.joinResponse(g, m, req.Version, false, false))
		}
	default:
		j.fail(errUnknownMemberID, id)
	}
}

// joinResponse is the successful JoinGroup answer for m in the current
// generation; the leader's lists the members with their metadata for the
// chosen protocol.
func (c *Coordinator) joinResponse(g *classicGroup, m *member, version int16, withMembers, skipAssignment bool) *kmsg.JoinGroupResponse {
	resp := &kmsg.JoinGroupResponse{Version: version}
	resp.Generation = g.generation
	resp.MemberID = m.id
	resp.LeaderID = g.leader
	resp.SkipAssignment = skipAssignment
	if g.protocolType != "" {
		pt := g.protocolType
		resp.ProtocolType = &pt
	}
	if g.protocol != "" {
		p := g.protocol
		resp.Protocol = &p
	}
	if withMembers {
		for _, o := range g.sortedMembers() {
			resp.Members = append(resp.Members, kmsg.JoinGroupResponseMember{
				MemberID: o.id, InstanceID: o.instanceID, ProtocolMetadata: o.metadataFor(g.protocol),
			})
		}
	}
	return resp
}

func (c *Coordinator) addMemberAndRebalance(g *classicGroup, j *joinRequest, id string) {
	m := &member{
		id: id, instanceID: j.req.InstanceID, clientID: j.clientID, clientHost: j.clientHost,
		rebalanceTimeout: j.rebalance, sessionTimeout: j.session,
		protocolType: j.req.ProtocolType, protocols: j.req.Protocols,
		awaitingJoin: j.respond, awaitingJoinVer: j.req.Version, isNew: true,
	}
	if g.state == PreparingRebalance && g.delayRemaining >= 0 {
		g.newMemberJoined = true // extends the initial delay
	}
	g.add(m)
	// A new member cannot heartbeat before its JoinGroup is answered; if
	// the rebalance stalls, it is dropped after the new-member timeout.
	c.armHeartbeat(g, m, c.cfg.NewMemberJoinTimeout)
	c.maybeRebalance(g)
}

func (c *Coordinator) updateMemberAndRebalance(g *classicGroup, m *member, j *joinRequest) {
	c.updateMember(g, m, j)
	c.maybeRebalance(g)
}

func (c *Coordinator) updateMember(g *classicGroup, m *member, j *joinRequest) {
	g.setProtocols(m, j.req.Protocols)
	m.rebalanceTimeout, m.sessionTimeout = j.rebalance, j.session
	if m.awaitingJoin == nil {
		g.awaiting++
	} else {
		// A second JoinGroup from the same member replaces the first,
		// which Kafka answers with this error.
		old := m.awaitingJoin
		old(c.errorJoin(m.awaitingJoinVer, errRebalanceInProgress, m.id))
	}
	m.awaitingJoin, m.awaitingJoinVer = j.respond, j.req.Version
}

func (c *Coordinator) errorJoin(version int16, code int16, memberID string) *kmsg.JoinGroupResponse {
	resp := &kmsg.JoinGroupResponse{Version: version, ErrorCode: code, MemberID: memberID, Generation: -1}
	return resp
}

// replaceStaticMember handles a static member rejoining with an unknown
// member id: the old incarnation is fenced and the new id takes its place.
func (c *Coordinator) replaceStaticMember(g *classicGroup, j *joinRequest, old *member, newID string) {
	// Answer whatever the old incarnation had parked.
	if old.awaitingJoin != nil {
		old.awaitingJoin(c.errorJoin(old.awaitingJoinVer, errFencedInstanceID, old.id))
	}
	if old.awaitingSync != nil {
		old.awaitingSync(&kmsg.SyncGroupResponse{ErrorCode: errFencedInstanceID})
		old.awaitingSync = nil
	}
	wasLeader := g.leader == old.id
	oldProtocol := g.protocol
	delete(g.members, old.id)
	delete(g.pendingSync, old.id)
	old.heartbeat.stop()
	m := *old
	m.id = newID
	m.heartbeat = timerSlot{}
	m.awaitingJoin, m.awaitingJoinVer = j.respond, j.req.Version
	if old.awaitingJoin == nil {
		g.awaiting++
	}
	m.clientID, m.clientHost = j.clientID, j.clientHost
	g.members[newID] = &m
	g.static[*m.instanceID] = newID
	if wasLeader {
		g.leader = newID
	}
	g.setProtocols(&m, j.req.Protocols)
	m.rebalanceTimeout, m.sessionTimeout = j.rebalance, j.session
	c.armHeartbeat(g, &m, m.sessionTimeout)

	switch g.state {
	case Stable:
		if g.selectProtocol() == oldProtocol {
			// Nothing the assignment depends on changed: persist the new
			// member id and hand back the current generation.
			m.awaitingJoin = nil
			g.awaiting--
			if err := c.storeGroup(g); err != nil {
				// Revert, as Kafka does, so the old incarnation stays valid.
				g.setProtocols(&m, old.protocols)
				m.heartbeat.stop()
				delete(g.members, newID)
				old.heartbeat = timerSlot{}
				g.members[old.id] = old
				g.static[*old.instanceID] = old.id
				if wasLeader {
					g.leader = old.id
				}
				c.armHeartbeat(g, old, old.sessionTimeout)
				j.fail(appendErrorCode(err), "")
				return
			}
			isLeader := g.leader == newID
			if j.req.Version >= 9 {
				j.respond(c.joinResponse(g, &m, j.req.Version, isLeader, isLeader))
			} else {
				resp := c.joinResponse(g, &m, j.req.Version, false, false)
				if wasLeader {
					resp.LeaderID = old.id // before v9 the leader must not reassign
				}
				j.respond(resp)
			}
			return
		}
		c.maybeRebalance(g)
	case CompletingRebalance:
		// The leader may have computed an assignment for the old id.
		c.prepareRebalance(g)
	default:
		c.maybeCompleteJoin(g)
	}
}

// maybeRebalance starts a rebalance if the group can, or else (already
// preparing) completes the join phase if everyone is in.
func (c *Coordinator) maybeRebalance(g *classicGroup) {
	if g.canRebalance() {
		c.prepareRebalance(g)
	} else {
		c.maybeCompleteJoin(g)
	}
}

func (c *Coordinator) prepareRebalance(g *classicGroup) {
	if g.state == CompletingRebalance {
		// Members waiting for an assignment must rejoin instead.
		for _, m := range g.members {
			m.assignment = nil
			if m.awaitingSync != nil {
				m.awaitingSync(&kmsg.SyncGroupResponse{ErrorCode: errRebalanceInProgress})
				m.awaitingSync = nil
			}
		}
	}
	g.syncTimer.stop()
	clear(g.pendingSync)
	initial := g.state == Empty
	g.transition(PreparingRebalance, c.clock.Now())
	if initial {
		// The first rebalance of an empty group waits for more members.
		g.delayRemaining = max(g.rebalanceTimeout()-c.cfg.InitialRebalanceDelay, 0)
		g.newMemberJoined = false
		c.after(g, &g.joinTimer, c.cfg.InitialRebalanceDelay, func() { c.initialDelayExpired(g) })
		return
	}
	g.delayRemaining = -1
	c.after(g, &g.joinTimer, g.rebalanceTimeout(), func() { c.completeJoin(g) })
	c.maybeCompleteJoin(g)
}

func (c *Coordinator) initialDelayExpired(g *classicGroup) {
	if g.newMemberJoined && g.delayRemaining > 0 {
		g.newMemberJoined = false
		delay := min(c.cfg.InitialRebalanceDelay, g.delayRemaining)
		g.delayRemaining -= delay
		c.after(g, &g.joinTimer, delay, func() { c.initialDelayExpired(g) })
		return
	}
	c.completeJoin(g)
}

// maybeCompleteJoin ends the join phase early once every member is in,
// except during the initial delay, which always runs out.
func (c *Coordinator) maybeCompleteJoin(g *classicGroup) {
	if g.state == PreparingRebalance && g.allJoined() && g.delayRemaining < 0 {
		c.completeJoin(g)
	}
}

// completeJoin ends the join phase: dynamic members that did not rejoin
// are removed, the generation moves on and every parked JoinGroup is
// answered.
func (c *Coordinator) completeJoin(g *classicGroup) {
	if g.state != PreparingRebalance {
		return
	}
	g.joinTimer.stop()
	g.delayRemaining = -1
	// Static members that did not rejoin stay: they may be restarting, and
	// come back with their instance id (as in Kafka).
	for _, m := range g.sortedMembers() {
		if m.awaitingJoin == nil && m.instanceID == nil {
			c.logger.Info("removing member that did not rejoin", "group", g.id, "member", m.id)
			g.remove(m)
		}
	}
	if !g.electJoinedLeader() && len(g.members) > 0 {
		// Only static members that did not rejoin are left: wait for them
		// (their session timeouts remove the ones that never come back).
		c.logger.Info("no member rejoined, waiting another rebalance timeout", "group", g.id)
		c.after(g, &g.joinTimer, g.rebalanceTimeout(), func() { c.completeJoin(g) })
		return
	}
	g.generation++
	now := c.clock.Now()
	if len(g.members) == 0 {
		g.protocol = ""
		g.subscribed = g.computeSubscribed()
		g.transition(Empty, now)
		if err := c.storeGroup(g); err != nil {
			c.logger.Warn("storing empty group failed", "group", g.id, "err", err)
		}
		return
	}
	g.protocol = g.selectProtocol()
	g.subscribed = g.computeSubscribed()
	g.transition(CompletingRebalance, now)
	for _, m := range g.sortedMembers() {
		if respond := m.awaitingJoin; respond != nil {
			m.awaitingJoin = nil
			respond(c.joinResponse(g, m, m.awaitingJoinVer, m.id == g.leader, false))
		}
		m.isNew = false
		c.armHeartbeat(g, m, m.sessionTimeout)
		g.pendingSync[m.id] = true
	}
	g.awaiting = 0
	// Members that never SyncGroup are removed after the rebalance timeout.
	c.after(g, &g.syncTimer, g.rebalanceTimeout(), func() { c.syncExpired(g) })
}

func (c *Coordinator) syncExpired(g *classicGroup) {
	if (g.state != CompletingRebalance && g.state != Stable) || len(g.pendingSync) == 0 {
		return
	}
	for id := range g.pendingSync {
		if m := g.members[id]; m != nil {
			c.logger.Info("removing member that did not sync", "group", g.id, "member", id)
			g.remove(m)
		}
	}
	clear(g.pendingSync)
	c.afterMemberRemoved(g)
}

// armHeartbeat (re)starts m's session timer.
func (c *Coordinator) armHeartbeat(g *classicGroup, m *member, d time.Duration) {
	c.after(g, &m.heartbeat, d, func() { c.sessionExpired(g, m) })
}

func (c *Coordinator) sessionExpired(g *classicGroup, m *member) {
	if g.members[m.id] != m {
		return
	}
	if m.awaitingJoin != nil && !m.isNew {
		// Members parked in JoinGroup are alive until the join completes.
		c.armHeartbeat(g, m, m.sessionTimeout)
		return
	}
	if m.awaitingSync != nil {
		c.armHeartbeat(g, m, m.sessionTimeout)
		return
	}
	c.logger.Info("member session expired", "group", g.id, "member", m.id)
	if m.awaitingJoin != nil {
		m.awaitingJoin(c.errorJoin(m.awaitingJoinVer, errUnknownMemberID, m.id))
	}
	g.remove(m)
	c.afterMemberRemoved(g)
}

func (c *Coordinator) expirePending(g *classicGroup, id string) {
	delete(g.pending, id)
	c.maybeCompleteJoin(g)
}

// afterMemberRemoved moves the group on once a member is gone: a new
// rebalance from Stable or CompletingRebalance, or maybe the end of the
// current join phase.
func (c *Coordinator) afterMemberRemoved(g *classicGroup) {
	switch g.state {
	case Stable, CompletingRebalance:
		c.prepareRebalance(g)
	case PreparingRebalance:
		c.maybeCompleteJoin(g)
	}
}

func randomUUID() string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}

func cloneProtocols(ps []kmsg.JoinGroupRequestProtocol) []kmsg.JoinGroupRequestProtocol {
	out := make([]kmsg.JoinGroupRequestProtocol, len(ps))
	for i, p := range ps {
		out[i] = kmsg.JoinGroupRequestProtocol{Name: p.Name, Metadata: append([]byte{}, p.Metadata...)}
	}
	return out
}
