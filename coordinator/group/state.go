package group

import (
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a classic group's state, named as Kafka names it in
// ListGroups and DescribeGroups.
type State int8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

func (s State) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}[s]
}

// member is one member of a group.
type member struct {
	id         string
	instanceID *string // static membership (KIP-345); nil for dynamic members
	clientID   string
	clientHost string
	joinedSeq  uint64 // order of arrival: the first member is the first leader

	rebalanceTimeout time.Duration
	sessionTimeout   time.Duration
	protocolType     string
	protocols        []kmsg.JoinGroupRequestProtocol // in the member's order of preference
	assignment       []byte

	// A parked JoinGroup or SyncGroup, answered when the phase completes.
	awaitingJoin    func(*kmsg.JoinGroupResponse)
	awaitingJoinVer int16
	awaitingSync    func(*kmsg.SyncGroupResponse)
	isNew           bool // joined in the current rebalance and not answered yet

	heartbeat timerSlot // session timeout (or new-member join timeout)
}

// timerSlot is a re-armable timer: arming bumps seq, and a callback armed
// with an older seq knows it was cancelled or superseded.
type timerSlot struct {
	seq   uint64
	timer Timer
}

// armed reports a timer that has neither fired nor been stopped.
func (t *timerSlot) armed() bool { return t.timer != nil }

func (t *timerSlot) stop() {
	t.seq++
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// sameProtocols reports whether a rejoin brings the member's current
// protocols, names and metadata, in the same order.
func (m *member) sameProtocols(ps []kmsg.JoinGroupRequestProtocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].Name != m.protocols[i].Name || string(ps[i].Metadata) != string(m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

// classicGroup is one group: its membership, rebalance progress and
// committed offsets. Everything in it is guarded by mu.
type classicGroup struct {
	mu        sync.Mutex
	id        string
	partition int32

	state      State
	stateSince time.Time // Kafka's currentStateTimestamp; zero when unknown
	generation int32

	protocolType string // "" until a member brings one
	protocol     string // the chosen protocol, "" when none
	leader       string

	members   map[string]*member
	static    map[string]string     // group.instance.id -> member id
	pending   map[string]*timerSlot // dynamic members told MEMBER_ID_REQUIRED, not joined yet
	joinSeq   uint64                // arrival counter for members
	awaiting  int                   // members with a parked JoinGroup
	supported map[string]int        // protocol name -> how many members support it

	pendingSync map[string]bool // members expected to SyncGroup in this generation

	// subscribed is what the members of the current generation subscribe
	// to, read when the generation began (or the group was loaded), as
	// Kafka's ClassicGroup.subscribedTopics; nil when not known.
	subscribed map[string]bool

	joinTimer       timerSlot // rebalance timeout, or the initial delay
	delayRemaining  time.Duration
	newMemberJoined bool // a member joined during the initial delay
	syncTimer       timerSlot

	// consumer is set while the group uses the consumer protocol
	// (KIP-848, consumer.go); its classic fields are then unused.
	consumer *consumerGroup
	// share is set for a share group (KIP-932, share.go), which never
	// becomes another kind; its classic fields are then unused.
	share *shareGroup
	// streams is set for a streams group (KIP-1071, streams.go), which
	// never becomes another kind.
	streams *streamsGroup
	// storedRecords is the consumer or share group's records as last
	// written, by key (consumer_records.go, share_records.go).
	storedRecords map[string][]byte

	offsets map[topicPartition]offsetEntry
	// pendingTxn holds, per producer id, the offsets of its open
	// transaction: written to the log, not visible until its commit marker.
	pendingTxn map[int64]map[topicPartition]offsetEntry
}

type topicPartition struct {
	topic     string
	partition int32
}

// offsetEntry is one committed offset as stored in OffsetCommitValue.
type offsetEntry struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTime  int64 // ms
	expireTime  int64 // ms; -1 unless the commit (OffsetCommit v2-4) asked for a retention
	// recordOffset is the log offset of the record that stored it: a
	// transaction's offset, committed by its marker, replaces a committed
	// offset only if its record is the later one (Kafka's rule).
	recordOffset int64
}

func newGroup(id string, partition int32, now time.Time) *classicGroup {
	return &classicGroup{
		id:          id,
		partition:   partition,
		state:       Empty,
		stateSince:  now,
		members:     map[string]*member{},
		static:      map[string]string{},
		pending:     map[string]*timerSlot{},
		supported:   map[string]int{},
		pendingSync: map[string]bool{},
		offsets:     map[topicPartition]offsetEntry{},
		pendingTxn:  map[int64]map[topicPartition]offsetEntry{},
	}
}

// hasPending reports whether an open transaction holds an offset for the
// partition (Kafka's hasPendingTransactionalOffsets).
func (g *classicGroup) hasPending(tp topicPartition) bool {
	for _, offs := range g.pendingTxn {
		if _, ok := offs[tp]; ok {
			return true
		}
	}
	return false
}

// dropPending forgets every open transaction's offset for the partition,
// as a tombstone does in Kafka.
func (g *classicGroup) dropPending(tp topicPartition) {
	for pid, offs := range g.pendingTxn {
		delete(offs, tp)
		if len(offs) == 0 {
			delete(g.pendingTxn, pid)
		}
	}
}

// unused reports a group that holds nothing: no members, pending members,
// offsets (committed or in an open transaction) or past generations. Only
// a refused first JoinGroup or ShareGroupHeartbeat, or a commit that
// stored nothing, leaves one.
func (g *classicGroup) unused() bool {
	return g.state == Empty && g.generation == 0 && len(g.members) == 0 && len(g.pending) == 0 &&
		len(g.offsets) == 0 && len(g.pendingTxn) == 0 && g.consumer == nil &&
		(g.share == nil || g.share.unused()) && (g.streams == nil || g.streams.unused()) && len(g.storedRecords) == 0
}

// classicEmpty reports a classic group without members: it may become a
// consumer group. Members told MEMBER_ID_REQUIRED and not back yet do not
// count, as in Kafka (its classic group is empty while in state Empty).
func (g *classicGroup) classicEmpty() bool {
	return g.consumer == nil && g.share == nil && g.streams == nil && g.state == Empty && len(g.members) == 0
}

// becomeConsumerGroup switches an empty classic group to the consumer
// protocol; its offsets stay. A member told MEMBER_ID_REQUIRED that comes
// back joins the consumer group as a classic member.
func (g *classicGroup) becomeConsumerGroup() {
	g.consumer = newConsumerGroup()
	g.subscribed = nil
	g.protocolType, g.protocol, g.leader = "", "", ""
	for _, slot := range g.pending {
		slot.stop()
	}
	clear(g.pending)
}

// consumerEmpty reports a consumer group without members: a JoinGroup
// makes it classic again.
func (g *classicGroup) consumerEmpty() bool {
	return g.consumer != nil && len(g.consumer.members) == 0
}

// groupType is the group's type as ListGroups names it.
func (g *classicGroup) groupType() string {
	switch {
	case g.consumer != nil:
		return "consumer"
	case g.share != nil:
		return "share"
	case g.streams != nil:
		return "streams"
	}
	return "classic"
}

// stateName is the group's state as ListGroups and DescribeGroups name it.
func (g *classicGroup) stateName() string {
	switch {
	case g.state == Dead:
	case g.consumer != nil:
		return g.consumer.stateName()
	case g.share != nil:
		return g.share.stateName()
	case g.streams != nil:
		return g.streams.stateName()
	}
	return g.state.String()
}

func (g *classicGroup) transition(s State, now time.Time) {
	g.state = s
	g.stateSince = now
}

// sortedMembers lists the members in order of arrival.
func (g *classicGroup) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].joinedSeq < ms[j].joinedSeq })
	return ms
}

func (g *classicGroup) add(m *member) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	g.joinSeq++
	m.joinedSeq = g.joinSeq
	g.members[m.id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	for _, p := range m.protocols {
		g.supported[p.Name]++
	}
	if g.leader == "" {
		g.leader = m.id
	}
	if m.awaitingJoin != nil {
		g.awaiting++
	}
}

// remove takes a member out of the group, stops its timers and, if it was
// the leader, hands leadership to the earliest remaining member.
func (g *classicGroup) remove(m *member) {
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	for _, p := range m.protocols {
		g.supported[p.Name]--
	}
	if m.awaitingJoin != nil {
		g.awaiting--
	}
	m.heartbeat.stop()
	if g.leader == m.id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
	// An empty group keeps its protocol type, as Kafka's does: admin tools
	// list it as a consumer group.
}

func (g *classicGroup) setProtocols(m *member, ps []kmsg.JoinGroupRequestProtocol) {
	for _, p := range m.protocols {
		g.supported[p.Name]--
	}
	m.protocols = ps
	for _, p := range ps {
		g.supported[p.Name]++
	}
}

// supports reports whether a joining member can be admitted: Kafka's
// INCONSISTENT_GROUP_PROTOCOL check. An empty group takes any non-empty
// protocol type and protocol list; otherwise the type must match and at
// least one of the member's protocols must be supported by every member.
func (g *classicGroup) supports(protocolType string, ps []kmsg.JoinGroupRequestProtocol) bool {
	if protocolType == "" || len(ps) == 0 {
		return false
	}
	if len(g.members) == 0 {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range ps {
		if g.supported[p.Name] == len(g.members) {
			return true
		}
	}
	return false
}

// selectProtocol lets every member vote for its most preferred protocol
// among those all members support; the most votes win, ties going to the
// protocol preferred by the earliest member.
func (g *classicGroup) selectProtocol() string {
	votes := map[string]int{}
	ms := g.sortedMembers()
	for _, m := range ms {
		for _, p := range m.protocols {
			if g.supported[p.Name] == len(g.members) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, m := range ms {
		for _, p := range m.protocols {
			if n, ok := votes[p.Name]; ok && (best == "" || n > votes[best]) {
				best = p.Name
			}
		}
	}
	return best
}

// electJoinedLeader makes sure the leader is a member that rejoined in this
// rebalance, choosing the earliest one that did if the leader did not
// (Kafka's maybeElectNewJoinedLeader). It reports false when no member
// rejoined.
func (g *classicGroup) electJoinedLeader() bool {
	if m := g.members[g.leader]; m != nil && m.awaitingJoin != nil {
		return true
	}
	for _, m := range g.sortedMembers() {
		if m.awaitingJoin != nil {
			g.leader = m.id
			return true
		}
	}
	return false
}

func (g *classicGroup) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

func (g *classicGroup) allJoined() bool {
	return g.awaiting == len(g.members) && len(g.pending) == 0
}

// canRebalance: a rebalance starts from Empty, Stable or CompletingRebalance.
func (g *classicGroup) canRebalance() bool {
	return g.state == Empty || g.state == Stable || g.state == CompletingRebalance
}

// validateMember is Kafka's ClassicGroup.validateMember.
func (g *classicGroup) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		existing, ok := g.static[*instanceID]
		if !ok {
			return errUnknownMemberID
		}
		if existing != memberID {
			return errFencedInstanceID
		}
	}
	if _, ok := g.members[memberID]; !ok {
		return errUnknownMemberID
	}
	return 0
}

// computeSubscribed reads the topics the members subscribe to from their
// consumer-protocol metadata for the chosen protocol (Kafka's
// ClassicGroup.computeSubscribedTopics): none for a group without
// members, nil (not known) unless the group uses the "consumer" protocol
// type and every subscription parses.
func (g *classicGroup) computeSubscribed() map[string]bool {
	if g.protocolType != "consumer" {
		return nil
	}
	topics := map[string]bool{}
	if len(g.members) == 0 {
		return topics
	}
	if g.protocol == "" {
		return nil
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return nil
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	return topics
}

// subscribedTo is Kafka's ClassicGroup.isSubscribedToTopic: a group of the
// "consumer" protocol type whose subscriptions are not known counts as
// subscribed to every topic.
func (g *classicGroup) subscribedTo(topic string) bool {
	if g.subscribed == nil {
		return g.protocolType == "consumer"
	}
	return g.subscribed[topic]
}
