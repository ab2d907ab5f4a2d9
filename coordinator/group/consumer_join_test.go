package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// oneTopic is a cluster with the single topic "t" of two partitions.
type oneTopic struct{}

func (oneTopic) Topic(name string) ([16]byte, int32, bool) {
	return [16]byte{7}, 2, name == "t"
}

func (oneTopic) Names() []string { return []string{"t"} }

// TestConsumerJoinWithoutTopics: as in Kafka since KAFKA-18095, a member
// may join with an empty list of topic names or an empty regex (the Java
// client's pattern subscriber does, before its pattern matches a topic)
// and is assigned nothing until it names a topic; only a join with
// neither field is invalid.
func TestConsumerJoinWithoutTopics(t *testing.T) {
	c := newConsumerFixture(t, nil).c
	c.UseTopics(oneTopic{})

	join := func(member string, names []string, regex *string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch = "g", member, 0
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames, req.SubscribedTopicRegex = names, regex
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return c.ConsumerGroupHeartbeat(req, "client", "/127.0.0.1", nil)
	}
	resp := join("neither", nil, nil)
	if resp.ErrorCode != errInvalidRequest || resp.ErrorMessage == nil ||
		*resp.ErrorMessage != "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining." {
		t.Fatalf("a join with neither names nor a regex: code %d, message %v", resp.ErrorCode, resp.ErrorMessage)
	}
	empty := ""
	epochs := map[string]int32{}
	for _, tc := range []struct {
		member string
		names  []string
		regex  *string
	}{
		{"no-names", []string{}, nil},
		{"empty-regex", nil, &empty},
	} {
		resp := join(tc.member, tc.names, tc.regex)
		if resp.ErrorCode != 0 || resp.MemberEpoch < 1 || resp.Assignment == nil || len(resp.Assignment.Topics) != 0 {
			t.Fatalf("%s: code %d %v, epoch %d, assignment %+v; want a member with no partitions",
				tc.member, resp.ErrorCode, resp.ErrorMessage, resp.MemberEpoch, resp.Assignment)
		}
		epochs[tc.member] = resp.MemberEpoch
	}

	// The member that joined with no names names a topic, once the
	// other has left, and is assigned all of it.
	leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	leave.Version = 1
	leave.Group, leave.MemberID, leave.MemberEpoch = "g", "empty-regex", leaveEpoch
	if resp := c.ConsumerGroupHeartbeat(leave, "client", "/127.0.0.1", nil); resp.ErrorCode != 0 {
		t.Fatalf("leave: code %d", resp.ErrorCode)
	}
	epoch := epochs["no-names"]
	for i := 0; i < 3; i++ {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch = "g", "no-names", epoch
		req.RebalanceTimeoutMillis = -1
		req.SubscribedTopicNames = []string{"t"}
		resp := c.ConsumerGroupHeartbeat(req, "client", "/127.0.0.1", nil)
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat %d naming t: code %d %v", i, resp.ErrorCode, resp.ErrorMessage)
		}
		epoch = resp.MemberEpoch
		if a := resp.Assignment; a != nil && len(a.Topics) == 1 && a.Topics[0].TopicID == [16]byte{7} && len(a.Topics[0].Partitions) == 2 {
			return
		}
	}
	t.Fatal("the member that named t was not assigned its two partitions")
}
