package group

// Streams groups (KIP-1071): the rebalance protocol of Kafka Streams 4.1+
// with group.protocol=streams. Members (one per stream thread, several
// per Kafka Streams process) send StreamsGroupHeartbeat; the first sends
// the application's topology, its subtopologies with their source,
// repartition and changelog topics. The coordinator configures the
// topology against the cluster's topics (streams_topology.go): how many
// tasks each subtopology has (its source topics' partitions), which
// internal topics must be created (the broker creates them), and what is
// missing. Once every source topic exists and the internal ones are
// created, it assigns the tasks (streams_tasks.go): each active on one
// member, and standbys of stateful tasks on other processes when
// streams.num.standby.replicas asks for them.
//
// Membership, epochs and reconciliation are KIP-848's, as for consumer
// groups (consumer.go), with tasks in place of partitions: a change of
// members, topology or source topics bumps the group epoch and computes a
// new target assignment; a member gets a task only after its previous
// owner gave it up (an active task on any member, or any task on another
// member of the same process), and gives up the ones it loses first.
//
// The group is stored before a heartbeat is answered, with Kafka's records
// (streams_records.go).

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsMember is one member of a streams group (Kafka's
// StreamsGroupMember).
type streamsMember struct {
	id               string
	instanceID       *string
	rackID           *string
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	topologyEpoch    int32
	processID        string
	userEndpoint     *kmsg.StreamsGroupHeartbeatRequestUserEndpoint
	clientTags       map[string]string

	epoch, previousEpoch int32
	state                memberState
	assigned, revoking   streamsTasks

	session, rebalance timerSlot
	// fresh marks a member made by this heartbeat, which bumps the epoch.
	fresh bool
}

func (m *streamsMember) stopTimers() {
	m.session.stop()
	m.rebalance.stop()
}

func (m *streamsMember) setEpoch(e int32) {
	if e != m.epoch {
		m.previousEpoch, m.epoch = m.epoch, e
	}
}

// streamsGroup is the streams-group state of a group.
type streamsGroup struct {
	epoch           int32
	assignmentEpoch int32
	// topology is the application's, as its members sent it; configured
	// is what it means against the cluster's topics as of the last
	// heartbeat (not stored).
	topology   *kmsg.StreamsGroupHeartbeatRequestTopology
	configured *configuredTopology
	members    map[string]*streamsMember
	static     map[string]string // instance id -> member id
	target     map[string]streamsTasks
	// endpointEpoch counts changes of the members' endpoints and tasks,
	// for Interactive Queries (PartitionsByUserEndpoint).
	endpointEpoch int32
	// shutdownBy is the member that asked the whole application to shut
	// down, until the group is empty.
	shutdownBy string
	// delay holds the first assignment of a group that was empty back for
	// streams.initial.rebalance.delay.ms, so that the members starting
	// together are assigned together.
	delay timerSlot
	// standbys is the streams.num.standby.replicas the target was last
	// computed with, whose change rebalances; -1 until a target is
	// computed (Kafka stores it with the group epoch, Gregor does not, so
	// a change while the group was not coordinated here goes unnoticed
	// until its next rebalance).
	standbys int
}

// newStreamsGroup starts at group and assignment epoch 1, as Kafka 4.4's,
// so that a member's first epoch is above 0 even while the initial
// rebalance delay holds its assignment back.
func newStreamsGroup() *streamsGroup {
	return &streamsGroup{epoch: 1, assignmentEpoch: 1, standbys: -1,
		members: map[string]*streamsMember{}, static: map[string]string{}, target: map[string]streamsTasks{}}
}

// stateName is the group's state as Kafka's StreamsGroup names it.
func (sg *streamsGroup) stateName() string {
	switch {
	case len(sg.members) == 0:
		return "Empty"
	case sg.topology == nil || sg.configured == nil || !sg.configured.ready():
		return "NotReady"
	case sg.assignmentEpoch != sg.epoch:
		return "Assigning"
	}
	for _, m := range sg.members {
		if m.epoch != sg.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// unused reports a streams group made by a heartbeat that was refused.
func (sg *streamsGroup) unused() bool {
	return len(sg.members) == 0 && sg.topology == nil
}

// InternalTopic is a repartition or changelog topic a streams group needs
// that the broker must create.
type InternalTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16 // -1: the broker's default
	Configs           map[string]string
}

// StreamsGroupHeartbeat serves a member of a streams group: it joins
// (epoch 0, with the topology), heartbeats, acknowledges revocations, or
// leaves (-1, -2). It also returns the internal topics to create.
func (c *Coordinator) StreamsGroupHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, clientID, clientHost string) (*kmsg.StreamsGroupHeartbeatResponse, []InternalTopic) {
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	resp.Version = req.Version
	create, herr := c.streamsHeartbeat(req, clientID, clientHost, resp)
	if herr != nil {
		*resp = *req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		resp.Version = req.Version
		resp.ErrorCode = herr.code
		if herr.msg != "" {
			resp.ErrorMessage = &herr.msg
		}
		return resp, nil
	}
	return resp, create
}

func (c *Coordinator) streamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, clientID, clientHost string, resp *kmsg.StreamsGroupHeartbeatResponse) ([]InternalTopic, *heartbeatError) {
	if herr := validateStreamsHeartbeat(req); herr != nil {
		return nil, herr
	}
	topics := c.topicImage()
	if topics == nil {
		return nil, refuse(errCoordinatorNotAvail, "")
	}
	joining := req.MemberEpoch == 0
	leaving := req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch
	g, code := c.acquire(req.Group, joining)
	switch {
	case code == errGroupIDNotFound && leaving:
		return nil, refuse(errGroupIDNotFound, "Group %s not found.", req.Group)
	case code == errGroupIDNotFound:
		return nil, refuse(errGroupIDNotFound, "Streams group %s not found.", req.Group)
	case code != 0:
		return nil, refuse(code, "")
	}
	defer func() {
		unused := g.unused()
		g.mu.Unlock()
		if unused {
			c.removeIfUnused(g)
		}
	}()
	if g.streams == nil {
		if !joining || !g.classicEmpty() {
			return nil, refuse(errGroupIDNotFound, "Group %s is not a streams group.", req.Group)
		}
		g.becomeStreamsGroup()
		c.logger.Info("group uses the streams protocol", "group", g.id)
	}
	sg := g.streams
	if leaving {
		return nil, c.streamsLeave(g, req, resp)
	}
	// Only a join can be refused for the group's size: an unknown member
	// heartbeating with an epoch is told it is unknown.
	_, known := sg.members[req.MemberID]
	if req.InstanceID != nil {
		_, known = sg.static[*req.InstanceID]
	}
	if joining && !known && len(sg.members) >= c.cfg.StreamsMaxSize {
		return nil, refuse(errGroupMaxSizeReached, "The streams group has reached its maximum capacity of %d members.", c.cfg.StreamsMaxSize)
	}
	wasEmpty := len(sg.members) == 0
	m, herr := c.streamsMemberFor(g, req)
	if herr != nil {
		return nil, herr
	}
	// Everything that can refuse the heartbeat comes before any change,
	// as Kafka's refused heartbeat writes nothing.
	var owned *streamsTasks
	if req.ActiveTasks != nil {
		o := streamsTasks{active: taskSetOf(req.ActiveTasks), standby: taskSetOf(req.StandbyTasks), warmup: taskSetOf(req.WarmupTasks)}
		owned = &o
	}
	if herr := sg.checkOwnedTasks(owned); herr != nil {
		return nil, herr
	}
	if herr := sg.checkTopology(req); herr != nil {
		return nil, herr
	}
	topology := sg.topology
	if topology == nil {
		topology = req.Topology
	}
	configured := configureTopology(topology, topics)
	if configured.invalid != "" {
		return nil, refuse(errStreamsInvalidTopology, "%s", configured.invalid)
	}
	if sg.topology == nil {
		c.logger.Info("streams group topology set", "group", g.id, "subtopologies", len(topology.Subtopologies))
		sg.topology = topology
	}
	previous := m.assigned
	changed := m.fresh
	m.fresh = false
	if req.InstanceID != nil {
		m.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		changed = changed || m.rackID == nil || *m.rackID != *req.RackID
		m.rackID = req.RackID
	}
	// A dynamic member's change of any of its metadata bumps the group
	// epoch, as Kafka compares the whole member; a static member's only
	// of what the assignment reads (KAFKA-20169).
	dynamic := req.InstanceID == nil
	if req.RebalanceTimeoutMillis != -1 {
		rt := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
		changed = changed || dynamic && m.rebalanceTimeout != rt
		m.rebalanceTimeout = rt
	}
	if req.Topology != nil {
		changed = changed || m.topologyEpoch != req.Topology.Epoch
		m.topologyEpoch = req.Topology.Epoch
	}
	if req.ProcessID != nil {
		changed = changed || m.processID != *req.ProcessID
		m.processID = *req.ProcessID
	}
	if req.UserEndpoint != nil {
		ep := *req.UserEndpoint
		changed = changed || m.userEndpoint == nil || m.userEndpoint.Host != ep.Host || m.userEndpoint.Port != ep.Port
		m.userEndpoint = &ep
	}
	if req.ClientTags != nil {
		tags := map[string]string{}
		for _, t := range req.ClientTags {
			tags[t.Key] = t.Value
		}
		changed = changed || !maps.Equal(tags, m.clientTags)
		m.clientTags = tags
	}
	changed = changed || dynamic && (m.clientID != clientID || m.clientHost != clientHost)
	m.clientID, m.clientHost = clientID, clientHost
	sg.members[m.id] = m
	if m.instanceID != nil {
		sg.static[*m.instanceID] = m.id
	}

	if wasEmpty && !sg.delay.armed() {
		c.armInitialDelay(g)
	}
	c.maybeBumpStreamsEpoch(g, configured, changed)
	c.reconcileStreams(g, m, owned)
	c.armStreamsSession(g, m)
	if req.ShutdownApplication && sg.shutdownBy == "" {
		sg.shutdownBy = m.id
		c.logger.Warn("a streams group member asked the application to shut down", "group", g.id, "member", m.id)
	}
	if err := c.persistRecords(g); err != nil {
		return nil, refuse(appendErrorCode(err), "")
	}

	cfg := c.cfg.groupConfig(g.id)
	resp.MemberID = m.id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(cfg.StreamsHeartbeatInterval.Milliseconds())
	resp.AcceptableRecoveryLag = streamsAcceptableRecoveryLag // v1; v0's int32 field stays 0, as in Kafka
	resp.TaskOffsetIntervalMillis = streamsTaskOffsetInterval
	if joining || !m.assigned.equal(previous) {
		resp.ActiveTasks = m.assigned.active.taskIDs()
		resp.StandbyTasks = m.assigned.standby.taskIDs()
		resp.WarmupTasks = m.assigned.warmup.taskIDs()
		if m.userEndpoint != nil {
			sg.endpointEpoch++
		}
	}
	resp.EndpointInformationEpoch = sg.endpointEpoch
	if req.EndpointInformationEpoch != sg.endpointEpoch {
		resp.PartitionsByUserEndpoint = sg.partitionsByEndpoint()
	}
	resp.Status = sg.statuses(m)
	if sg.configured != nil {
		return sg.configured.create, nil
	}
	return nil, nil
}

// Kafka's defaults for what the heartbeat tells members: the lag under
// which a warm-up task counts as caught up, and how often a member reports
// its tasks' changelog offsets.
const (
	streamsAcceptableRecoveryLag = 10000
	streamsTaskOffsetInterval    = 60000
)

// Status codes of StreamsGroupHeartbeat answers.
const (
	streamsStatusStaleTopology          int8 = 0
	streamsStatusMissingSourceTopics    int8 = 1
	streamsStatusIncorrectlyPartitioned int8 = 2
	streamsStatusMissingInternalTopics  int8 = 3
	streamsStatusShutdownApplication    int8 = 4
	streamsStatusAssignmentDelayed      int8 = 5
)

// statuses are what a heartbeat of m is told about the group, in Kafka's
// order; never nil.
func (sg *streamsGroup) statuses(m *streamsMember) []kmsg.StreamsGroupHeartbeatResponseStatus {
	out := []kmsg.StreamsGroupHeartbeatResponseStatus{}
	if sg.topology != nil && m.topologyEpoch < sg.topology.Epoch {
		out = append(out, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsStatusStaleTopology,
			StatusDetail: fmt.Sprintf("The member's topology epoch %d is behind the group's topology epoch %d.", m.topologyEpoch, sg.topology.Epoch)})
	}
	if sg.delay.armed() {
		out = append(out, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsStatusAssignmentDelayed,
			StatusDetail: "Assignment delayed due to the configured initial rebalance delay."})
	}
	if sg.configured != nil && sg.configured.status != nil {
		out = append(out, *sg.configured.status)
	}
	if sg.shutdownBy != "" {
		out = append(out, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsStatusShutdownApplication,
			StatusDetail: fmt.Sprintf("Streams group member %s encountered a fatal error and requested a shutdown for the entire application.", sg.shutdownBy)})
	}
	return out
}

// validateStreamsHeartbeat applies Kafka's request checks.
func validateStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) *heartbeatError {
	// Kafka refuses the features it does not support before it checks
	// anything else.
	if req.Topology != nil {
		for _, st := range req.Topology.Subtopologies {
			if len(st.SourceTopicRegex) > 0 {
				return refuse(errInvalidRequest, "Regular expressions for source topics are not supported yet.")
			}
		}
	}
	empty := func(s *string) bool { return s != nil && blank(*s) }
	switch {
	case blank(req.MemberID):
		return refuse(errInvalidRequest, "MemberId can't be empty.")
	case blank(req.Group):
		return refuse(errInvalidRequest, "GroupId can't be empty.")
	case empty(req.InstanceID):
		return refuse(errInvalidRequest, "InstanceId can't be empty.")
	case empty(req.RackID):
		return refuse(errInvalidRequest, "RackId can't be empty.")
	}
	if req.Topology != nil {
		ids := map[string]bool{}
		for _, st := range req.Topology.Subtopologies {
			if ids[st.SubtopologyID] {
				// Kafka's StreamsTopology fails on the duplicate map key
				// (an UNKNOWN_SERVER_ERROR); a clear refusal instead.
				return refuse(errInvalidRequest, "Subtopology %s appears more than once in the topology.", st.SubtopologyID)
			}
			ids[st.SubtopologyID] = true
			for _, g := range st.CopartitionGroups {
				for _, idx := range []struct {
					is []int16
					n  int
				}{{g.SourceTopics, len(st.SourceTopics)}, {g.SourceTopicRegex, len(st.SourceTopicRegex)}, {g.RepartitionSourceTopics, len(st.RepartitionSourceTopics)}} {
					for _, i := range idx.is {
						if i < 0 || int(i) >= idx.n {
							return refuse(errInvalidRequest, "A copartition group of subtopology %s refers to topic %d, which it does not have.", st.SubtopologyID, i)
						}
					}
				}
			}
		}
	}
	switch {
	case req.MemberEpoch == 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return refuse(errInvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
		case req.ActiveTasks == nil || len(req.ActiveTasks) > 0:
			return refuse(errInvalidRequest, "ActiveTasks must be empty when (re-)joining.")
		case req.StandbyTasks == nil || len(req.StandbyTasks) > 0:
			return refuse(errInvalidRequest, "StandbyTasks must be empty when (re-)joining.")
		case req.WarmupTasks == nil || len(req.WarmupTasks) > 0:
			return refuse(errInvalidRequest, "WarmupTasks must be empty when (re-)joining.")
		case req.Topology == nil:
			return refuse(errInvalidRequest, "Topology must be non-null when (re-)joining.")
		}
		for _, st := range req.Topology.Subtopologies {
			for _, t := range st.StateChangelogTopics {
				if t.NumPartitions != 0 {
					return refuse(errStreamsInvalidTopology, "Changelog topic %s must have an undefined partition count, but it is set to %d.", t.Topic, t.NumPartitions)
				}
			}
		}
	case req.MemberEpoch == staticLeaveEpoch && req.InstanceID == nil:
		return refuse(errInvalidRequest, "InstanceId can't be null.")
	case req.MemberEpoch < staticLeaveEpoch:
		return refuse(errInvalidRequest, "MemberEpoch is %d, but must be greater than or equal to -2.", req.MemberEpoch)
	}
	if (req.ActiveTasks != nil || req.StandbyTasks != nil || req.WarmupTasks != nil) &&
		(req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil) {
		return refuse(errInvalidRequest, "If one task-type is non-null, all must be non-null.")
	}
	if req.MemberEpoch != 0 && req.Topology != nil {
		return refuse(errInvalidRequest, "Topology can only be provided when (re-)joining.")
	}
	return nil
}

// blank reports a string that Java's trim() empties (only characters up
// to the space), which Kafka's throwIfEmptyString counts as empty.
func blank(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] > ' ' {
			return false
		}
	}
	return true
}

// streamsMemberFor finds the request's member, or makes a new one when it
// joins; epoch and instance checks as for consumer groups.
func (c *Coordinator) streamsMemberFor(g *classicGroup, req *kmsg.StreamsGroupHeartbeatRequest) (*streamsMember, *heartbeatError) {
	sg := g.streams
	joining := req.MemberEpoch == 0
	if req.InstanceID == nil {
		m := sg.members[req.MemberID]
		switch {
		case m == nil && !joining:
			return nil, refuse(errUnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id)
		case m == nil:
			c.logger.Info("member joins the streams group", "group", g.id, "member", req.MemberID)
			return &streamsMember{id: req.MemberID, fresh: true, assigned: newStreamsTasks(), revoking: newStreamsTasks()}, nil
		case joining:
			c.resetStreamsMember(m)
			return m, nil
		}
		return m, checkStreamsEpoch(m, req)
	}
	instance := *req.InstanceID
	old := sg.members[sg.static[instance]]
	if joining {
		switch {
		case old == nil:
			c.logger.Info("static member joins the streams group", "group", g.id, "member", req.MemberID, "instance", instance)
			return &streamsMember{id: req.MemberID, fresh: true, assigned: newStreamsTasks(), revoking: newStreamsTasks()}, nil
		case old.epoch != staticLeaveEpoch:
			return nil, refuse(errUnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", req.MemberID, instance, old.id)
		}
		c.logger.Info("static member rejoins the streams group", "group", g.id, "member", req.MemberID, "replaces", old.id, "instance", instance)
		m := *old
		m.id, m.epoch, m.previousEpoch, m.state = req.MemberID, 0, 0, memberStable
		m.session, m.rebalance = timerSlot{}, timerSlot{}
		old.stopTimers()
		delete(sg.members, old.id)
		sg.target[m.id] = sg.target[old.id]
		delete(sg.target, old.id)
		return &m, nil
	}
	switch {
	case old == nil:
		return nil, refuse(errUnknownMemberID, "Instance id %s is unknown.", instance)
	case old.id != req.MemberID:
		return nil, refuse(errFencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", req.MemberID, instance, old.id)
	}
	return old, checkStreamsEpoch(old, req)
}

// resetStreamsMember is a known member joining again with epoch 0, after
// it was fenced: it owns nothing now and starts over.
func (c *Coordinator) resetStreamsMember(m *streamsMember) {
	m.assigned, m.revoking = newStreamsTasks(), newStreamsTasks()
	m.epoch, m.previousEpoch, m.state = 0, 0, memberStable
	m.rebalance.stop()
}

// checkStreamsEpoch fences a member whose epoch is not the coordinator's,
// except one a step behind that owns no more than it is assigned.
func checkStreamsEpoch(m *streamsMember, req *kmsg.StreamsGroupHeartbeatRequest) *heartbeatError {
	got := req.MemberEpoch
	ownsOnlyAssigned := req.ActiveTasks != nil && isSubset(taskSetOf(req.ActiveTasks), m.assigned.active) &&
		isSubset(taskSetOf(req.StandbyTasks), m.assigned.standby) && isSubset(taskSetOf(req.WarmupTasks), m.assigned.warmup)
	switch {
	case got > m.epoch:
		return refuse(errFencedMemberEpoch, "The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", got, m.epoch)
	case got < m.epoch && (got != m.previousEpoch || !ownsOnlyAssigned):
		return refuse(errFencedMemberEpoch, "The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", got, m.epoch)
	}
	return nil
}

func isSubset(s, of taskSet) bool {
	ok := true
	s.each(func(st string, p int32) { ok = ok && of.has(st, p) })
	return ok
}

// checkOwnedTasks refuses a heartbeat naming tasks the configured
// topology does not have.
func (sg *streamsGroup) checkOwnedTasks(owned *streamsTasks) *heartbeatError {
	if owned == nil || sg.configured == nil || !sg.configured.ready() {
		return nil
	}
	var bad *heartbeatError
	for _, s := range []taskSet{owned.active, owned.standby, owned.warmup} {
		s.each(func(st string, p int32) {
			n, ok := sg.configured.tasks[st]
			switch {
			case bad != nil:
			case !ok:
				bad = refuse(errInvalidRequest, "Subtopology %s does not exist in the topology.", st)
			case p < 0 || p >= n:
				bad = refuse(errInvalidRequest, "Task %d for subtopology %s is invalid. Number of tasks for this subtopology: %d", p, st, n)
			}
		})
	}
	return bad
}

// checkTopology refuses a joining member's topology unlike the group's:
// the first member's is the group's, and Kafka supports no topology
// updates yet (an older epoch is let through, the group's kept).
func (sg *streamsGroup) checkTopology(req *kmsg.StreamsGroupHeartbeatRequest) *heartbeatError {
	if req.Topology == nil || sg.topology == nil || req.Topology.Epoch < sg.topology.Epoch {
		return nil
	}
	if !bytes.Equal(topologyValue(byID(req.Topology)), topologyValue(byID(sg.topology))) {
		return refuse(errInvalidRequest, "Topology updates are not supported yet.")
	}
	return nil
}

// byID is t with its subtopologies sorted by id: Kafka keeps them by id,
// so their order does not make another topology.
func byID(t *kmsg.StreamsGroupHeartbeatRequestTopology) *kmsg.StreamsGroupHeartbeatRequestTopology {
	out := *t
	out.Subtopologies = slices.SortedFunc(slices.Values(t.Subtopologies), func(a, b kmsg.StreamsGroupHeartbeatRequestTopologySubtopology) int {
		return strings.Compare(a.SubtopologyID, b.SubtopologyID)
	})
	return &out
}

// maybeBumpStreamsEpoch takes the topology as configured against the
// cluster's topics and, when that or a member changed, bumps the group
// epoch and computes the new target assignment.
func (c *Coordinator) maybeBumpStreamsEpoch(g *classicGroup, configured *configuredTopology, changed bool) {
	sg := g.streams
	if sg.configured == nil || !configured.same(sg.configured) {
		changed = true
	}
	// As Kafka, a change of the assignment configs since the target was
	// last computed rebalances.
	if sg.standbys >= 0 && sg.standbys != *c.cfg.groupConfig(g.id).StreamsNumStandbyReplicas {
		changed = true
	}
	sg.configured = configured
	if changed {
		sg.epoch++
		c.logger.Info("bumped streams group epoch", "group", g.id, "epoch", sg.epoch)
	}
	if sg.epoch > sg.assignmentEpoch && !sg.delay.armed() {
		c.computeStreamsTarget(g)
	}
}

// armInitialDelay holds back the first assignment of a group that was
// empty; when the delay ends the target is computed, and the members learn
// it on their next heartbeats.
func (c *Coordinator) armInitialDelay(g *classicGroup) {
	d := *c.cfg.groupConfig(g.id).StreamsInitialRebalanceDelay
	if d <= 0 {
		return
	}
	c.after(g, &g.streams.delay, d, func() {
		// As Kafka's computeDelayedTargetAssignment, not for a group its
		// members have left meanwhile.
		if sg := g.streams; sg != nil && len(sg.members) > 0 && sg.epoch > sg.assignmentEpoch {
			c.computeStreamsTarget(g)
			c.persistOrLog(g)
		}
	})
}

// computeStreamsTarget assigns the configured topology's tasks to the
// members (none while it is not ready).
func (c *Coordinator) computeStreamsTarget(g *classicGroup) {
	sg := g.streams
	ids := slices.Sorted(maps.Keys(sg.members))
	members := make([]streamsAssignee, 0, len(ids))
	for _, id := range ids {
		prev, ok := sg.target[id]
		if !ok {
			prev = newStreamsTasks()
		}
		members = append(members, streamsAssignee{id: id, process: sg.members[id].processID, previous: prev})
	}
	tasks, stateful := map[string]int32{}, map[string]bool{}
	if sg.configured != nil && sg.configured.ready() {
		tasks, stateful = sg.configured.tasks, sg.configured.stateful
	}
	sg.standbys = *c.cfg.groupConfig(g.id).StreamsNumStandbyReplicas
	sg.target = assignTasks(members, tasks, stateful, sg.standbys)
	sg.assignmentEpoch = sg.epoch
}

// reconcileStreams moves a member towards its target, as Kafka's streams
// CurrentAssignmentBuilder.
func (c *Coordinator) reconcileStreams(g *classicGroup, m *streamsMember, owned *streamsTasks) {
	sg := g.streams
	if m.epoch == sg.assignmentEpoch && m.state == memberStable {
		return
	}
	switch m.state {
	case memberUnrevokedPartitions:
		if owned == nil || owned.anyOf(m.revoking) {
			return
		}
		c.nextStreamsAssignment(g, m, m.epoch+1, owned)
	default:
		c.nextStreamsAssignment(g, m, m.epoch, owned)
	}
	if m.state == memberUnrevokedPartitions {
		c.armStreamsRebalance(g, m)
	} else {
		m.rebalance.stop()
	}
}

// armStreamsRebalance gives a member that must give up tasks its rebalance
// timeout to do so at its current epoch.
func (c *Coordinator) armStreamsRebalance(g *classicGroup, m *streamsMember) {
	epoch := m.epoch
	c.after(g, &m.rebalance, m.rebalanceTimeout, func() {
		if m.epoch == epoch && m.state == memberUnrevokedPartitions && g.streams != nil && g.streams.members[m.id] == m {
			c.logger.Info("streams group member fenced: it did not revoke its tasks within its rebalance timeout",
				"group", g.id, "member", m.id, "epoch", epoch)
			c.removeStreamsMember(g, m)
			c.persistOrLog(g)
		}
	})
}

// nextStreamsAssignment is CurrentAssignmentBuilder.computeNextAssignment.
func (c *Coordinator) nextStreamsAssignment(g *classicGroup, m *streamsMember, epoch int32, owned *streamsTasks) {
	sg := g.streams
	target, ok := sg.target[m.id]
	if !ok {
		target = newStreamsTasks()
	}
	// Who else holds what: active tasks on any member, and every kind per
	// process, the revoking ones included.
	activeElsewhere := taskSet{}
	byProcess := taskSet{} // tasks of any kind on other members of m's process
	activeOnProcess := taskSet{}
	for _, o := range sg.members {
		if o == m {
			continue
		}
		for _, ts := range []streamsTasks{o.assigned, o.revoking} {
			ts.active.each(func(st string, p int32) { activeElsewhere.add(st, p) })
			if o.processID == m.processID {
				ts.active.each(func(st string, p int32) { activeOnProcess.add(st, p) })
				for _, s := range []taskSet{ts.standby, ts.warmup} {
					s.each(func(st string, p int32) { byProcess.add(st, p) })
				}
			}
		}
	}
	unreleasedActive := func(st string, p int32) bool { return activeElsewhere.has(st, p) || byProcess.has(st, p) }
	unreleasedOther := func(st string, p int32) bool { return activeOnProcess.has(st, p) || byProcess.has(st, p) }
	keep, revoke, add := newStreamsTasks(), newStreamsTasks(), newStreamsTasks()
	unreleased := false
	diff := func(current, target, keep, revoke, add taskSet, held func(string, int32) bool) {
		current.each(func(st string, p int32) {
			if target.has(st, p) {
				keep.add(st, p)
			} else {
				revoke.add(st, p)
			}
		})
		target.each(func(st string, p int32) {
			switch {
			case current.has(st, p):
			case held(st, p):
				unreleased = true
			default:
				add.add(st, p)
			}
		})
	}
	diff(m.assigned.active, target.active, keep.active, revoke.active, add.active, unreleasedActive)
	diff(m.assigned.standby, target.standby, keep.standby, revoke.standby, add.standby, unreleasedOther)
	diff(m.assigned.warmup, target.warmup, keep.warmup, revoke.warmup, add.warmup, unreleasedOther)
	if !revoke.empty() && (owned == nil || owned.anyOf(revoke)) {
		m.setEpoch(epoch)
		m.state = memberUnrevokedPartitions
		m.assigned, m.revoking = keep, revoke
		return
	}
	m.setEpoch(sg.assignmentEpoch)
	m.state = memberStable
	if unreleased {
		m.state = memberUnreleasedPartitions
	}
	for _, kind := range []struct{ into, from taskSet }{{keep.active, add.active}, {keep.standby, add.standby}, {keep.warmup, add.warmup}} {
		kind.from.each(func(st string, p int32) { kind.into.add(st, p) })
	}
	m.assigned, m.revoking = keep, newStreamsTasks()
}

// armStreamsSession (re)starts the member's session timeout.
func (c *Coordinator) armStreamsSession(g *classicGroup, m *streamsMember) {
	c.after(g, &m.session, c.cfg.groupConfig(g.id).StreamsSessionTimeout, func() {
		if g.streams != nil && g.streams.members[m.id] == m {
			c.logger.Info("streams group member fenced: its session expired", "group", g.id, "member", m.id)
			c.removeStreamsMember(g, m)
			c.persistOrLog(g)
		}
	})
}

// streamsLeave serves a heartbeat with epoch -1 (leave) or -2 (a static
// member leaving for now).
func (c *Coordinator) streamsLeave(g *classicGroup, req *kmsg.StreamsGroupHeartbeatRequest, resp *kmsg.StreamsGroupHeartbeatResponse) *heartbeatError {
	sg := g.streams
	var m *streamsMember
	if req.InstanceID == nil {
		if m = sg.members[req.MemberID]; m == nil {
			return refuse(errUnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id)
		}
	} else {
		if m = sg.members[sg.static[*req.InstanceID]]; m == nil {
			return refuse(errUnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
		}
		if m.id != req.MemberID {
			return refuse(errFencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", req.MemberID, *req.InstanceID, m.id)
		}
	}
	resp.MemberID, resp.MemberEpoch = req.MemberID, req.MemberEpoch
	resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	if req.ShutdownApplication && sg.shutdownBy == "" {
		sg.shutdownBy = m.id
	}
	if req.MemberEpoch == staticLeaveEpoch {
		// It keeps its tasks for a new incarnation, until its session
		// times out.
		c.logger.Info("static member left the streams group for now", "group", g.id, "member", m.id, "instance", *m.instanceID)
		m.revoking = newStreamsTasks()
		m.epoch, m.state = staticLeaveEpoch, memberStable
		m.rebalance.stop()
	} else {
		c.logger.Info("member left the streams group", "group", g.id, "member", m.id)
		c.removeStreamsMember(g, m)
	}
	if err := c.persistRecords(g); err != nil {
		return refuse(appendErrorCode(err), "")
	}
	return nil
}

// removeStreamsMember removes a member; the group epoch is bumped so that
// the next heartbeat computes a target without it (Kafka's
// streamsGroupFenceMember writes only the new epoch), and when it was the
// last the assignment epoch catches up (KAFKA-20442).
func (c *Coordinator) removeStreamsMember(g *classicGroup, m *streamsMember) {
	sg := g.streams
	m.stopTimers()
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	if m.instanceID != nil && sg.static[*m.instanceID] == m.id {
		delete(sg.static, *m.instanceID)
	}
	sg.epoch++
	if len(sg.members) == 0 {
		sg.shutdownBy = ""
		sg.assignmentEpoch = sg.epoch
	}
}

// partitionsByEndpoint lists, for each member with a user endpoint, the
// partitions of the source topics of its active and standby tasks
// (Interactive Queries find a key's host with it).
func (sg *streamsGroup) partitionsByEndpoint() []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	if sg.configured == nil {
		return out
	}
	for _, id := range slices.Sorted(maps.Keys(sg.members)) {
		m := sg.members[id]
		if m.userEndpoint == nil {
			continue
		}
		e := kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{UserEndpoint: kmsg.Endpoint{Host: m.userEndpoint.Host, Port: m.userEndpoint.Port}}
		for _, tp := range sg.configured.sourcePartitions(m.assigned.active) {
			e.ActivePartitions = append(e.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: tp.topic, Partitions: tp.partitions})
		}
		standby := taskSet{}
		for _, s := range []taskSet{m.assigned.standby, m.assigned.warmup} {
			s.each(func(st string, p int32) { standby.add(st, p) })
		}
		for _, tp := range sg.configured.sourcePartitions(standby) {
			e.StandbyPartitions = append(e.StandbyPartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{Topic: tp.topic, Partitions: tp.partitions})
		}
		out = append(out, e)
	}
	return out
}

// becomeStreamsGroup makes an empty classic group a streams group.
func (g *classicGroup) becomeStreamsGroup() {
	g.streams = newStreamsGroup()
	g.protocolType, g.protocol, g.leader = "", "", ""
	for _, slot := range g.pending {
		slot.stop()
	}
	clear(g.pending)
}

// validateCommit is Kafka's StreamsGroup.validateOffsetCommit: an admin's
// commit (epoch -1) to an empty group, or a member's (OffsetCommit v9+)
// with its epoch; an older epoch only for partitions of the active tasks
// it still holds or is giving up.
func (sg *streamsGroup) validateCommit(memberID string, epoch int32, transactional bool, version int16, commits []topicPartition) int16 {
	if epoch < 0 && len(sg.members) == 0 {
		return 0
	}
	m := sg.members[memberID]
	switch {
	case m == nil:
		return errUnknownMemberID
	case !transactional && version < 9:
		return errUnsupportedVersion
	case epoch > m.epoch:
		return errStaleMemberEpoch
	case epoch < m.epoch:
		for _, tp := range commits {
			held := false
			for _, st := range sg.subtopologiesReading(tp.topic) {
				held = held || m.assigned.active.has(st, tp.partition) || m.revoking.active.has(st, tp.partition)
			}
			if !held {
				return errStaleMemberEpoch
			}
		}
	}
	return 0
}

// subtopologiesReading are the subtopologies with topic among their
// source or repartition source topics.
func (sg *streamsGroup) subtopologiesReading(topic string) []string {
	var out []string
	if sg.topology != nil {
		for _, st := range sg.topology.Subtopologies {
			if slices.Contains(allSources(st), topic) {
				out = append(out, st.SubtopologyID)
			}
		}
	}
	return out
}

// validateFetch is StreamsGroup.validateOffsetFetch: a request naming no
// member is an admin's; a member must fetch with its epoch.
func (sg *streamsGroup) validateFetch(memberID *string, epoch int32) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	var m *streamsMember
	if memberID != nil {
		m = sg.members[*memberID]
	}
	switch {
	case m == nil:
		return errUnknownMemberID
	case epoch != m.epoch:
		return errStaleMemberEpoch
	}
	return 0
}

// subscribedNames are the topology's user source topics while the group
// has members: their offsets are neither deleted nor expired.
func (sg *streamsGroup) subscribedNames() map[string]bool {
	out := map[string]bool{}
	if len(sg.members) == 0 || sg.topology == nil {
		return out
	}
	for _, st := range sg.topology.Subtopologies {
		for _, t := range allSources(st) {
			out[t] = true
		}
	}
	return out
}
