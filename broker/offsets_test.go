package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offset.metadata.max.bytes bounds the metadata's length as Java counts a
// String's (Kafka's OffsetMetadataManager.isMetadataInvalid compares
// metadata.length()): in UTF-16 code units, not in the bytes it takes on
// the wire. 3000 "é" (6000 bytes) fit in the default 4096; 2049 emoji
// (two units each) do not, and 2048 do.
func TestOffsetMetadataMaxBytesCountsUTF16Units(t *testing.T) {
	_, rc := startWithTopic(t, "t")
	findCoordinatorRaw(t, rc, "g")
	for _, tc := range []struct {
		name     string
		metadata string
		want     int16
	}{
		{"3000 two-byte letters", strings.Repeat("é", 3000), 0},
		{"2048 emoji", strings.Repeat("😀", 2048), 0},
		{"2049 emoji", strings.Repeat("😀", 2049), kerr.OffsetMetadataTooLarge.Code},
		{"4097 ASCII letters", strings.Repeat("a", 4097), kerr.OffsetMetadataTooLarge.Code},
	} {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(9)
		req.Group, req.Generation = "g", -1
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.Metadata = 0, 7, &tc.metadata
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
		if code := rc.request(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != tc.want {
			t.Errorf("%s: OffsetCommit answered %d, want %d", tc.name, code, tc.want)
		}
	}

	// The accepted metadata is returned whole.
	f := kmsg.NewPtrOffsetFetchRequest()
	f.SetVersion(8)
	f.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
	got := rc.request(f).(*kmsg.OffsetFetchResponse).Groups[0].Topics[0].Partitions[0]
	if got.Metadata == nil || *got.Metadata != strings.Repeat("😀", 2048) {
		t.Fatalf("OffsetFetch: metadata of %d bytes, want the 2048 emoji", len(*got.Metadata))
	}
}

// OffsetDelete on a classic group of the "consumer" protocol type whose
// members' subscriptions are not known counts every topic as subscribed
// (GROUP_SUBSCRIBED_TO_TOPIC for its partitions), as Kafka's
// ClassicGroup.isSubscribedToTopic: the subscriptions are read when a
// generation begins, so they are unknown while a new group's first
// rebalance runs, and when a member's metadata does not parse. Before,
// Gregor refused the whole request with NON_EMPTY_GROUP.
func TestOffsetDeleteWhileSubscriptionsUnknown(t *testing.T) {
	b := startBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "1000"})
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "t", 1)
	deleteOffsets := func(group string) *kmsg.OffsetDeleteResponse {
		od := kmsg.NewPtrOffsetDeleteRequest()
		od.Group = group
		od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "other", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
		return rc.request(od).(*kmsg.OffsetDeleteResponse)
	}
	createTopicRaw(t, rc, "other", 1)
	for _, group := range []string{"first-rebalance", "garbled"} {
		findCoordinatorRaw(t, rc, group)
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.SetVersion(9)
		commit.Group, commit.Generation = group, -1
		commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "other", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}}}}
		if code := rc.request(commit).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("%s: standalone commit: %d", group, code)
		}
	}

	// A member subscribed to "t" joins a new group: its JoinGroup is
	// parked for the initial rebalance delay.
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	member := dialRaw(t, b)
	go func() {
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(9)
		req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = "first-rebalance", 10000, 10000
		req.ProtocolType = "consumer"
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: consumerMetadata("t")}}
		for {
			r, err := member.tryRequest(req)
			if err != nil {
				joined <- nil
				return
			}
			resp := r.(*kmsg.JoinGroupResponse)
			if resp.ErrorCode != kerr.MemberIDRequired.Code {
				joined <- resp
				return
			}
			req.MemberID = resp.MemberID
		}
	}()
	waitFor(t, func() bool { return describeGroupState(t, rc, "first-rebalance") == "PreparingRebalance" })
	resp := deleteOffsets("first-rebalance")
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("OffsetDelete during a new group's first rebalance: %+v, want GROUP_SUBSCRIBED_TO_TOPIC for the partition", resp)
	}
	if r := <-joined; r == nil || r.ErrorCode != 0 {
		t.Fatalf("JoinGroup: %+v", r)
	}

	// A Stable group whose member's subscription does not parse.
	g := &rawGroup{t: t, rc: dialRaw(t, b), group: "garbled"}
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(9)
	req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = g.group, 10000, 10000
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0xff}}}
	jr := g.rc.request(req).(*kmsg.JoinGroupResponse)
	req.MemberID = jr.MemberID
	jr = g.rc.request(req).(*kmsg.JoinGroupResponse)
	if jr.ErrorCode != 0 {
		t.Fatalf("JoinGroup with garbled metadata: %d", jr.ErrorCode)
	}
	g.memberID, g.generation = jr.MemberID, jr.Generation
	if code := g.sync(5, nil).ErrorCode; code != 0 {
		t.Fatalf("SyncGroup: %d", code)
	}
	resp = deleteOffsets("garbled")
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("OffsetDelete on a Stable group with an unparsable subscription: %+v, want GROUP_SUBSCRIBED_TO_TOPIC for the partition", resp)
	}
}

// describeGroupState is the group's state as DescribeGroups names it.
func describeGroupState(t *testing.T, rc *rawConn, group string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.SetVersion(5)
	req.Groups = []string{group}
	return rc.request(req).(*kmsg.DescribeGroupsResponse).Groups[0].State
}

// A classic group loaded with more members than group.max.size allows
// (the limit was lowered before a restart) rebalances at once, as Kafka's
// GroupMetadataManager.onLoaded does, so that members over the limit are
// told GROUP_MAX_SIZE_REACHED when they rejoin. Before, it stayed Stable
// with all its members.
func TestLoadedGroupOverMaxSizeRebalances(t *testing.T) {
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(),
		"group.initial.rebalance.delay.ms": "500"}
	b := startBrokerWith(t, props)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "t", 1)
	findCoordinatorRaw(t, rc, "big")

	// Two members join the first generation together.
	joined := make(chan *kmsg.JoinGroupResponse, 2)
	for i := range 2 {
		conn := dialRaw(t, b)
		instance := fmt.Sprintf("i%d", i)
		go func() {
			req := kmsg.NewPtrJoinGroupRequest()
			req.SetVersion(9)
			req.Group, req.InstanceID, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = "big", &instance, 30000, 30000
			req.ProtocolType = "consumer"
			req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: consumerMetadata("t")}}
			r, err := conn.tryRequest(req)
			if err != nil {
				joined <- nil
				return
			}
			joined <- r.(*kmsg.JoinGroupResponse)
		}()
	}
	var members []*rawGroup
	for range 2 {
		r := <-joined
		if r == nil || r.ErrorCode != 0 {
			t.Fatalf("JoinGroup: %+v", r)
		}
		m := &rawGroup{t: t, rc: rc, group: "big", memberID: r.MemberID, generation: r.Generation}
		if r.LeaderID == r.MemberID {
			members = append([]*rawGroup{m}, members...)
		} else {
			members = append(members, m)
		}
	}
	// The leader's SyncGroup brings everyone's assignment.
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.SetVersion(5)
	sync.Group, sync.MemberID, sync.Generation = "big", members[0].memberID, members[0].generation
	for _, m := range members {
		sync.GroupAssignment = append(sync.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m.memberID})
	}
	if code := rc.request(sync).(*kmsg.SyncGroupResponse).ErrorCode; code != 0 {
		t.Fatalf("leader's SyncGroup: %d", code)
	}
	if state := describeGroupState(t, rc, "big"); state != "Stable" {
		t.Fatalf("group %s, want Stable", state)
	}
	b.Close()

	props["group.max.size"] = "1"
	b = startBrokerWith(t, props)
	rc = dialRaw(t, b)
	findCoordinatorRaw(t, rc, "big")
	var state string
	waitFor(t, func() bool {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.SetVersion(5)
		req.Groups = []string{"big"}
		g := rc.request(req).(*kmsg.DescribeGroupsResponse).Groups[0]
		state = g.State
		return g.ErrorCode == 0 // not while the partition is loading
	})
	if state != "PreparingRebalance" {
		t.Fatalf("loaded group over group.max.size is %s, want PreparingRebalance", state)
	}
	members[0].rc = rc
	if code := members[0].heartbeat(4); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("Heartbeat after the load: %d, want REBALANCE_IN_PROGRESS", code)
	}
}

// At start every partition of __consumer_offsets is loading from the
// first moment, as Kafka's CoordinatorRuntime schedules the load of each
// partition it leads at once: a group whose partition has not been reached
// yet answers COORDINATOR_LOAD_IN_PROGRESS, not NOT_COORDINATOR (which
// sends clients to look for the coordinator again). Before, partitions
// were marked loading one by one as their turn came.
func TestOffsetsPartitionsLoadingFromTheStart(t *testing.T) {
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}
	b := startBrokerWith(t, props)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "t", 1)
	first, last := groupInPartition(0), groupInPartition(49)
	findCoordinatorRaw(t, rc, first)

	// Partition 0, loaded first, gets long to replay.
	meta := strings.Repeat("m", 4000)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.SetVersion(9)
	commit.Group, commit.Generation = first, -1
	rt := kmsg.OffsetCommitRequestTopic{Topic: "t"}
	for i := range 200 {
		rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitRequestTopicPartition{Partition: 0, Offset: int64(i), Metadata: &meta})
	}
	commit.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	for range 40 {
		if code := rc.request(commit).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("commit to %s: %d", first, code)
		}
	}
	commit.Group = last
	commit.Topics[0].Partitions = commit.Topics[0].Partitions[:1]
	if code := rc.request(commit).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit to %s: %d", last, code)
	}
	b.Close()

	b = startBrokerWith(t, props)
	rc = dialRaw(t, b)
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.SetVersion(8)
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: last, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
	seen := map[int16]int{}
	waitFor(t, func() bool {
		g := rc.request(fetch).(*kmsg.OffsetFetchResponse).Groups[0]
		seen[g.ErrorCode]++
		if g.ErrorCode == 0 && g.Topics[0].Partitions[0].Offset != 0 {
			t.Fatalf("%s's offset after the restart: %d, want 0", last, g.Topics[0].Partitions[0].Offset)
		}
		return g.ErrorCode == 0
	})
	if n := seen[kerr.NotCoordinator.Code]; n > 0 {
		t.Fatalf("OffsetFetch while loading answered NOT_COORDINATOR %d times (codes seen: %v), want COORDINATOR_LOAD_IN_PROGRESS", n, seen)
	}
	t.Logf("codes seen while loading: %v", seen)
}

// groupInPartition is a group id of that __consumer_offsets partition
// (of the default 50).
func groupInPartition(p int32) string {
	for i := 0; ; i++ {
		if id := fmt.Sprintf("g%d", i); group.PartitionFor(id, 50) == p {
			return id
		}
	}
}
