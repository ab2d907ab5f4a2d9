package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopicsEntry sends one CreateTopics v7 with the given entries and
// returns the answers.
func createTopicsEntry(rc *rawConn, validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) []kmsg.CreateTopicsResponseTopic {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.ValidateOnly = validateOnly
	req.Topics = topics
	return rc.request(req).(*kmsg.CreateTopicsResponse).Topics
}

// A CreateTopics entry wrong in several ways gets the error of Kafka's
// first check (ReplicationControlManager.createTopics): the name and its
// collisions, then an existing topic, then the configs (null values, then
// invalid ones), then the replication factor, then the partition count.
// An application that creates its topics at start and ignores
// TOPIC_ALREADY_EXISTS must not see INVALID_REPLICATION_FACTOR because it
// asks for more replicas than this node has.
func TestCreateTopicsChecksInKafkasOrder(t *testing.T) {
	onBothLayouts(t, checkCreateTopicsOrder)
}

func checkCreateTopicsOrder(t *testing.T, _ *Broker, rc *rawConn) {
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
		{"existing topic, no partitions", entry("exists", 0, 1), errTopicAlreadyExists, "Topic 'exists' already exists."},
		{"existing topic, invalid config", entry("exists", 1, 1, badCfg), errTopicAlreadyExists, "Topic 'exists' already exists."},
		{"invalid name, no partitions", entry("bad/name", 0, 0), errInvalidTopic, ""},
		{"colliding name, no partitions", entry("a_b", 0, 0), errInvalidTopic, "Topic 'a_b' collides with existing topic: a.b"},
		{"invalid config, too many replicas", entry("cfg", 1, 3, badCfg), errInvalidConfig, ""},
		{"null configs", entry("nulls", 1, 1, nullCfg, nullCfg2), errInvalidConfig, "Null value not supported for topic configs: retention.ms,cleanup.policy"},
		{"no partitions, no replicas", entry("zero", 0, 0), errInvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value."},
	} {
		got := createTopicsEntry(rc, false, c.topic)[0]
		if got.ErrorCode != c.code || c.msg != "" && (got.ErrorMessage == nil || *got.ErrorMessage != c.msg) {
			t.Errorf("%s: error %d %q, want %d %q", c.what, got.ErrorCode, ps(got.ErrorMessage), c.code, c.msg)
		}
	}
	if got := createTopicsEntry(rc, false, entry("nulls", 1, 1))[0]; got.ErrorCode != 0 {
		t.Fatalf("the topic refused for its null configs was made: %d", got.ErrorCode)
	}
}

// Kafka's controller answers a topic named twice in a CreateTopics request
// once, "Duplicate topic name." (ControllerApis.createTopics).
func TestCreateTopicsDuplicateEntries(t *testing.T) {
	onBothLayouts(t, func(t *testing.T, b *Broker, rc *rawConn) {
		answers := createTopicsEntry(rc, false,
			kmsg.CreateTopicsRequestTopic{Topic: "twice", NumPartitions: 1, ReplicationFactor: 1},
			kmsg.CreateTopicsRequestTopic{Topic: "twice", NumPartitions: 1, ReplicationFactor: 1})
		if len(answers) != 1 || answers[0].ErrorCode != errInvalidRequest || ps(answers[0].ErrorMessage) != "Duplicate topic name." {
			t.Errorf("duplicate: %d answers, first %d %q; want one, INVALID_REQUEST", len(answers), answers[0].ErrorCode, ps(answers[0].ErrorMessage))
		}
		if b.topicExists("twice") {
			t.Fatal("a duplicated topic was created")
		}
	})
}

// A validate-only CreateTopics answers, as Kafka's controller does, with
// the topic id the topic would have had (a fresh one), and creates
// nothing.
func TestCreateTopicsValidateOnlyTopicID(t *testing.T) {
	onBothLayouts(t, func(t *testing.T, b *Broker, rc *rawConn) {
		got := createTopicsEntry(rc, true, kmsg.CreateTopicsRequestTopic{Topic: "dry", NumPartitions: 2, ReplicationFactor: 1})[0]
		if got.ErrorCode != 0 || got.TopicID == [16]byte{} || got.NumPartitions != 2 || got.ReplicationFactor != 1 {
			t.Fatalf("validate-only: error %d, id %x, %d partitions, factor %d", got.ErrorCode, got.TopicID, got.NumPartitions, got.ReplicationFactor)
		}
		if b.topicExists("dry") {
			t.Fatal("validate-only created the topic")
		}
	})
}

// ps is an error message, or "" when there is none.
func ps(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Invalid topic names are refused with Kafka's messages (Topic.validate
// since Kafka 3.4); the length is counted in characters, as Java counts.
func TestTopicNameMessages(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	long := strings.Repeat("x", 250)
	for name, msg := range map[string]string{
		"":                       "Topic name is invalid: the empty string is not allowed",
		".":                      "Topic name is invalid: '.' is not allowed",
		"..":                     "Topic name is invalid: '..' is not allowed",
		long:                     "Topic name is invalid: the length of '" + long + "' is longer than the max allowed length 249",
		`bad"name`:               `Topic name is invalid: 'bad"name' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'`,
		strings.Repeat("é", 200): "Topic name is invalid: '" + strings.Repeat("é", 200) + "' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'",
	} {
		got := createTopicsEntry(rc, false, kmsg.CreateTopicsRequestTopic{Topic: name, NumPartitions: 1, ReplicationFactor: 1})[0]
		if got.ErrorCode != errInvalidTopic || ps(got.ErrorMessage) != msg {
			t.Errorf("%.20q: %d %q, want %q", name, got.ErrorCode, ps(got.ErrorMessage), msg)
		}
	}
}

// Altering the configs of a topic resource checks its name first, as
// Kafka's ControllerConfigurationValidator does: no name is INVALID_REQUEST
// "Default topic resources are not allowed.", an invalid one
// INVALID_TOPIC_EXCEPTION, before the values and whether the topic exists.
func TestAlterTopicConfigsChecksTheName(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	for _, c := range []struct {
		name string
		code int16
		msg  string
	}{
		{"", errInvalidRequest, "Default topic resources are not allowed."},
		{"bad/name", errInvalidTopic, "Topic name is invalid: 'bad/name' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"},
		{"missing", errUnknownTopicOrPartition, "The topic 'missing' does not exist."},
	} {
		inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
		inc.SetVersion(1)
		inc.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: c.name,
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("1000")}}}}
		got := rc.request(inc).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		if got.ErrorCode != c.code || ps(got.ErrorMessage) != c.msg {
			t.Errorf("IncrementalAlterConfigs %q: %d %q, want %d %q", c.name, got.ErrorCode, ps(got.ErrorMessage), c.code, c.msg)
		}
		legacy := kmsg.NewPtrAlterConfigsRequest()
		legacy.SetVersion(2)
		legacy.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: c.name,
			Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("x")}}}}
		lgot := rc.request(legacy).(*kmsg.AlterConfigsResponse).Resources[0]
		if c.code != errUnknownTopicOrPartition && (lgot.ErrorCode != c.code || ps(lgot.ErrorMessage) != c.msg) {
			t.Errorf("AlterConfigs %q: %d %q, want %d %q", c.name, lgot.ErrorCode, ps(lgot.ErrorMessage), c.code, c.msg)
		}
	}
}

// Metadata names an invalid topic INVALID_TOPIC_EXCEPTION whether or not
// it may create topics, as Kafka's KafkaApis.getTopicMetadata does, and
// auto-creates the coordinators' internal topics as their coordinators
// make them (Kafka's AutoTopicCreationManager): their own partition
// counts and configs, not num.partitions.
func TestMetadataInvalidNamesAndInternalTopics(t *testing.T) {
	off := startBroker(t, map[string]string{"auto.create.topics.enable": "false"})
	on := startBroker(t, map[string]string{"offsets.topic.num.partitions": "2", "transaction.state.log.num.partitions": "3"})
	for _, c := range []struct {
		b     *Broker
		allow bool
	}{{off, true}, {on, false}} {
		got := metadataOf(dialRaw(t, c.b), c.allow, "bad/name", "missing")
		if got["bad/name"].ErrorCode != errInvalidTopic || got["missing"].ErrorCode != errUnknownTopicOrPartition {
			t.Errorf("auto-creation off (allowed %v): bad/name %d, missing %d", c.allow, got["bad/name"].ErrorCode, got["missing"].ErrorCode)
		}
	}
	got := metadataOf(dialRaw(t, on), true, "__consumer_offsets", "__transaction_state")
	for name, want := range map[string]int{"__consumer_offsets": 2, "__transaction_state": 3} {
		if mt := got[name]; mt.ErrorCode != 0 || len(mt.Partitions) != want || !mt.IsInternal {
			t.Errorf("%s auto-created: error %d, %d partitions, internal %v; want %d partitions", name, mt.ErrorCode, len(mt.Partitions), mt.IsInternal, want)
		}
		if policy := on.topicOverrides(name)["cleanup.policy"]; policy != "compact" {
			t.Errorf("%s auto-created with cleanup.policy %q", name, policy)
		}
	}
	// The group coordinator loaded the partitions it was made with: before,
	// every group of the node was NOT_COORDINATOR until a restart.
	if err := commitToNewTopic(t, on); err != nil {
		t.Fatalf("committing after __consumer_offsets was auto-created: %v", err)
	}
}

// metadataOf asks for names' metadata (v12, allowing auto-creation or
// not) and returns the answers by topic.
func metadataOf(rc *rawConn, allow bool, names ...string) map[string]kmsg.MetadataResponseTopic {
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

// commitToNewTopic creates a topic "data" on b and commits group g's
// offset for it.
func commitToNewTopic(t *testing.T, b *Broker) error {
	createTopicRaw(t, dialRaw(t, b), "data", 1)
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "data", Partition: 0, At: 7})
	return commitOnce(newAdmin(t, b), "g", offsets)
}

// __consumer_offsets created by hand (Kafka allows it) serves the node's
// groups at once, as when FindCoordinator makes it: before, they were all
// NOT_COORDINATOR until a restart.
func TestCoordinatorTopicCreatedByHand(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "__consumer_offsets", 3)
	if err := commitToNewTopic(t, b); err != nil {
		t.Fatalf("committing after __consumer_offsets was created by hand: %v", err)
	}
}
