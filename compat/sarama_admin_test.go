package compat

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// testAdmin drives ClusterAdmin: topics, partitions, configs,
// offsets, records, groups and the cluster.
func (s saramaEnv) testAdmin(t *testing.T) {
	addr := s.addr
	topic := "sarama-admin" + s.suffix
	ca, err := sarama.NewClusterAdmin([]string{addr}, s.config())
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	retention := "3600000"
	if err := ca.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &retention}}, false); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if err := ca.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); !isKError(err, sarama.ErrTopicAlreadyExists) {
		t.Errorf("creating it again: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	if err := ca.CreatePartitions(topic, 3, nil, false); err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	meta, err := ca.DescribeTopics([]string{topic})
	if err != nil || len(meta) != 1 || meta[0].Err != sarama.ErrNoError || len(meta[0].Partitions) != 3 {
		t.Fatalf("describe topics: %+v %v, want 3 partitions", meta, err)
	}
	topics, err := ca.ListTopics()
	if err != nil || topics[topic].NumPartitions != 3 || *topics[topic].ConfigEntries["retention.ms"] != retention {
		t.Fatalf("list topics: %+v %v", topics[topic], err)
	}

	maxBytes := "2000000"
	if err := ca.AlterConfig(sarama.TopicResource, topic, map[string]*string{"max.message.bytes": &maxBytes}, false); err != nil {
		t.Fatalf("alter config: %v", err)
	}
	segment := "1048576"
	if err := ca.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"segment.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &segment}}, false); err != nil {
		t.Fatalf("incremental alter config: %v", err)
	}
	entries, err := ca.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]string{}
	for _, e := range entries {
		values[e.Name] = e.Value
	}
	// AlterConfig replaces the topic's whole set: retention.ms is back to its default.
	if values["max.message.bytes"] != maxBytes || values["segment.bytes"] != segment || values["retention.ms"] != "604800000" {
		t.Fatalf("configs max.message.bytes=%s segment.bytes=%s retention.ms=%s", values["max.message.bytes"], values["segment.bytes"], values["retention.ms"])
	}

	recs := makeRecords("adm", 20)
	saramaProduce(t, addr, topic, recs, s.config())
	if err := ca.DeleteRecords(topic, map[int32]int64{0: 1}); err != nil {
		t.Fatalf("delete records: %v", err)
	}
	offs, err := ca.ListOffsets(map[string]map[int32]int64{topic: {0: sarama.OffsetOldest, 1: sarama.OffsetNewest, 2: sarama.OffsetNewest}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ends := endOffsets(t, newAdmin(t, addr), topic)
	if r := offs[topic][0]; r == nil || !saramaOK(r.Err) || r.Offset != 1 {
		t.Errorf("oldest offset of partition 0 after deleting records: %+v, want 1", r)
	}
	if r := offs[topic][1]; r == nil || !saramaOK(r.Err) || r.Offset != ends[1] {
		t.Errorf("newest offset of partition 1: %+v, want %d", r, ends[1])
	}
	s.checkOffsetsForTimes(t, ca)

	// The group testCommit committed for: listed, described as Empty,
	// one offset deleted, then the group.
	group, gtopic := "sarama-commit"+s.suffix, "sarama-c"+s.suffix
	groups, err := ca.ListConsumerGroups()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := groups[group]; !ok {
		t.Errorf("ListConsumerGroups %v lacks %s", groups, group)
	}
	desc, err := ca.DescribeConsumerGroups([]string{group})
	if err != nil || len(desc) != 1 || desc[0].Err != sarama.ErrNoError || desc[0].State != "Empty" || len(desc[0].Members) != 0 {
		t.Fatalf("describe %s: %+v %v", group, desc, err)
	}
	if err := ca.DeleteConsumerGroupOffset(group, gtopic, 0); err != nil {
		t.Fatalf("delete group offset: %v", err)
	}
	offsets, err := ca.ListConsumerGroupOffsets(group, map[string][]int32{gtopic: {0, 1}})
	if err != nil || offsets.GetBlock(gtopic, 0).Offset != -1 || offsets.GetBlock(gtopic, 1).Offset != 11 {
		t.Fatalf("offsets after deleting partition 0's: %+v %v", offsets, err)
	}
	if err := ca.DeleteConsumerGroup(group); err != nil {
		t.Fatalf("delete group: %v", err)
	}
	groups, err = ca.ListConsumerGroups()
	if _, still := groups[group]; err != nil || still {
		t.Errorf("ListConsumerGroups after the delete: %v %v", groups, err)
	}

	brokers, controller, err := ca.DescribeCluster()
	if err != nil || len(brokers) != 1 || brokers[0].Addr() != addr || controller != brokers[0].ID() {
		t.Fatalf("describe cluster: %v controller %d, %v", brokers, controller, err)
	}
	if err := ca.DeleteTopic(topic); err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	waitFor(t, "the topic gone", 10*time.Second, func() bool {
		topics, err := ca.ListTopics()
		_, still := topics[topic]
		return err == nil && !still
	})
}

// checkOffsetsForTimes looks offsets up by timestamp, through ClusterAdmin
// and through the Client, in a topic of records stamped a second apart.
func (s saramaEnv) checkOffsetsForTimes(t *testing.T, ca sarama.ClusterAdmin) {
	topic := "sarama-time" + s.suffix
	createTopic(t, newAdmin(t, s.addr), topic)
	cfg := s.config()
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	prod, err := sarama.NewSyncProducer([]string{s.addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const base = 1700000000000
	for i := 0; i < 5; i++ {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 1,
			Value: sarama.StringEncoder("t"), Timestamp: time.UnixMilli(base + int64(i)*1000)}); err != nil {
			t.Fatal(err)
		}
	}
	offs, err := ca.ListOffsets(map[string]map[int32]int64{topic: {1: base + 2500, 2: base}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := offs[topic][1]; r == nil || !saramaOK(r.Err) || r.Offset != 3 || r.Timestamp != base+3000 {
		t.Errorf("offset for time %d: %+v, want 3 at %d", base+2500, r, base+3000)
	}
	if r := offs[topic][2]; r == nil || !saramaOK(r.Err) || r.Offset != -1 {
		t.Errorf("offset for a time in an empty partition: %+v, want -1", r)
	}
	client, err := sarama.NewClient([]string{s.addr}, s.config())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if off, err := client.GetOffset(topic, 1, base+1000); err != nil || off != 1 {
		t.Errorf("client offset for time %d: %d %v, want 1", base+1000, off, err)
	}
	if off, err := client.GetOffset(topic, 1, base+9000); err != nil || off != -1 {
		t.Errorf("client offset for a time after every record: %d %v, want -1", off, err)
	}
}

// saramaOK reports whether a per-partition error is none (sarama puts
// ErrNoError, a non-nil KError, in some results).
func saramaOK(err error) bool { return err == nil || err == sarama.ErrNoError }
