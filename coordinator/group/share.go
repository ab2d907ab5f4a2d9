package group

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share groups (KIP-932) are groups whose members speak ShareGroupHeartbeat
// and consume with ShareFetch: several members may be given the same
// partition, records being acquired one by one by the partition's leader
// (coordinator/share). The coordinator only decides membership and which
// member fetches from which partitions. It follows Kafka's
// GroupMetadataManager.shareGroupHeartbeat and ShareGroupAssignmentBuilder:
//
//   - Members name themselves (a client-made UUID) and join with epoch 0
//     and a non-empty list of topic names; -1 leaves. Any other epoch must
//     be the member's, or its previous one (the answer carrying the new
//     epoch may have been lost); a rejoin with epoch 0 of a known member
//     keeps it as it is and answers with its whole assignment.
//   - The group epoch counts changes of what the group consumes: a member
//     joins, leaves or changes its topics, or a subscribed topic appears,
//     disappears or grows. The next heartbeat after a bump computes the
//     target assignment of every member with the simple assignor
//     (assignSimple), stamped with the group epoch.
//   - There is no revocation: a partition may have several members, so a
//     member takes its target assignment, and the target epoch as its own,
//     on its next heartbeat.
//   - A member that sends no heartbeat within group.share.session.timeout.ms
//     (or the group's share.session.timeout.ms) is removed, as one that
//     leaves is, and the group epoch is bumped.
//
// A share group is Empty without members and Stable with some; an empty one
// stays, with the partitions whose share state it initialized, until
// DeleteGroups deletes it. AlterShareGroupOffsets on an unused group id
// creates the share group, empty, as Kafka's does. Group ids are one namespace: a share group is
// never converted to or from another kind, and the other protocols'
// requests for it get Kafka's answers (GROUP_ID_NOT_FOUND,
// INCONSISTENT_GROUP_PROTOCOL for JoinGroup, UNKNOWN_MEMBER_ID for the
// classic member requests).
//
// The group is stored before a heartbeat is answered, with Kafka's records
// (share_records.go); the partitions whose share state has been
// initialized (MarkShareInitialized) are its ShareGroupStatePartitionMetadata.

// shareAssignorName is the assignor share groups use, as Kafka names it.
const shareAssignorName = "simple"

// shareMember is one member of a share group (Kafka's ShareGroupMember).
type shareMember struct {
	id         string
	rackID     *string
	clientID   string
	clientHost string

	epoch, previousEpoch int32
	topics               []string   // subscribed topic names, sorted
	assigned             assignment // its target as of its epoch

	session timerSlot
}

// shareGroup is the share-group state of a group.
type shareGroup struct {
	epoch           int32
	assignmentEpoch int32
	members         map[string]*shareMember
	target          map[string]assignment
	// subscribed is the metadata of every topic some member subscribes to,
	// as of the last change; a difference on a heartbeat bumps the epoch.
	subscribed map[string]subscribedTopic
	// initialized holds the partitions whose share state has been
	// initialized, by topic id.
	initialized map[[16]byte]*initializedTopic
}

// initializedTopic is a topic's partitions with initialized share state.
type initializedTopic struct {
	name       string
	partitions []int32 // sorted
}

func newShareGroup() *shareGroup {
	return &shareGroup{
		members:     map[string]*shareMember{},
		target:      map[string]assignment{},
		subscribed:  map[string]subscribedTopic{},
		initialized: map[[16]byte]*initializedTopic{},
	}
}

// stateName is the group's state as Kafka's ShareGroup names it.
func (sg *shareGroup) stateName() string {
	if len(sg.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// unused reports a share group made by a heartbeat that was refused: it
// never had a member.
func (sg *shareGroup) unused() bool {
	return sg.epoch == 0 && len(sg.members) == 0 && len(sg.initialized) == 0
}

// ShareGroupHeartbeat serves a member of a share group: it joins (epoch
// 0), heartbeats, or leaves (-1). The response has the request's version.
func (c *Coordinator) ShareGroupHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.Version = req.Version
	if herr := c.shareHeartbeat(req, clientID, clientHost, resp); herr != nil {
		resp.ErrorCode = herr.code
		if herr.msg != "" {
			msg := herr.msg
			resp.ErrorMessage = &msg
		}
		resp.MemberID, resp.MemberEpoch, resp.Assignment = nil, 0, nil
		resp.HeartbeatIntervalMillis = 0
	}
	return resp
}

func (c *Coordinator) shareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string, resp *kmsg.ShareGroupHeartbeatResponse) *heartbeatError {
	if herr := validateShareHeartbeat(req); herr != nil {
		return herr
	}
	topics := c.topicImage()
	if topics == nil {
		return refuse(errCoordinatorNotAvail, "")
	}
	joining := req.MemberEpoch == 0
	leaving := req.MemberEpoch == leaveEpoch
	notFound := func() *heartbeatError {
		if leaving { // Kafka's shareGroupLeave looks the group up as any group
			return refuse(errGroupIDNotFound, "Group %s not found.", req.GroupID)
		}
		return refuse(errGroupIDNotFound, "Share group %s not found.", req.GroupID)
	}
	g, code := c.acquire(req.GroupID, joining)
	switch {
	case code == errGroupIDNotFound:
		return notFound()
	case code != 0:
		return refuse(code, "")
	}
	defer func() {
		unused := g.unused()
		g.mu.Unlock()
		if unused {
			c.removeIfUnused(g)
		}
	}()
	if g.share == nil {
		switch {
		case g.state == Dead:
			return notFound()
		case !g.unused():
			// Kafka converts no group to or from a share group.
			return refuse(errGroupIDNotFound, "Group %s is not a share group.", req.GroupID)
		case !joining:
			return notFound()
		}
		g.share = newShareGroup()
		c.logger.Info("group is a share group", "group", g.id)
	}
	if leaving {
		return c.shareLeave(g, req, resp)
	}
	sg := g.share
	m := sg.members[req.MemberID]
	if m == nil && len(sg.members) >= c.cfg.ShareMaxSize {
		return refuse(errGroupMaxSizeReached, "The share group has reached its maximum capacity of %d members.", c.cfg.ShareMaxSize)
	}
	switch {
	case m == nil && !joining:
		return refuse(errUnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id)
	case m == nil:
		c.logger.Info("member joins the share group", "group", g.id, "member", req.MemberID)
		m = &shareMember{id: req.MemberID, previousEpoch: -1, assigned: assignment{}}
	case joining:
		// Epoch 0 from a known member: it carries on as it is.
	case req.MemberEpoch > m.epoch:
		return refuse(errFencedMemberEpoch, "The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch)
	case req.MemberEpoch < m.epoch && req.MemberEpoch != m.previousEpoch:
		return refuse(errFencedMemberEpoch, "The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d), and it does not match the previous member epoch (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch, m.previousEpoch)
	}

	_, known := sg.members[m.id]
	subscriptionChanged := !known
	if req.RackID != nil {
		rack := *req.RackID
		m.rackID = &rack
	}
	if req.SubscribedTopicNames != nil {
		names := sortedUnique(req.SubscribedTopicNames)
		subscriptionChanged = subscriptionChanged || !slices.Equal(names, m.topics)
		m.topics = names
	}
	m.clientID, m.clientHost = clientID, clientHost
	sg.members[m.id] = m

	previous := m.assigned
	c.maybeBumpShareEpoch(g, topics, subscriptionChanged)
	if m.epoch != sg.assignmentEpoch || subscriptionChanged {
		// ShareGroupAssignmentBuilder: the target at once, limited to the
		// topics the member subscribes to.
		if m.epoch != sg.assignmentEpoch {
			m.previousEpoch, m.epoch = m.epoch, sg.assignmentEpoch
		}
		m.assigned = sg.subscribedOnly(m, sg.target[m.id])
	}
	c.armShareSession(g, m)
	if err := c.persistShareHeartbeat(g, m); err != nil {
		return refuse(appendErrorCode(err), "")
	}

	id := m.id
	resp.MemberID = &id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(c.cfg.groupConfig(g.id).ShareHeartbeatInterval.Milliseconds())
	// Kafka answers with the assignment on a join, on a full request (one
	// with the topic names), and when it changed.
	if joining || req.SubscribedTopicNames != nil || !m.assigned.equal(previous) {
		resp.Assignment = shareHeartbeatAssignment(m.assigned)
	}
	return nil
}

// validateShareHeartbeat applies Kafka's request checks
// (throwIfShareGroupHeartbeatRequestIsInvalid).
func validateShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) *heartbeatError {
	invalid := func(msg string) *heartbeatError { return refuse(errInvalidRequest, "%s", msg) }
	switch {
	case req.MemberID == "":
		return invalid("MemberId can't be empty.")
	case req.GroupID == "":
		return invalid("GroupId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return invalid("RackId can't be empty.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return invalid("SubscribedTopicNames must be set in first request.")
	case req.MemberEpoch < leaveEpoch:
		return invalid("MemberEpoch is invalid.")
	}
	return nil
}

// shareLeave serves a heartbeat with epoch -1: the member is removed at
// once and the group epoch bumped.
func (c *Coordinator) shareLeave(g *classicGroup, req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) *heartbeatError {
	m := g.share.members[req.MemberID]
	if m == nil {
		return refuse(errUnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id)
	}
	c.logger.Info("member left the share group", "group", g.id, "member", m.id)
	c.fenceShareMember(g, m)
	if err := c.persistRecords(g); err != nil {
		return refuse(appendErrorCode(err), "")
	}
	id := req.MemberID
	resp.MemberID, resp.MemberEpoch = &id, leaveEpoch
	return nil
}

// fenceShareMember removes a member (Kafka's shareGroupFenceMember): its
// records go, and the group epoch is bumped so that the next heartbeat
// computes a target assignment without it.
func (c *Coordinator) fenceShareMember(g *classicGroup, m *shareMember) {
	sg := g.share
	m.session.stop()
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	if topics := c.topicImage(); topics != nil {
		sg.subscribed = shareSubscriptionOf(sg, topics)
	}
	sg.epoch++
	c.logger.Info("bumped share group epoch", "group", g.id, "epoch", sg.epoch)
}

// armShareSession (re)starts the member's session timeout.
func (c *Coordinator) armShareSession(g *classicGroup, m *shareMember) {
	c.after(g, &m.session, c.cfg.groupConfig(g.id).ShareSessionTimeout, func() {
		if g.share != nil && g.share.members[m.id] == m {
			c.logger.Info("share group member fenced: its session expired", "group", g.id, "member", m.id)
			c.fenceShareMember(g, m)
			c.persistOrLog(g)
		}
	})
}

// maybeBumpShareEpoch recomputes what the group subscribes to and, when
// that or a member's subscription changed, bumps the group epoch; a group
// epoch ahead of the assignment epoch gets a new target assignment.
func (c *Coordinator) maybeBumpShareEpoch(g *classicGroup, topics Topics, changed bool) {
	sg := g.share
	subscribed := shareSubscriptionOf(sg, topics)
	if changed || !sameSubscription(subscribed, sg.subscribed) {
		sg.subscribed = subscribed
		sg.epoch++
		c.logger.Info("bumped share group epoch", "group", g.id, "epoch", sg.epoch)
	}
	if sg.epoch > sg.assignmentEpoch {
		members := make([]assignorMember, 0, len(sg.members))
		for _, m := range sg.members {
			members = append(members, assignorMember{id: m.id, topics: sg.subscribes(m), previous: sg.target[m.id]})
		}
		partitions := make(map[[16]byte]int32, len(sg.subscribed))
		for _, t := range sg.subscribed {
			partitions[t.id] = t.partitions
		}
		sg.target = assignSimple(members, partitions)
		sg.assignmentEpoch = sg.epoch
	}
}

// shareSubscriptionOf resolves the members' topic names against the
// cluster's topics.
func shareSubscriptionOf(sg *shareGroup, topics Topics) map[string]subscribedTopic {
	out := map[string]subscribedTopic{}
	for _, m := range sg.members {
		for _, name := range m.topics {
			if _, done := out[name]; done {
				continue
			}
			if id, n, ok := topics.Topic(name); ok {
				out[name] = subscribedTopic{id: id, partitions: n}
			}
		}
	}
	return out
}

// subscribes lists the ids of the subscribed topics the member consumes.
func (sg *shareGroup) subscribes(m *shareMember) map[[16]byte]bool {
	out := make(map[[16]byte]bool, len(m.topics))
	for _, name := range m.topics {
		if t, ok := sg.subscribed[name]; ok {
			out[t.id] = true
		}
	}
	return out
}

// subscribedOnly is a's partitions of topics the member subscribes to.
func (sg *shareGroup) subscribedOnly(m *shareMember, a assignment) assignment {
	ids := sg.subscribes(m)
	out := make(assignment, len(a))
	for t, ps := range a {
		if ids[t] {
			out[t] = slices.Clone(ps)
		}
	}
	return out
}

func shareHeartbeatAssignment(a assignment) *kmsg.ShareGroupHeartbeatResponseAssignment {
	out := &kmsg.ShareGroupHeartbeatResponseAssignment{TopicPartitions: []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}}
	for _, t := range sortedTopicIDs(a) {
		out.TopicPartitions = append(out.TopicPartitions, kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{TopicID: t, Partitions: slices.Clone(a[t])})
	}
	return out
}

// ShareGroupDescribe describes share groups: state, epochs, the assignor,
// and each member's subscription and assignment (topics by id and name).
// A group that is not a share group, or none, answers GROUP_ID_NOT_FOUND.
func (c *Coordinator) ShareGroupDescribe(req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	resp.Version = req.Version
	for _, id := range req.GroupIDs {
		out := kmsg.NewShareGroupDescribeResponseGroup()
		out.GroupID = id
		c.describeOfKind(id, "share", func(g *classicGroup) bool { return g.share != nil }, func(g *classicGroup) {
			g.share.describe(&out, c.topicImage())
			if req.IncludeAuthorizedOperations {
				out.AuthorizedOperations = groupAuthorizedOperations
			}
		}, func(code int16, msg *string) { out.ErrorCode, out.ErrorMessage = code, msg })
		resp.Groups = append(resp.Groups, out)
	}
	return resp
}

// describeOfKind describes one group of a kind (share, streams) with fill,
// the group locked; a group of another kind, or none, fails with
// GROUP_ID_NOT_FOUND and Kafka's message, and a group this coordinator
// cannot serve with the code alone.
func (c *Coordinator) describeOfKind(id, kind string, is func(*classicGroup) bool, fill func(*classicGroup), fail func(code int16, msg *string)) {
	g, code := c.acquire(id, false)
	msg := "Group " + id + " not found."
	if code == 0 && (!is(g) || g.state == Dead) {
		g.mu.Unlock()
		code, msg = errGroupIDNotFound, "Group "+id+" is not a "+kind+" group."
	}
	switch {
	case code == errGroupIDNotFound:
		fail(code, &msg)
	case code != 0:
		fail(code, nil)
	default:
		fill(g)
		g.mu.Unlock()
	}
}

func (sg *shareGroup) describe(out *kmsg.ShareGroupDescribeResponseGroup, topics Topics) {
	out.GroupState = sg.stateName()
	out.GroupEpoch = sg.epoch
	out.AssignmentEpoch = sg.assignmentEpoch
	out.Assignor = shareAssignorName
	assigned := make([]assignment, 0, len(sg.members))
	for _, m := range sg.members {
		assigned = append(assigned, m.assigned)
	}
	names := topicNamesOf(sg.subscribed, assigned, topics)
	for _, id := range sortedKeys(sg.members) {
		m := sg.members[id]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.RackID, dm.MemberEpoch = m.id, m.rackID, m.epoch
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.SubscribedTopicNames = append([]string{}, m.topics...)
		dm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
		for _, t := range sortedTopicIDs(m.assigned) {
			name, ok := names[t]
			if !ok {
				continue // a topic gone from the cluster, as Kafka leaves it out
			}
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{
				TopicID: t, Topic: name, Partitions: slices.Clone(m.assigned[t]),
			})
		}
		out.Members = append(out.Members, dm)
	}
}

// acquireShare is acquire for the share-state API: the group, locked, if
// it is a share group here; GROUP_ID_NOT_FOUND if it is not one.
func (c *Coordinator) acquireShare(group string) (*classicGroup, int16) {
	g, code := c.acquire(group, false)
	if code != 0 {
		return nil, code
	}
	if g.share == nil || g.state == Dead {
		g.mu.Unlock()
		return nil, errGroupIDNotFound
	}
	return g, 0
}

// IsShareGroup reports whether id is a share group in a partition this
// coordinator serves.
func (c *Coordinator) IsShareGroup(id string) bool {
	g, code := c.acquireShare(id)
	if code != 0 {
		return false
	}
	g.mu.Unlock()
	return true
}

// ShareGroupEmpty reports whether a share group has no members; code is
// GROUP_ID_NOT_FOUND when it is not a share group, or why this coordinator
// cannot serve it.
func (c *Coordinator) ShareGroupEmpty(group string) (empty bool, code int16) {
	g, code := c.acquireShare(group)
	if code != 0 {
		return false, code
	}
	defer g.mu.Unlock()
	return len(g.share.members) == 0, 0
}

// SharePartitions lists the partitions whose share state the group has
// initialized, by topic id; code is GROUP_ID_NOT_FOUND when it is not a
// share group, or why this coordinator cannot serve it.
func (c *Coordinator) SharePartitions(group string) (parts map[[16]byte][]int32, code int16) {
	g, code := c.acquireShare(group)
	if code != 0 {
		return nil, code
	}
	defer g.mu.Unlock()
	parts = make(map[[16]byte][]int32, len(g.share.initialized))
	for t, it := range g.share.initialized {
		parts[t] = slices.Clone(it.partitions)
	}
	return parts, 0
}

// ShareInitialized reports whether the group recorded the partition's
// share state as initialized.
func (c *Coordinator) ShareInitialized(group string, topicID [16]byte, partition int32) bool {
	g, code := c.acquireShare(group)
	if code != 0 {
		return false
	}
	defer g.mu.Unlock()
	it := g.share.initialized[topicID]
	if it == nil {
		return false
	}
	_, found := slices.BinarySearch(it.partitions, partition)
	return found
}

// MarkShareInitialized records that the share state of these partitions
// has been initialized (Kafka's initializeShareGroupState), and returns
// once that is stored; on a failed write nothing is recorded.
func (c *Coordinator) MarkShareInitialized(group string, parts map[[16]byte][]int32) int16 {
	return c.changeInitialized(group, addInitialized(parts))
}

func addInitialized(parts map[[16]byte][]int32) func(sg *shareGroup, names func([16]byte) string) {
	return func(sg *shareGroup, names func([16]byte) string) {
		for t, ps := range parts {
			if len(ps) == 0 {
				continue
			}
			it := sg.initialized[t]
			if it == nil {
				it = &initializedTopic{name: names(t)}
				sg.initialized[t] = it
			}
			it.partitions = sortedUniqueInt32s(append(it.partitions, ps...))
		}
	}
}

// ShareOffsetsAlterable answers whether AlterShareGroupOffsets may set
// the group's start offsets: 0 for a share group without members or an id
// no group uses (MarkShareOffsetsAltered creates the share group, as
// Kafka's alterShareGroupOffsets gets or creates it), NON_EMPTY_GROUP for
// a share group with members, GROUP_ID_NOT_FOUND for a group of another
// kind, or why this coordinator cannot serve the group.
func (c *Coordinator) ShareOffsetsAlterable(group string) int16 {
	g, code := c.acquire(group, false)
	switch {
	case code == errGroupIDNotFound:
		return 0
	case code != 0:
		return code
	}
	defer g.mu.Unlock()
	switch {
	case g.share == nil && g.state != Dead && g.unused():
		return 0
	case g.share == nil || g.state == Dead:
		return errGroupIDNotFound
	case len(g.share.members) > 0:
		return errNonEmptyGroup
	}
	return 0
}

// MarkShareOffsetsAltered is MarkShareInitialized for the partitions
// AlterShareGroupOffsets set, creating the share group when the id is
// unused.
func (c *Coordinator) MarkShareOffsetsAltered(group string, parts map[[16]byte][]int32) int16 {
	g, code := c.acquire(group, true)
	if code != 0 {
		return code
	}
	created := false
	if g.share == nil && g.state != Dead && g.unused() {
		g.share, created = newShareGroup(), true
	}
	if g.share == nil || g.state == Dead {
		code = errGroupIDNotFound
	} else if code = c.changeInitializedLocked(g, addInitialized(parts)); code != 0 && created {
		g.share = nil
	}
	if code == 0 && created {
		c.logger.Info("group is a share group", "group", g.id)
	}
	unused := g.unused()
	g.mu.Unlock()
	if unused {
		c.removeIfUnused(g)
	}
	return code
}

// ForgetSharePartitions removes partitions from the group's initialized
// ones (their share state was deleted), and returns once that is stored.
func (c *Coordinator) ForgetSharePartitions(group string, parts map[[16]byte][]int32) int16 {
	return c.changeInitialized(group, func(sg *shareGroup, _ func([16]byte) string) {
		for t, ps := range parts {
			it := sg.initialized[t]
			if it == nil {
				continue
			}
			it.partitions = slices.DeleteFunc(it.partitions, func(p int32) bool { return slices.Contains(ps, p) })
			if len(it.partitions) == 0 {
				delete(sg.initialized, t)
			}
		}
	})
}

// changeInitialized applies a change to the group's initialized
// partitions and stores it, restoring them if the write fails.
func (c *Coordinator) changeInitialized(group string, change func(sg *shareGroup, names func([16]byte) string)) int16 {
	g, code := c.acquireShare(group)
	if code != 0 {
		return code
	}
	defer g.mu.Unlock()
	return c.changeInitializedLocked(g, change)
}

// forgetShareTopics removes the given topics from a share group's
// partitions with state and returns what it removed; g.mu is held.
func (c *Coordinator) forgetShareTopics(g *classicGroup, ids map[[16]byte]bool) map[[16]byte][]int32 {
	if g.share == nil {
		return nil
	}
	gone := map[[16]byte][]int32{}
	for id, it := range g.share.initialized {
		if ids[id] {
			gone[id] = slices.Clone(it.partitions)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	code := c.changeInitializedLocked(g, func(sg *shareGroup, _ func([16]byte) string) {
		for id := range gone {
			delete(sg.initialized, id)
		}
	})
	if code != 0 {
		c.logger.Warn("forgetting the share state of deleted topics failed", "group", g.id, "code", code)
		return nil
	}
	return gone
}

// changeInitializedLocked is changeInitialized with g.mu held.
func (c *Coordinator) changeInitializedLocked(g *classicGroup, change func(sg *shareGroup, names func([16]byte) string)) int16 {
	sg := g.share
	before := make(map[[16]byte]*initializedTopic, len(sg.initialized))
	for t, it := range sg.initialized {
		before[t] = &initializedTopic{name: it.name, partitions: slices.Clone(it.partitions)}
	}
	change(sg, func(id [16]byte) string { return c.topicName(sg, id) })
	if err := c.persistRecords(g); err != nil {
		sg.initialized = before
		return appendErrorCode(err)
	}
	return 0
}

// topicName names a topic known by id: from the group's subscriptions, or
// the cluster's topics; Kafka writes "<UNKNOWN>" for a topic it cannot
// name.
func (c *Coordinator) topicName(sg *shareGroup, id [16]byte) string {
	for name, t := range sg.subscribed {
		if t.id == id {
			return name
		}
	}
	if topics := c.topicImage(); topics != nil {
		for _, name := range topics.Names() {
			if tid, _, ok := topics.Topic(name); ok && tid == id {
				return name
			}
		}
	}
	return "<UNKNOWN>"
}

func sortedUniqueInt32s(s []int32) []int32 {
	slices.Sort(s)
	return slices.Compact(s)
}
