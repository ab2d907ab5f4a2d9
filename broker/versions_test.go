package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every served API is called with raw kmsg requests at its lowest and
// highest served version; each test checks what the response says.

func bothEnds(key int16) []int16 {
	h := handlers[key]
	return []int16{h.min, h.max}
}

func TestApiVersionsAdvertisesTheRegistry(t *testing.T) {
	b := startBroker(t, nil)
	for _, v := range bothEnds(18) {
		rc := dialRaw(t, b)
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		if v >= 3 {
			req.ClientSoftwareName, req.ClientSoftwareVersion = "raw-test", "1.0"
		}
		resp := rc.request(req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		got := map[int16][2]int16{}
		for _, k := range resp.ApiKeys {
			got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		want := map[int16][2]int16{0: {0, 13}, 1: {4, 18}, 2: {1, 11}, 3: {0, 13}, 10: {0, 6}, 17: {0, 1}, 18: {0, 5}, 36: {0, 2},
			8: {2, 10}, 9: {1, 10}, 11: {0, 9}, 12: {0, 4}, 13: {0, 5}, 14: {0, 5}, 15: {0, 6}, 16: {0, 5}, 42: {0, 3}, 47: {0, 0},
			19: {2, 7}, 20: {1, 6}, 21: {0, 2}, 22: {0, 5}, 23: {2, 4}, 32: {1, 4}, 33: {0, 2}, 34: {1, 2}, 35: {1, 5}, 37: {0, 3}, 38: {1, 3}, 39: {1, 2}, 40: {1, 2}, 41: {1, 3}, 43: {0, 2}, 44: {0, 1}, 45: {0, 1}, 46: {0, 0}, 48: {0, 1}, 49: {0, 1}, 50: {0, 0}, 51: {0, 0}, 29: {1, 3}, 30: {1, 3}, 31: {1, 3}, 55: {0, 2}, 57: {0, 2}, 60: {0, 2}, 61: {0, 0},
			24: {0, 5}, 25: {0, 4}, 26: {0, 5}, 27: {1, 2}, 28: {0, 6}, 65: {0, 0}, 66: {0, 2}, 68: {0, 1}, 69: {0, 1}, 74: {0, 1}, 75: {0, 0},
			76: {1, 1}, 77: {1, 1}, 78: {1, 2}, 79: {1, 2}, 83: {0, 0}, 84: {0, 0}, 85: {0, 1}, 86: {0, 0}, 87: {0, 1}, 88: {0, 1}, 89: {0, 1}, 90: {0, 1}, 91: {0, 0}, 92: {0, 0}}
		if len(got) != len(want) {
			t.Fatalf("v%d: advertised %v, want %v", v, got, want)
		}
		for k, r := range want {
			if got[k] != r {
				t.Errorf("v%d: key %d advertised %v, want %v", v, k, got[k], r)
			}
		}
	}
}

func TestApiVersionsUnknownVersionGetsV0Reply(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(4)
	frame := encodeRequest(req, 7)
	// Rewrite the version to 99, a version from the future.
	frame[6], frame[7] = 0, 99
	if _, err := rc.nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	body, err := rc.readFrame()
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	if err := resp.ReadFrom(body[4:]); err != nil {
		t.Fatal(err)
	}
	// As Kafka answers: only ApiVersions' own range, the version to retry at.
	want := []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 5}}
	if resp.ErrorCode != errUnsupportedVersion || !reflect.DeepEqual(resp.ApiKeys, want) {
		t.Fatalf("got error %d with keys %+v, want UNSUPPORTED_VERSION with %+v", resp.ErrorCode, resp.ApiKeys, want)
	}
	// A negative version is as unknown to Kafka (ApiKeys.isVersionSupported)
	// and gets the same answer.
	frame[6], frame[7] = 0xff, 0xff
	if _, err := rc.nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	if body, err = rc.readFrame(); err != nil {
		t.Fatalf("ApiVersions v-1: %v", err)
	}
	if err := resp.ReadFrom(body[4:]); err != nil || resp.ErrorCode != errUnsupportedVersion || !reflect.DeepEqual(resp.ApiKeys, want) {
		t.Fatalf("ApiVersions v-1: error %d with keys %+v (%v), want UNSUPPORTED_VERSION with %+v", resp.ErrorCode, resp.ApiKeys, err, want)
	}
	// The connection stays usable: a supported version is answered.
	ok := kmsg.NewPtrApiVersionsRequest()
	ok.SetVersion(3)
	ok.ClientSoftwareName, ok.ClientSoftwareVersion = "raw-test", "1.0"
	if r := rc.request(ok).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("follow-up ApiVersions: error %d", r.ErrorCode)
	}
}

func TestUnservedVersionsCloseTheConnection(t *testing.T) {
	b := startBroker(t, nil)
	for _, tc := range []struct {
		req     kmsg.Request
		version int16
	}{
		{kmsg.NewPtrProduceRequest(), 0}, // advertised for librdkafka, refused as in Kafka 4
		{kmsg.NewPtrProduceRequest(), 2},
		{kmsg.NewPtrFetchRequest(), 3},
		{kmsg.NewPtrMetadataRequest(), 14},
		{kmsg.NewPtrOffsetCommitRequest(), 1}, // removed in Kafka 4
		{kmsg.NewPtrEndTxnRequest(), 6},
		{kmsg.NewPtrConsumerGroupHeartbeatRequest(), 2},
		{kmsg.NewPtrShareGroupHeartbeatRequest(), 0}, // not served at all
	} {
		rc := dialRaw(t, b)
		tc.req.SetVersion(tc.version)
		if _, err := rc.nc.Write(encodeRequest(tc.req, 1)); err != nil {
			t.Fatal(err)
		}
		rc.expectClosed()
	}
	// The broker still serves others.
	rc := dialRaw(t, b)
	rc.request(kmsg.NewPtrMetadataRequest())
}

// Without "consumer" and "streams" in group.coordinator.rebalance.protocols
// the consumer and streams group APIs are still advertised, as Kafka's
// ApiVersions lists every API of the listener, and answer
// UNSUPPORTED_VERSION, as Kafka's KafkaApis does when the protocol is not
// enabled: the connection stays open.
func TestConsumerProtocolCanBeDisabled(t *testing.T) {
	b := startBroker(t, map[string]string{"group.coordinator.rebalance.protocols": "classic"})
	rc := dialRaw(t, b)
	resp := rc.request(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	advertised := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		advertised[k.ApiKey] = true
	}
	for _, key := range []int16{68, 69, 88, 89} {
		if !advertised[key] {
			t.Errorf("key %d not advertised with the consumer and streams protocols disabled", key)
		}
	}

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.SetVersion(1)
	hb.Group, hb.MemberEpoch = "g", 0
	if r := rc.request(hb).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != errUnsupportedVersion {
		t.Errorf("ConsumerGroupHeartbeat: error %d, want UNSUPPORTED_VERSION", r.ErrorCode)
	}
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{"g"}
	if r := rc.request(cd).(*kmsg.ConsumerGroupDescribeResponse); len(r.Groups) != 1 || r.Groups[0].ErrorCode != errUnsupportedVersion {
		t.Errorf("ConsumerGroupDescribe: %+v, want UNSUPPORTED_VERSION", r.Groups)
	}
	shb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	shb.Group = "s"
	if r := rc.request(shb).(*kmsg.StreamsGroupHeartbeatResponse); r.ErrorCode != errUnsupportedVersion {
		t.Errorf("StreamsGroupHeartbeat: error %d, want UNSUPPORTED_VERSION", r.ErrorCode)
	}
	sd := kmsg.NewPtrStreamsGroupDescribeRequest()
	sd.Groups = []string{"s"}
	if r := rc.request(sd).(*kmsg.StreamsGroupDescribeResponse); len(r.Groups) != 1 || r.Groups[0].ErrorCode != errUnsupportedVersion {
		t.Errorf("StreamsGroupDescribe: %+v, want UNSUPPORTED_VERSION", r.Groups)
	}
	if _, _, err := ParseConfig(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "group.coordinator.rebalance.protocols": "classic,tables"}); err == nil {
		t.Error("an unknown rebalance protocol was accepted")
	}
}

func createTopicRaw(t *testing.T, rc *rawConn, name string, partitions int32) [16]byte {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: name, NumPartitions: partitions, ReplicationFactor: 1}}
	resp := rc.request(req).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("creating %s: error %d", name, resp.Topics[0].ErrorCode)
	}
	return resp.Topics[0].TopicID
}

func TestMetadataVersions(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	id := createTopicRaw(t, rc, "meta", 3)
	for _, v := range bothEnds(3) {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("meta")}}
		resp := rc.request(req).(*kmsg.MetadataResponse)
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].Port == 0 {
			t.Fatalf("v%d: brokers %+v", v, resp.Brokers)
		}
		mt := resp.Topics[0]
		if mt.ErrorCode != 0 || len(mt.Partitions) != 3 || mt.Partitions[2].Leader != 1 {
			t.Fatalf("v%d: topic %+v", v, mt)
		}
		if v >= 10 && mt.TopicID != id {
			t.Fatalf("v%d: topic id %x, want %x", v, mt.TopicID, id)
		}
		if v >= 2 && (resp.ClusterID == nil || *resp.ClusterID != b.ClusterID()) {
			t.Fatalf("v%d: cluster id %v", v, resp.ClusterID)
		}
	}
	// v0 auto-creates; v13 with AllowAutoTopicCreation=false does not.
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(0)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("auto-v0")}}
	if resp := rc.request(req).(*kmsg.MetadataResponse); resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("v0 auto-create: %+v", resp.Topics[0])
	}
	req = kmsg.NewPtrMetadataRequest()
	req.SetVersion(13)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("no-auto")}}
	if resp := rc.request(req).(*kmsg.MetadataResponse); resp.Topics[0].ErrorCode != errUnknownTopicOrPartition {
		t.Fatalf("v13 without auto-create: error %d", resp.Topics[0].ErrorCode)
	}
	// v12+ by topic id.
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: id}}
	if resp := rc.request(req).(*kmsg.MetadataResponse); resp.Topics[0].ErrorCode != 0 || *resp.Topics[0].Topic != "meta" {
		t.Fatalf("by id: %+v", resp.Topics[0])
	}
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: [16]byte{1}}}
	if resp := rc.request(req).(*kmsg.MetadataResponse); resp.Topics[0].ErrorCode != errUnknownTopicID {
		t.Fatalf("unknown id: error %d", resp.Topics[0].ErrorCode)
	}
}

func produceRaw(t *testing.T, rc *rawConn, version int16, topic string, id [16]byte, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks, req.TimeoutMillis = -1, 5000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, TopicID: id, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: partition, Records: batch}}}}
	resp := rc.request(req).(*kmsg.ProduceResponse)
	return resp.Topics[0].Partitions[0]
}

func TestProduceFetchListOffsetsVersions(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	id := createTopicRaw(t, rc, "pf", 1)
	var next int64
	for _, v := range bothEnds(0) {
		name := "pf"
		if v >= 13 {
			name = ""
		}
		p := produceRaw(t, rc, v, name, id, 0, testBatch(5, "v"+string(rune('0'+v%10)), -1, -1, -1, 1000+next))
		if p.ErrorCode != 0 || p.BaseOffset != next {
			t.Fatalf("produce v%d: error %d base offset %d, want %d", v, p.ErrorCode, p.BaseOffset, next)
		}
		next += 5
	}
	for _, v := range bothEnds(1) {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(v)
		req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "pf", TopicID: id, Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 3, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}}}
		resp := rc.request(req).(*kmsg.FetchResponse)
		fp := resp.Topics[0].Partitions[0]
		if fp.ErrorCode != 0 || fp.HighWatermark != next || (v >= 5 && fp.LogStartOffset != 0) {
			t.Fatalf("fetch v%d: %+v", v, fp)
		}
		var offsets []int64
		for _, rec := range decodeRecords(t, fp.RecordBatches) {
			offsets = append(offsets, rec.offset)
		}
		// The batch holding offset 3 comes whole: offsets 0-9.
		if len(offsets) != int(next) || offsets[0] != 0 || offsets[len(offsets)-1] != next-1 {
			t.Fatalf("fetch v%d: offsets %v", v, offsets)
		}
	}
	for _, v := range bothEnds(2) {
		for _, q := range []struct{ ts, offset int64 }{{-2, 0}, {-1, next}, {1000, 0}, {1005, 5}, {99999, -1}} {
			req := kmsg.NewPtrListOffsetsRequest()
			req.SetVersion(v)
			req.ReplicaID = -1
			req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "pf", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: q.ts, CurrentLeaderEpoch: -1}}}}
			resp := rc.request(req).(*kmsg.ListOffsetsResponse)
			lp := resp.Topics[0].Partitions[0]
			if lp.ErrorCode != 0 || lp.Offset != q.offset {
				t.Fatalf("list offsets v%d ts %d: error %d offset %d, want %d", v, q.ts, lp.ErrorCode, lp.Offset, q.offset)
			}
		}
	}
}

func TestAdminVersions(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	for i, v := range bothEnds(19) {
		name := "admin-" + string(rune('a'+i))
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(v)
		req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: name, NumPartitions: 2, ReplicationFactor: 1,
			Configs: []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: kmsg.StringPtr("3600000")}}}}
		resp := rc.request(req).(*kmsg.CreateTopicsResponse)
		if resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("create v%d: error %d", v, resp.Topics[0].ErrorCode)
		}
		if v >= 5 && (resp.Topics[0].NumPartitions != 2 || len(resp.Topics[0].Configs) == 0) {
			t.Fatalf("create v%d: %+v", v, resp.Topics[0])
		}
	}
	for i, v := range bothEnds(37) {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.SetVersion(v)
		req.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "admin-a", Count: int32(3 + i)}}
		resp := rc.request(req).(*kmsg.CreatePartitionsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("create partitions v%d: %+v", v, resp.Topics)
		}
	}
	if n := len(b.topics.get("admin-a").partitions()); n != 4 {
		t.Fatalf("admin-a has %d partitions, want 4", n)
	}
	for _, v := range bothEnds(32) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.SetVersion(v)
		req.IncludeSynonyms, req.IncludeDocumentation = true, true
		req.Resources = []kmsg.DescribeConfigsRequestResource{
			{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "admin-a", ConfigNames: []string{"retention.ms", "segment.bytes"}},
			{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1", ConfigNames: []string{"num.partitions"}},
		}
		resp := rc.request(req).(*kmsg.DescribeConfigsResponse)
		topicCfgs := resp.Resources[0].Configs
		if resp.Resources[0].ErrorCode != 0 || len(topicCfgs) != 2 {
			t.Fatalf("describe v%d: %+v", v, resp.Resources[0])
		}
		for _, c := range topicCfgs {
			switch c.Name {
			case "retention.ms":
				// Kafka lists no default synonym here: log.retention.ms has none.
				if *c.Value != "3600000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig || len(c.ConfigSynonyms) != 1 {
					t.Fatalf("describe v%d: %+v", v, c)
				}
			case "segment.bytes":
				if *c.Value != "1073741824" || c.Source != kmsg.ConfigSourceDefaultConfig {
					t.Fatalf("describe v%d: %+v", v, c)
				}
			}
			if v >= 3 && (c.Documentation == nil || c.ConfigType == 0) {
				t.Fatalf("describe v%d: no documentation or type for %s", v, c.Name)
			}
		}
		if bc := resp.Resources[1].Configs; len(bc) != 1 || *bc[0].Value != "1" {
			t.Fatalf("describe broker v%d: %+v", v, bc)
		}
	}
	for i, v := range bothEnds(20) {
		name := "admin-" + string(rune('a'+i))
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.SetVersion(v)
		req.TopicNames = []string{name}
		req.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr(name)}}
		resp := rc.request(req).(*kmsg.DeleteTopicsResponse)
		if resp.Topics[0].ErrorCode != 0 || b.topics.get(name) != nil {
			t.Fatalf("delete v%d: %+v", v, resp.Topics[0])
		}
	}
}

func TestClusterProducerIDAndCoordinatorVersions(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	for _, v := range bothEnds(60) {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(v)
		req.EndpointType = 1
		resp := rc.request(req).(*kmsg.DescribeClusterResponse)
		if resp.ErrorCode != 0 || resp.ClusterID != b.ClusterID() || len(resp.Brokers) != 1 || resp.ControllerID != 1 {
			t.Fatalf("describe cluster v%d: %+v", v, resp)
		}
	}
	seen := map[int64]bool{}
	for _, v := range bothEnds(22) {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.SetVersion(v)
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp := rc.request(req).(*kmsg.InitProducerIDResponse)
		if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 || seen[resp.ProducerID] {
			t.Fatalf("init producer id v%d: %+v", v, resp)
		}
		seen[resp.ProducerID] = true
	}
	for _, v := range bothEnds(10) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(v)
		req.CoordinatorKey, req.CoordinatorKeys = "group-a", []string{"group-a", "group-b"}
		resp := rc.request(req).(*kmsg.FindCoordinatorResponse)
		if v >= 4 {
			if len(resp.Coordinators) != 2 || resp.Coordinators[1].NodeID != 1 || resp.Coordinators[1].ErrorCode != 0 {
				t.Fatalf("find coordinator v%d: %+v", v, resp.Coordinators)
			}
		} else if resp.ErrorCode != 0 || resp.NodeID != 1 || resp.Port == 0 {
			t.Fatalf("find coordinator v%d: %+v", v, resp)
		}
	}
}

func TestAuthorizedOperationsWhenAsked(t *testing.T) {
	_, rc := startWithTopic(t, "ops")
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(10)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("ops")}}
	resp := rc.request(req).(*kmsg.MetadataResponse)
	if resp.Topics[0].AuthorizedOperations != unknownAuthorizedOperations {
		t.Fatalf("not asked: %d", resp.Topics[0].AuthorizedOperations)
	}
	req.IncludeTopicAuthorizedOperations, req.IncludeClusterAuthorizedOperations = true, true
	resp = rc.request(req).(*kmsg.MetadataResponse)
	// READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS
	if got := resp.Topics[0].AuthorizedOperations; got != 1<<3|1<<4|1<<5|1<<6|1<<7|1<<8|1<<10|1<<11 {
		t.Fatalf("topic operations %b", got)
	}
	if resp.AuthorizedOperations&(1<<12) == 0 { // IDEMPOTENT_WRITE on the cluster
		t.Fatalf("cluster operations %b", resp.AuthorizedOperations)
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.SetVersion(2)
	dc.EndpointType, dc.IncludeClusterAuthorizedOperations = 1, true
	if got := rc.request(dc).(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations; got != resp.AuthorizedOperations {
		t.Fatalf("describe cluster operations %b, metadata said %b", got, resp.AuthorizedOperations)
	}
	// A group's: READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS,
	// for a group described without an error only: v5's Dead group, not
	// v6's GROUP_ID_NOT_FOUND nor NOT_COORDINATOR before the group
	// coordinator's topic exists.
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"nobody"}, true
	dg.SetVersion(5)
	if g := rc.request(dg).(*kmsg.DescribeGroupsResponse).Groups[0]; g.ErrorCode != errNotCoordinator || g.AuthorizedOperations != unknownAuthorizedOperations {
		t.Errorf("DescribeGroups before FindCoordinator: %+v", g)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "nobody"
	rc.request(fc)
	for v, want := range map[int16]int32{5: 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11, 6: unknownAuthorizedOperations} {
		dg.SetVersion(v)
		if g := rc.request(dg).(*kmsg.DescribeGroupsResponse).Groups[0]; g.AuthorizedOperations != want {
			t.Errorf("DescribeGroups v%d: %+v, want group operations %b", v, g, want)
		}
	}
}

func TestEmptyPartitionHasLeaderEpochZero(t *testing.T) {
	b, rc := startWithTopic(t, "empty")
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(10)
	req.ReplicaID = -1
	req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "empty", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -1, CurrentLeaderEpoch: -1}}}}
	if lp := rc.request(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; lp.Offset != 0 || lp.LeaderEpoch != 0 {
		t.Fatalf("latest of an empty partition: %+v", lp)
	}
	got, err := os.ReadFile(filepath.Join(b.cfg.LogDirs[0], "empty-0", "leader-epoch-checkpoint"))
	if err != nil || string(got) != "0\n1\n0 0\n" {
		t.Fatalf("leader-epoch-checkpoint %q, %v", got, err)
	}
}

func TestApiVersionsChecksClientSoftware(t *testing.T) {
	b := startBroker(t, nil)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "bad name!", "1.0"
	if resp := dialRaw(t, b).request(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("invalid software name: error %d", resp.ErrorCode)
	}
}

// TestApiVersionsV3OmitsFeaturesSupportedFromZero: as Kafka's
// ApiVersionsResponse (KAFKA-17492), an ApiVersions v3 answer leaves out
// the supported features whose range starts at level 0, which clients
// before 3.9 fail to read; from v4 every supported feature is listed.
// The finalized features are the same at both versions.
func TestApiVersionsV3OmitsFeaturesSupportedFromZero(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	answer := func(v int16) *kmsg.ApiVersionsResponse {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw-test", "1.0"
		return rc.request(req).(*kmsg.ApiVersionsResponse)
	}
	v3, v4 := answer(3), answer(4)
	for _, f := range v3.SupportedFeatures {
		if f.MinVersion == 0 {
			t.Errorf("v3 lists %s supported from level 0", f.Name)
		}
	}
	if len(v3.SupportedFeatures) != 1 || v3.SupportedFeatures[0].Name != "metadata.version" {
		t.Errorf("v3 supported features %+v, want metadata.version alone", v3.SupportedFeatures)
	}
	if len(v4.SupportedFeatures) != 7 {
		t.Errorf("v4 supported features %+v, want all 7", v4.SupportedFeatures)
	}
	if !reflect.DeepEqual(v3.FinalizedFeatures, v4.FinalizedFeatures) || len(v3.FinalizedFeatures) == 0 {
		t.Errorf("finalized features differ: v3 %+v, v4 %+v", v3.FinalizedFeatures, v4.FinalizedFeatures)
	}
}

// AlterConfigs and IncrementalAlterConfigs at their lowest and highest
// versions (DeleteRecords and DescribeLogDirs are called at both ends in
// lifecycle_test.go).
func TestAlterConfigsVersions(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	// The legacy API replaces a whole set of configs; with eligible leader
	// replicas off it may drop the cluster's min.insync.replicas.
	if r := updateFeature(t, rc, "eligible.leader.replicas.version", 0, 2); r.ErrorCode != 0 {
		t.Fatalf("ELR off: %+v", r)
	}
	legacy := func(v int16, validateOnly bool, rs ...kmsg.AlterConfigsRequestResource) []kmsg.AlterConfigsResponseResource {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.SetVersion(v)
		req.ValidateOnly, req.Resources = validateOnly, rs
		return rc.request(req).(*kmsg.AlterConfigsResponse).Resources
	}
	res := func(typ kmsg.ConfigResourceType, name string, kv ...string) kmsg.AlterConfigsRequestResource {
		r := kmsg.AlterConfigsRequestResource{ResourceType: typ, ResourceName: name}
		for i := 0; i < len(kv); i += 2 {
			r.Configs = append(r.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: kv[i], Value: kmsg.StringPtr(kv[i+1])})
		}
		return r
	}
	check := func(what string, code int16, msg *string, wantCode int16, wantMsg string) {
		t.Helper()
		if code != wantCode || wantMsg != "" && (msg == nil || !strings.Contains(*msg, wantMsg)) {
			t.Fatalf("%s: error %d %v, want %d %q", what, code, msg, wantCode, wantMsg)
		}
	}
	topicT, brokerT := kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker
	for _, v := range bothEnds(33) {
		topic := fmt.Sprintf("legacy-%d", v)
		createTopicRaw(t, rc, topic, 1)
		r := legacy(v, false, res(topicT, topic, "retention.ms", "1000", "cleanup.policy", "compact"))
		check("set", r[0].ErrorCode, r[0].ErrorMessage, 0, "")
		r = legacy(v, false, res(topicT, topic, "retention.ms", "2000"))
		if got := b.meta.topicConfigs(topic); r[0].ErrorCode != 0 || len(got) != 1 || got["retention.ms"] != "2000" {
			t.Fatalf("v%d replace: %d %v", v, r[0].ErrorCode, got)
		}
		r = legacy(v, true, res(topicT, topic, "segment.ms", "5"))
		if got := b.meta.topicConfigs(topic); r[0].ErrorCode != 0 || got["segment.ms"] != "" {
			t.Fatalf("v%d validate only: %d %v", v, r[0].ErrorCode, got)
		}
		r = legacy(v, false, res(topicT, topic, "segment.bytes", "lots"))
		check("bad value", r[0].ErrorCode, r[0].ErrorMessage, errInvalidConfig, "Invalid value lots for configuration segment.bytes: Not a number of type INT")
		r = legacy(v, false, res(topicT, "missing", "retention.ms", "1"))
		check("missing topic", r[0].ErrorCode, r[0].ErrorMessage, errUnknownTopicOrPartition, "")
		null := res(topicT, topic)
		null.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms"}}
		r = legacy(v, false, null)
		check("null value", r[0].ErrorCode, r[0].ErrorMessage, errInvalidRequest, "Null value not supported for : retention.ms")
		r = legacy(v, false, res(topicT, topic, "retention.ms", "1"), res(topicT, topic, "retention.ms", "2"))
		check("duplicate 1", r[0].ErrorCode, r[0].ErrorMessage, errInvalidRequest, "Each resource must appear at most once.")
		check("duplicate 2", r[1].ErrorCode, r[1].ErrorMessage, errInvalidRequest, "Each resource must appear at most once.")
		r = legacy(v, false, res(brokerT, "1", "log.retention.ms", "7000"),
			res(brokerT, "", "log.cleaner.threads", "2", "num.recovery.threads.per.data.dir", "3"))
		check("broker", r[0].ErrorCode, r[0].ErrorMessage, 0, "")
		check("cluster", r[1].ErrorCode, r[1].ErrorMessage, 0, "")
		if got := b.topics.get(topic).partitions()[0].log.Config().RetentionMs; got != 2000 {
			t.Fatalf("v%d: the topic override must win over the broker: %d", v, got)
		}
		if got := b.liveConfig(); got.CleanerThreads != 2 || got.values["log.retention.ms"] != "7000" || got.RecoveryThreads != 3 {
			t.Fatalf("v%d: live config threads %d recovery threads %d retention %s", v, got.CleanerThreads, got.RecoveryThreads, got.values["log.retention.ms"])
		}
		if got := b.dirs.All()[0].RecoveryThreads(); got != 3 {
			t.Fatalf("v%d: the log dir closes with %d threads, want 3", v, got)
		}
		r = legacy(v, false, res(brokerT, "", "log.cleaner.threads", "2", "num.recovery.threads.per.data.dir", "0"))
		check("no recovery threads", r[0].ErrorCode, r[0].ErrorMessage, errInvalidRequest, "Invalid value 0 for configuration num.recovery.threads.per.data.dir")
		// Thread counts move by at most half or double at a time.
		threads := func(cleaner, recovery string) []kmsg.AlterConfigsResponseResource {
			return legacy(v, false, res(brokerT, "", "log.cleaner.threads", cleaner, "num.recovery.threads.per.data.dir", recovery))
		}
		const refused = "Invalid dynamic configuration: Dynamic thread count update validation failed for "
		r = threads("2", "7")
		check("recovery threads above double", r[0].ErrorCode, r[0].ErrorMessage, errInvalidRequest, refused+"num.recovery.threads.per.data.dir=7, value should not be greater than double the current value 3")
		r = threads("2", "6")
		check("recovery threads doubled", r[0].ErrorCode, r[0].ErrorMessage, 0, "")
		r = threads("2", "2")
		check("recovery threads below half", r[0].ErrorCode, r[0].ErrorMessage, errInvalidRequest, refused+"num.recovery.threads.per.data.dir=2, value should be at least half the current value 6")
		r = threads("0", "3")
		check("no cleaner threads", r[0].ErrorCode, r[0].ErrorMessage, errInvalidRequest, refused+"log.cleaner.threads=0, value should be at least 1")
		r = threads("5", "3")
		check("cleaner threads above double", r[0].ErrorCode, r[0].ErrorMessage, errInvalidRequest, refused+"log.cleaner.threads=5, value should not be greater than double the current value 2")
		if got := b.liveConfig(); got.CleanerThreads != 2 || got.RecoveryThreads != 6 {
			t.Fatalf("v%d: refused changes applied: cleaner threads %d, recovery threads %d", v, got.CleanerThreads, got.RecoveryThreads)
		}
		r = threads("2", "3")
		check("recovery threads halved", r[0].ErrorCode, r[0].ErrorMessage, 0, "")
		r = legacy(v, false, res(brokerT, "1", "num.partitions", "2"), res(brokerT, "9", "log.retention.ms", "1"))
		check("static", r[0].ErrorCode, r[0].ErrorMessage, errInvalidRequest, "Cannot update these configs dynamically: Set(num.partitions)")
		check("other node", r[1].ErrorCode, r[1].ErrorMessage, errInvalidRequest, "Unexpected broker id, expected 1, but received 9")
		r = legacy(v, false, res(kmsg.ConfigResourceTypeBrokerLogger, "1", "kafka", "DEBUG"))
		check("broker logger", r[0].ErrorCode, r[0].ErrorMessage, errInvalidRequest, "Unknown resource type 8")
	}
	incremental := func(v int16, rs ...kmsg.IncrementalAlterConfigsRequestResource) []kmsg.IncrementalAlterConfigsResponseResource {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.SetVersion(v)
		req.Resources = rs
		return rc.request(req).(*kmsg.IncrementalAlterConfigsResponse).Resources
	}
	op := func(typ kmsg.ConfigResourceType, name string, o kmsg.IncrementalAlterConfigOp, key, value string) kmsg.IncrementalAlterConfigsRequestResource {
		return kmsg.IncrementalAlterConfigsRequestResource{ResourceType: typ, ResourceName: name,
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: key, Op: o, Value: kmsg.StringPtr(value)}}}
	}
	for _, v := range bothEnds(44) {
		topic := fmt.Sprintf("incremental-%d", v)
		createTopicRaw(t, rc, topic, 1)
		for _, step := range []struct {
			o    kmsg.IncrementalAlterConfigOp
			val  string
			want string
		}{{kmsg.IncrementalAlterConfigOpAppend, "compact", "delete,compact"}, {kmsg.IncrementalAlterConfigOpSubtract, "delete", "compact"}, {kmsg.IncrementalAlterConfigOpSet, "delete", "delete"}} {
			r := incremental(v, op(topicT, topic, step.o, "cleanup.policy", step.val))
			if got := b.meta.topicConfigs(topic)["cleanup.policy"]; r[0].ErrorCode != 0 || got != step.want {
				t.Fatalf("v%d %v %s: %d %q", v, step.o, step.val, r[0].ErrorCode, got)
			}
		}
		r := incremental(v, op(topicT, topic, kmsg.IncrementalAlterConfigOpDelete, "cleanup.policy", ""))
		if r[0].ErrorCode != 0 || b.meta.topicConfigs(topic) != nil {
			t.Fatalf("v%d delete: %d %v", v, r[0].ErrorCode, b.meta.topicConfigs(topic))
		}
		r = incremental(v, op(topicT, topic, 7, "cleanup.policy", "x"))
		check("unknown op", r[0].ErrorCode, r[0].ErrorMessage, errInvalidRequest, "Unknown operations type 7")
		r = incremental(v, op(brokerT, "", kmsg.IncrementalAlterConfigOpAppend, "log.cleanup.policy", "compact"),
			op(brokerT, "1", kmsg.IncrementalAlterConfigOpAppend, "log.retention.ms", "5"))
		check("broker append", r[0].ErrorCode, r[0].ErrorMessage, 0, "")
		check("broker append to a LONG", r[1].ErrorCode, r[1].ErrorMessage, errInvalidConfig, "Config value append is not allowed for config key: log.retention.ms")
		if got := b.topics.get(topic).settings.Load(); !got.compact || !got.log.Delete {
			t.Fatalf("v%d: the cluster-wide cleanup policy did not reach the topic: %+v", v, got.log)
		}
		incremental(v, op(brokerT, "", kmsg.IncrementalAlterConfigOpDelete, "log.cleanup.policy", ""))
	}
	// Every topic config, set in one request at each end of both APIs, is
	// described at each end of DescribeConfigs; every bad value is refused.
	for i, v := range append(bothEnds(33), bothEnds(44)...) {
		topic := fmt.Sprintf("all-configs-%d", i)
		createTopicRaw(t, rc, topic, 1)
		var legacyRes kmsg.AlterConfigsRequestResource
		incRes := kmsg.IncrementalAlterConfigsRequestResource{ResourceType: topicT, ResourceName: topic}
		for name, c := range topicConfigCases {
			legacyRes.Configs = append(legacyRes.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: name, Value: kmsg.StringPtr(c[0])})
			incRes.Configs = append(incRes.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Value: kmsg.StringPtr(c[0])})
		}
		legacyRes.ResourceType, legacyRes.ResourceName = topicT, topic
		var code int16
		if i < 2 {
			code = legacy(v, false, legacyRes)[0].ErrorCode
		} else {
			code = incremental(v, incRes)[0].ErrorCode
		}
		if code != 0 {
			t.Fatalf("all configs, request %d v%d: error %d", i, v, code)
		}
		for _, dv := range bothEnds(32) {
			req := kmsg.NewPtrDescribeConfigsRequest()
			req.SetVersion(dv)
			req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: topicT, ResourceName: topic}}
			cfgs := rc.request(req).(*kmsg.DescribeConfigsResponse).Resources[0].Configs
			if len(cfgs) != len(topicConfigCases) {
				t.Fatalf("describe v%d: %d configs", dv, len(cfgs))
			}
			for _, c := range cfgs {
				if *c.Value != topicConfigCases[c.Name][0] || c.Source != kmsg.ConfigSourceDynamicTopicConfig || c.ReadOnly || c.IsSensitive {
					t.Fatalf("describe v%d: %+v", dv, c)
				}
			}
		}
		for name, c := range topicConfigCases {
			r := incremental(bothEnds(44)[i%2], op(topicT, topic, kmsg.IncrementalAlterConfigOpSet, name, c[1]))
			if r[0].ErrorCode != errInvalidConfig {
				t.Fatalf("%s=%s: error %d", name, c[1], r[0].ErrorCode)
			}
		}
	}
	// Described broker configs say which ones are read-only.
	for _, v := range bothEnds(32) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.SetVersion(v)
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: brokerT, ResourceName: "1",
			ConfigNames: []string{"log.retention.ms", "num.partitions", "log.cleaner.threads"}}}
		cfgs := rc.request(req).(*kmsg.DescribeConfigsResponse).Resources[0].Configs
		got := map[string]string{}
		for _, c := range cfgs {
			got[c.Name] = fmt.Sprintf("%v/%v/%v", c.ReadOnly, c.Source, *c.Value)
		}
		want := map[string]string{"log.retention.ms": "false/DYNAMIC_BROKER_CONFIG/7000", "num.partitions": "true/DEFAULT_CONFIG/1",
			"log.cleaner.threads": "false/DYNAMIC_DEFAULT_BROKER_CONFIG/2"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("v%d: %v, want %v", v, got, want)
		}
	}
}

// TestOffsetForLeaderEpochVersions asks where epoch 0 ends on a single
// node (the log end: it is the current epoch), where an epoch before any
// ends (-1, -1), and checks the current-epoch fencing.
func TestOffsetForLeaderEpochVersions(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	id := createTopicRaw(t, rc, "ofle", 1)
	if p := produceRaw(t, rc, 9, "ofle", id, 0, testBatch(7, "v", -1, -1, -1, 0)); p.ErrorCode != 0 {
		t.Fatalf("produce: error %d", p.ErrorCode)
	}
	for _, v := range bothEnds(23) {
		for _, q := range []struct {
			current, epoch     int32
			code               int16
			wantEpoch, wantEnd int32
		}{
			{-1, 0, 0, 0, 7},
			{0, 0, 0, 0, 7},
			{1, 0, errUnknownLeaderEpoch, -1, -1},
		} {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.SetVersion(v)
			req.ReplicaID = -1
			req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "ofle", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{
				{Partition: 0, CurrentLeaderEpoch: q.current, LeaderEpoch: q.epoch}, {Partition: 5, CurrentLeaderEpoch: -1, LeaderEpoch: 0}}}}
			resp := rc.request(req).(*kmsg.OffsetForLeaderEpochResponse)
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != q.code || p.LeaderEpoch != q.wantEpoch || p.EndOffset != int64(q.wantEnd) {
				t.Fatalf("v%d %+v: got %+v", v, q, p)
			}
			if resp.Topics[0].Partitions[1].ErrorCode != errUnknownTopicOrPartition {
				t.Fatalf("v%d: unknown partition answered %+v", v, resp.Topics[0].Partitions[1])
			}
		}
	}
}

// TestApiVersionsV5ChecksTheNodeMeant: from v5 a client names the cluster
// and node it means to reach (KIP-1242). Naming only one of them is
// INVALID_REQUEST; on a client listener another cluster or node is
// REBOOTSTRAP_REQUIRED, with no keys; this node is answered in full. The
// CONTROLLER listener checks only the pairing, as Kafka's does.
func TestApiVersionsV5ChecksTheNodeMeant(t *testing.T) {
	b := startBrokerWith(t, singleNodeProps(t.TempDir()))
	ask := func(addr, clusterID string, nodeID int32) *kmsg.ApiVersionsResponse {
		t.Helper()
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(5)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw-test", "1.0"
		if clusterID != "" {
			req.ClusterID = kmsg.StringPtr(clusterID)
		}
		req.NodeID = nodeID
		return dialAddr(t, addr).request(req).(*kmsg.ApiVersionsResponse)
	}
	id := b.ClusterID()
	for _, c := range []struct {
		addr      string
		clusterID string
		nodeID    int32
		want      int16
	}{
		{b.Addr(), "", -1, 0},
		{b.Addr(), id, 1, 0},
		{b.Addr(), id, 2, errRebootstrapRequired},
		{b.Addr(), "another-cluster", 1, errRebootstrapRequired},
		{b.Addr(), "", 1, errInvalidRequest},
		{b.Addr(), id, -1, errInvalidRequest},
		{b.ControllerAddr(), "another-cluster", 7, 0},
		{b.ControllerAddr(), id, -1, errInvalidRequest},
	} {
		resp := ask(c.addr, c.clusterID, c.nodeID)
		if resp.ErrorCode != c.want || (c.want == 0) != (len(resp.ApiKeys) > 0) {
			t.Errorf("%s, cluster %q node %d: error %d with %d keys, want error %d", c.addr, c.clusterID, c.nodeID, resp.ErrorCode, len(resp.ApiKeys), c.want)
		}
	}
}
