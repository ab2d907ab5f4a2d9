package broker

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dlqRecord is a dead-letter queue record as a test compares it: key,
// value and the headers in order, "name=value".
type dlqRecord struct {
	key, value string
	headers    []string
}

// readDLQ consumes every record of topic until it has n.
func readDLQ(t *testing.T, b *Broker, topic string, n int) []dlqRecord {
	t.Helper()
	cl := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []dlqRecord
	ctx := ctxT(t)
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s holds %d records, want %d: %+v", topic, len(out), n, out)
		}
		fs.EachRecord(func(r *kgo.Record) {
			rec := dlqRecord{key: string(r.Key), value: string(r.Value)}
			for _, h := range r.Headers {
				rec.headers = append(rec.headers, h.Key+"="+string(h.Value))
			}
			out = append(out, rec)
		})
	}
	return out
}

func setShareVersion(t *testing.T, cl *kgo.Client, level int16) {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "share.version", MaxVersionLevel: level, UpgradeType: 1}}
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("share.version %d: %v %+v", level, err, resp)
	}
}

// TestShareGroupDeadLetterQueue (KIP-1191): with share.version 2 and a
// group's errors.deadletterqueue.topic.name, a rejected record and one
// released at the delivery limit go to the queue topic, one record each
// with Kafka's __dlq.errors.* headers (and the original key and value
// with errors.deadletterqueue.copy.record.enable, not its headers), and
// the start offset then passes them. At share.version 1 the same
// settings archive at once. A queue topic that does not opt in, does not
// exist, or lacks the prefix gets nothing and the records are archived
// anyway, with Kafka's error; a missing one is created when
// errors.deadletterqueue.auto.create.topics.enable is on.
func TestShareGroupDeadLetterQueue(t *testing.T) {
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}
	for k, v := range shareProps {
		props[k] = v
	}
	b, log := startBrokerLogged(t, props)
	rc := dialRaw(t, b)
	cl := newClient(t, b, kgo.ProducerBatchCompression(kgo.NoCompression())) // the test's decoder reads uncompressed batches
	adm := kadm.NewClient(cl)
	id := createTopicRaw(t, rc, "jobs", 1)
	var recs []*kgo.Record
	for i := range 6 {
		recs = append(recs, &kgo.Record{Topic: "jobs", Key: []byte{'k', byte('0' + i)}, Value: []byte{'v', byte('0' + i)},
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t")}}})
	}
	if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := firstCreateErr(adm.CreateTopic(ctxT(t), 2, 1, map[string]*string{"errors.deadletterqueue.group.enable": kmsg.StringPtr("true")}, "dlq.jobs")); err != nil {
		t.Fatal(err)
	}
	group := func(name, dlq string, copyRecord bool) *shareMember {
		t.Helper()
		ops := []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("share.auto.offset.reset", "earliest"), setOp("errors.deadletterqueue.topic.name", dlq)}
		if copyRecord {
			ops = append(ops, setOp("errors.deadletterqueue.copy.record.enable", "true"))
		}
		if code := alterGroupConfigs(t, cl, name, ops...); code != 0 {
			t.Fatalf("group %s configs: %v", name, kerr.ErrorForCode(code))
		}
		findCoordinatorRaw(t, rc, name)
		m := &shareMember{t: t, rc: rc, group: name, id: name + "-member"}
		m.heartbeat("jobs")
		return m
	}
	startIs := func(name string, want int64) {
		t.Helper()
		waitUntil(t, name+"'s start offset at "+string(rune('0'+want)), 10*time.Second, func() bool {
			start, _ := describeShareOffset(t, rc, name, "jobs")
			return start == want
		})
	}
	rejectOne := func(m *shareMember) {
		t.Helper()
		if got := acquired(t, m.fetch(id, 1)); len(got) != 1 || got[0] != "0-0/1" {
			t.Fatalf("%s acquired %v, want 0-0/1", m.group, got)
		}
		if code := ackCode(m.acknowledge(id, ack(0, 0, 3))); code != 0 {
			t.Fatalf("%s rejecting: %v", m.group, kerr.ErrorForCode(code))
		}
	}

	// share.version 1: the group's queue is not used.
	old := group("before", "dlq.jobs", false)
	rejectOne(old)
	startIs("before", 1)

	setShareVersion(t, cl, 2)
	m := group("workers", "dlq.jobs", true)
	if got := acquired(t, m.fetch(id, 6)); len(got) != 1 || got[0] != "0-5/1" {
		t.Fatalf("acquired %v, want 0-5/1", got)
	}
	// accept 0, reject 1, release 2, accept 3-5
	if code := ackCode(m.acknowledge(id, ack(0, 5, 1, 3, 2, 1, 1, 1))); code != 0 {
		t.Fatalf("acknowledging: %v", kerr.ErrorForCode(code))
	}
	for delivery := 2; delivery <= 3; delivery++ {
		if got := acquired(t, m.fetch(id, 6)); len(got) != 1 || got[0] != "2-2/"+string(rune('0'+delivery)) {
			t.Fatalf("redelivery %d: acquired %v", delivery, got)
		}
		if code := ackCode(m.acknowledge(id, ack(2, 2, 2))); code != 0 {
			t.Fatalf("releasing 2: %v", kerr.ErrorForCode(code))
		}
	}
	startIs("workers", 6)
	got := readDLQ(t, b, "dlq.jobs", 2)
	want := []dlqRecord{
		{"k1", "v1", []string{"__dlq.errors.topic=jobs", "__dlq.errors.partition=0", "__dlq.errors.offset=1", "__dlq.errors.group=workers",
			"__dlq.errors.delivery.count=1", "__dlq.errors.message=Offset rejected by client."}},
		{"k2", "v2", []string{"__dlq.errors.topic=jobs", "__dlq.errors.partition=0", "__dlq.errors.offset=2", "__dlq.errors.group=workers",
			"__dlq.errors.delivery.count=3", "__dlq.errors.message=Offset delivery count exceeded the threshold."}},
	}
	if len(got) != 2 || strings.Join(got[0].headers, ",") != strings.Join(want[0].headers, ",") || got[0].key != "k1" || got[0].value != "v1" ||
		strings.Join(got[1].headers, ",") != strings.Join(want[1].headers, ",") || got[1].key != "k2" || got[1].value != "v2" {
		t.Fatalf("dead-letter queue:\n%+v\nwant\n%+v", got, want)
	}

	// Without copy.record.enable: headers only.
	rejectOne(group("headers-only", "dlq.jobs", false))
	startIs("headers-only", 1)
	if got := readDLQ(t, b, "dlq.jobs", 3)[2]; got.key != "" || got.value != "" || !strings.Contains(strings.Join(got.headers, ","), "__dlq.errors.group=headers-only") {
		t.Fatalf("a record of a queue that does not copy: %+v", got)
	}

	// Refusals: the record is archived, nothing is written.
	if err := firstCreateErr(adm.CreateTopic(ctxT(t), 1, 1, nil, "dlq.closed")); err != nil {
		t.Fatal(err)
	}
	if err := firstCreateErr(adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"errors.deadletterqueue.group.enable": kmsg.StringPtr("true")}, "rejects")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ group, topic, msg string }{
		{"closed", "dlq.closed", "DLQ is not enabled on configured DLQ topic for share group: closed, topic: dlq.closed."},
		{"missing", "dlq.missing", "DLQ topic does not exist and auto create is disabled on cluster for share group: missing, topic: dlq.missing."},
		{"unprefixed", "rejects", "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: unprefixed, topic: rejects, prefix: dlq."},
	} {
		rejectOne(group(c.group, c.topic, false))
		startIs(c.group, 1)
		waitUntil(t, "the error for "+c.group, 5*time.Second, func() bool {
			return strings.Contains(log.String(), c.msg) && strings.Contains(log.String(), "Failed to write to DLQ, proceeding to ARCHIVED regardless.")
		})
	}
	if ends, err := adm.ListEndOffsets(ctxT(t), "dlq.closed", "rejects"); err != nil || ends["dlq.closed"][0].Offset != 0 || ends["rejects"][0].Offset != 0 {
		t.Fatalf("refused queues were written: %+v %v", ends, err)
	}
	if code, msg := alterConfigsOf(t, cl, kmsg.ConfigResourceTypeGroupConfig, "bad", setOp("errors.deadletterqueue.topic.name", "__dlq")); code != kerr.InvalidConfig.Code ||
		msg != "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'" {
		t.Fatalf("an internal-looking queue name: %v %q", kerr.ErrorForCode(code), msg)
	}

	// Auto-creation: the topic opts in and gets the record.
	if code, msg := alterConfigsOf(t, cl, kmsg.ConfigResourceTypeBroker, "", setOp("errors.deadletterqueue.auto.create.topics.enable", "true")); code != 0 {
		t.Fatalf("enabling DLQ auto-creation: %v %s", kerr.ErrorForCode(code), msg)
	}
	rejectOne(group("auto", "dlq.auto", false))
	startIs("auto", 1)
	if got := readDLQ(t, b, "dlq.auto", 1); !strings.Contains(strings.Join(got[0].headers, ","), "__dlq.errors.group=auto") {
		t.Fatalf("auto-created queue: %+v", got)
	}
	described, err := adm.DescribeTopicConfigs(ctxT(t), "dlq.auto")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range described[0].Configs {
		if c.Key == "errors.deadletterqueue.group.enable" && (c.Value == nil || *c.Value != "true") {
			t.Fatalf("the auto-created queue's %s: %v", c.Key, c.Value)
		}
	}
}

// A record persisted Archiving is sent again by the next leader: a broker
// stopped while its queue write waits (the inter-broker listener the
// queue is written through holds its one connection for the test) leaves
// it Archiving; restarted, it writes it once the queue takes writes, and
// the start offset passes it.
func TestShareGroupDeadLetterQueueResumes(t *testing.T) {
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0", "log.dirs": t.TempDir(),
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT", "inter.broker.listener.name": "INTERNAL",
		"listener.name.internal.max.connections": "1"}
	for k, v := range shareProps {
		props[k] = v
	}
	b := startBrokerWith(t, props)
	// The inter-broker listener's only connection: the queue's client waits
	// for it. (A queue whose min.insync.replicas exceeds its one replica
	// takes acks=all writes, as Kafka's effectiveMinIsr caps it.)
	held, err := net.Dial("tcp", listenerAddr(t, b, "INTERNAL"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	rc := dialRaw(t, b)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	id := createTopicRaw(t, rc, "jobs", 1)
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "jobs", Value: []byte("job")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := firstCreateErr(adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{
		"errors.deadletterqueue.group.enable": kmsg.StringPtr("true")}, "dlq.jobs")); err != nil {
		t.Fatal(err)
	}
	setShareVersion(t, cl, 2)
	if code := alterGroupConfigs(t, cl, "workers", setOp("share.auto.offset.reset", "earliest"), setOp("errors.deadletterqueue.topic.name", "dlq.jobs")); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	findCoordinatorRaw(t, rc, "workers")
	m := &shareMember{t: t, rc: rc, group: "workers", id: "member"}
	m.heartbeat("jobs")
	if got := acquired(t, m.fetch(id, 1)); len(got) != 1 {
		t.Fatalf("acquired %v", got)
	}
	if code := ackCode(m.acknowledge(id, ack(0, 0, 3))); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	time.Sleep(300 * time.Millisecond) // the queue's client waits for a connection
	if start, _ := describeShareOffset(t, rc, "workers", "jobs"); start != 0 {
		t.Fatalf("start offset %d while the queue write waits, want 0", start)
	}
	b.Close()

	b = startBrokerWith(t, props)
	rc = dialRaw(t, b)
	cl = newClient(t, b)
	if start, _ := describeShareOffset(t, rc, "workers", "jobs"); start != 0 {
		t.Fatalf("start offset %d after a restart, want 0: the record was archived without reaching the queue", start)
	}
	if code, msg := alterConfigsOf(t, cl, kmsg.ConfigResourceTypeBroker, "", setOp("listener.name.internal.max.connections", "10")); code != 0 {
		t.Fatalf("%v %s", kerr.ErrorForCode(code), msg)
	}
	findCoordinatorRaw(t, rc, "workers")
	m = &shareMember{t: t, rc: rc, group: "workers", id: "member-2"}
	m.heartbeat("jobs")
	m.fetch(id, 1) // the share-partition loads, and sends what it finds Archiving
	if got := readDLQ(t, b, "dlq.jobs", 1); !strings.Contains(strings.Join(got[0].headers, ","), "__dlq.errors.message=Offset rejected by client.") {
		t.Fatalf("resumed queue record: %+v", got)
	}
	waitUntil(t, "the start offset past the record", 10*time.Second, func() bool {
		start, _ := describeShareOffset(t, rc, "workers", "jobs")
		return start == 1
	})
}

// In a cluster the share-partitions' leaders write the queue wherever its
// partition is led: a franz-go share consumer rejects every "bad" record
// of a three-partition topic, and the queue topic (one partition, led by
// one of the three brokers) gets each of them once, with its source
// partition and offset, and its value copied; the good ones are not
// there, and every partition's start offset reaches its end. Then the
// queue partition's leader stops: the records rejected meanwhile still
// all reach the queue (at least once: a share-partition that moved with
// the stopped broker sends again what it had ARCHIVING).
func TestClusterShareGroupDeadLetterQueue(t *testing.T) {
	c := startCluster(t, 3, map[string]string{
		"share.coordinator.state.topic.num.partitions": "3",
		"group.share.min.heartbeat.interval.ms":        "100",
		"group.share.heartbeat.interval.ms":            "300",
	})
	producer := c.client(kgo.DefaultProduceTopic("cq"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	adm := kadm.NewClient(producer)
	if err := firstCreateErr(adm.CreateTopic(ctxT(t), 3, 3, nil, "cq")); err != nil {
		t.Fatal(err)
	}
	if err := firstCreateErr(adm.CreateTopic(ctxT(t), 1, 3, map[string]*string{"errors.deadletterqueue.group.enable": kmsg.StringPtr("true")}, "dlq.cq")); err != nil {
		t.Fatal(err)
	}
	setShareVersion(t, producer, 2)
	if code := alterGroupConfigs(t, producer, "cqg", setOp("share.auto.offset.reset", "earliest"),
		setOp("errors.deadletterqueue.topic.name", "dlq.cq"), setOp("errors.deadletterqueue.copy.record.enable", "true")); code != 0 {
		t.Fatalf("group configs: %v", kerr.ErrorForCode(code))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	consumer := c.client(kgo.ShareGroup("cqg"), kgo.ConsumeTopics("cq"), kgo.RequestRetries(3))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			consumer.PollRecords(ctx, 100).EachRecord(func(r *kgo.Record) {
				if strings.HasPrefix(string(r.Value), "bad") {
					r.Ack(kgo.AckReject)
				} else {
					r.Ack(kgo.AckAccept)
				}
			})
		}
		consumer.FlushAcks(context.Background())
		consumer.Close()
	}()
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			v := "good-" + strconv.Itoa(i)
			if i%3 == 0 {
				v = "bad-" + strconv.Itoa(i)
			}
			producer.Produce(ctxT(t), &kgo.Record{Value: []byte(v)}, nil)
		}
		if err := producer.Flush(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{} // value -> times in the queue
	reader := c.client(kgo.ConsumeTopics("dlq.cq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	readQueue := func(n int) {
		t.Helper()
		rctx := ctxT(t)
		for len(seen) < n && rctx.Err() == nil {
			reader.PollFetches(rctx).EachRecord(func(r *kgo.Record) {
				if !strings.HasPrefix(string(r.Value), "bad-") || len(r.Headers) != 6 {
					t.Errorf("queue record %q with headers %v", r.Value, r.Headers)
				}
				seen[string(r.Value)]++
			})
		}
		for i := 0; i < 3*n; i += 3 {
			if seen["bad-"+strconv.Itoa(i)] == 0 {
				t.Errorf("bad-%d missing from the queue (it has %v)", i, seen)
			}
		}
		if len(seen) != n {
			t.Errorf("the queue holds %d records, want %d: %v", len(seen), n, seen)
		}
	}
	any, stopped := dialAddr(t, c.addrs()[0]), int32(-1)
	allDone := func(n int64) {
		t.Helper()
		c.waitFor("every partition's start offset at its end", func() bool {
			id := coordinatorOf(t, any, "cqg")
			if id == stopped { // not moved yet
				return false
			}
			sum, ok := shareStartOffsetSum(dialAddr(t, c.addrs()[id-1]), "cqg")
			return ok && sum == n
		})
	}

	const n = 60
	produce(0, n)
	readQueue(n / 3)
	for v, times := range seen {
		if times != 1 {
			t.Errorf("%s in the queue %d times before any failure", v, times)
		}
	}
	allDone(n)

	leader, _ := c.leaderOf("dlq.cq", 0)
	c.stop(int(leader - 1))
	stopped = leader
	if leader == 1 {
		any = dialAddr(t, c.addrs()[1])
	}
	produce(n, 2*n)
	readQueue(2 * n / 3)
	allDone(2 * n)
	cancel()
	<-done
}
