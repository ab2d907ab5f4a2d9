package compat

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// testConfluentAdmin drives the AdminClient: topics, partitions, configs,
// records, offsets, groups and the cluster.
func testConfluentAdmin(t *testing.T, addr string) {
	topic := "confluent-admin"
	a, err := kafka.NewAdminClient(confluentConfig(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	res, err := a.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: 2, ReplicationFactor: 1,
		Config: map[string]string{"retention.ms": "3600000"}}})
	if err != nil || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("create topics: %v %v", res, err)
	}
	res, err = a.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}})
	if err != nil || res[0].Error.Code() != kafka.ErrTopicAlreadyExists {
		t.Errorf("creating it again: %v %v, want TOPIC_ALREADY_EXISTS", res, err)
	}
	res, err = a.CreatePartitions(ctx, []kafka.PartitionsSpecification{{Topic: topic, IncreaseTo: 3}})
	if err != nil || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("create partitions: %v %v", res, err)
	}
	topics, err := a.DescribeTopics(ctx, kafka.NewTopicCollectionOfTopicNames([]string{topic}))
	if err != nil || len(topics.TopicDescriptions) != 1 || topics.TopicDescriptions[0].Error.Code() != kafka.ErrNoError ||
		len(topics.TopicDescriptions[0].Partitions) != 3 {
		t.Fatalf("describe topics: %+v %v", topics, err)
	}

	resource := kafka.ConfigResource{Type: kafka.ResourceTopic, Name: topic}
	alter := resource
	alter.Config = kafka.StringMapToConfigEntries(map[string]string{"max.message.bytes": "2000000"}, kafka.AlterOperationSet)
	if r, err := a.AlterConfigs(ctx, []kafka.ConfigResource{alter}); err != nil || r[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("alter configs: %v %v", r, err)
	}
	inc := resource
	inc.Config = []kafka.ConfigEntry{{Name: "segment.bytes", Value: "1048576", IncrementalOperation: kafka.AlterConfigOpTypeSet}}
	if r, err := a.IncrementalAlterConfigs(ctx, []kafka.ConfigResource{inc}); err != nil || r[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("incremental alter configs: %v %v", r, err)
	}
	described, err := a.DescribeConfigs(ctx, []kafka.ConfigResource{resource})
	if err != nil || described[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("describe configs: %v %v", described, err)
	}
	cfg := described[0].Config
	// AlterConfigs replaced the whole set, so retention.ms is the default again.
	if cfg["max.message.bytes"].Value != "2000000" || cfg["segment.bytes"].Value != "1048576" || cfg["retention.ms"].Value != "604800000" {
		t.Fatalf("configs max.message.bytes=%v segment.bytes=%v retention.ms=%v", cfg["max.message.bytes"], cfg["segment.bytes"], cfg["retention.ms"])
	}

	confluentProduce(t, addr, topic, makeRecords("adm", 30))
	ends := endOffsets(t, newAdmin(t, addr), topic)
	del, err := a.DeleteRecords(ctx, []kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: 1}})
	if err != nil || del.DeleteRecordsResults[0].TopicPartition.Error != nil || del.DeleteRecordsResults[0].DeletedRecords.LowWatermark != 1 {
		t.Fatalf("delete records: %+v %v", del, err)
	}
	specs := map[kafka.TopicPartition]kafka.OffsetSpec{}
	for part := int32(0); part < 3; part++ {
		specs[kafka.TopicPartition{Topic: &topic, Partition: part}] = kafka.LatestOffsetSpec
	}
	specs[kafka.TopicPartition{Topic: &topic, Partition: 0}] = kafka.EarliestOffsetSpec
	listed, err := a.ListOffsets(ctx, specs)
	if err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	for tp, info := range listed.ResultInfos {
		want := ends[tp.Partition]
		if tp.Partition == 0 {
			want = 1
		}
		if info.Error.Code() != kafka.ErrNoError || int64(info.Offset) != want {
			t.Errorf("list offsets partition %d: %+v, want %d", tp.Partition, info, want)
		}
	}

	confluentOffsetsForTimes(t, ctx, addr, a)

	// The group testConfluentGroup used, now empty after its members closed.
	const group = "confluent-group"
	groups, err := a.ListConsumerGroups(ctx)
	if err != nil || len(groups.Errors) > 0 {
		t.Fatalf("list groups: %v %v", err, groups.Errors)
	}
	var listing *kafka.ConsumerGroupListing
	for i := range groups.Valid {
		if groups.Valid[i].GroupID == group {
			listing = &groups.Valid[i]
		}
	}
	if listing == nil || listing.IsSimpleConsumerGroup || listing.State != kafka.ConsumerGroupStateEmpty {
		t.Fatalf("list groups: %s listed as %+v, want an Empty consumer group", group, listing)
	}
	dg, err := a.DescribeConsumerGroups(ctx, []string{group})
	if err != nil || len(dg.ConsumerGroupDescriptions) != 1 || dg.ConsumerGroupDescriptions[0].Error.Code() != kafka.ErrNoError ||
		dg.ConsumerGroupDescriptions[0].State != kafka.ConsumerGroupStateEmpty {
		t.Fatalf("describe groups: %+v %v", dg, err)
	}
	gtopic := "confluent-g"
	offs, err := a.ListConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: group,
		Partitions: []kafka.TopicPartition{{Topic: &gtopic, Partition: 0}, {Topic: &gtopic, Partition: 3}}}})
	if err != nil || len(offs.ConsumerGroupsTopicPartitions) != 1 {
		t.Fatalf("list group offsets: %+v %v", offs, err)
	}
	for _, tp := range offs.ConsumerGroupsTopicPartitions[0].Partitions {
		if tp.Error != nil || tp.Offset != 50 {
			t.Errorf("group offset of partition %d: %v, want 50", tp.Partition, tp)
		}
	}
	if r, err := a.DeleteConsumerGroups(ctx, []string{group}); err != nil || r.ConsumerGroupResults[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("delete groups: %+v %v", r, err)
	}

	cluster, err := a.DescribeCluster(ctx)
	if err != nil || len(cluster.Nodes) != 1 || cluster.Controller == nil || cluster.ClusterID == nil ||
		fmt.Sprintf("%s:%d", cluster.Nodes[0].Host, cluster.Nodes[0].Port) != addr {
		t.Fatalf("describe cluster: %+v %v", cluster, err)
	}
	res, err = a.DeleteTopics(ctx, []string{topic})
	if err != nil || res[0].Error.Code() != kafka.ErrNoError {
		t.Fatalf("delete topics: %v %v", res, err)
	}
	waitFor(t, "the topic gone", 10*time.Second, func() bool {
		md, err := a.GetMetadata(nil, true, 5000)
		if err != nil {
			return false
		}
		_, still := md.Topics[topic]
		return !still
	})
}

// confluentOffsetsForTimes looks offsets up by timestamp with the
// consumer's OffsetsForTimes and the AdminClient's ListOffsets (a time,
// and the record with the largest timestamp).
func confluentOffsetsForTimes(t *testing.T, ctx context.Context, addr string, a *kafka.AdminClient) {
	topic := "confluent-time"
	produceTimed(t, addr, topic, 5)
	c, err := kafka.NewConsumer(confluentConfig(t, addr, "group.id=confluent-times"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.OffsetsForTimes([]kafka.TopicPartition{{Topic: &topic, Partition: 1, Offset: kafka.Offset(timedBase + 2500)},
		{Topic: &topic, Partition: 0, Offset: kafka.Offset(timedBase)}}, 10000)
	if err != nil || len(got) != 2 {
		t.Fatalf("offsets for times: %v %v", got, err)
	}
	for _, tp := range got {
		want := kafka.Offset(3)
		if tp.Partition == 0 {
			want = kafka.OffsetEnd // an empty partition: no record at or after the time
		}
		if tp.Error != nil || tp.Offset != want {
			t.Errorf("offset for time in partition %d: %v, want %v", tp.Partition, tp, want)
		}
	}
	listed, err := a.ListOffsets(ctx, map[kafka.TopicPartition]kafka.OffsetSpec{
		{Topic: &topic, Partition: 1}: kafka.MaxTimestampOffsetSpec})
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range listed.ResultInfos {
		if info.Error.Code() != kafka.ErrNoError || info.Offset != 4 || info.Timestamp != timedBase+4000 {
			t.Errorf("max timestamp offset: %+v, want 4 at %d", info, timedBase+4000)
		}
	}
}
