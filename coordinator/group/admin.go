package group

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupAuthorizedOperations is the bitfield of the ACL operations on a
// group (Kafka's AclEntry.supportedOperations: READ, DELETE, DESCRIBE,
// DESCRIBE_CONFIGS, ALTER_CONFIGS): with no authorizer, all are allowed.
// As in Kafka, only a group described without an error carries it; the
// broker narrows it to the principal's operations under an authorizer.
const groupAuthorizedOperations = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11

// ListGroups lists the groups, filtered by state (v4+, case-insensitive,
// trimmed as Java's String.trim does, as in Kafka's
// GroupMetadataManager.listGroups) and type (v5+: "classic", "consumer"
// or "share").
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	states := map[string]bool{}
	for _, s := range req.StatesFilter {
		states[strings.TrimFunc(strings.ToLower(s), func(r rune) bool { return r <= ' ' })] = true
	}
	types := map[string]bool{}
	for _, t := range req.TypesFilter {
		types[strings.ToLower(t)] = true
	}
	c.mu.Lock()
	// A partition still loading fails the whole listing, as Kafka's
	// GroupCoordinatorService.listGroups does.
	if slices.Contains(c.parts, loading) {
		c.mu.Unlock()
		resp.ErrorCode = errLoadInProgress
		return resp
	}
	groups := make([]*classicGroup, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	sort.Slice(groups, func(i, j int) bool { return groups[i].id < groups[j].id })
	for _, g := range groups {
		g.mu.Lock()
		dead, state, protocolType, typ := g.state == Dead, g.stateName(), g.protocolType, g.groupType()
		if g.consumer != nil {
			protocolType = "consumer"
		}
		if g.share != nil {
			protocolType = "share"
		}
		if g.streams != nil {
			protocolType = "streams"
		}
		g.mu.Unlock()
		lower := strings.ToLower(state)
		if state == "NotReady" {
			lower = "not_ready" // Kafka's StreamsGroupState.toLowerCaseString
		}
		if dead || (len(states) > 0 && !states[lower]) || (len(types) > 0 && !types[typ]) {
			continue
		}
		resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{
			Group: g.id, ProtocolType: protocolType, GroupState: state, GroupType: typ,
		})
	}
	return resp
}

// DescribeGroups describes groups as Kafka 4.1 does: the members' protocol
// metadata only when the group is Stable; their current assignment (kept
// through a rebalance that started from Stable, emptied by one that
// interrupted CompletingRebalance) in every state.
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		out := kmsg.NewDescribeGroupsResponseGroup()
		out.Group = id
		g, code := c.acquire(id, false)
		msg := fmt.Sprintf("Group %s not found.", id)
		if code == 0 && (g.consumer != nil || g.share != nil || g.streams != nil) {
			// Kafka describes only classic groups here; ConsumerGroupDescribe
			// and ShareGroupDescribe describe the others.
			g.mu.Unlock()
			code, msg = errGroupIDNotFound, fmt.Sprintf("Group %s is not a classic group.", id)
		}
		switch {
		case code == errGroupIDNotFound && req.Version < 6:
			out.State = Dead.String()
		case code == errGroupIDNotFound:
			out.ErrorCode = code
			out.ErrorMessage = &msg
			out.State = Dead.String()
		case code != 0:
			out.ErrorCode = code
		default:
			out.State = g.state.String()
			out.ProtocolType = g.protocolType
			stable := g.state == Stable
			if stable {
				out.Protocol = g.protocol
			}
			for _, m := range g.sortedMembers() {
				dm := kmsg.DescribeGroupsResponseGroupMember{
					MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
					ProtocolMetadata: []byte{}, MemberAssignment: orEmpty(m.assignment),
				}
				if stable {
					dm.ProtocolMetadata = orEmpty(m.metadataFor(g.protocol))
				}
				out.Members = append(out.Members, dm)
			}
			g.mu.Unlock()
		}
		if req.IncludeAuthorizedOperations && out.ErrorCode == 0 {
			out.AuthorizedOperations = groupAuthorizedOperations
		}
		resp.Groups = append(resp.Groups, out)
	}
	return resp
}

// DeleteGroups deletes empty groups and their offsets.
func (c *Coordinator) DeleteGroups(req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		resp.Groups = append(resp.Groups, kmsg.DeleteGroupsResponseGroup{Group: id, ErrorCode: c.deleteGroupByID(id)})
	}
	return resp
}

// deleteGroupByID deletes an empty group. The empty id is a group like
// any other here: Kafka's GroupCoordinatorService.deleteGroups refuses
// only a null one, for the simple consumers that commit to "".
func (c *Coordinator) deleteGroupByID(id string) int16 {
	g, code := c.acquireOffsets(id, false)
	if code != 0 {
		return code
	}
	switch {
	case g.state == Dead:
		g.mu.Unlock()
		return errGroupIDNotFound
	case g.state == Stable || g.state == PreparingRebalance || g.state == CompletingRebalance,
		g.consumer != nil && len(g.consumer.members) > 0, g.share != nil && len(g.share.members) > 0,
		g.streams != nil && len(g.streams.members) > 0:
		g.mu.Unlock()
		return errNonEmptyGroup
	}
	err := c.deleteGroup(g)
	g.mu.Unlock()
	if err != nil {
		return appendErrorCode(err)
	}
	c.removeIfDead(g)
	return 0
}

// scheduleExpiry arms the periodic offset expiration; c.mu is held.
func (c *Coordinator) scheduleExpiry() {
	if c.closed || c.cfg.OffsetsRetentionCheckInterval <= 0 {
		return
	}
	seq := c.expiry.seq
	c.expiry.timer = c.clock.AfterFunc(c.cfg.OffsetsRetentionCheckInterval, func() {
		c.mu.Lock()
		if c.expiry.seq != seq || c.closed {
			c.mu.Unlock()
			return
		}
		groups := make([]*classicGroup, 0, len(c.groups))
		for _, g := range c.groups {
			groups = append(groups, g)
		}
		c.mu.Unlock()
		c.expireGroups(groups)
		c.mu.Lock()
		c.expiry.seq++
		c.scheduleExpiry()
		c.mu.Unlock()
	})
}

// ExpireOffsets runs one pass of offset expiration now, as the periodic
// check does.
func (c *Coordinator) ExpireOffsets() {
	c.mu.Lock()
	groups := make([]*classicGroup, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	c.expireGroups(groups)
}

func (c *Coordinator) expireGroups(groups []*classicGroup) {
	now := c.clock.Now()
	for _, g := range groups {
		g.mu.Lock()
		dead := false
		if g.state != Dead && c.expireOffsets(g, now) {
			if err := c.deleteGroup(g); err != nil {
				c.logger.Warn("deleting expired group failed", "group", g.id, "err", err)
			} else {
				dead = true
			}
		}
		g.mu.Unlock()
		if dead {
			c.removeIfDead(g)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedInt32s(s []int32) []int32 {
	out := append([]int32(nil), s...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TopicsDeleted forgets what the groups served here hold of deleted
// topics (by name, with their ids), as Kafka's onPartitionsDeleted does:
// their committed offsets, pending transactional ones included (with
// tombstones), and the share groups' partitions with state. It returns
// those partitions by share group, for the caller to delete their state.
func (c *Coordinator) TopicsDeleted(deleted map[string][16]byte) map[string]map[[16]byte][]int32 {
	ids := map[[16]byte]bool{}
	for _, id := range deleted {
		ids[id] = true
	}
	c.mu.Lock()
	groups := make([]*classicGroup, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	out := map[string]map[[16]byte][]int32{}
	for _, g := range groups {
		g.mu.Lock()
		if g.state != Dead {
			if tps := g.offsetsOf(deleted); len(tps) > 0 {
				if err := c.deleteOffsets(g, tps); err != nil {
					c.logger.Warn("deleting the offsets of deleted topics failed", "group", g.id, "err", err)
				}
			}
			if parts := c.forgetShareTopics(g, ids); len(parts) > 0 {
				out[g.id] = parts
			}
		}
		g.mu.Unlock()
	}
	return out
}

// offsetsOf lists the partitions of the given topics the group has
// offsets for, committed or pending in a transaction.
func (g *classicGroup) offsetsOf(topics map[string][16]byte) []topicPartition {
	seen := map[topicPartition]bool{}
	var out []topicPartition
	add := func(tp topicPartition) {
		if _, ok := topics[tp.topic]; ok && !seen[tp] {
			seen[tp] = true
			out = append(out, tp)
		}
	}
	for tp := range g.offsets {
		add(tp)
	}
	for _, offs := range g.pendingTxn {
		for tp := range offs {
			add(tp)
		}
	}
	return out
}
