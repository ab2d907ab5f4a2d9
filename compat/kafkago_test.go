package compat

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/segmentio/kafka-go"
)

// kafkagoClientName is the matrix row of segmentio/kafka-go.
const kafkagoClientName = "kafka-go"

// TestKafkaGo runs segmentio/kafka-go through produce (Writer), consume
// (partition Readers), committed offsets and admin requests (Client),
// and every codec. kafka-go has no idempotent producer. Its consumer
// groups are TestKafkaGoReaderGroup, which records the group column.
//
// A kafka-go Transport answers Metadata from a cache refreshed every
// MetadataTTL (and after its own CreateTopics), and its Writer fails on a
// topic the cache does not know, so topics are created through kafka-go
// and the TTL is short enough for the admin checks to poll.
func TestKafkaGo(t *testing.T) {
	version := moduleVersion(t, "github.com/segmentio/kafka-go")
	p := harness.Start(t, t.TempDir())
	tr := &kafka.Transport{MetadataTTL: time.Second}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(p.Addr), Timeout: 10 * time.Second, Transport: tr}
	run := func(name string, fn func(t *testing.T)) { feature(t, kafkagoClientName, version, name, fn) }
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	want := makeRecords("kafkago", 200)
	run("produce", func(t *testing.T) {
		kafkagoCreateTopic(t, ctx, cl, "kafkago-p", groupPartitions)
		kafkagoProduce(t, ctx, cl, "kafkago-p", want, 0)
		checkStored(t, p.Addr, "kafkago-p", want, 0)
	})
	run("consume", func(t *testing.T) {
		sameRecords(t, "consumed", kafkagoConsumeAll(t, ctx, p.Addr, "kafkago-p"), want)
	})
	for _, c := range codecs {
		run(c.name, func(t *testing.T) {
			topic := "kafkago-" + c.name
			kafkagoCreateTopic(t, ctx, cl, topic, groupPartitions)
			codec := map[string]kafka.Compression{"gzip": kafka.Gzip, "snappy": kafka.Snappy, "lz4": kafka.Lz4, "zstd": kafka.Zstd}[c.name]
			recs := makeRecords(c.name, 300)
			kafkagoProduce(t, ctx, cl, topic, recs, codec)
			checkStored(t, p.Addr, topic, recs, c.id)
			sameRecords(t, "consumed", kafkagoConsumeAll(t, ctx, p.Addr, topic), recs)
		})
	}
	run("commit", func(t *testing.T) { testKafkagoCommit(t, ctx, cl) })
	run("admin", func(t *testing.T) { testKafkagoAdmin(t, ctx, cl) })
}

// kafkagoCreateTopic creates topic with kafka.Client.CreateTopics.
func kafkagoCreateTopic(t *testing.T, ctx context.Context, cl *kafka.Client, topic string, partitions int) {
	t.Helper()
	created, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic,
		NumPartitions: partitions, ReplicationFactor: 1}}})
	if err == nil {
		err = created.Errors[topic]
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// kafkagoProduce writes records with a Writer (hash balancer, acks=all),
// each with a header n=<key>.
func kafkagoProduce(t *testing.T, ctx context.Context, cl *kafka.Client, topic string, records []keyValue, codec kafka.Compression) {
	t.Helper()
	w := &kafka.Writer{Addr: cl.Addr, Transport: cl.Transport, Topic: topic, Balancer: &kafka.Hash{},
		RequiredAcks: kafka.RequireAll, BatchTimeout: 10 * time.Millisecond, Compression: codec}
	defer func() {
		if err := w.Close(); err != nil {
			t.Errorf("close writer: %v", err)
		}
	}()
	var msgs []kafka.Message
	for _, kv := range records {
		msgs = append(msgs, kafka.Message{Key: []byte(kv.key), Value: []byte(kv.value),
			Headers: []kafka.Header{{Key: "n", Value: []byte(kv.key)}}})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// kafkagoConsumeAll reads every partition of topic to its end with a
// partition Reader per partition, checking offsets and headers.
func kafkagoConsumeAll(t *testing.T, ctx context.Context, addr, topic string) []keyValue {
	t.Helper()
	return kafkagoReadAll(t, ctx, addr, addr, topic, nil)
}

// kafkagoReadAll is kafkagoConsumeAll with Readers that dial addr with d
// (nil: kafka-go's default), the end offsets asked of adminAddr.
func kafkagoReadAll(t *testing.T, ctx context.Context, addr, adminAddr, topic string, d *kafka.Dialer) []keyValue {
	t.Helper()
	var out []keyValue
	for part, end := range endOffsets(t, newAdmin(t, adminAddr), topic) {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: int(part),
			MaxWait: 100 * time.Millisecond, Dialer: d})
		for next := int64(0); next < end; next++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("partition %d: read offset %d of %d: %v", part, next, end, err)
			}
			if m.Offset != next {
				t.Fatalf("partition %d: offset %d, want %d", part, m.Offset, next)
			}
			if len(m.Headers) != 1 || m.Headers[0].Key != "n" || string(m.Headers[0].Value) != string(m.Key) {
				t.Fatalf("record %s: headers %v", m.Key, m.Headers)
			}
			out = append(out, keyValue{string(m.Key), string(m.Value)})
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// testKafkagoCommit commits offsets with Client.OffsetCommit outside a
// generation, reads them back with OffsetFetch, and
// checks a group Reader resumes there.
func testKafkagoCommit(t *testing.T, ctx context.Context, cl *kafka.Client) {
	const topic, group = "kafkago-c", "kafkago-commit"
	addr := cl.Addr.String()
	kafkagoCreateTopic(t, ctx, cl, topic, groupPartitions)
	produceSpread(t, addr, topic, "c", 25)
	var commits []kafka.OffsetCommit
	for part := 0; part < groupPartitions; part++ {
		commits = append(commits, kafka.OffsetCommit{Partition: part, Offset: int64(20 + part), Metadata: "m" + strconv.Itoa(part)})
	}
	resp, err := cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: group, GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{topic: commits}})
	if err != nil {
		t.Fatalf("offset commit: %v", err)
	}
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			t.Fatalf("offset commit of partition %d: %v", p.Partition, p.Error)
		}
	}
	fetched, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: {0, 1, 2, 3}}})
	if err != nil || fetched.Error != nil {
		t.Fatalf("offset fetch: %v %v", err, fetched.Error)
	}
	for _, p := range fetched.Topics[topic] {
		if p.Error != nil || p.CommittedOffset != int64(20+p.Partition) || p.Metadata != "m"+strconv.Itoa(p.Partition) {
			t.Fatalf("offset fetch partition %d: %+v", p.Partition, p)
		}
	}
	// A group reader resumes at the commits: 5+4+3+2 records are left.
	seen := newConsumed()
	r := startKafkagoReader(t, addr, "resume", group, topic, seen)
	var rest []string
	for part := 0; part < groupPartitions; part++ {
		for i := 20 + part; i < 25; i++ {
			rest = append(rest, "c-p"+strconv.Itoa(part)+"-"+strconv.Itoa(i))
		}
	}
	waitFor(t, "the reader consuming from the commits", 25*time.Second, func() bool { return seen.has(rest) })
	waitCommittedAtEnd(t, newAdmin(t, addr), group, topic)
	r.close(t)
	seen.checkExactlyOnce(t, rest)
}

// testKafkagoAdmin drives kafka.Client: CreateTopics, CreatePartitions,
// Metadata, configs, ListOffsets, groups and DeleteTopics.
func testKafkagoAdmin(t *testing.T, ctx context.Context, cl *kafka.Client) {
	const topic = "kafkago-admin"
	addr := cl.Addr.String()
	created, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic,
		NumPartitions: 2, ReplicationFactor: 1, ConfigEntries: []kafka.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: "3600000"}}}}})
	if err != nil || created.Errors[topic] != nil {
		t.Fatalf("create topics: %v %v", err, created.Errors)
	}
	again, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: 1, ReplicationFactor: 1}}})
	if err != nil || !errors.Is(again.Errors[topic], kafka.TopicAlreadyExists) {
		t.Errorf("creating it again: %v %v, want TOPIC_ALREADY_EXISTS", err, again.Errors)
	}
	parts, err := cl.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{Topics: []kafka.TopicPartitionsConfig{{Name: topic, Count: 3}}})
	if err != nil || parts.Errors[topic] != nil {
		t.Fatalf("create partitions: %v %v", err, parts.Errors)
	}
	var meta *kafka.MetadataResponse
	waitFor(t, "metadata with 3 partitions", 10*time.Second, func() bool {
		meta, err = cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		return err == nil && len(meta.Topics) == 1 && len(meta.Topics[0].Partitions) == 3
	})
	if len(meta.Brokers) != 1 || net.JoinHostPort(meta.Brokers[0].Host, strconv.Itoa(meta.Brokers[0].Port)) != addr || meta.ClusterID == "" {
		t.Fatalf("metadata: %+v", meta)
	}

	altered, err := cl.AlterConfigs(ctx, &kafka.AlterConfigsRequest{Resources: []kafka.AlterConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafka.AlterConfigRequestConfig{{Name: "max.message.bytes", Value: "2000000"}}}}})
	if err != nil {
		t.Fatalf("alter configs: %v", err)
	}
	for res, err := range altered.Errors {
		if err != nil {
			t.Fatalf("alter configs of %v: %v", res, err)
		}
	}
	inc, err := cl.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "segment.bytes", Value: "1048576", ConfigOperation: kafka.ConfigOperationSet}}}}})
	if err != nil || len(inc.Resources) != 1 || inc.Resources[0].Error != nil {
		t.Fatalf("incremental alter configs: %+v %v", inc, err)
	}
	described, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic}}})
	if err != nil || len(described.Resources) != 1 || described.Resources[0].Error != nil {
		t.Fatalf("describe configs: %+v %v", described, err)
	}
	values := map[string]string{}
	for _, e := range described.Resources[0].ConfigEntries {
		values[e.ConfigName] = e.ConfigValue
	}
	// AlterConfigs replaced the whole set, so retention.ms is the default again.
	if values["max.message.bytes"] != "2000000" || values["segment.bytes"] != "1048576" || values["retention.ms"] != "604800000" {
		t.Fatalf("configs max.message.bytes=%s segment.bytes=%s retention.ms=%s", values["max.message.bytes"], values["segment.bytes"], values["retention.ms"])
	}

	kafkagoProduce(t, ctx, cl, topic, makeRecords("adm", 30), 0)
	listed, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
		topic: {kafka.FirstOffsetOf(0), kafka.LastOffsetOf(0), kafka.FirstOffsetOf(1), kafka.LastOffsetOf(1), kafka.FirstOffsetOf(2), kafka.LastOffsetOf(2)}}})
	if err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	ends := endOffsets(t, newAdmin(t, addr), topic)
	var total int64
	for _, po := range listed.Topics[topic] {
		if po.Error != nil || po.FirstOffset != 0 || po.LastOffset != ends[int32(po.Partition)] {
			t.Errorf("list offsets partition %d: %+v, want 0 to %d", po.Partition, po, ends[int32(po.Partition)])
		}
		total += po.LastOffset
	}
	if total != 30 {
		t.Errorf("end offsets sum to %d, want 30", total)
	}

	kafkagoOffsetsForTimes(t, ctx, addr)

	// The group testKafkagoCommit used: listed, described, offsets fetched.
	groups, err := cl.ListGroups(ctx, &kafka.ListGroupsRequest{})
	if err != nil || groups.Error != nil {
		t.Fatalf("list groups: %v %v", err, groups)
	}
	var found bool
	for _, g := range groups.Groups {
		found = found || (g.GroupID == "kafkago-commit" && g.ProtocolType == "consumer" && g.Coordinator == 1)
	}
	if !found {
		t.Errorf("list groups %+v lacks kafkago-commit (consumer, coordinator 1)", groups.Groups)
	}
	dg, err := cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{"kafkago-commit"}})
	if err != nil || len(dg.Groups) != 1 || dg.Groups[0].Error != nil || dg.Groups[0].GroupState != "Empty" {
		t.Fatalf("describe groups: %+v %v", dg, err)
	}

	deleted, err := cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil || deleted.Errors[topic] != nil {
		t.Fatalf("delete topics: %v %v", err, deleted.Errors)
	}
	waitFor(t, "the topic gone", 10*time.Second, func() bool {
		meta, err := cl.Metadata(ctx, &kafka.MetadataRequest{})
		if err != nil {
			return false
		}
		for _, tp := range meta.Topics {
			if tp.Name == topic {
				return false
			}
		}
		return true
	})
}

// kafkagoOffsetsForTimes looks offsets up by timestamp with a Conn and a
// Reader's SetOffsetAt.
func kafkagoOffsetsForTimes(t *testing.T, ctx context.Context, addr string) {
	const topic = "kafkago-time"
	produceTimed(t, addr, topic, 5)
	conn, err := kafka.DialLeader(ctx, "tcp", addr, topic, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if off, err := conn.ReadOffset(time.UnixMilli(timedBase + 2500)); err != nil || off != 3 {
		t.Errorf("conn offset for time %d: %d %v, want 3", timedBase+2500, off, err)
	}
	if first, last, err := conn.ReadOffsets(); err != nil || first != 0 || last != 5 {
		t.Errorf("conn offsets %d..%d %v, want 0..5", first, last, err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: 1, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffsetAt(ctx, time.UnixMilli(timedBase+1000)); err != nil {
		t.Fatal(err)
	}
	m, err := r.ReadMessage(ctx)
	if err != nil || m.Offset != 1 || string(m.Value) != "t1" || m.Time.UnixMilli() != timedBase+1000 {
		t.Errorf("read after SetOffsetAt: offset %d %q at %v, %v; want offset 1 t1", m.Offset, m.Value, m.Time, err)
	}
}
