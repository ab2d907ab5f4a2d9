package group

import (
	"crypto/rand"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Consumer groups (KIP-848) are groups whose members speak
// ConsumerGroupHeartbeat instead of JoinGroup/SyncGroup. The coordinator
// assigns the partitions itself; there is no leader and no
// stop-the-world rebalance. It follows Kafka's GroupMetadataManager and
// CurrentAssignmentBuilder:
//
//   - The group epoch counts changes of what the group consumes: a member
//     joins, leaves or changes its subscription, or a subscribed topic
//     appears, disappears or grows. Each bump makes the assignor compute a
//     new target assignment for every member, stamped with that epoch.
//   - Each member walks to its target on its own heartbeats. Partitions it
//     must give up are revoked first (the member keeps its epoch and waits
//     in UNREVOKED_PARTITIONS until its heartbeat no longer lists them);
//     then it moves to the target epoch and receives the partitions of its
//     target that no other member still holds. Those still held are
//     assigned on a later heartbeat, once released (UNRELEASED_PARTITIONS).
//     So a partition never has two owners. A topic the member stops
//     subscribing to is taken from it at once, even while it is still
//     revoking others.
//   - A member whose heartbeats stop for group.consumer.session.timeout.ms,
//     or that does not revoke within its rebalance timeout, is fenced:
//     removed, and its partitions freed.
//
// Static members (group.instance.id) leave with epoch -2 and keep their
// assignment until their session times out; a new incarnation with the
// same instance id takes the old one's place and partitions.
//
// Members subscribe by topic names or by a regex (RE2, matching whole
// names, as Kafka's RE2J), which takes in only the topics the member's
// principal may describe. They commit offsets with their member epoch, or
// an older one for partitions they have held since (KIP-1251).
//
// A group is of one kind at a time: an empty classic group becomes a
// consumer group on the first ConsumerGroupHeartbeat, and an empty
// consumer group becomes classic on the first JoinGroup. Offsets belong to
// the group id and survive the change. A group with members moves between
// the protocols online, as group.consumer.migration.policy allows
// (migration.go): a consumer group then has members that speak the
// classic protocol.
//
// The group is stored in __consumer_offsets with Kafka's records
// (consumer_records.go) before a heartbeat is answered, so a coordinator
// that restarts or takes the partition over carries on with the same
// members, epochs and assignments. A heartbeat for a group this
// coordinator does not have answers UNKNOWN_MEMBER_ID, so that the member
// rejoins with epoch 0.

// Member epochs with a meaning of their own in ConsumerGroupHeartbeat.
const (
	leaveEpoch       = -1 // the member leaves
	staticLeaveEpoch = -2 // a static member leaves for now, keeping its partitions
)

// memberState is how far a member is from its target assignment.
type memberState uint8

const (
	memberStable               memberState = iota // at its target epoch, nothing pending
	memberUnrevokedPartitions                     // must give up partitions before moving on
	memberUnreleasedPartitions                    // at the target epoch, waiting for partitions others still hold
)

// consumerMember is one member of a consumer group.
type consumerMember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string

	epoch, previousEpoch int32
	state                memberState
	rebalanceTimeout     time.Duration

	topics   []string // subscribed topic names, sorted
	regex    string   // subscribed topic regex, "" when none
	re       *regexp.Regexp
	assignor string // the server assignor it asked for, "" when none

	assigned assignment // what it owns now
	revoking assignment // what it must give up before it moves to its target epoch
	// since is, for each partition assigned or being revoked, the member
	// epoch at which it was assigned: its assignment epoch (KIP-1251).
	since map[topicPartitionID]int32

	// classic is set for a member that speaks the classic protocol
	// (JoinGroup, SyncGroup; migration.go), nil for one that heartbeats.
	classic *classicProtocol

	session   timerSlot
	rebalance timerSlot
	fresh     bool // made by this heartbeat, not a static member's new incarnation
	// mayDescribe says whether the member's principal may describe a
	// topic, for its regex (nil: any). It comes with every heartbeat and
	// is not stored: a loaded member's regex matches everything until
	// its first heartbeat.
	mayDescribe func(topic string) bool
}

// regexMatches reports whether the member's regex takes in a topic: the
// pattern matches it and the member may describe it (Kafka filters
// regex subscriptions by Topic:Describe, KAFKA-18813).
func (m *consumerMember) regexMatches(name string) bool {
	return m.re != nil && m.re.MatchString(name) && (m.mayDescribe == nil || m.mayDescribe(name))
}

// subscribedTopic is a subscribed topic as the assignor last saw it.
type subscribedTopic struct {
	id         [16]byte
	partitions int32
}

// consumerGroup is the consumer-protocol state of a group.
type consumerGroup struct {
	epoch           int32
	assignmentEpoch int32
	members         map[string]*consumerMember
	static          map[string]string // instance id -> member id
	target          map[string]assignment
	// subscribed is the metadata of every topic some member subscribes to,
	// as of the last change; a difference on a heartbeat bumps the epoch.
	subscribed map[string]subscribedTopic
	// owners holds, for every partition assigned to or being revoked from
	// a member, that member's epoch: a partition listed here is not free.
	owners map[topicPartitionID]int32
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members:    map[string]*consumerMember{},
		static:     map[string]string{},
		target:     map[string]assignment{},
		subscribed: map[string]subscribedTopic{},
		owners:     map[topicPartitionID]int32{},
	}
}

// stateName is the group's state as Kafka's ConsumerGroup names it.
func (cg *consumerGroup) stateName() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// Topics is the coordinator's view of the cluster's topics, which consumer
// groups subscribe to by name or pattern and are assigned by id.
type Topics interface {
	// Topic returns a topic's id and partition count; ok is false when it
	// does not exist.
	Topic(name string) (id [16]byte, partitions int32, ok bool)
	// Names lists the topics a pattern may match: all of them, internal
	// ones too, as in Kafka.
	Names() []string
}

// UseTopics gives the coordinator the cluster's topics; consumer groups
// are refused until it has them.
func (c *Coordinator) UseTopics(t Topics) {
	c.topics.Store(&topicsHolder{t})
}

type topicsHolder struct{ Topics }

func (c *Coordinator) topicImage() Topics {
	if h := c.topics.Load(); h != nil {
		return h.Topics
	}
	return nil
}

// heartbeatError is a refused ConsumerGroupHeartbeat.
type heartbeatError struct {
	code int16
	msg  string
}

func refuse(code int16, format string, args ...any) *heartbeatError {
	return &heartbeatError{code: code, msg: fmt.Sprintf(format, args...)}
}

// ConsumerGroupHeartbeat serves a member of a consumer group: it joins
// (epoch 0), heartbeats, acknowledges revocations, or leaves (-1, -2).
// mayDescribe filters the topics its regex matches (nil: no filter).
func (c *Coordinator) ConsumerGroupHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string, mayDescribe func(topic string) bool) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if herr := c.consumerHeartbeat(req, clientID, clientHost, mayDescribe, resp); herr != nil {
		resp.ErrorCode = herr.code
		if herr.msg != "" {
			resp.ErrorMessage = &herr.msg
		}
		resp.MemberID, resp.MemberEpoch, resp.Assignment = nil, 0, nil
		resp.HeartbeatIntervalMillis = 0
	}
	return resp
}

func (c *Coordinator) consumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string, mayDescribe func(string) bool, resp *kmsg.ConsumerGroupHeartbeatResponse) *heartbeatError {
	if herr := validateHeartbeat(req, c.cfg.ConsumerAssignors); herr != nil {
		return herr
	}
	topics := c.topicImage()
	if topics == nil {
		return refuse(errCoordinatorNotAvail, "")
	}
	joining := req.MemberEpoch == 0
	leaving := req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch
	g, code := c.acquire(req.Group, joining)
	switch {
	case code == errGroupIDNotFound && leaving:
		return refuse(errGroupIDNotFound, "Consumer group %s not found.", req.Group)
	case code == errGroupIDNotFound:
		// Kafka answers GROUP_ID_NOT_FOUND, which Kafka's consumer takes
		// as fatal; the member of a group that is gone (expired while it
		// was away) rejoins instead.
		return refuse(errUnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.Group)
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
	if g.share != nil || g.streams != nil {
		return refuse(errGroupIDNotFound, "Group %s is not a consumer group.", req.Group)
	}
	if g.consumer == nil {
		switch {
		case leaving:
			return refuse(errGroupIDNotFound, "Group %s is not a consumer group.", req.Group)
		case !g.classicEmpty() && !joining:
			return refuse(errGroupIDNotFound, "Group %s is not a consumer group.", req.Group)
		case !joining:
			return refuse(errUnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.Group)
		case !g.classicEmpty():
			if ok, code, msg := c.upgradable(g); !ok {
				return refuse(code, "%s", msg)
			}
			if herr := c.upgradeToConsumer(g, topics); herr != nil {
				return herr
			}
		default:
			g.becomeConsumerGroup()
			c.logger.Info("group uses the consumer protocol", "group", g.id)
		}
	}
	cg := g.consumer
	if leaving {
		return c.consumerLeave(g, req, resp)
	}

	memberID := req.MemberID
	if memberID == "" { // v0: the coordinator names members
		memberID = newMemberUUID()
	}
	if _, known := cg.members[memberID]; !known && len(cg.members) >= c.cfg.ConsumerMaxSize {
		return refuse(errGroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", c.cfg.ConsumerMaxSize)
	}
	m, herr := c.consumerMemberFor(g, req, memberID)
	if herr != nil {
		return herr
	}
	if m.classic != nil {
		// A member heartbeating is of the consumer protocol from now on.
		m.classic.joinDeadline.stop()
		m.classic.syncDeadline.stop()
		m.classic = nil
	}
	previous := m.assigned
	// A new member changes what the group is, even with nothing
	// subscribed yet (a pattern that matches no topic); a static member's
	// new incarnation starts with its predecessor's subscription, so it
	// bumps the group epoch only if it differs, as Kafka's
	// hasMemberSubscriptionChanged.
	subscriptionChanged := m.fresh
	m.fresh = false
	if req.InstanceID != nil {
		if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
			delete(cg.static, *m.instanceID) // its former instance id is free (KAFKA-20747)
		}
		m.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.ServerAssignor != nil {
		m.assignor = *req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		names := sortedUnique(req.SubscribedTopicNames)
		subscriptionChanged = subscriptionChanged || !slices.Equal(names, m.topics)
		m.topics = names
	}
	if req.SubscribedTopicRegex != nil {
		subscriptionChanged = subscriptionChanged || *req.SubscribedTopicRegex != m.regex
		m.regex = *req.SubscribedTopicRegex
		m.re = nil
		if m.regex != "" {
			m.re, _ = compilePattern(m.regex) // validateHeartbeat compiled it
		}
	}
	m.clientID, m.clientHost = clientID, clientHost
	m.mayDescribe = mayDescribe
	cg.members[m.id] = m
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}

	c.maybeBumpEpoch(g, topics, subscriptionChanged)
	c.reconcile(g, m, req.Topics)
	c.armConsumerSession(g, m)
	if err := c.persistHeartbeat(g, m); err != nil {
		return refuse(appendErrorCode(err), "")
	}

	id := m.id
	resp.MemberID = &id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(c.cfg.groupConfig(g.id).ConsumerHeartbeatInterval.Milliseconds())
	full := joining || (req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil)
	if full || !m.assigned.equal(previous) {
		resp.Assignment = heartbeatAssignment(m.assigned)
	}
	return nil
}

// validateHeartbeat applies Kafka's request checks; assignors are those
// the broker offers.
func validateHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, assignors []string) *heartbeatError {
	invalid := func(msg string) *heartbeatError { return refuse(errInvalidRequest, "%s", msg) }
	switch {
	case blank(req.Group):
		return invalid("GroupId can't be empty.")
	case req.InstanceID != nil && blank(*req.InstanceID):
		return invalid("InstanceId can't be empty.")
	case req.RackID != nil && blank(*req.RackID):
		return invalid("RackId can't be empty.")
	case req.Version >= 1 && blank(req.MemberID):
		return invalid("MemberId can't be empty.")
	}
	switch e := req.MemberEpoch; {
	case e > 0 || e == leaveEpoch:
		if blank(req.MemberID) {
			return invalid("MemberId can't be empty.")
		}
	case e == 0:
		if req.RebalanceTimeoutMillis == -1 {
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return invalid("TopicPartitions must be empty when (re-)joining.")
		}
		// An empty list of names or an empty regex joins with no topics
		// (KAFKA-18095): a pattern subscriber of the Java client joins
		// so before its pattern matches a topic.
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	case e == staticLeaveEpoch:
		if blank(req.MemberID) {
			return invalid("MemberId can't be empty.")
		}
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	default:
		return invalid("MemberEpoch is invalid.")
	}
	if req.ServerAssignor != nil && !slices.Contains(assignors, *req.ServerAssignor) {
		return refuse(errUnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %s.", *req.ServerAssignor, strings.Join(assignors, ", "))
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := compilePattern(*req.SubscribedTopicRegex); err != nil {
			return refuse(errInvalidRegularExpression, "SubscribedTopicRegex %s is not a valid regular expression: %v.", *req.SubscribedTopicRegex, err)
		}
	}
	return nil
}

// consumerMemberFor finds the request's member, or makes a new one when it
// joins; epoch and instance checks as in Kafka.
func (c *Coordinator) consumerMemberFor(g *classicGroup, req *kmsg.ConsumerGroupHeartbeatRequest, memberID string) (*consumerMember, *heartbeatError) {
	cg := g.consumer
	joining := req.MemberEpoch == 0
	if req.InstanceID == nil {
		m := cg.members[memberID]
		switch {
		case m == nil && !joining:
			return nil, refuse(errUnknownMemberID, "Member %s is not a member of group %s.", memberID, g.id)
		case m == nil:
			c.logger.Info("member joins the consumer group", "group", g.id, "member", memberID)
			return &consumerMember{id: memberID, fresh: true}, nil
		case joining:
			c.resetForRejoin(g, m)
			return m, nil
		}
		return m, checkMemberEpoch(m, req)
	}
	instance := *req.InstanceID
	old := cg.members[cg.static[instance]]
	if joining {
		switch {
		case old == nil && cg.members[memberID] != nil:
			// A known member joining under an instance id it did not
			// have is still that member, as Kafka's getOrMaybeCreateMember
			// finds it by its member id.
			m := cg.members[memberID]
			c.resetForRejoin(g, m)
			return m, nil
		case old == nil:
			c.logger.Info("static member joins the consumer group", "group", g.id, "member", memberID, "instance", instance)
			return &consumerMember{id: memberID, fresh: true}, nil
		case old.id == memberID:
			c.resetForRejoin(g, old)
			return old, nil
		case old.epoch != staticLeaveEpoch && old.classic == nil:
			// A classic incarnation is replaced whether it left or not,
			// as in Kafka: classic static members do not leave on close.
			return nil, refuse(errUnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by member %s.", memberID, instance, old.id)
		}
		c.logger.Info("static member rejoins the consumer group", "group", g.id, "member", memberID, "replaces", old.id, "instance", instance)
		return replaceStatic(cg, old, memberID), nil
	}
	switch {
	case old == nil:
		return nil, refuse(errUnknownMemberID, "Instance id %s is unknown.", instance)
	case old.id != memberID:
		return nil, refuse(errFencedInstanceID, "Static member %s with instance id %s is fenced by member %s.", memberID, instance, old.id)
	}
	return old, checkMemberEpoch(old, req)
}

// replaceStatic makes a static member's new incarnation, which takes the
// old one's place and partitions at epoch 0; the caller sets its protocol.
func replaceStatic(cg *consumerGroup, old *consumerMember, memberID string) *consumerMember {
	m := *old
	m.id, m.epoch, m.previousEpoch, m.state = memberID, 0, 0, memberStable
	m.session, m.rebalance, m.classic = timerSlot{}, timerSlot{}, nil
	old.stopTimers()
	delete(cg.members, old.id)
	cg.target[memberID] = cg.target[old.id]
	delete(cg.target, old.id)
	return &m
}

// resetForRejoin is a known member joining again with epoch 0, after it
// was fenced: it owns nothing now and starts over.
func (c *Coordinator) resetForRejoin(g *classicGroup, m *consumerMember) {
	c.releaseMember(g, m)
	m.assigned, m.revoking, m.since = assignment{}, assignment{}, nil
	m.epoch, m.previousEpoch, m.state = 0, 0, memberStable
	m.rebalance.stop()
}

// checkMemberEpoch fences a member whose epoch is not the coordinator's,
// except one a step behind that owns no more than it is assigned: the
// answer with its new epoch was lost.
func checkMemberEpoch(m *consumerMember, req *kmsg.ConsumerGroupHeartbeatRequest) *heartbeatError {
	got := req.MemberEpoch
	switch {
	case got > m.epoch:
		return refuse(errFencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", got, m.epoch)
	case got < m.epoch && (got != m.previousEpoch || !ownsOnly(req.Topics, m.assigned)):
		return refuse(errFencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", got, m.epoch)
	}
	return nil
}

// ownsOnly reports whether every partition a heartbeat lists is in a.
func ownsOnly(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, a assignment) bool {
	if owned == nil {
		return false
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if !a.has(t.TopicID, p) {
				return false
			}
		}
	}
	return true
}

// maybeBumpEpoch recomputes what the group subscribes to and, when that or
// a member's subscription changed, bumps the group epoch and computes the
// new target assignment.
func (c *Coordinator) maybeBumpEpoch(g *classicGroup, topics Topics, changed bool) {
	cg := g.consumer
	subscribed := subscriptionOf(cg, topics)
	if changed || !sameSubscription(subscribed, cg.subscribed) {
		cg.subscribed = subscribed
		cg.epoch++
		c.logger.Info("bumped consumer group epoch", "group", g.id, "epoch", cg.epoch)
	}
	if cg.epoch > cg.assignmentEpoch {
		c.computeTarget(g)
	}
}

// subscriptionOf resolves the members' topic names and patterns against
// the cluster's topics.
func subscriptionOf(cg *consumerGroup, topics Topics) map[string]subscribedTopic {
	out := map[string]subscribedTopic{}
	add := func(name string) {
		if id, n, ok := topics.Topic(name); ok {
			out[name] = subscribedTopic{id: id, partitions: n}
		}
	}
	var patterned []*consumerMember
	for _, m := range cg.members {
		for _, name := range m.topics {
			add(name)
		}
		if m.re != nil {
			patterned = append(patterned, m)
		}
	}
	if len(patterned) > 0 {
		for _, name := range topics.Names() {
			for _, m := range patterned {
				if m.regexMatches(name) {
					add(name)
					break
				}
			}
		}
	}
	return out
}

// compilePattern compiles a subscription regex so that it must match a
// whole topic name, as Java's Pattern.matches does.
func compilePattern(expr string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + expr + ")$")
}

// subscribes lists the ids of the subscribed topics the member consumes.
func (m *consumerMember) subscribes(subscribed map[string]subscribedTopic) map[[16]byte]bool {
	out := map[[16]byte]bool{}
	for _, name := range m.topics {
		if t, ok := subscribed[name]; ok {
			out[t.id] = true
		}
	}
	for name, t := range subscribed {
		if m.regexMatches(name) {
			out[t.id] = true
		}
	}
	return out
}

func sameSubscription(a, b map[string]subscribedTopic) bool {
	if len(a) != len(b) {
		return false
	}
	for name, t := range a {
		if b[name] != t {
			return false
		}
	}
	return true
}

// computeTarget runs the group's assignor for the current epoch. The
// assignor is the one most members asked for (ties to the earlier in
// Kafka's list), else the default.
func (c *Coordinator) computeTarget(g *classicGroup) {
	cg := g.consumer
	members := make([]assignorMember, 0, len(cg.members))
	for _, m := range cg.members {
		members = append(members, assignorMember{id: m.id, instance: m.instanceID, topics: m.subscribes(cg.subscribed), previous: cg.target[m.id]})
	}
	partitions := map[[16]byte]int32{}
	for _, t := range cg.subscribed {
		partitions[t.id] = t.partitions
	}
	cg.target = assign(cg.assignorName(c.cfg.ConsumerAssignors), members, partitions)
	cg.assignmentEpoch = cg.epoch
}

// reconcile moves a member towards its target assignment, as Kafka's
// CurrentAssignmentBuilder. owned is what the member's heartbeat says it
// holds (nil when the heartbeat did not say).
func (c *Coordinator) reconcile(g *classicGroup, m *consumerMember, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) {
	cg := g.consumer
	if m.epoch == cg.assignmentEpoch && m.state == memberStable {
		return
	}
	if m.state == memberUnrevokedPartitions && ownsAny(owned, m.revoking) {
		if revokeUnsubscribed(cg, m) {
			c.armRebalanceTimeout(g, m)
		}
		return
	}
	c.nextAssignment(g, m, owned)
	if m.state == memberUnrevokedPartitions {
		c.armRebalanceTimeout(g, m)
	} else {
		m.rebalance.stop()
	}
}

// revokeUnsubscribed moves the partitions of topics a member revoking
// others no longer subscribes to from its assignment to what it revokes,
// as Kafka's CurrentAssignmentBuilder.updateCurrentAssignment (KAFKA-19431):
// its assignment holds no topic it does not subscribe to, even while it
// waits for its earlier revocation. It reports whether anything moved.
func revokeUnsubscribed(cg *consumerGroup, m *consumerMember) bool {
	subscribed := m.subscribes(cg.subscribed)
	var keep, revoke []topicPartitionID
	for t, ps := range m.assigned {
		for _, p := range ps {
			if subscribed[t] {
				keep = append(keep, topicPartitionID{t, p})
			} else {
				revoke = append(revoke, topicPartitionID{t, p})
			}
		}
	}
	if len(revoke) == 0 {
		return false
	}
	for t, ps := range m.revoking {
		for _, p := range ps {
			revoke = append(revoke, topicPartitionID{t, p})
		}
	}
	m.assigned, m.revoking = assignmentOf(keep), assignmentOf(revoke)
	return true
}

// armRebalanceTimeout fences the member if it is still at this epoch, not
// having revoked, when its rebalance timeout passes.
func (c *Coordinator) armRebalanceTimeout(g *classicGroup, m *consumerMember) {
	epoch := m.epoch
	c.after(g, &m.rebalance, m.rebalanceTimeout, func() {
		if m.epoch == epoch && g.consumer != nil && g.consumer.members[m.id] == m {
			c.logger.Info("consumer group member fenced: it did not revoke its partitions within its rebalance timeout",
				"group", g.id, "member", m.id, "epoch", epoch, "timeout", m.rebalanceTimeout)
			c.removeConsumerMember(g, m)
			c.persistOrLog(g)
		}
	})
}

// persistOrLog stores a change no request waits for (a timeout); a failed
// write is written again with the next change.
func (c *Coordinator) persistOrLog(g *classicGroup) {
	if err := c.persistRecords(g); err != nil {
		c.logger.Warn("storing a group failed", "group", g.id, "err", err)
	}
}

// nextAssignment is CurrentAssignmentBuilder.computeNextAssignment. A
// member with partitions to revoke keeps its epoch, even one that has
// just revoked others (Kafka 4.2, KAFKA-19974); it moves to the target
// epoch once it has nothing to revoke.
func (c *Coordinator) nextAssignment(g *classicGroup, m *consumerMember, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) {
	cg := g.consumer
	target := cg.target[m.id]
	var keep, revoke, add []topicPartitionID
	unreleased := false
	for t, ps := range m.assigned {
		for _, p := range ps {
			if target.has(t, p) {
				keep = append(keep, topicPartitionID{t, p})
			} else {
				revoke = append(revoke, topicPartitionID{t, p})
			}
		}
	}
	for t, ps := range target {
		for _, p := range ps {
			tp := topicPartitionID{t, p}
			if m.assigned.has(t, p) {
				continue
			}
			// A partition the member itself is revoking is not held by
			// another: with the revocation acknowledged it is its own
			// again at once, as Kafka's CurrentAssignmentBuilder.
			if _, held := cg.owners[tp]; held && !m.revoking.has(t, p) {
				unreleased = true
				continue
			}
			add = append(add, tp)
		}
	}
	revoking := assignmentOf(revoke)
	c.releaseMember(g, m)
	since := make(map[topicPartitionID]int32, len(keep)+len(revoke)+len(add))
	for _, tp := range keep {
		since[tp] = m.since[tp]
	}
	if len(revoke) > 0 && (owned == nil || ownsAny(owned, revoking)) {
		m.state = memberUnrevokedPartitions
		m.assigned, m.revoking = assignmentOf(keep), revoking
		for _, tp := range revoke {
			since[tp] = m.since[tp]
		}
	} else {
		m.setEpoch(cg.assignmentEpoch)
		m.state = memberStable
		if unreleased {
			m.state = memberUnreleasedPartitions
		}
		m.assigned, m.revoking = assignmentOf(append(keep, add...)), assignment{}
		for _, tp := range add {
			since[tp] = m.epoch
		}
	}
	m.since = since
	c.holdMember(g, m)
}

func (m *consumerMember) setEpoch(e int32) {
	if e != m.epoch {
		m.previousEpoch, m.epoch = m.epoch, e
	}
}

// ownsAny reports whether a heartbeat lists any partition of a; a
// heartbeat that did not list its partitions may own them all.
func ownsAny(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, a assignment) bool {
	if owned == nil {
		return len(a) > 0
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if a.has(t.TopicID, p) {
				return true
			}
		}
	}
	return false
}

// releaseMember frees every partition the member holds or is revoking.
func (c *Coordinator) releaseMember(g *classicGroup, m *consumerMember) {
	for _, a := range []assignment{m.assigned, m.revoking} {
		for t, ps := range a {
			for _, p := range ps {
				delete(g.consumer.owners, topicPartitionID{t, p})
			}
		}
	}
}

// holdMember records the member as the holder of its partitions.
func (c *Coordinator) holdMember(g *classicGroup, m *consumerMember) {
	for _, a := range []assignment{m.assigned, m.revoking} {
		for t, ps := range a {
			for _, p := range ps {
				g.consumer.owners[topicPartitionID{t, p}] = m.epoch
			}
		}
	}
}

// armConsumerSession (re)starts the member's session timeout.
func (c *Coordinator) armConsumerSession(g *classicGroup, m *consumerMember) {
	c.after(g, &m.session, m.sessionTimeout(c.cfg.groupConfig(g.id)), func() {
		if g.consumer != nil && g.consumer.members[m.id] == m {
			c.logger.Info("consumer group member fenced: its session expired", "group", g.id, "member", m.id)
			c.removeConsumerMember(g, m)
			c.persistOrLog(g)
		}
	})
}

// consumerLeave serves a heartbeat with epoch -1 (leave) or -2 (a static
// member leaving for now).
func (c *Coordinator) consumerLeave(g *classicGroup, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) *heartbeatError {
	cg := g.consumer
	var m *consumerMember
	if req.InstanceID == nil {
		if m = cg.members[req.MemberID]; m == nil {
			return refuse(errUnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id)
		}
	} else {
		if m = cg.members[cg.static[*req.InstanceID]]; m == nil {
			return refuse(errUnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
		}
		if m.id != req.MemberID {
			return refuse(errFencedInstanceID, "Static member %s with instance id %s is fenced by member %s.", req.MemberID, *req.InstanceID, m.id)
		}
	}
	id := req.MemberID
	resp.MemberID, resp.MemberEpoch = &id, req.MemberEpoch
	if req.MemberEpoch == staticLeaveEpoch && req.InstanceID != nil {
		// It keeps its partitions for a new incarnation, until its
		// session times out.
		c.logger.Info("static member left the consumer group for now", "group", g.id, "member", m.id, "instance", *m.instanceID)
		c.releaseMember(g, m)
		for t, ps := range m.revoking {
			for _, p := range ps {
				delete(m.since, topicPartitionID{t, p})
			}
		}
		m.revoking = assignment{}
		m.epoch, m.state = staticLeaveEpoch, memberStable
		c.holdMember(g, m)
		m.rebalance.stop()
	} else {
		c.logger.Info("member left the consumer group", "group", g.id, "member", m.id)
		c.removeConsumerMember(g, m)
	}
	if err := c.persistRecords(g); err != nil {
		return refuse(appendErrorCode(err), "")
	}
	return nil
}

// fenceConsumerMembers removes members and frees their partitions; the
// group epoch is bumped once so that the others take them over.
func (c *Coordinator) fenceConsumerMembers(g *classicGroup, members []*consumerMember) {
	cg := g.consumer
	for _, m := range members {
		m.stopTimers()
		c.releaseMember(g, m)
		delete(cg.members, m.id)
		delete(cg.target, m.id)
		if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
			delete(cg.static, *m.instanceID)
		}
	}
	if topics := c.topicImage(); topics != nil {
		cg.subscribed = subscriptionOf(cg, topics)
	}
	cg.epoch++
	c.computeTarget(g)
}

func heartbeatAssignment(a assignment) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := &kmsg.ConsumerGroupHeartbeatResponseAssignment{Topics: []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}}
	for _, t := range sortedTopicIDs(a) {
		out.Topics = append(out.Topics, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: t, Partitions: slices.Clone(a[t])})
	}
	return out
}

// newMemberUUID is a random UUID in its text form, as Kafka names members.
func newMemberUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// validateCommit is Kafka's ConsumerGroup.validateOffsetCommit: with no
// members anyone may commit with a negative epoch (an admin tool, a
// consumer without the group); otherwise the member must exist and,
// unless in a transaction, use OffsetCommit v9 or later. Its current epoch
// commits anything. An older epoch commits only partitions the member
// holds (assigned or being revoked) since that epoch or an earlier one,
// as Kafka 4.3 relaxed it (KIP-1251): the heartbeat that moved the member
// on may have crossed the commit. Commits names topics; topics resolves
// them to ids.
func (cg *consumerGroup) validateCommit(memberID string, epoch int32, transactional bool, version int16, commits []topicPartition, topics Topics) int16 {
	if epoch < 0 && len(cg.members) == 0 {
		return 0
	}
	m := cg.members[memberID]
	switch {
	case m == nil:
		return errUnknownMemberID
	case m.classic != nil && epoch != m.epoch:
		return errIllegalGeneration
	case m.classic != nil:
		return 0
	case !transactional && version < 9:
		return errUnsupportedVersion
	case epoch > m.epoch:
		return errStaleMemberEpoch
	case epoch < m.epoch:
		if topics == nil {
			return errStaleMemberEpoch
		}
		for _, tp := range commits {
			id, _, ok := topics.Topic(tp.topic)
			since, held := m.since[topicPartitionID{id, tp.partition}]
			if !ok || !held || epoch < since {
				return errStaleMemberEpoch
			}
		}
	}
	return 0
}

// validateFetch is Kafka's ConsumerGroup.validateOffsetFetch: a request
// naming no member is an admin's; a member must fetch with its epoch.
func (cg *consumerGroup) validateFetch(memberID *string, epoch int32) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	var m *consumerMember
	if memberID != nil {
		m = cg.members[*memberID]
	}
	switch {
	case m == nil:
		return errUnknownMemberID
	case epoch != m.epoch && m.classic != nil:
		return errIllegalGeneration
	case epoch != m.epoch:
		return errStaleMemberEpoch
	}
	return 0
}

// subscribedNames is the set of topics the members subscribe to (by name
// or pattern) that exist.
func (cg *consumerGroup) subscribedNames() map[string]bool {
	out := make(map[string]bool, len(cg.subscribed))
	if len(cg.members) > 0 {
		for name := range cg.subscribed {
			out[name] = true
		}
	}
	return out
}
