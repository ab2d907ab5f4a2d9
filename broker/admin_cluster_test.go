package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// In a cluster too, a CreateTopics entry wrong in several ways gets the
// error of Kafka's first check (ReplicationControlManager.createTopics):
// the name and its collisions, an existing topic, the configs (null
// values, then invalid ones), the replication factor, the partition
// count. A topic named twice is answered once, "Duplicate topic name."
// (ControllerApis.createTopics), and a validate-only request answers
// with a topic id.
func TestClusterCreateTopicsChecksInKafkasOrder(t *testing.T) {
	c := startCluster(t, 1, nil)
	rc := dialRaw(t, c.nodes[0])
	createTopicRaw(t, rc, "exists", 1)
	createTopicRaw(t, rc, "a.b", 1)
	badCfg := kmsg.CreateTopicsRequestTopicConfig{Name: "segment.bytes", Value: kmsg.StringPtr("lots")}
	nullCfg := kmsg.CreateTopicsRequestTopicConfig{Name: "retention.ms"}
	nullCfg2 := kmsg.CreateTopicsRequestTopicConfig{Name: "cleanup.policy"}
	entry := func(name string, partitions int32, rf int16, cfg ...kmsg.CreateTopicsRequestTopicConfig) kmsg.CreateTopicsRequestTopic {
		return kmsg.CreateTopicsRequestTopic{Topic: name, NumPartitions: partitions, ReplicationFactor: rf, Configs: cfg}
	}
	for _, c := range []struct {
		what  string
		topic kmsg.CreateTopicsRequestTopic
		code  int16
		msg   string
	}{
		{"existing topic, too many replicas", entry("exists", 1, 3), errTopicAlreadyExists, "Topic 'exists' already exists."},
		{"existing topic, invalid config", entry("exists", 1, 1, badCfg), errTopicAlreadyExists, "Topic 'exists' already exists."},
		{"invalid name, no partitions", entry("bad/name", 0, 0), errInvalidTopic, ""},
		{"colliding name, invalid config", entry("a_b", 1, 1, badCfg), errInvalidTopic, "Topic 'a_b' collides with existing topic: a.b"},
		{"invalid config, too many replicas", entry("cfg", 1, 3, badCfg), errInvalidConfig, ""},
		{"null configs", entry("nulls", 1, 1, nullCfg, nullCfg2), errInvalidConfig, "Null value not supported for topic configs: retention.ms,cleanup.policy"},
		{"no partitions, no replicas", entry("zero", 0, 0), errInvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value."},
	} {
		got := createTopicsEntry(rc, false, c.topic)[0]
		if got.ErrorCode != c.code || c.msg != "" && ps(got.ErrorMessage) != c.msg {
			t.Errorf("%s: error %d %q, want %d %q", c.what, got.ErrorCode, ps(got.ErrorMessage), c.code, c.msg)
		}
	}
	if got := createTopicsEntry(rc, false, entry("nulls", 1, 1))[0]; got.ErrorCode != 0 {
		t.Fatalf("the topic refused for its null configs was made: %d", got.ErrorCode)
	}
	answers := createTopicsEntry(rc, false, entry("twice", 1, 1), entry("twice", 1, 1))
	if len(answers) != 1 || answers[0].ErrorCode != errInvalidRequest || ps(answers[0].ErrorMessage) != "Duplicate topic name." {
		t.Errorf("duplicate: %+v; want one answer, INVALID_REQUEST \"Duplicate topic name.\"", answers)
	}
	dry := createTopicsEntry(rc, true, entry("dry", 2, 1))[0]
	if dry.ErrorCode != 0 || dry.TopicID == [16]byte{} || dry.NumPartitions != 2 {
		t.Errorf("validate-only: error %d, id %x, %d partitions", dry.ErrorCode, dry.TopicID, dry.NumPartitions)
	}
	if c.nodes[0].topicExists("twice") || c.nodes[0].topicExists("dry") {
		t.Error("a duplicated or validated topic was created")
	}
}

// In a cluster too, malformed DeleteTopics entries are refused with
// INVALID_REQUEST and Kafka's messages (ControllerApis.deleteTopics), and
// nothing they name is deleted.
func TestClusterDeleteTopicsMalformedEntries(t *testing.T) {
	c := startCluster(t, 1, nil)
	b := c.nodes[0]
	rc := dialRaw(t, b)
	ids := map[string][16]byte{}
	for _, name := range []string{"twice", "byid", "both", "mapped"} {
		ids[name] = createTopicRaw(t, rc, name, 1)
	}
	name := kmsg.StringPtr
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.SetVersion(6)
	req.Topics = []kmsg.DeleteTopicsRequestTopic{
		{Topic: name("twice")}, {Topic: name("twice")},
		{TopicID: ids["byid"]}, {TopicID: ids["byid"]},
		{Topic: name("both"), TopicID: ids["both"]},
		{},
		{Topic: name("mapped")}, {TopicID: ids["mapped"]},
	}
	type answer struct {
		name string
		id   [16]byte
		code int16
		msg  string
	}
	var got []answer
	for _, st := range rc.request(req).(*kmsg.DeleteTopicsResponse).Topics {
		got = append(got, answer{ps(st.Topic), st.TopicID, st.ErrorCode, ps(st.ErrorMessage)})
	}
	want := []answer{
		{"twice", [16]byte{}, errInvalidRequest, "Duplicate topic name."},
		{"", ids["byid"], errInvalidRequest, "Duplicate topic id."},
		{"both", ids["both"], errInvalidRequest, "You may not specify both topic name and topic id."},
		{"", [16]byte{}, errInvalidRequest, "Neither topic name nor id were specified."},
		{"mapped", ids["mapped"], errInvalidRequest, "The provided topic name maps to an ID that was already supplied."},
	}
	if len(got) != len(want) {
		t.Errorf("answers %+v, want %+v", got, want)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("no answer %+v in %+v", w, got)
		}
	}
	for name := range ids {
		if !b.topicExists(name) {
			t.Errorf("%s was deleted", name)
		}
	}
}

// In a cluster too, CreatePartitions answers a topic named twice once,
// an unknown topic UNKNOWN_TOPIC_OR_PARTITION without a message, and a
// count that is no increase before looking at the assignments.
func TestClusterCreatePartitionsChecksInKafkasOrder(t *testing.T) {
	c := startCluster(t, 1, nil)
	rc := dialRaw(t, c.nodes[0])
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
		code int16
		msg  *string
	}
	got := map[string][]answer{}
	for _, st := range rc.request(req).(*kmsg.CreatePartitionsResponse).Topics {
		got[st.Topic] = append(got[st.Topic], answer{st.ErrorCode, st.ErrorMessage})
	}
	for topic, w := range map[string]answer{
		"twice": {errInvalidRequest, kmsg.StringPtr("Duplicate topic name.")},
		"nope":  {errUnknownTopicOrPartition, nil},
		"grow":  {errInvalidPartitions, kmsg.StringPtr("Topic already has 1 partition(s).")},
	} {
		a := got[topic]
		if len(a) != 1 || a[0].code != w.code || (a[0].msg == nil) != (w.msg == nil) || ps(a[0].msg) != ps(w.msg) {
			t.Errorf("%s: answers %+v; want one, error %d %q", topic, a, w.code, ps(w.msg))
		}
	}
}

// In a cluster too, Metadata names an invalid topic
// INVALID_TOPIC_EXCEPTION whether or not it may create topics, and
// auto-creates the coordinators' internal topics as their coordinators
// make them: their partition counts and cleanup.policy=compact.
func TestClusterMetadataInvalidNamesAndInternalTopics(t *testing.T) {
	c := startCluster(t, 1, map[string]string{"offsets.topic.num.partitions": "2", "transaction.state.log.num.partitions": "3", "transaction.state.log.replication.factor": "1"})
	b := c.nodes[0]
	rc := dialRaw(t, b)
	metadata := func(allow bool, names ...string) map[string]kmsg.MetadataResponseTopic {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(12)
		req.AllowAutoTopicCreation = allow
		for _, n := range names {
			req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(n)})
		}
		out := map[string]kmsg.MetadataResponseTopic{}
		for _, mt := range rc.request(req).(*kmsg.MetadataResponse).Topics {
			out[ps(mt.Topic)] = mt
		}
		return out
	}
	got := metadata(false, "bad/name", "missing")
	if got["bad/name"].ErrorCode != errInvalidTopic || got["missing"].ErrorCode != errUnknownTopicOrPartition {
		t.Errorf("auto-creation not allowed: bad/name %d, missing %d", got["bad/name"].ErrorCode, got["missing"].ErrorCode)
	}
	metadata(true, "__consumer_offsets", "__transaction_state")
	for name, want := range map[string]int{"__consumer_offsets": 2, "__transaction_state": 3} {
		c.waitFor(name+" auto-created", func() bool { return b.partitionCountOf(name) > 0 })
		if n := b.partitionCountOf(name); n != int32(want) {
			t.Errorf("%s auto-created with %d partitions, want %d", name, n, want)
		}
		if policy := b.topicOverrides(name)["cleanup.policy"]; policy != "compact" {
			t.Errorf("%s auto-created with cleanup.policy %q", name, policy)
		}
	}
}
