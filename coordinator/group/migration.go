package group

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Online migration between the protocols, as Kafka's GroupMetadataManager
// does it under group.consumer.migration.policy (KIP-848):
//
//   - Upgrade: a ConsumerGroupHeartbeat joining a classic group that has
//     members (of the "consumer" protocol type) turns it into a consumer
//     group. Each classic member becomes a consumer-group member at the
//     group's generation, owning what its last SyncGroup gave it, which is
//     also its target, and revoking what its last JoinGroup said it owned
//     beyond that (a cooperative member may not have synced yet); then the
//     new member joins and the group epoch moves on as for any join.
//   - Classic members of a consumer group keep speaking JoinGroup,
//     SyncGroup, Heartbeat and LeaveGroup, and the coordinator translates:
//     a JoinGroup is the member's heartbeat with its subscription and owned
//     partitions, answered at once with its member epoch as the generation
//     (no leader: the coordinator assigns); SyncGroup hands it its current
//     assignment; Heartbeat answers REBALANCE_IN_PROGRESS whenever the
//     member must rejoin to move on (a newer group epoch, partitions to
//     revoke, or partitions it waited for now free). Their sessions use
//     their own session timeout; a member that does not rejoin, or sync,
//     within its rebalance timeout is fenced.
//   - Downgrade: when the last member of the consumer protocol leaves or is
//     fenced and classic members remain, the group becomes classic again,
//     Stable at the group epoch with each member's target assignment, and
//     a rebalance starts. So it does when that member is a static one
//     replaced by a classic incarnation of itself, which keeps its
//     predecessor's partitions; the rebalance then starts only if the new
//     incarnation subscribes to other topics.

// Migration policies: group.consumer.migration.policy.
const (
	MigrationDisabled      = "disabled"
	MigrationUpgrade       = "upgrade"
	MigrationDowngrade     = "downgrade"
	MigrationBidirectional = "bidirectional"
)

// MigrationPolicies lists the values group.consumer.migration.policy takes.
var MigrationPolicies = []string{MigrationDisabled, MigrationUpgrade, MigrationDowngrade, MigrationBidirectional}

func (cfg *Config) upgradeEnabled() bool {
	return cfg.MigrationPolicy == MigrationUpgrade || cfg.MigrationPolicy == MigrationBidirectional
}

func (cfg *Config) downgradeEnabled() bool {
	return cfg.MigrationPolicy == MigrationDowngrade || cfg.MigrationPolicy == MigrationBidirectional
}

// classicProtocol is what a consumer-group member speaking the classic
// protocol brought in its JoinGroup (Kafka's ClassicMemberMetadata).
type classicProtocol struct {
	session   time.Duration
	protocols []kmsg.JoinGroupRequestProtocol
	// joinDeadline and syncDeadline fence a member told to rejoin that
	// does not, and a member that joined and does not sync.
	joinDeadline, syncDeadline timerSlot
}

// protocolName is the protocol the member is answered with: its first.
func (p *classicProtocol) protocolName() string { return p.protocols[0].Name }

// sessionTimeout is the member's session: its own for a classic member,
// its group's consumer.session.timeout.ms otherwise.
func (m *consumerMember) sessionTimeout(group GroupConfig) time.Duration {
	if m.classic != nil {
		return m.classic.session
	}
	return group.ConsumerSessionTimeout
}

func (m *consumerMember) stopTimers() {
	m.session.stop()
	m.rebalance.stop()
	if m.classic != nil {
		m.classic.joinDeadline.stop()
		m.classic.syncDeadline.stop()
	}
}

// upgradable reports whether a ConsumerGroupHeartbeat may turn this
// classic group with members into a consumer group; code and msg are the
// refusal otherwise, with Kafka's messages (validateOnlineUpgrade), which
// the client's exception carries.
func (c *Coordinator) upgradable(g *classicGroup) (ok bool, code int16, msg string) {
	cannot := "Cannot upgrade classic group " + g.id + " to consumer group because "
	switch {
	case !c.cfg.upgradeEnabled():
		c.logger.Info("not upgrading classic group to a consumer group: online upgrade is disabled", "group", g.id)
		return false, errGroupIDNotFound, cannot + "online upgrade is disabled."
	case g.protocolType != "consumer":
		c.logger.Info("not upgrading classic group to a consumer group: it does not use the consumer protocol", "group", g.id, "protocolType", g.protocolType)
		return false, errGroupIDNotFound, cannot + "the group does not use the consumer embedded protocol."
	case len(g.members) > c.cfg.ConsumerMaxSize:
		return false, errGroupIDNotFound, cannot + "the group size exceeds the consumer group maximum size."
	case len(g.members) == c.cfg.ConsumerMaxSize:
		return false, errGroupMaxSizeReached, fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", c.cfg.ConsumerMaxSize)
	}
	return true, 0, ""
}

// upgradeToConsumer makes the classic group g a consumer group of the same
// members (see the top of this file). It refuses, changing nothing, when a
// member's subscription or assignment does not parse, or its assignment
// carries user data, as Kafka's ConsumerGroup.fromClassicGroup.
func (c *Coordinator) upgradeToConsumer(g *classicGroup, topics Topics) *heartbeatError {
	cg := newConsumerGroup()
	cg.epoch, cg.assignmentEpoch = g.generation, g.generation
	malformed := refuse(errGroupIDNotFound, "Cannot upgrade the classic group %s to consumer group because the embedded consumer protocol is malformed.", g.id)
	for _, old := range g.members {
		// Before its first rebalance ends a group has no protocol yet:
		// every protocol of a member carries the same subscription.
		metadata := old.metadataFor(g.protocol)
		if metadata == nil && len(old.protocols) > 0 {
			metadata = old.protocols[0].Metadata
		}
		var sub kmsg.ConsumerMemberMetadata
		if err := sub.ReadFrom(metadata); err != nil {
			return malformed
		}
		var given kmsg.ConsumerMemberAssignment
		if len(old.assignment) > 0 {
			if err := given.ReadFrom(old.assignment); err != nil {
				return malformed
			}
			if len(given.UserData) > 0 {
				// A custom assignor's user data would be lost (KAFKA-18134).
				return refuse(errGroupIDNotFound, "Cannot upgrade classic group %s to consumer group because an unsupported custom assignor is in use. "+
					"Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.", g.id)
			}
		}
		var assigned, held []topicPartitionID
		for _, t := range given.Topics {
			assigned = appendExisting(assigned, topics, t.Topic, t.Partitions)
		}
		for _, t := range sub.OwnedPartitions {
			held = appendExisting(held, topics, t.Topic, t.Partitions)
		}
		m := &consumerMember{
			id: old.id, instanceID: old.instanceID, rackID: sub.Rack,
			clientID: old.clientID, clientHost: old.clientHost,
			epoch: g.generation, previousEpoch: g.generation, state: memberStable,
			rebalanceTimeout: old.rebalanceTimeout,
			topics:           sortedUnique(sub.Topics),
			assigned:         assignmentOf(assigned), revoking: assignment{},
			since:   map[topicPartitionID]int32{},
			classic: &classicProtocol{session: old.sessionTimeout, protocols: old.protocols},
		}
		// A cooperative member may still hold partitions its last join
		// listed and the leader then gave to no one (it revokes them once
		// it syncs): they stay its, being revoked, until it rejoins
		// without them. Kafka trusts the assignment alone here, which can
		// hand such a partition to the joining member while it is held.
		var revoking []topicPartitionID
		for _, tp := range held {
			if !m.assigned.has(tp.topic, tp.partition) && !slices.Contains(revoking, tp) {
				revoking = append(revoking, tp)
			}
		}
		if len(revoking) > 0 {
			m.revoking, m.state = assignmentOf(revoking), memberUnrevokedPartitions
		}
		for _, tp := range append(assigned, revoking...) {
			m.since[tp] = m.epoch
		}
		cg.members[m.id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = m.id
		}
		cg.target[m.id] = assignmentOf(assigned)
	}
	cg.subscribed = subscriptionOf(cg, topics)
	c.dissolveClassic(g)
	g.becomeConsumerGroup()
	g.consumer = cg
	for _, m := range cg.members {
		c.holdMember(g, m)
		c.armConsumerSession(g, m)
		if m.state == memberUnrevokedPartitions {
			c.armRebalanceTimeout(g, m)
		}
	}
	c.logger.Info("classic group upgraded to a consumer group", "group", g.id, "members", len(cg.members), "epoch", cg.epoch)
	return nil
}

// appendExisting appends the partitions of a topic the cluster has.
func appendExisting(tps []topicPartitionID, topics Topics, topic string, partitions []int32) []topicPartitionID {
	id, n, ok := topics.Topic(topic)
	for _, p := range partitions {
		if tp := (topicPartitionID{id, p}); ok && p >= 0 && p < n && !slices.Contains(tps, tp) {
			tps = append(tps, tp)
		}
	}
	return tps
}

// dissolveClassic ends the classic side of a group that becomes a
// consumer group: parked JoinGroup and SyncGroup requests are told to
// rejoin, and every classic timer stops.
func (c *Coordinator) dissolveClassic(g *classicGroup) {
	c.answerParked(g, errRebalanceInProgress)
	for _, m := range g.members {
		m.heartbeat.stop()
	}
	g.joinTimer.stop()
	g.syncTimer.stop()
	g.delayRemaining = -1
	clear(g.members)
	clear(g.static)
	clear(g.supported)
	clear(g.pendingSync)
	g.awaiting = 0
	g.subscribed = nil
	g.transition(Empty, c.clock.Now())
}

// removeConsumerMember takes a member out of a consumer group because it
// left or was fenced: the group becomes classic again if only classic
// members remain and the policy allows it, else the member is fenced.
func (c *Coordinator) removeConsumerMember(g *classicGroup, m *consumerMember) {
	c.removeConsumerMembers(g, []*consumerMember{m})
}

// removeConsumerMembers takes members out of a consumer group together, as
// Kafka's consumerGroupFenceMembers: a downgrade when only classic members
// remain, else one bump of the group epoch.
func (c *Coordinator) removeConsumerMembers(g *classicGroup, leaving []*consumerMember) {
	if c.downgradable(g, leaving) {
		c.downgradeToClassic(g, leaving, true)
		return
	}
	c.fenceConsumerMembers(g, leaving)
}

// downgradable is Kafka's validateOnlineDowngradeWithFencedMembers: the
// leaving members are all the group's consumer-protocol members, and
// classic members remain.
func (c *Coordinator) downgradable(g *classicGroup, leaving []*consumerMember) bool {
	cg := g.consumer
	remaining := 0
	for _, m := range cg.members {
		if slices.Contains(leaving, m) != (m.classic == nil) {
			return false
		}
		if m.classic != nil {
			remaining++
		}
	}
	if remaining == 0 {
		return false
	}
	switch {
	case !c.cfg.downgradeEnabled():
		c.logger.Info("not downgrading consumer group to a classic group: online downgrade is disabled", "group", g.id)
		return false
	case remaining > c.cfg.MaxSize:
		c.logger.Info("not downgrading consumer group to a classic group: it has more members than group.max.size", "group", g.id)
		return false
	}
	return true
}

// downgradeToClassic makes the consumer group g, whose members but those
// leaving all speak the classic protocol, a classic group: Stable at the
// group epoch, each member holding its target assignment, and then
// rebalancing if asked to (Kafka's convertToClassicGroup: after members
// left, or a static member's replacement that changed the subscription).
func (c *Coordinator) downgradeToClassic(g *classicGroup, leaving []*consumerMember, rebalance bool) {
	cg := g.consumer
	names := cg.topicNames(c.topicImage())
	for _, m := range leaving {
		m.stopTimers()
	}
	ids := sortedKeys(cg.members)
	g.consumer = nil
	g.generation = cg.epoch
	g.protocolType = "consumer"
	g.protocol, g.leader = "", ""
	for _, id := range ids {
		cm := cg.members[id]
		if slices.Contains(leaving, cm) {
			continue
		}
		cm.stopTimers()
		g.add(&member{
			id: cm.id, instanceID: cm.instanceID, clientID: cm.clientID, clientHost: cm.clientHost,
			rebalanceTimeout: cm.rebalanceTimeout, sessionTimeout: cm.classic.session,
			protocolType: "consumer", protocols: cm.classic.protocols,
		})
	}
	g.protocol = g.selectProtocol()
	g.subscribed = g.computeSubscribed()
	for id, m := range g.members {
		m.assignment = encodeAssignment(cg.target[id], names, m.metadataFor(g.protocol))
		c.armHeartbeat(g, m, m.sessionTimeout)
	}
	g.transition(Stable, c.clock.Now())
	c.logger.Info("consumer group downgraded to a classic group", "group", g.id, "members", len(g.members), "generation", g.generation)
	if err := c.persistRecords(g); err != nil {
		c.logger.Warn("storing the downgraded group failed", "group", g.id, "err", err)
	}
	if err := c.storeGroup(g); err != nil {
		c.logger.Warn("storing the downgraded group failed", "group", g.id, "err", err)
	}
	if rebalance {
		c.prepareRebalance(g)
	}
}

// encodeAssignment is a ConsumerProtocolAssignment of a, in the version of
// the member's subscription metadata (as Kafka answers each member in the
// version it speaks).
func encodeAssignment(a assignment, names map[[16]byte]string, metadata []byte) []byte {
	out := kmsg.NewConsumerMemberAssignment()
	if len(metadata) >= 2 {
		out.Version = min(max(int16(binary.BigEndian.Uint16(metadata)), 0), 3)
	}
	for _, t := range sortedTopicIDs(a) {
		if name, ok := names[t]; ok {
			out.Topics = append(out.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: name, Partitions: slices.Clone(a[t])})
		}
	}
	sort.Slice(out.Topics, func(i, j int) bool { return out.Topics[i].Topic < out.Topics[j].Topic })
	return out.AppendTo(nil)
}

func sortedUnique(names []string) []string {
	out := slices.Clone(names)
	sort.Strings(out)
	return slices.Compact(out)
}

// supportsClassic is Kafka's ConsumerGroup.supportsClassicProtocols: a
// joining classic member must speak the consumer protocol type and share
// a protocol with every classic member already in.
func (cg *consumerGroup) supportsClassic(protocolType string, ps []kmsg.JoinGroupRequestProtocol) bool {
	if protocolType != "consumer" || len(ps) == 0 {
		return false
	}
	classic := 0
	supported := map[string]int{}
	for _, m := range cg.members {
		if m.classic == nil {
			continue
		}
		classic++
		for _, p := range m.classic.protocols {
			supported[p.Name]++
		}
	}
	for _, p := range ps {
		if supported[p.Name] == classic {
			return true
		}
	}
	return false
}

// classicJoinToConsumer serves a JoinGroup to a consumer group with
// members (Kafka's classicGroupJoinToConsumerGroup).
func (c *Coordinator) classicJoinToConsumer(g *classicGroup, j *joinRequest) {
	req := j.req
	cg := g.consumer
	topics := c.topicImage()
	if topics == nil {
		j.fail(errCoordinatorNotAvail, req.MemberID)
		return
	}
	memberID := req.MemberID
	unknown := memberID == ""
	if unknown {
		memberID = newMemberUUID()
	}
	if _, known := cg.members[memberID]; !known && len(cg.members) >= c.cfg.ConsumerMaxSize {
		j.fail(errGroupMaxSizeReached, req.MemberID)
		return
	}
	if !cg.supportsClassic(req.ProtocolType, req.Protocols) {
		j.fail(errInconsistentProtocol, req.MemberID)
		return
	}
	if unknown && req.InstanceID == nil && req.Version >= 4 {
		j.fail(errMemberIDRequired, memberID)
		return
	}
	var sub kmsg.ConsumerMemberMetadata
	if err := sub.ReadFrom(req.Protocols[0].Metadata); err != nil {
		j.fail(errInconsistentProtocol, req.MemberID)
		return
	}
	m, replaced, code := c.classicMemberToJoin(g, req, memberID, unknown)
	if code != 0 {
		j.fail(code, req.MemberID)
		return
	}
	downgrade := replaced != nil && c.downgradableByReplacement(g, replaced)
	topicNames := sortedUnique(sub.Topics)
	changed := m.fresh || !slices.Equal(topicNames, m.topics) || m.regex != ""
	m.fresh = false
	m.topics, m.regex, m.re = topicNames, "", nil
	if sub.Rack != nil {
		m.rackID = sub.Rack
	}
	m.instanceID = req.InstanceID
	m.rebalanceTimeout = j.rebalance
	m.clientID, m.clientHost = j.clientID, j.clientHost
	if m.classic == nil {
		m.classic = &classicProtocol{}
	}
	m.classic.session, m.classic.protocols = j.session, req.Protocols
	cg.members[m.id] = m
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
	owned := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, t := range sub.OwnedPartitions {
		if id, _, ok := topics.Topic(t.Topic); ok {
			owned = append(owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: t.Partitions})
		}
	}
	c.maybeBumpEpoch(g, topics, changed)
	if downgrade {
		// Kafka reconciles the new incarnation only when its
		// subscription is its predecessor's; otherwise the classic
		// group rebalances at once.
		if !changed {
			c.reconcile(g, m, owned)
		}
		c.downgradeToClassic(g, nil, changed)
		c.answerClassicJoin(j, m)
		return
	}
	c.reconcile(g, m, owned)
	c.armConsumerSession(g, m)
	m.classic.joinDeadline.stop()
	c.after(g, &m.classic.syncDeadline, m.rebalanceTimeout, func() {
		c.fenceClassicMember(g, m, "it did not sync within its rebalance timeout")
	})
	if err := c.persistRecords(g); err != nil {
		j.fail(appendErrorCode(err), req.MemberID)
		return
	}
	c.answerClassicJoin(j, m)
}

// answerClassicJoin answers a classic member's JoinGroup to a consumer
// group: its member epoch as the generation, its first protocol, no
// leader.
func (c *Coordinator) answerClassicJoin(j *joinRequest, m *consumerMember) {
	resp := j.req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.MemberID, resp.Generation = m.id, m.epoch
	pt, p := "consumer", m.classic.protocolName()
	resp.ProtocolType, resp.Protocol = &pt, &p
	j.respond(resp)
}

// downgradableByReplacement is Kafka's
// validateOnlineDowngradeWithReplacedMember: a classic incarnation has
// replaced the group's last consumer-protocol member. It is called between
// the two, the old incarnation gone and the new one not yet in.
func (c *Coordinator) downgradableByReplacement(g *classicGroup, replaced *consumerMember) bool {
	if replaced.classic != nil {
		return false
	}
	for _, m := range g.consumer.members {
		if m.id != replaced.id && m.classic == nil {
			return false
		}
	}
	switch {
	case !c.cfg.downgradeEnabled():
		c.logger.Info("not downgrading consumer group to a classic group: online downgrade is disabled", "group", g.id)
		return false
	case len(g.consumer.members)+1 > c.cfg.MaxSize: // the others and the new incarnation
		c.logger.Info("not downgrading consumer group to a classic group: it has more members than group.max.size", "group", g.id)
		return false
	}
	return true
}

// classicMemberToJoin finds or makes the member a classic JoinGroup
// names: a static member with no member id replaces the instance's
// previous incarnation, taking its place and partitions.
// replaced is the previous incarnation when one was replaced.
func (c *Coordinator) classicMemberToJoin(g *classicGroup, req *kmsg.JoinGroupRequest, memberID string, unknown bool) (m, replaced *consumerMember, code int16) {
	cg := g.consumer
	if req.InstanceID == nil {
		if m := cg.members[memberID]; m != nil {
			return m, nil, 0
		}
		c.logger.Info("classic member joins the consumer group", "group", g.id, "member", memberID)
		return &consumerMember{id: memberID, fresh: true, assigned: assignment{}, revoking: assignment{}}, nil, 0
	}
	instance := *req.InstanceID
	old := cg.members[cg.static[instance]]
	switch {
	case old == nil:
		c.logger.Info("classic static member joins the consumer group", "group", g.id, "member", memberID, "instance", instance)
		return &consumerMember{id: memberID, fresh: true, assigned: assignment{}, revoking: assignment{}}, nil, 0
	case !unknown && old.id != memberID:
		return nil, nil, errFencedInstanceID
	case !unknown:
		return old, nil, 0
	}
	c.logger.Info("classic static member rejoins the consumer group", "group", g.id, "member", memberID, "replaces", old.id, "instance", instance)
	return replaceStatic(cg, old, memberID), old, 0
}

// fenceClassicMember fences a classic member of a consumer group that
// missed a deadline, if it is still in the group.
func (c *Coordinator) fenceClassicMember(g *classicGroup, m *consumerMember, why string) {
	if g.consumer == nil || g.consumer.members[m.id] != m {
		return
	}
	c.logger.Info("consumer group member fenced: "+why, "group", g.id, "member", m.id)
	c.removeConsumerMember(g, m)
	c.persistOrLog(g)
}

// classicMember finds the classic member a SyncGroup, Heartbeat or
// LeaveGroup names (Kafka's validateConsumerGroupMember and
// throwIfMemberDoesNotUseClassicProtocol).
func (cg *consumerGroup) classicMember(memberID string, instanceID *string) (*consumerMember, int16) {
	var m *consumerMember
	if instanceID == nil {
		m = cg.members[memberID]
	} else {
		m = cg.members[cg.static[*instanceID]]
		if m != nil && memberID != "" && m.id != memberID {
			return nil, errFencedInstanceID
		}
	}
	if m == nil || m.classic == nil {
		return nil, errUnknownMemberID
	}
	return m, 0
}

// mustRejoin reports whether a classic member has to rejoin to move on:
// the group epoch is newer, it has partitions to revoke, or the partitions
// it waited for are free now.
func (cg *consumerGroup) mustRejoin(m *consumerMember) bool {
	return m.epoch < cg.epoch || m.state == memberUnrevokedPartitions ||
		(m.state == memberUnreleasedPartitions && !cg.waitingOnUnreleased(m))
}

// waitingOnUnreleased reports whether a partition of m's target is still
// held by another member.
func (cg *consumerGroup) waitingOnUnreleased(m *consumerMember) bool {
	for t, ps := range cg.target[m.id] {
		for _, p := range ps {
			if _, held := cg.owners[topicPartitionID{t, p}]; held && !m.assigned.has(t, p) {
				return true
			}
		}
	}
	return false
}

// armJoinDeadline fences a classic member told to rejoin that does not
// within its rebalance timeout; a deadline already running is kept.
func (c *Coordinator) armJoinDeadline(g *classicGroup, m *consumerMember) {
	if m.classic.joinDeadline.timer != nil {
		return
	}
	c.after(g, &m.classic.joinDeadline, m.rebalanceTimeout, func() {
		c.fenceClassicMember(g, m, "it did not rejoin within its rebalance timeout")
	})
}

// classicSyncToConsumer serves a SyncGroup of a classic member of a
// consumer group: its current assignment.
func (c *Coordinator) classicSyncToConsumer(g *classicGroup, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	cg := g.consumer
	m, code := cg.classicMember(req.MemberID, req.InstanceID)
	switch {
	case code != 0:
	case req.Generation != m.epoch:
		code = errIllegalGeneration
	case (req.ProtocolType != nil && *req.ProtocolType != "consumer") || (req.Protocol != nil && *req.Protocol != m.classic.protocolName()):
		code = errInconsistentProtocol
	case cg.epoch > m.epoch && m.state != memberUnrevokedPartitions:
		c.armJoinDeadline(g, m)
		code = errRebalanceInProgress
	}
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	m.classic.syncDeadline.stop()
	c.armConsumerSession(g, m)
	pt, p := "consumer", m.classic.protocolName()
	resp.ProtocolType, resp.Protocol = &pt, &p
	resp.MemberAssignment = encodeAssignment(m.assigned, cg.topicNames(c.topicImage()), m.classic.protocols[0].Metadata)
	return resp
}

// classicHeartbeatToConsumer serves a Heartbeat of a classic member of a
// consumer group.
func (c *Coordinator) classicHeartbeatToConsumer(g *classicGroup, req *kmsg.HeartbeatRequest) int16 {
	cg := g.consumer
	m, code := cg.classicMember(req.MemberID, req.InstanceID)
	switch {
	case code != 0:
		return code
	case req.Generation != m.epoch:
		return errIllegalGeneration
	}
	c.armConsumerSession(g, m)
	if cg.mustRejoin(m) {
		c.armJoinDeadline(g, m)
		return errRebalanceInProgress
	}
	return 0
}

// leaveConsumerGroup serves a LeaveGroup to a consumer group, as Kafka's
// classicGroupLeaveToConsumerGroup (KAFKA-18188): members of either
// protocol leave, named by their member id or, as the admin client removes
// a static member, by their instance id alone. Those found are removed
// together; each is answered with the ids it was named by.
func (c *Coordinator) leaveConsumerGroup(g *classicGroup, leaving []kmsg.LeaveGroupRequestMember) []kmsg.LeaveGroupResponseMember {
	out := make([]kmsg.LeaveGroupResponseMember, 0, len(leaving))
	var members []*consumerMember
	for _, l := range leaving {
		m, code := g.consumer.leavingMember(l)
		if code == 0 {
			reason := "not provided"
			if l.Reason != nil {
				reason = *l.Reason
			}
			c.logger.Info("member left the consumer group through LeaveGroup", "group", g.id, "member", m.id, "reason", reason)
			if !slices.Contains(members, m) {
				members = append(members, m)
			}
		}
		out = append(out, kmsg.LeaveGroupResponseMember{MemberID: l.MemberID, InstanceID: l.InstanceID, ErrorCode: code})
	}
	if len(members) > 0 {
		c.removeConsumerMembers(g, members)
		c.persistOrLog(g)
	}
	return out
}

// leavingMember finds the member a LeaveGroup names.
func (cg *consumerGroup) leavingMember(l kmsg.LeaveGroupRequestMember) (*consumerMember, int16) {
	if l.InstanceID == nil {
		if m := cg.members[l.MemberID]; m != nil {
			return m, 0
		}
		return nil, errUnknownMemberID
	}
	m := cg.members[cg.static[*l.InstanceID]]
	switch {
	case m == nil:
		return nil, errUnknownMemberID
	case l.MemberID != "" && m.id != l.MemberID:
		return nil, errFencedInstanceID
	}
	return m, 0
}
