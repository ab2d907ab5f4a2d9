package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerCommitWithOlderEpoch: as in Kafka since KIP-1251 (4.3), a
// member that moved to a new epoch may still commit with its previous one
// the partitions it held since then (its commit crossed the heartbeat
// that moved it on), but not a partition it gave up or got only at the
// new epoch, and never with an epoch newer than its own.
func TestConsumerCommitWithOlderEpoch(t *testing.T) {
	c := newConsumerFixture(t, nil).c
	c.UseTopics(oneTopic{})
	tid := [16]byte{7}

	heartbeat := func(member string, epoch int32, owned ...int32) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch = "g", member, epoch
		req.RebalanceTimeoutMillis = -1
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: tid, Partitions: owned}}
		if epoch == 0 {
			req.RebalanceTimeoutMillis = 30000
			req.SubscribedTopicNames = []string{"t"}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		resp := c.ConsumerGroupHeartbeat(req, "client", "/127.0.0.1", nil)
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s at epoch %d: code %d %v", member, epoch, resp.ErrorCode, resp.ErrorMessage)
		}
		return resp
	}
	commit := func(member string, epoch int32, partition int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 9
		req.Group, req.MemberID, req.Generation = "g", member, epoch
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = partition, 10
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
		resp := c.OffsetCommit(req, func(string, int32) bool { return true })
		return resp.Topics[0].Partitions[0].ErrorCode
	}

	// a owns both partitions at epoch 1; b joins (epoch 2) and a gives up
	// one of them, moving to epoch 2 once its heartbeat no longer lists it.
	if r := heartbeat("a", 0); r.MemberEpoch != 1 || len(r.Assignment.Topics) != 1 || len(r.Assignment.Topics[0].Partitions) != 2 {
		t.Fatalf("a joined at epoch %d with %+v", r.MemberEpoch, r.Assignment)
	}
	if r := heartbeat("b", 0); r.MemberEpoch != 2 {
		t.Fatalf("b joined at epoch %d", r.MemberEpoch)
	}
	r := heartbeat("a", 1, 0, 1)
	if r.MemberEpoch != 1 || r.Assignment == nil || len(r.Assignment.Topics) != 1 || len(r.Assignment.Topics[0].Partitions) != 1 {
		t.Fatalf("a, asked to revoke, is at epoch %d with %+v", r.MemberEpoch, r.Assignment)
	}
	keep := r.Assignment.Topics[0].Partitions[0]
	gone := 1 - keep
	if code := commit("a", 1, gone); code != 0 {
		t.Fatalf("a commits partition %d, which it is revoking, with its epoch: code %d", gone, code)
	}
	if r := heartbeat("a", 1, keep); r.MemberEpoch != 2 {
		t.Fatalf("a, after revoking, is at epoch %d, want 2", r.MemberEpoch)
	}
	got := heartbeat("b", 2)
	if got.Assignment == nil || len(got.Assignment.Topics) != 1 || len(got.Assignment.Topics[0].Partitions) != 1 || got.Assignment.Topics[0].Partitions[0] != gone {
		t.Fatalf("b was assigned %+v, want partition %d", got.Assignment, gone)
	}

	for _, tc := range []struct {
		what      string
		member    string
		epoch     int32
		partition int32
		want      int16
	}{
		{"a, current epoch, its partition", "a", 2, keep, 0},
		{"a, previous epoch, a partition it held since epoch 1", "a", 1, keep, 0},
		{"a, previous epoch, the partition it gave up", "a", 1, gone, errStaleMemberEpoch},
		{"a, a newer epoch", "a", 3, keep, errStaleMemberEpoch},
		{"b, current epoch", "b", 2, gone, 0},
		{"b, an epoch before it got the partition", "b", 1, gone, errStaleMemberEpoch},
		{"an unknown member", "c", 2, keep, errUnknownMemberID},
	} {
		if code := commit(tc.member, tc.epoch, tc.partition); code != tc.want {
			t.Errorf("%s: code %d, want %d", tc.what, code, tc.want)
		}
	}

	// A transactional commit with a stale epoch: ILLEGAL_GENERATION before
	// TxnOffsetCommit v6, as Kafka maps it, STALE_MEMBER_EPOCH from v6.
	for version, want := range map[int16]int16{5: errIllegalGeneration, 6: errStaleMemberEpoch} {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = version
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "txn", "g", 1, 0
		req.MemberID, req.Generation = "a", 3
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: keep, Offset: 10, LeaderEpoch: -1}}}}
		if code := c.TxnOffsetCommit(req, func(string, int32) bool { return true }).Topics[0].Partitions[0].ErrorCode; code != want {
			t.Errorf("TxnOffsetCommit v%d with a newer epoch: code %d, want %d", version, code, want)
		}
	}
}
