package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group APIs called raw at their lowest and highest served versions,
// with their error paths.

func consumerMetadata(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

// rawGroup drives one member of a group through raw requests.
type rawGroup struct {
	t          *testing.T
	rc         *rawConn
	group      string
	memberID   string
	generation int32
	topicID    [16]byte // topic t's, for OffsetCommit v10
}

func findCoordinatorRaw(t *testing.T, rc *rawConn, group string) {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(6)
	req.CoordinatorKeys = []string{group}
	resp := rc.request(req).(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %+v", resp.Coordinators)
	}
}

func (g *rawGroup) join(version int16, instance *string) *kmsg.JoinGroupResponse {
	g.t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.InstanceID = g.group, g.memberID, instance
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: consumerMetadata("t")}}
	resp := g.rc.request(req).(*kmsg.JoinGroupResponse)
	if resp.ErrorCode == kerr.MemberIDRequired.Code {
		g.memberID = resp.MemberID
		req.MemberID = resp.MemberID
		resp = g.rc.request(req).(*kmsg.JoinGroupResponse)
	}
	if resp.ErrorCode == 0 {
		g.memberID, g.generation = resp.MemberID, resp.Generation
	}
	return resp
}

func (g *rawGroup) sync(version int16, assignment []byte) *kmsg.SyncGroupResponse {
	g.t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.Generation = g.group, g.memberID, g.generation
	if version >= 5 {
		pt, p := "consumer", "range"
		req.ProtocolType, req.Protocol = &pt, &p
	}
	req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: g.memberID, MemberAssignment: assignment}}
	return g.rc.request(req).(*kmsg.SyncGroupResponse)
}

func (g *rawGroup) heartbeat(version int16) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.Generation = g.group, g.memberID, g.generation
	return g.rc.request(req).(*kmsg.HeartbeatResponse).ErrorCode
}

func (g *rawGroup) commit(version int16, offset int64) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.Generation = g.group, g.memberID, g.generation
	meta := "m"
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.Metadata, p.LeaderEpoch = 0, offset, &meta, 0
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", TopicID: g.topicID, Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
	resp := g.rc.request(req).(*kmsg.OffsetCommitResponse)
	return resp.Topics[0].Partitions[0].ErrorCode
}

func TestGroupAPIsAtBothEnds(t *testing.T) {
	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	setup := dialRaw(t, b)
	createTopicRaw(t, setup, "t", 2)

	// Before any FindCoordinator there is no __consumer_offsets: no
	// partition of it is ours yet.
	early := &rawGroup{t: t, rc: setup, group: "early"}
	if code := early.join(9, nil).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Fatalf("JoinGroup before the offsets topic exists: %d, want NOT_COORDINATOR", code)
	}
	findCoordinatorRaw(t, setup, "early")

	for i, ends := range [][2]int16{ // JoinGroup, SyncGroup, Heartbeat, OffsetCommit, LeaveGroup
		{0, 0}, {9, 5},
	} {
		_ = i
		joinV, syncV := ends[0], ends[1]
		hbV, commitV, leaveV := bothEnds(12)[min(i, 1)], bothEnds(8)[min(i, 1)], bothEnds(13)[min(i, 1)]
		g := &rawGroup{t: t, rc: dialRaw(t, b), group: "raw-" + string(rune('a'+i)), topicID: b.topics.get("t").id}
		jr := g.join(joinV, nil)
		if jr.ErrorCode != 0 || jr.Generation != 1 || jr.LeaderID != g.memberID || len(jr.Members) != 1 {
			t.Fatalf("JoinGroup v%d: %+v", joinV, jr)
		}
		if joinV >= 7 && (jr.Protocol == nil || *jr.Protocol != "range" || jr.ProtocolType == nil || *jr.ProtocolType != "consumer") {
			t.Fatalf("JoinGroup v%d protocol: %v %v", joinV, jr.Protocol, jr.ProtocolType)
		}
		if code := g.heartbeat(hbV); code != 0 {
			t.Fatalf("Heartbeat v%d while completing: %d", hbV, code)
		}
		if code := g.commit(commitV, 5); code != kerr.RebalanceInProgress.Code {
			t.Fatalf("OffsetCommit v%d before sync: %d, want REBALANCE_IN_PROGRESS", commitV, code)
		}
		sr := g.sync(syncV, []byte("assignment"))
		if sr.ErrorCode != 0 || string(sr.MemberAssignment) != "assignment" {
			t.Fatalf("SyncGroup v%d: %+v", syncV, sr)
		}
		if syncV >= 5 && (sr.Protocol == nil || *sr.Protocol != "range") {
			t.Fatalf("SyncGroup v%d protocol: %v", syncV, sr.Protocol)
		}
		if code := g.commit(commitV, 5); code != 0 {
			t.Fatalf("OffsetCommit v%d: %d", commitV, code)
		}
		stale := *g
		stale.generation = 7
		if code := stale.heartbeat(hbV); code != kerr.IllegalGeneration.Code {
			t.Fatalf("Heartbeat v%d with a stale generation: %d", hbV, code)
		}
		if code := stale.commit(commitV, 6); code != kerr.IllegalGeneration.Code {
			t.Fatalf("OffsetCommit v%d with a stale generation: %d", commitV, code)
		}
		unknown := *g
		unknown.memberID = "nobody"
		if code := unknown.heartbeat(hbV); code != kerr.UnknownMemberID.Code {
			t.Fatalf("Heartbeat v%d from an unknown member: %d", hbV, code)
		}
		if code := unknown.sync(syncV, nil).ErrorCode; code != kerr.UnknownMemberID.Code {
			t.Fatalf("SyncGroup v%d from an unknown member: %d", syncV, code)
		}

		// DeleteGroups refuses a group with members.
		for _, v := range bothEnds(42) {
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.SetVersion(v)
			req.Groups = []string{g.group, "no-such-group"}
			resp := g.rc.request(req).(*kmsg.DeleteGroupsResponse)
			if resp.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code || resp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
				t.Fatalf("DeleteGroups v%d: %+v", v, resp.Groups)
			}
			if resp.Groups[0].ErrorMessage != nil || resp.Groups[1].ErrorMessage != nil {
				t.Fatalf("DeleteGroups v%d: error messages %+v, want null as Kafka", v, resp.Groups)
			}
		}
		// OffsetDelete refuses a topic the members subscribe to.
		od := kmsg.NewPtrOffsetDeleteRequest()
		od.Group = g.group
		od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
		odr := g.rc.request(od).(*kmsg.OffsetDeleteResponse)
		if odr.ErrorCode != 0 || odr.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
			t.Fatalf("OffsetDelete on a subscribed topic: %+v", odr)
		}

		// LeaveGroup: v0 names one member; v5 a batch.
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.SetVersion(leaveV)
		leave.Group = g.group
		if leaveV < 3 {
			leave.MemberID = g.memberID
		} else {
			leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: g.memberID}, {MemberID: "nobody"}}
		}
		lr := g.rc.request(leave).(*kmsg.LeaveGroupResponse)
		if leaveV < 3 && lr.ErrorCode != 0 {
			t.Fatalf("LeaveGroup v%d: %+v", leaveV, lr)
		}
		if leaveV >= 3 && (lr.ErrorCode != 0 || len(lr.Members) != 2 || lr.Members[0].ErrorCode != 0 || lr.Members[1].ErrorCode != kerr.UnknownMemberID.Code) {
			t.Fatalf("LeaveGroup v%d: %+v", leaveV, lr)
		}
		if code := g.heartbeat(hbV); code != kerr.UnknownMemberID.Code {
			t.Fatalf("Heartbeat v%d after leaving: %d", hbV, code)
		}
	}

	// OffsetFetch at both ends sees the commits of both groups.
	for _, v := range bothEnds(9) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.SetVersion(v)
		var got []int64
		if v < 8 {
			for _, group := range []string{"raw-a", "raw-b"} {
				req.Group = group
				req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
				resp := setup.request(req).(*kmsg.OffsetFetchResponse)
				for _, p := range resp.Topics[0].Partitions {
					got = append(got, p.Offset)
				}
			}
		} else {
			for _, group := range []string{"raw-a", "raw-b"} {
				rg := kmsg.NewOffsetFetchRequestGroup()
				rg.Group = group
				rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", TopicID: b.topics.get("t").id, Partitions: []int32{0, 1}}}
				req.Groups = append(req.Groups, rg)
			}
			resp := setup.request(req).(*kmsg.OffsetFetchResponse)
			for _, g := range resp.Groups {
				if g.ErrorCode != 0 {
					t.Fatalf("OffsetFetch v%d group %s: %d", v, g.Group, g.ErrorCode)
				}
				for _, p := range g.Topics[0].Partitions {
					got = append(got, p.Offset)
					if p.Offset == 5 && (p.Metadata == nil || *p.Metadata != "m") {
						t.Fatalf("OffsetFetch v%d metadata: %v", v, p.Metadata)
					}
				}
			}
		}
		if len(got) != 4 || got[0] != 5 || got[1] != -1 || got[2] != 5 || got[3] != -1 {
			t.Fatalf("OffsetFetch v%d: offsets %v, want [5 -1 5 -1]", v, got)
		}
	}

	// ListGroups at both ends; the state filter from v4.
	for _, v := range bothEnds(16) {
		req := kmsg.NewPtrListGroupsRequest()
		req.SetVersion(v)
		if v >= 4 {
			req.StatesFilter = []string{"empty"}
		}
		resp := setup.request(req).(*kmsg.ListGroupsResponse)
		found := map[string]string{}
		for _, g := range resp.Groups {
			found[g.Group] = g.GroupState
		}
		if _, ok := found["raw-a"]; !ok || len(found) < 2 {
			t.Fatalf("ListGroups v%d: %+v", v, resp.Groups)
		}
		if v >= 4 && found["raw-a"] != "Empty" {
			t.Fatalf("ListGroups v%d state: %+v", v, resp.Groups)
		}
	}

	// DescribeGroups: an unknown group is Dead before v6, GROUP_ID_NOT_FOUND from v6.
	for _, v := range bothEnds(15) {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.SetVersion(v)
		req.Groups = []string{"raw-a", "nothing-here"}
		resp := setup.request(req).(*kmsg.DescribeGroupsResponse)
		if resp.Groups[0].ErrorCode != 0 || resp.Groups[0].State != "Empty" || resp.Groups[0].ProtocolType != "consumer" {
			t.Fatalf("DescribeGroups v%d: %+v", v, resp.Groups[0])
		}
		wantCode := int16(0)
		if v >= 6 {
			wantCode = kerr.GroupIDNotFound.Code
		}
		if resp.Groups[1].ErrorCode != wantCode || resp.Groups[1].State != "Dead" {
			t.Fatalf("DescribeGroups v%d unknown group: %+v", v, resp.Groups[1])
		}
	}

	// The groups are empty now: OffsetDelete and DeleteGroups succeed.
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "raw-a"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	if odr := setup.request(od).(*kmsg.OffsetDeleteResponse); odr.ErrorCode != 0 || odr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("OffsetDelete on an empty group: %+v", odr)
	}
	for i, v := range bothEnds(42) {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.SetVersion(v)
		req.Groups = []string{[]string{"raw-a", "raw-b"}[i]}
		if resp := setup.request(req).(*kmsg.DeleteGroupsResponse); resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("DeleteGroups v%d: %+v", v, resp.Groups)
		}
	}
}

func TestGroupRequestErrors(t *testing.T) {
	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "t", 1)
	findCoordinatorRaw(t, rc, "g")

	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(9)
	req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = "g", 1000, 1000
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	if code := rc.request(req).(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("session timeout below group.min.session.timeout.ms: %d", code)
	}
	req.SessionTimeoutMillis = 10000
	req.Protocols = nil
	if code := rc.request(req).(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("join without protocols: %d", code)
	}

	// A standalone consumer commits with generation -1; v9 to a group that
	// does not exist with a generation gets GROUP_ID_NOT_FOUND, v8 ILLEGAL_GENERATION.
	alone := &rawGroup{t: t, rc: rc, group: "standalone", generation: -1}
	if code := alone.commit(9, 3); code != 0 {
		t.Fatalf("standalone commit: %d", code)
	}
	ghost := &rawGroup{t: t, rc: rc, group: "ghost", memberID: "m", generation: 4}
	if code := ghost.commit(9, 3); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("v9 commit to a missing group: %d", code)
	}
	if code := ghost.commit(8, 3); code != kerr.IllegalGeneration.Code {
		t.Fatalf("v8 commit to a missing group: %d", code)
	}
	c := kmsg.NewPtrOffsetCommitRequest()
	c.SetVersion(9)
	c.Group, c.Generation = "standalone", -1
	c.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "no-such-topic", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	if code := rc.request(c).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("commit to a missing topic: %d", code)
	}
	// Kafka's KafkaApis checks each partition too: "t" has only partition 0.
	c.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}, {Partition: 1, Offset: 1}}}}
	if ps := rc.request(c).(*kmsg.OffsetCommitResponse).Topics[0].Partitions; ps[0].ErrorCode != 0 || ps[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("commit to partitions 0 and 1 of a one-partition topic: %d, %d", ps[0].ErrorCode, ps[1].ErrorCode)
	}
	big := make([]byte, 5000)
	meta := string(big)
	c.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, Metadata: &meta}}}}
	if code := rc.request(c).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetMetadataTooLarge.Code {
		t.Fatalf("commit with 5000 bytes of metadata: %d", code)
	}

	// __consumer_offsets is listed as internal.
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.SetVersion(12)
	found := false
	for _, mt := range rc.request(mreq).(*kmsg.MetadataResponse).Topics {
		if mt.Topic != nil && *mt.Topic == offsetsTopic {
			found = true
			if !mt.IsInternal || len(mt.Partitions) != 50 {
				t.Fatalf("%s: internal %v, %d partitions", offsetsTopic, mt.IsInternal, len(mt.Partitions))
			}
		}
	}
	if !found {
		t.Fatalf("%s not in Metadata", offsetsTopic)
	}
}

// Clients cannot write to __consumer_offsets: INVALID_TOPIC_EXCEPTION, as
// Kafka's ReplicaManager answers.
func TestProduceToOffsetsTopicRefused(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	findCoordinatorRaw(t, rc, "g")
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, 5000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: offsetsTopic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(1, "x", -1, -1, -1, time.Now().UnixMilli())}}}}
	resp := rc.request(req).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidTopicException.Code {
		t.Fatalf("produce to %s: %d, want INVALID_TOPIC_EXCEPTION", offsetsTopic, code)
	}
}

// Kafka keeps offsets for the empty group id "" (GroupCoordinatorService
// refuses only a null one in OffsetCommit and OffsetFetch, for old simple
// consumers, and in DeleteGroups); the other group requests answer
// INVALID_GROUP_ID for it.
func TestEmptyGroupIDOffsets(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "t", 1)
	findCoordinatorRaw(t, rc, "")

	for _, v := range []int16{2, 8, 9} {
		alone := &rawGroup{t: t, rc: rc, group: "", generation: -1}
		if code := alone.commit(v, 40+int64(v)); code != 0 {
			t.Fatalf("OffsetCommit v%d to group \"\": %d", v, code)
		}
	}
	for _, v := range []int16{1, 7} {
		f := kmsg.NewPtrOffsetFetchRequest()
		f.SetVersion(v)
		f.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
		resp := rc.request(f).(*kmsg.OffsetFetchResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].Offset != 49 {
			t.Fatalf("OffsetFetch v%d of group \"\": %+v", v, resp)
		}
	}
	f := kmsg.NewPtrOffsetFetchRequest()
	f.SetVersion(8)
	f.Groups = []kmsg.OffsetFetchRequestGroup{{Group: ""}}
	if g := rc.request(f).(*kmsg.OffsetFetchResponse).Groups[0]; g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != 49 {
		t.Fatalf("OffsetFetch v8 of group \"\" (all offsets): %+v", g)
	}

	d := kmsg.NewPtrDescribeGroupsRequest()
	d.SetVersion(5)
	d.Groups = []string{""}
	if code := rc.request(d).(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode; code != kerr.InvalidGroupID.Code {
		t.Fatalf("DescribeGroups of group \"\": %d", code)
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	if code := rc.request(od).(*kmsg.OffsetDeleteResponse).ErrorCode; code != kerr.InvalidGroupID.Code {
		t.Fatalf("OffsetDelete of group \"\": %d", code)
	}

	// DeleteGroups deletes group "" with its offsets: Kafka's
	// GroupCoordinatorService.deleteGroups refuses only a null id ("for
	// backwards compatibility, we support DeleteGroups for the empty
	// group id").
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.SetVersion(2)
	dg.Groups = []string{""}
	for i, want := range []int16{0, kerr.GroupIDNotFound.Code} {
		if code := rc.request(dg).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != want {
			t.Fatalf("DeleteGroups %d of group \"\": %d, want %d", i+1, code, want)
		}
	}
}

// A share-partition key (key type 2) exists from FindCoordinator v6: an
// older version asking for one gets INVALID_REQUEST for each key, as from
// Kafka's KafkaApis.getCoordinator. A v4+ answer carries no error message
// per key, as Kafka leaves it.
func TestFindCoordinatorShareKeyVersions(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	key := "g:AAAAAAAAAAAAAAAAAAAAAA:0"
	for _, v := range []int16{4, 5, 6} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(v)
		req.CoordinatorType = 2
		req.CoordinatorKeys = []string{key}
		resp := rc.request(req).(*kmsg.FindCoordinatorResponse)
		if len(resp.Coordinators) != 1 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		c := resp.Coordinators[0]
		want := int16(0)
		if v < 6 {
			want = kerr.InvalidRequest.Code
		}
		if c.ErrorCode != want || c.ErrorMessage != nil || c.Key != key {
			t.Errorf("v%d: %+v, want error %d without a message", v, c, want)
		}
		if want != 0 && (c.NodeID != -1 || c.Host != "" || c.Port != -1) {
			t.Errorf("v%d: refused key names a node: %+v", v, c)
		}
	}
}

// DeleteGroups answers each group once however often it is named, as
// Kafka's handleDeleteGroupsRequest takes the names distinct: before, the
// second mention of a deleted group answered GROUP_ID_NOT_FOUND.
func TestDeleteGroupsDuplicateNames(t *testing.T) {
	_, rc := startWithTopic(t, "t")
	commitGroupG(t, rc)
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.SetVersion(2)
	dg.Groups = []string{"g", "unknown", "g", "unknown"}
	resp := rc.request(dg).(*kmsg.DeleteGroupsResponse)
	if len(resp.Groups) != 2 || resp.Groups[0].Group != "g" || resp.Groups[0].ErrorCode != 0 ||
		resp.Groups[1].Group != "unknown" || resp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("DeleteGroups: %+v", resp.Groups)
	}
}

// OffsetDelete answers UNKNOWN_TOPIC_OR_PARTITION for the partitions of a
// topic that does not exist and for partitions a topic does not have,
// ahead of the coordinator's answers, and only the coordinator's answer
// when it refuses the whole request, as Kafka's handleOffsetDeleteRequest
// and OffsetDeleteResponse.Builder.merge do. Before, they were answered
// with no error.
func TestOffsetDeleteUnknownPartitions(t *testing.T) {
	_, rc := startWithTopic(t, "t")
	commitGroupG(t, rc)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{
		{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}, {Partition: 9}}},
		{Topic: "nowhere", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
	}
	resp := rc.request(od).(*kmsg.OffsetDeleteResponse)
	unknown := kerr.UnknownTopicOrPartition.Code
	want := []kmsg.OffsetDeleteResponseTopic{
		{Topic: "t", Partitions: []kmsg.OffsetDeleteResponseTopicPartition{{Partition: 9, ErrorCode: unknown}, {Partition: 0}}},
		{Topic: "nowhere", Partitions: []kmsg.OffsetDeleteResponseTopicPartition{{Partition: 0, ErrorCode: unknown}}},
	}
	if resp.ErrorCode != 0 || fmt.Sprint(resp.Topics) != fmt.Sprint(want) {
		t.Fatalf("OffsetDelete: error %d, %+v; want %+v", resp.ErrorCode, resp.Topics, want)
	}

	od.Group = "no-such-group"
	resp = rc.request(od).(*kmsg.OffsetDeleteResponse)
	if resp.ErrorCode != kerr.GroupIDNotFound.Code || len(resp.Topics) != 0 {
		t.Fatalf("OffsetDelete of an unknown group: error %d, %+v", resp.ErrorCode, resp.Topics)
	}
}

// ListGroups' state filters are compared trimmed and case-insensitively,
// as Kafka's GroupMetadataManager.listGroups maps them (toLowerCase, trim).
func TestListGroupsStateFilterTrimmed(t *testing.T) {
	_, rc := startWithTopic(t, "t")
	commitGroupG(t, rc)
	req := kmsg.NewPtrListGroupsRequest()
	req.SetVersion(5)
	req.StatesFilter = []string{" EMPTY "}
	resp := rc.request(req).(*kmsg.ListGroupsResponse)
	if resp.ErrorCode != 0 || len(resp.Groups) != 1 || resp.Groups[0].Group != "g" || resp.Groups[0].GroupState != "Empty" {
		t.Fatalf("ListGroups with state filter %q: %+v", req.StatesFilter, resp)
	}
}

// commitGroupG makes group "g" (empty, classic) by committing offset 1 of
// partition t-0 for it, as a simple consumer does.
func commitGroupG(t *testing.T, rc *rawConn) {
	t.Helper()
	findCoordinatorRaw(t, rc, "g")
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.SetVersion(8)
	oc.Group, oc.Generation = "g", -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	if r := rc.request(oc).(*kmsg.OffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %+v", r)
	}
}
