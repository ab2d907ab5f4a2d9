package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreatePartitionsNotAnIncrease pins Kafka 4's INVALID_PARTITIONS
// answers for a count equal to or below the current one, which clients
// (sarama, kafka-topics) show to users verbatim.
func TestCreatePartitionsNotAnIncrease(t *testing.T) {
	_, rc := startWithTopic(t, "grow")
	for _, c := range []struct {
		count int32
		msg   string
	}{
		{1, "Topic already has 1 partition(s)."},
		{0, "The topic grow currently has 1 partition(s); 0 would not be an increase."},
	} {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "grow", Count: c.count}}
		resp := rc.request(req).(*kmsg.CreatePartitionsResponse)
		got := resp.Topics[0]
		if got.ErrorCode != errInvalidPartitions || got.ErrorMessage == nil || *got.ErrorMessage != c.msg {
			t.Errorf("count %d: error %d %v, want %d %q", c.count, got.ErrorCode, got.ErrorMessage, errInvalidPartitions, c.msg)
		}
	}
}

// A request that would make more than Kafka's 10,000 metadata records (a
// topic and its partitions and configs, or the partitions added) is
// refused whole with POLICY_VIOLATION, on a single node and by the
// cluster's controller, and nothing is created; up to the bound it passes
// (validate-only here, to create nothing). Before the bound, one request
// for two billion partitions ran the broker out of memory.
func TestExcessiveCreateIsRefusedWhole(t *testing.T) {
	check := func(t *testing.T, rc *rawConn) {
		createTopics := func(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsResponse {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.SetVersion(7)
			req.ValidateOnly, req.Topics, req.TimeoutMillis = validateOnly, topics, 30000
			return rc.request(req).(*kmsg.CreateTopicsResponse)
		}
		topic := func(name string, partitions int32, configs ...string) kmsg.CreateTopicsRequestTopic {
			rt := kmsg.CreateTopicsRequestTopic{Topic: name, NumPartitions: partitions, ReplicationFactor: 1}
			for _, c := range configs {
				rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: c, Value: kmsg.StringPtr("1000")})
			}
			return rt
		}
		refused := func(what string, codes ...int16) {
			t.Helper()
			for i, code := range codes {
				if code != kerr.PolicyViolation.Code {
					t.Errorf("%s: topic %d: error %d, want POLICY_VIOLATION", what, i, code)
				}
			}
		}
		for _, c := range []struct {
			what   string
			topics []kmsg.CreateTopicsRequestTopic
		}{
			{"two billion partitions", []kmsg.CreateTopicsRequestTopic{topic("huge", 1<<31-1), topic("small", 1)}},
			{"10,000 partitions", []kmsg.CreateTopicsRequestTopic{topic("huge", 10000)}},
			{"9,999 partitions and a config", []kmsg.CreateTopicsRequestTopic{topic("huge", 9999, "retention.ms")}},
			{"5,000 partitions twice", []kmsg.CreateTopicsRequestTopic{topic("huge", 5000), topic("small", 5000)}},
		} {
			resp := createTopics(false, c.topics...)
			var codes []int16
			for _, rt := range resp.Topics {
				codes = append(codes, rt.ErrorCode)
				if rt.ErrorMessage == nil || *rt.ErrorMessage != "Unable to perform excessively large batch operation." {
					t.Errorf("%s: message %v", c.what, rt.ErrorMessage)
				}
			}
			refused(c.what, codes...)
		}
		if resp := createTopics(true, topic("huge", 9999)); resp.Topics[0].ErrorCode != 0 {
			t.Errorf("9,999 partitions, validate only: error %d %v", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
		}
		if resp := createTopics(false, topic("small", 1)); resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("creating a 1-partition topic: error %d", resp.Topics[0].ErrorCode)
		}
		grow := func(count int32) int16 {
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.ValidateOnly, req.TimeoutMillis = true, 30000
			req.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "small", Count: count}}
			return rc.request(req).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode
		}
		refused("adding 10,001 partitions", grow(10002))
		refused("adding two billion partitions", grow(1<<31-1))
		if code := grow(10001); code != 0 {
			t.Errorf("adding 10,000 partitions, validate only: error %d", code)
		}
		meta := kmsg.NewPtrMetadataRequest()
		meta.SetVersion(12)
		meta.AllowAutoTopicCreation = false
		meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("huge")}, {Topic: kmsg.StringPtr("small")}}
		for _, mt := range rc.request(meta).(*kmsg.MetadataResponse).Topics {
			if want := map[string]int{"huge": 0, "small": 1}[*mt.Topic]; len(mt.Partitions) != want {
				t.Errorf("topic %s has %d partitions, want %d", *mt.Topic, len(mt.Partitions), want)
			}
		}
	}
	t.Run("single node", func(t *testing.T) {
		check(t, dialRaw(t, startBroker(t, nil)))
	})
	t.Run("cluster", func(t *testing.T) {
		c := startCluster(t, 3, nil)
		check(t, dialAddr(t, c.addrs()[0]))
	})
}

// TestManualAssignmentsOnASingleNode: a single node checks manual
// assignments with the controller's rules and words (Kafka runs the same
// controller code in a combined node): CreateTopics and CreatePartitions
// name the one broker there is, once per partition.
func TestManualAssignmentsOnASingleNode(t *testing.T) {
	b, rc := startWithTopic(t, "grow")
	me := b.cfg.NodeID
	create := func(as ...kmsg.CreateTopicsRequestTopicReplicaAssignment) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "manual", NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignment: as}}
		return rc.request(req).(*kmsg.CreateTopicsResponse).Topics[0]
	}
	type a = kmsg.CreateTopicsRequestTopicReplicaAssignment
	if r := create(a{Partition: 0, Replicas: []int32{me, me}}); r.ErrorCode != errInvalidReplicaAssignment || r.ErrorMessage == nil ||
		*r.ErrorMessage != "The manual partition assignment includes the broker 1 more than once." {
		t.Errorf("a broker named twice: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if r := create(a{Partition: 0, Replicas: []int32{me}}, a{Partition: 1, Replicas: []int32{me}}); r.ErrorCode != 0 || b.topics.get("manual") == nil {
		t.Fatalf("two partitions on this node: %d %v", r.ErrorCode, r.ErrorMessage)
	}

	grow := func(count int32, as ...[]int32) kmsg.CreatePartitionsResponseTopic {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(3)
		rt := kmsg.CreatePartitionsRequestTopic{Topic: "grow", Count: count}
		for _, replicas := range as {
			rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: replicas})
		}
		req.Topics = []kmsg.CreatePartitionsRequestTopic{rt}
		return rc.request(req).(*kmsg.CreatePartitionsResponse).Topics[0]
	}
	for _, c := range []struct {
		count int32
		as    [][]int32
		msg   string
	}{
		{3, [][]int32{{me}}, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."},
		{2, [][]int32{{7}}, "The manual partition assignment includes broker 7, but no such broker is registered."},
		{2, [][]int32{{me, me}}, "The manual partition assignment includes the broker 1 more than once."},
	} {
		if r := grow(c.count, c.as...); r.ErrorCode != errInvalidReplicaAssignment || r.ErrorMessage == nil || *r.ErrorMessage != c.msg {
			t.Errorf("grow to %d with %v: %d %v, want %q", c.count, c.as, r.ErrorCode, r.ErrorMessage, c.msg)
		}
	}
	if r := grow(2, []int32{me}); r.ErrorCode != 0 {
		t.Errorf("grow to 2 on this node: %d %v", r.ErrorCode, r.ErrorMessage)
	}
}

// CreatePartitions checks each topic in the order of Kafka's controller
// (ReplicationControlManager.createPartitions), with its answers: a topic
// named twice ("Duplicate topic name.", one answer), an unknown topic
// (UNKNOWN_TOPIC_OR_PARTITION with no message), a count that is no
// increase, then the number of assignments.
func TestCreatePartitionsChecksInKafkasOrder(t *testing.T) {
	onBothLayouts(t, func(t *testing.T, _ *Broker, rc *rawConn) {
		createTopicRaw(t, rc, "grow", 1)
		one := []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}}
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(3)
		req.Topics = []kmsg.CreatePartitionsRequestTopic{
			{Topic: "twice", Count: 2}, {Topic: "twice", Count: 2},
			{Topic: "nope", Count: 2},
			{Topic: "grow", Count: 1, Assignment: one},
		}
		type answer struct {
			topic string
			code  int16
			msg   *string
		}
		got := map[string][]answer{}
		for _, st := range rc.request(req).(*kmsg.CreatePartitionsResponse).Topics {
			got[st.Topic] = append(got[st.Topic], answer{st.Topic, st.ErrorCode, st.ErrorMessage})
		}
		for _, w := range []answer{
			{"twice", errInvalidRequest, kmsg.StringPtr("Duplicate topic name.")},
			{"nope", errUnknownTopicOrPartition, nil},
			{"grow", errInvalidPartitions, kmsg.StringPtr("Topic already has 1 partition(s).")},
		} {
			a := got[w.topic]
			if len(a) != 1 || a[0].code != w.code || (a[0].msg == nil) != (w.msg == nil) || w.msg != nil && *a[0].msg != *w.msg {
				t.Errorf("%s: %d answers, first %+v; want one, error %d %q", w.topic, len(a), a, w.code, ps(w.msg))
			}
		}
	})
}
