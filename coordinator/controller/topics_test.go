package controller

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Replicas are spread round-robin over the unfenced brokers: every
// partition has distinct replicas, leaders are the first replica and are
// balanced, the ISR is all replicas.
func TestCreateTopicsPlacement(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.DefaultPartitions, c.DefaultReplicationFactor = 4, 2 })
	cl := tc.client()
	registerUnfenced(t, cl, 3)
	r := createTopic(t, cl, "spread", 6, 3, map[string]string{"retention.ms": "1000"})
	if r.ErrorCode != 0 || r.NumPartitions != 6 || r.ReplicationFactor != 3 || r.TopicID == [16]byte{} {
		t.Fatalf("create: %+v", r)
	}
	img := tc.ctl(tc.active()).Image()
	topic := img.Topics["spread"]
	if topic.ID != r.TopicID || img.TopicsByID[r.TopicID] != topic {
		t.Fatal("topic id not indexed")
	}
	leads := map[int32]int{}
	for i, p := range topic.Partitions {
		sorted := slices.Sorted(slices.Values(p.Replicas))
		if !slices.Equal(sorted, []int32{1, 2, 3}) || p.Leader != p.Replicas[0] || !slices.Equal(p.ISR, p.Replicas) ||
			p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
			t.Fatalf("partition %d: %+v", i, p)
		}
		leads[p.Leader]++
	}
	if leads[1] != 2 || leads[2] != 2 || leads[3] != 2 {
		t.Fatalf("leaders not balanced: %v", leads)
	}
	if v, _ := img.TopicConfig("spread", "retention.ms"); v != "1000" {
		t.Fatalf("config not kept: %q", v)
	}

	// -1 takes the defaults.
	if r := createTopic(t, cl, "defaults", -1, -1, nil); r.ErrorCode != 0 || r.NumPartitions != 4 || r.ReplicationFactor != 2 {
		t.Fatalf("defaults: %+v", r)
	}
	// Errors.
	if r := createTopic(t, cl, "spread", 1, 1, nil); r.ErrorCode != kerr.TopicAlreadyExists.Code {
		t.Fatalf("existing topic: %d", r.ErrorCode)
	}
	if r := createTopic(t, cl, MetadataTopic, 1, 1, nil); r.ErrorCode != kerr.InvalidRequest.Code || *r.ErrorMessage != MetadataTopicRefusal {
		t.Fatalf("the metadata topic: %d %v", r.ErrorCode, r.ErrorMessage)
	}
	// A client of the controller listener reaches the controller without
	// a broker's checks: the controller refuses invalid names itself.
	for _, name := range []string{"has space", "..", strings.Repeat("x", 250)} {
		if r := createTopic(t, cl, name, 1, 1, nil); r.ErrorCode != kerr.InvalidTopicException.Code || r.ErrorMessage == nil ||
			!strings.HasPrefix(*r.ErrorMessage, "Topic name is invalid: ") {
			t.Fatalf("invalid name %.20q: %d %v", name, r.ErrorCode, r.ErrorMessage)
		}
	}
	createTopic(t, cl, "with.dot", 1, 1, nil)
	if r := createTopic(t, cl, "with_dot", 1, 1, nil); r.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("colliding name: %d", r.ErrorCode)
	}
	if r := createTopic(t, cl, "big", 1, 4, nil); r.ErrorCode != kerr.InvalidReplicationFactor.Code || r.ErrorMessage == nil {
		t.Fatalf("RF 4 on 3 brokers: %+v", r)
	}
	if r := createTopic(t, cl, "zero", 0, 1, nil); r.ErrorCode != kerr.InvalidPartitions.Code {
		t.Fatalf("0 partitions: %d", r.ErrorCode)
	}
	if r := createTopic(t, cl, "zerorf", 1, 0, nil); r.ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("RF 0: %d", r.ErrorCode)
	}
	// ValidateOnly answers but writes nothing.
	v := kmsg.NewPtrCreateTopicsRequest()
	v.ValidateOnly = true
	v.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "dry", NumPartitions: 2, ReplicationFactor: 1}}
	if r := send[*kmsg.CreateTopicsResponse](t, cl, v); r.Topics[0].ErrorCode != 0 || r.Topics[0].NumPartitions != 2 {
		t.Fatalf("validate only: %+v", r.Topics[0])
	}
	if tc.ctl(tc.active()).Image().Topics["dry"] != nil {
		t.Fatal("ValidateOnly created the topic")
	}
	// Manual assignments.
	m := kmsg.NewPtrCreateTopicsRequest()
	m.Topics = []kmsg.CreateTopicsRequestTopic{
		{Topic: "manual", NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{
			{Partition: 1, Replicas: []int32{3, 1}}, {Partition: 0, Replicas: []int32{2, 3}}}},
		{Topic: "badbroker", NumPartitions: -1, ReplicationFactor: -1, ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{
			{Partition: 0, Replicas: []int32{7}}}},
		{Topic: "both", NumPartitions: 1, ReplicationFactor: -1, ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{
			{Partition: 0, Replicas: []int32{1}}}},
	}
	mr := send[*kmsg.CreateTopicsResponse](t, cl, m)
	if mr.Topics[0].ErrorCode != 0 || mr.Topics[1].ErrorCode != kerr.InvalidReplicaAssignment.Code ||
		mr.Topics[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("manual assignments: %+v", mr.Topics)
	}
	parts := tc.ctl(tc.active()).Image().Topics["manual"].Partitions
	if !slices.Equal(parts[0].Replicas, []int32{2, 3}) || !slices.Equal(parts[1].Replicas, []int32{3, 1}) || parts[1].Leader != 3 {
		t.Fatalf("manual partitions: %+v", parts)
	}
}

// With racks, consecutive replicas come from different racks.
func TestCreateTopicsRackAware(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	registerUnfenced(t, cl, 4, "a", "a", "b", "b")
	createTopic(t, cl, "racked", 8, 2, nil)
	img := tc.ctl(0).Image()
	for i, p := range img.Topics["racked"].Partitions {
		if img.Brokers[p.Replicas[0]].Rack == img.Brokers[p.Replicas[1]].Rack {
			t.Fatalf("partition %d has both replicas in rack %s: %v", i, img.Brokers[p.Replicas[0]].Rack, p.Replicas)
		}
	}
	// Fenced brokers are not placed on.
	registerBroker(t, cl, 5, "c")
	createTopic(t, cl, "unfencedonly", 8, 1, nil)
	for _, p := range tc.ctl(0).Image().Topics["unfencedonly"].Partitions {
		if p.Replicas[0] == 5 {
			t.Fatal("a fenced broker got a replica")
		}
	}
}

// DeleteTopics by name and by id; CreatePartitions adds partitions with the
// topic's replication factor.
func TestDeleteTopicsAndCreatePartitions(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	registerUnfenced(t, cl, 3)
	a := createTopic(t, cl, "a", 1, 2, map[string]string{"retention.ms": "5"})
	b := createTopic(t, cl, "b", 1, 1, nil)

	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "a", Count: 4}, {Topic: "b", Count: 1}, {Topic: "nope", Count: 2}}
	cr := send[*kmsg.CreatePartitionsResponse](t, cl, cp)
	if cr.Topics[0].ErrorCode != 0 || cr.Topics[1].ErrorCode != kerr.InvalidPartitions.Code ||
		cr.Topics[2].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("create partitions: %+v", cr.Topics)
	}
	parts := tc.ctl(0).Image().Topics["a"].Partitions
	if len(parts) != 4 {
		t.Fatalf("topic a has %d partitions", len(parts))
	}
	for i, p := range parts {
		if len(p.Replicas) != 2 || p.Leader != p.Replicas[0] {
			t.Fatalf("partition %d: %+v", i, p)
		}
	}
	manual := kmsg.NewPtrCreatePartitionsRequest()
	manual.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "b", Count: 2,
		Assignment: []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{3}}}}}
	if r := send[*kmsg.CreatePartitionsResponse](t, cl, manual); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("manual create partitions: %d", r.Topics[0].ErrorCode)
	}
	if p := tc.ctl(0).Image().Topics["b"].Partitions[1]; !slices.Equal(p.Replicas, []int32{3}) {
		t.Fatalf("manual partition: %+v", p)
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("a")}, {TopicID: b.TopicID}, {TopicID: [16]byte{1}},
		{Topic: kmsg.StringPtr("nope")}}
	dr := send[*kmsg.DeleteTopicsResponse](t, cl, del)
	if dr.Topics[0].ErrorCode != 0 || dr.Topics[0].TopicID != a.TopicID || dr.Topics[1].ErrorCode != 0 ||
		*dr.Topics[1].Topic != "b" || dr.Topics[2].ErrorCode != kerr.UnknownTopicID.Code ||
		dr.Topics[3].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete: %+v", dr.Topics)
	}
	img := tc.ctl(0).Image()
	if len(img.Topics) != 0 || len(img.TopicsByID) != 0 {
		t.Fatalf("topics left: %v", img.SortedTopicNames())
	}
	if _, ok := img.TopicConfig("a", "retention.ms"); ok {
		t.Fatal("deleted topic's config kept")
	}
	// Recreating gives a new id.
	if r := createTopic(t, cl, "a", 1, 1, nil); r.ErrorCode != 0 || r.TopicID == a.TopicID {
		t.Fatalf("recreate: %+v", r)
	}
	// DeleteTopics v0 by name.
	v0 := kmsg.NewPtrDeleteTopicsRequest()
	v0.SetVersion(0)
	v0.TopicNames = []string{"a"}
	if r := sendAsIs[*kmsg.DeleteTopicsResponse](t, cl, v0); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete v0: %d", r.Topics[0].ErrorCode)
	}
}

// IncrementalAlterConfigs and AlterConfigs on topics, a broker and the
// cluster default.
func TestConfigs(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	registerUnfenced(t, cl, 1)
	createTopic(t, cl, "t", 1, 1, map[string]string{"retention.ms": "5"})
	res := func(typ kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsRequestResource {
		return kmsg.IncrementalAlterConfigsRequestResource{ResourceType: typ, ResourceName: name, Configs: ops}
	}
	op := func(name string, o kmsg.IncrementalAlterConfigOp, v string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: o, Value: kmsg.StringPtr(v)}
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{
		res(kmsg.ConfigResourceTypeTopic, "t", op("retention.ms", kmsg.IncrementalAlterConfigOpDelete, ""),
			op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, "compact"),
			op("cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, "delete")),
		res(kmsg.ConfigResourceTypeBroker, "", op("unclean.leader.election.enable", kmsg.IncrementalAlterConfigOpSet, "true")),
		res(kmsg.ConfigResourceTypeBroker, "1", op("log.retention.ms", kmsg.IncrementalAlterConfigOpSet, "7")),
		res(kmsg.ConfigResourceTypeTopic, "nope", op("retention.ms", kmsg.IncrementalAlterConfigOpSet, "1")),
		res(kmsg.ConfigResourceTypeBroker, "x", op("a", kmsg.IncrementalAlterConfigOpSet, "1")),
	}
	r := send[*kmsg.IncrementalAlterConfigsResponse](t, cl, req)
	want := []int16{0, 0, 0, kerr.UnknownTopicOrPartition.Code, kerr.InvalidRequest.Code}
	for i, w := range want {
		if r.Resources[i].ErrorCode != w {
			t.Fatalf("resource %d: error %d, want %d", i, r.Resources[i].ErrorCode, w)
		}
	}
	img := tc.ctl(0).Image()
	if _, ok := img.TopicConfig("t", "retention.ms"); ok {
		t.Fatal("deleted override kept")
	}
	if v, _ := img.TopicConfig("t", "cleanup.policy"); v != "compact,delete" {
		t.Fatalf("appended list: %q", v)
	}
	if v, _ := img.ClusterConfig("unclean.leader.election.enable"); v != "true" {
		t.Fatalf("cluster default: %q", v)
	}
	if v := img.Configs[ConfigResource{ResourceBroker, "1"}]["log.retention.ms"]; v != "7" {
		t.Fatalf("broker config: %q", v)
	}
	sub := kmsg.NewPtrIncrementalAlterConfigsRequest()
	sub.Resources = []kmsg.IncrementalAlterConfigsRequestResource{
		res(kmsg.ConfigResourceTypeTopic, "t", op("cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, "compact"))}
	send[*kmsg.IncrementalAlterConfigsResponse](t, cl, sub)
	if v, _ := tc.ctl(0).Image().TopicConfig("t", "cleanup.policy"); v != "delete" {
		t.Fatalf("subtracted list: %q", v)
	}
	// Legacy AlterConfigs replaces the whole set.
	alter := kmsg.NewPtrAlterConfigsRequest()
	alter.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t",
		Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "segment.ms", Value: kmsg.StringPtr("9")}}}}
	if r := send[*kmsg.AlterConfigsResponse](t, cl, alter); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter configs: %d", r.Resources[0].ErrorCode)
	}
	got := tc.ctl(0).Image().Configs[ConfigResource{ResourceTopic, "t"}]
	if len(got) != 1 || got["segment.ms"] != "9" {
		t.Fatalf("after AlterConfigs: %v", got)
	}
}

// AllocateProducerIds hands out consecutive blocks of 1000.
func TestAllocateProducerIDs(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	b := registerUnfenced(t, cl, 1)[0]
	for i := int64(0); i < 2; i++ {
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID, req.BrokerEpoch = b.id, b.epoch
		r := send[*kmsg.AllocateProducerIDsResponse](t, cl, req)
		if r.ErrorCode != 0 || r.ProducerIDStart != i*1000 || r.ProducerIDLen != 1000 {
			t.Fatalf("block %d: %+v", i, r)
		}
	}
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = b.id, b.epoch+1
	if r := send[*kmsg.AllocateProducerIDsResponse](t, cl, req); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale epoch: %d", r.ErrorCode)
	}
}

// A BROKER resource names a node by a non-negative base 10 id, which must
// be a registered broker or a controller ("" is the cluster-wide default),
// as Kafka's ControllerConfigurationValidator and
// QuorumController.ConfigResourceExistenceChecker answer a client of the
// CONTROLLER listener; nothing is written for a refused one.
func TestConfigsBrokerResources(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	registerUnfenced(t, cl, 1)
	set := []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "log.retention.ms", Value: kmsg.StringPtr("7")}}
	cases := []struct {
		name string
		code int16
		msg  string
	}{
		{"", 0, ""},
		{"1", 0, ""},
		{"7", kerr.BrokerIDNotRegistered.Code, "No node with id 7 found."},
		{"-1", kerr.InvalidRequest.Code, "Invalid negative broker ID."},
		{"x", kerr.InvalidRequest.Code, "Unable to parse broker name as a base 10 number."},
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	legacy := kmsg.NewPtrAlterConfigsRequest()
	for _, c := range cases {
		req.Resources = append(req.Resources, kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: c.name, Configs: set})
		cfgs := []kmsg.AlterConfigsRequestResourceConfig{{Name: set[0].Name, Value: set[0].Value}}
		if c.name == "" { // ELR is on: the cluster's min.insync.replicas stays
			cfgs = append(cfgs, kmsg.AlterConfigsRequestResourceConfig{Name: "min.insync.replicas", Value: kmsg.StringPtr("1")})
		}
		legacy.Resources = append(legacy.Resources, kmsg.AlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: c.name, Configs: cfgs})
	}
	r := send[*kmsg.IncrementalAlterConfigsResponse](t, cl, req)
	l := send[*kmsg.AlterConfigsResponse](t, cl, legacy)
	for i, c := range cases {
		if got := r.Resources[i]; got.ErrorCode != c.code || got.ErrorMessage != nil && *got.ErrorMessage != c.msg {
			t.Errorf("IncrementalAlterConfigs of broker %q: %d %v, want %d %q", c.name, got.ErrorCode, got.ErrorMessage, c.code, c.msg)
		}
		if got := l.Resources[i]; got.ErrorCode != c.code || got.ErrorMessage != nil && *got.ErrorMessage != c.msg {
			t.Errorf("AlterConfigs of broker %q: %d %v, want %d %q", c.name, got.ErrorCode, got.ErrorMessage, c.code, c.msg)
		}
	}
	for res := range tc.ctl(0).Image().Configs {
		if res.Type == ResourceBroker && res.Name != "" && res.Name != "1" {
			t.Errorf("configs written for broker %q", res.Name)
		}
	}
}

// As Kafka's ControllerApis, a resource given more than once is answered
// once, INVALID_REQUEST "Duplicate resource.", and not changed; an
// unknown resource type is UNSUPPORTED_VERSION; BROKER_LOGGER, which only
// IncrementalAlterConfigs changes (on the node itself), is not a
// resource AlterConfigs knows.
func TestConfigsDuplicateAndUnknownResources(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	registerUnfenced(t, cl, 1)
	createTopic(t, cl, "t", 1, 1, nil)
	type answer struct {
		typ  kmsg.ConfigResourceType
		name string
		code int16
		msg  string
	}
	want := []answer{
		{kmsg.ConfigResourceTypeTopic, "t", kerr.InvalidRequest.Code, "Duplicate resource."},
		{kmsg.ConfigResourceType(99), "x", kerr.UnsupportedVersion.Code, "Unknown resource type 99."},
	}
	set := func(v string) []kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr(v)}}
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t", Configs: set("1")},
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t", Configs: set("2")},
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t", Configs: set("3")},
		{ResourceType: kmsg.ConfigResourceType(99), ResourceName: "x", Configs: set("4")},
	}
	var got []answer
	for _, r := range send[*kmsg.IncrementalAlterConfigsResponse](t, cl, req).Resources {
		got = append(got, answer{r.ResourceType, r.ResourceName, r.ErrorCode, ps(r.ErrorMessage)})
	}
	if !slices.Equal(got, want) {
		t.Errorf("IncrementalAlterConfigs: %+v, want %+v", got, want)
	}
	legacy := kmsg.NewPtrAlterConfigsRequest()
	for _, r := range req.Resources {
		legacy.Resources = append(legacy.Resources, kmsg.AlterConfigsRequestResource{ResourceType: r.ResourceType, ResourceName: r.ResourceName,
			Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: r.Configs[0].Value}}})
	}
	legacy.Resources = append(legacy.Resources, kmsg.AlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBrokerLogger, ResourceName: "1"})
	got = nil
	for _, r := range send[*kmsg.AlterConfigsResponse](t, cl, legacy).Resources {
		got = append(got, answer{r.ResourceType, r.ResourceName, r.ErrorCode, ps(r.ErrorMessage)})
	}
	want = append(want, answer{kmsg.ConfigResourceTypeBrokerLogger, "1", kerr.InvalidRequest.Code, "Unknown resource type BROKER_LOGGER"})
	if !slices.Equal(got, want) {
		t.Errorf("AlterConfigs: %+v, want %+v", got, want)
	}
	if v, ok := tc.ctl(0).Image().TopicConfig("t", "retention.ms"); ok {
		t.Errorf("a duplicated resource was changed: retention.ms %s", v)
	}
}

func ps(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// A TOPIC config resource is named as a topic must be, before anything
// else about it, as Kafka's ControllerConfigurationValidator checks it:
// "" is INVALID_REQUEST, an invalid name INVALID_TOPIC_EXCEPTION.
func TestConfigsTopicResourceNames(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	registerUnfenced(t, cl, 1)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, name := range []string{"", "bad name"} {
		req.Resources = append(req.Resources, kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: name,
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1")}}})
	}
	r := send[*kmsg.IncrementalAlterConfigsResponse](t, cl, req).Resources
	if r[0].ErrorCode != kerr.InvalidRequest.Code || ps(r[0].ErrorMessage) != "Default topic resources are not allowed." {
		t.Errorf("topic \"\": %d %q", r[0].ErrorCode, ps(r[0].ErrorMessage))
	}
	if r[1].ErrorCode != kerr.InvalidTopicException.Code || !strings.HasPrefix(ps(r[1].ErrorMessage), "Topic name is invalid: ") {
		t.Errorf("topic \"bad name\": %d %q", r[1].ErrorCode, ps(r[1].ErrorMessage))
	}
}
