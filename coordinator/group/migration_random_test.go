package group

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// simMember is a member in the random migration test: one of the consumer
// protocol (a testMember) or of the classic protocol, driven one step per
// round. A classic member is eager (it gives up everything before it
// rejoins, as with the Java client's default assignors) or cooperative
// (it keeps its partitions, lists them when it joins, gives up only those
// its new assignment lacks and then rejoins at once); a group's classic
// members are all of one kind, as real clients must be to share a
// protocol.
type simMember struct {
	name        string
	consumer    *testMember // nil for a classic member
	cooperative bool
	revoked     bool // a cooperative member gave partitions up: it rejoins

	// A classic member's state: its id, generation and partitions, and
	// the JoinGroup or SyncGroup it waits for.
	id      string
	gen     int32
	owned   []int32
	joining chan *kmsg.JoinGroupResponse
	syncing chan *kmsg.SyncGroupResponse
}

func (s *simMember) partitions() []int32 {
	if s.consumer == nil {
		return s.owned
	}
	var ps []int32
	for _, p := range s.consumer.owned {
		ps = append(ps, p...)
	}
	return ps
}

// step is what the member does in a round: a consumer-protocol member
// heartbeats (rejoining if it was fenced); a classic one heartbeats when
// idle, or takes the answer it waits for.
func (s *simMember) step(t *testing.T, f *consumerFixture) {
	t.Helper()
	if m := s.consumer; m != nil {
		m.f = f
		switch resp := m.heartbeat(); resp.ErrorCode {
		case 0:
		case errFencedMemberEpoch, errUnknownMemberID:
			m.epoch, m.owned = 0, assignment{}
		default:
			t.Fatalf("%s: heartbeat error %d (%s)", s.name, resp.ErrorCode, deref(resp.ErrorMessage))
		}
		return
	}
	switch {
	case s.joining != nil:
		select {
		case r := <-s.joining:
			s.joining = nil
			s.joined(t, f, r)
		default:
		}
	case s.syncing != nil:
		select {
		case r := <-s.syncing:
			s.syncing = nil
			s.synced(t, f, r)
		default:
		}
	case s.revoked:
		s.revoked = false
		s.rejoin(f)
	default:
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 4, "g", s.id, s.gen
		s.classicError(t, f, f.c.Heartbeat(req).ErrorCode)
	}
}

// classicError acts on a classic request's error: a rebalance or a
// generation it missed makes it rejoin.
func (s *simMember) classicError(t *testing.T, f *consumerFixture, code int16) {
	t.Helper()
	switch code {
	case 0:
	case errRebalanceInProgress:
		s.rejoin(f)
	case errIllegalGeneration:
		s.lost()
		s.rejoin(f)
	case errUnknownMemberID:
		s.id = ""
		s.lost()
		s.rejoin(f)
	default:
		t.Fatalf("%s: classic error %d", s.name, code)
	}
}

func (s *simMember) rejoin(f *consumerFixture) {
	if !s.cooperative {
		s.owned = nil // everything is given up first
	}
	cc := &classicClient{f: f, id: s.id, owned: s.owned}
	s.joining = cc.joinAsync()
}

// lost drops the partitions of a member that is no longer in the group.
func (s *simMember) lost() {
	s.owned = nil
}

func (s *simMember) joined(t *testing.T, f *consumerFixture, r *kmsg.JoinGroupResponse) {
	t.Helper()
	switch r.ErrorCode {
	case 0:
	case errMemberIDRequired:
		s.id = r.MemberID
		s.rejoin(f)
		return
	default:
		s.classicError(t, f, r.ErrorCode)
		return
	}
	s.id, s.gen = r.MemberID, r.Generation
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 3, "g", s.id, s.gen
	if r.LeaderID == s.id {
		req.GroupAssignment = leaderAssignment(t, r.Members)
	}
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	s.syncing = ch
	f.c.SyncGroup(req, func(r *kmsg.SyncGroupResponse) { ch <- r })
}

func (s *simMember) synced(t *testing.T, f *consumerFixture, r *kmsg.SyncGroupResponse) {
	t.Helper()
	if r.ErrorCode != 0 {
		s.classicError(t, f, r.ErrorCode)
		return
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(r.MemberAssignment); err != nil {
		t.Fatalf("%s: assignment: %v", s.name, err)
	}
	var owned []int32
	for _, tp := range a.Topics {
		owned = append(owned, tp.Partitions...)
	}
	slices.Sort(owned)
	for _, p := range s.owned {
		if !slices.Contains(owned, p) {
			s.revoked = true
		}
	}
	s.owned = owned
}

// leaderAssignment is a classic leader's: the 4 partitions round-robin,
// except that a partition another member still owns stays with it this
// generation (its owner gives it up when its assignment lacks it, then
// rejoins: the cooperative protocol; eager members own nothing here).
func leaderAssignment(t *testing.T, members []kmsg.JoinGroupResponseMember) []kmsg.SyncGroupRequestGroupAssignment {
	owner := map[int32]string{}
	for _, m := range members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.ProtocolMetadata); err != nil {
			t.Fatalf("member %s metadata: %v", m.MemberID, err)
		}
		for _, tp := range meta.OwnedPartitions {
			for _, p := range tp.Partitions {
				owner[p] = m.MemberID
			}
		}
	}
	var out []kmsg.SyncGroupRequestGroupAssignment
	for i, m := range members {
		var ps []int32
		for p := int32(i); p < 4; p += int32(len(members)) {
			if o, ok := owner[p]; !ok || o == m.MemberID {
				ps = append(ps, p)
			}
		}
		a := kmsg.NewConsumerMemberAssignment()
		a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: ps}}
		out = append(out, kmsg.SyncGroupRequestGroupAssignment{MemberID: m.MemberID, MemberAssignment: a.AppendTo(nil)})
	}
	return out
}

// leave leaves the group as the member's client does on close.
func (s *simMember) leave(t *testing.T, f *consumerFixture) {
	t.Helper()
	if m := s.consumer; m != nil {
		req := m.request()
		req.MemberEpoch = leaveEpoch
		f.c.ConsumerGroupHeartbeat(req, "", "", nil)
		return
	}
	if s.id == "" {
		return
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 3, "g"
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: s.id}}
	f.c.LeaveGroup(req)
}

// Members of both protocols come and go at random, and the coordinator
// restarts now and then: at no time do two members own the same
// partition, and once the comings and goings stop the group settles with
// every partition owned once, a consumer group exactly when a member of
// the consumer protocol is in it.
func TestRandomMigrations(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runRandomMigrations(t, seed) })
	}
}

func runRandomMigrations(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	cooperative := seed%2 == 0
	f := newConsumerFixture(t, nil)
	f.topics.set("t", 1, 4)
	var live []*simMember
	next := 0
	round := func() {
		rng.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
		for _, s := range live {
			s.step(t, f)
		}
		f.clock.Advance(500 * time.Millisecond)
		owner := map[int32]string{}
		for _, s := range live {
			for _, p := range s.partitions() {
				if o, ok := owner[p]; ok {
					t.Fatalf("partition %d owned by %s and %s", p, o, s.name)
				}
				owner[p] = s.name
			}
		}
	}
	for range 150 {
		switch r := rng.IntN(100); {
		case r < 12 && len(live) < 5:
			next++
			s := &simMember{name: fmt.Sprintf("m%d", next)}
			if rng.IntN(2) == 0 {
				s.consumer = f.member(s.name, "t")
				s.name += "-consumer"
			} else {
				s.name += "-classic"
				s.cooperative = cooperative
				s.rejoin(f)
			}
			live = append(live, s)
		case r < 20 && len(live) > 0:
			i := rng.IntN(len(live))
			live[i].leave(t, f)
			live = slices.Delete(live, i, i+1)
		case r < 23:
			f = f.restart()
			for _, s := range live {
				if s.joining != nil || s.syncing != nil {
					// The answer is lost with the coordinator; the
					// client rejoins when it finds the new one.
					s.joining, s.syncing = nil, nil
					s.classicError(t, f, errRebalanceInProgress)
				}
			}
		}
		round()
	}
	for range 80 {
		round()
	}
	owned := 0
	consumers := 0
	for _, s := range live {
		owned += len(s.partitions())
		if s.consumer != nil {
			consumers++
		}
		if s.joining != nil || s.syncing != nil {
			t.Fatalf("%s still waits for an answer", s.name)
		}
	}
	if len(live) > 0 && owned != 4 {
		t.Fatalf("settled with %d of 4 partitions owned by %d members", owned, len(live))
	}
	if len(live) == 0 {
		return
	}
	list := f.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5})
	if len(list.Groups) != 1 {
		t.Fatalf("groups listed: %+v", list.Groups)
	}
	kind, state := list.Groups[0].GroupType, list.Groups[0].GroupState
	if (consumers > 0) != (kind == "consumer") || state != "Stable" {
		t.Fatalf("%d consumer-protocol members of %d: group listed as %s, %s", consumers, len(live), kind, state)
	}
}
