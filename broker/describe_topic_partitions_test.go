package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// describeTopicPartitions sends one DescribeTopicPartitions request.
func describeTopicPartitions(t *testing.T, cl *kgo.Client, limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit, req.Cursor = limit, cursor
	for _, name := range topics {
		req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: name})
	}
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// pageOf summarizes an answer: "topic:error:partitions" per topic, then
// the next cursor.
func pageOf(resp *kmsg.DescribeTopicPartitionsResponse) string {
	var parts []string
	for _, rt := range resp.Topics {
		var ps []string
		for _, p := range rt.Partitions {
			ps = append(ps, fmt.Sprint(p.Partition))
		}
		parts = append(parts, fmt.Sprintf("%s:%d:%s", *rt.Topic, rt.ErrorCode, strings.Join(ps, ",")))
	}
	if c := resp.NextCursor; c != nil {
		parts = append(parts, fmt.Sprintf("next %s/%d", c.Topic, c.Partition))
	}
	return strings.Join(parts, " ")
}

// DescribeTopicPartitions pages topics in name order as Kafka's handler
// does: at most the limit of partitions per answer, a cursor where the
// next one starts (also at a topic boundary), unknown and invalid names
// with their errors, and a request whose cursor is not among its topics
// refused. Every partition carries leader, epoch, replicas and ISR, and
// the ELR lists empty, not null (Kafka's admin client reads them).
func TestDescribeTopicPartitionsPages(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	for name, n := range map[string]int32{"a": 3, "b": 2, "c": 1} {
		if _, err := adm.CreateTopic(ctxT(t), n, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	cursor := func(topic string, p int32) *kmsg.DescribeTopicPartitionsRequestCursor {
		return &kmsg.DescribeTopicPartitionsRequestCursor{Topic: topic, Partition: p}
	}
	for _, tc := range []struct {
		limit  int32
		cursor *kmsg.DescribeTopicPartitionsRequestCursor
		topics []string
		want   string
	}{
		{2000, nil, nil, "a:0:0,1,2 b:0:0,1 c:0:0"},
		{4, nil, nil, "a:0:0,1,2 b:0:0 next b/1"},
		{4, cursor("b", 1), nil, "b:0:1 c:0:0"},
		{3, nil, nil, "a:0:0,1,2 next b/0"},
		{1, cursor("a", 2), nil, "a:0:2 next b/0"},
		{0, nil, []string{"c"}, "c:0:0"}, // a limit below one is one
		{2000, nil, []string{"c", "missing", "a", "c"}, "a:0:0,1,2 c:0:0 missing:3:"},
		{2000, nil, []string{"bad name!"}, "bad name!:17:"},
		{2000, cursor("b", 0), []string{"a", "c"}, "a:42: c:42:"},
		{2000, cursor("a", -1), []string{"a"}, "a:42:"},
	} {
		resp := describeTopicPartitions(t, cl, tc.limit, tc.cursor, tc.topics...)
		if got := pageOf(resp); got != tc.want {
			t.Errorf("limit %d cursor %+v topics %v: %s, want %s", tc.limit, tc.cursor, tc.topics, got, tc.want)
		}
	}
	resp := describeTopicPartitions(t, cl, 2000, nil, "a")
	rt := resp.Topics[0]
	if rt.TopicID != b.topics.get("a").id || rt.IsInternal || rt.AuthorizedOperations != topicOperations {
		t.Fatalf("topic a: %+v", rt)
	}
	for _, p := range rt.Partitions {
		if p.LeaderID != b.cfg.NodeID || p.LeaderEpoch != 0 || len(p.Replicas) != 1 || len(p.ISR) != 1 ||
			p.EligibleLeaderReplicas == nil || p.LastKnownELR == nil || len(p.OfflineReplicas) != 0 {
			t.Fatalf("partition %+v", p)
		}
	}
}

// With an authorizer, a listing leaves out topics the principal may not
// describe and a named one is TOPIC_AUTHORIZATION_FAILED, after the rest.
func TestDescribeTopicPartitionsACLs(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string) *kgo.Client {
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())
	}
	adm := kadm.NewClient(login("admin"))
	for _, topic := range []string{"orders", "payroll"} {
		if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpDescribe))
	alice := login("alice")
	if got := pageOf(describeTopicPartitions(t, alice, 2000, nil)); got != "orders:0:0" {
		t.Errorf("alice's listing: %s", got)
	}
	resp := describeTopicPartitions(t, alice, 2000, nil, "payroll", "orders")
	if got := pageOf(resp); got != fmt.Sprintf("orders:0:0 payroll:%d:", kerr.TopicAuthorizationFailed.Code) {
		t.Errorf("alice naming both: %s", got)
	}
	if ops := resp.Topics[0].AuthorizedOperations; ops != 1<<opDescribe {
		t.Errorf("alice's operations on orders: %b, want DESCRIBE only", ops)
	}
}

// A topic named that does not exist, or whose name is invalid, still
// carries the principal's operations on it (every topic operation without
// an authorizer), as Kafka's handler sets them on every topic it
// described; only a refused one keeps the unset value.
func TestDescribeTopicPartitionsUnknownTopicOperations(t *testing.T) {
	b := startBroker(t, nil)
	resp := describeTopicPartitions(t, newClient(t, b), 2000, nil, "missing", "bad name!")
	if len(resp.Topics) != 2 {
		t.Fatalf("%s", pageOf(resp))
	}
	for _, rt := range resp.Topics {
		if rt.ErrorCode == 0 || rt.AuthorizedOperations != topicOperations {
			t.Errorf("%s: error %d, operations %b, want %b", *rt.Topic, rt.ErrorCode, rt.AuthorizedOperations, topicOperations)
		}
	}
}
