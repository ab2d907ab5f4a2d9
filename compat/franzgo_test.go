package compat

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFranzGo runs franz-go (kgo and kadm) with its defaults (idempotent
// producer, snappy batches, cooperative-sticky groups) through every
// feature of the matrix against the binary.
func TestFranzGo(t *testing.T) {
	const client = "franz-go"
	version := moduleVersion(t, "github.com/twmb/franz-go")
	p := harness.Start(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	adm := newAdmin(t, p.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	want := makeRecords("franz", 200)
	feature(t, client, version, "produce", func(t *testing.T) {
		createTopic(t, adm, "franz")
		franzProduce(t, ctx, p.Addr, "franz", want)
		checkStored(t, p.Addr, "franz", want, 2) // kgo compresses with snappy by default
	})
	feature(t, client, version, "consume", func(t *testing.T) {
		cl := franzClient(t, p.Addr, kgo.ConsumeTopics("franz"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		got := franzPoll(t, ctx, cl, len(want))
		for _, r := range got {
			if len(r.Headers) != 1 || r.Headers[0].Key != "n" || string(r.Headers[0].Value) != string(r.Key) {
				t.Fatalf("record %s: headers %v, want n=%s", r.Key, r.Headers, r.Key)
			}
		}
		sameRecords(t, "consumed", franzKVs(got), want)
	})
	feature(t, client, version, "idempotence", func(t *testing.T) {
		createTopic(t, adm, "franz-idem")
		franzProduce(t, ctx, p.Addr, "franz-idem", makeRecords("idem", 50))
		franzProduce(t, ctx, p.Addr, "franz-idem", makeRecords("plain", 50), kgo.DisableIdempotentWrite())
		ids := map[int64]int{}
		for _, r := range storedRecords(t, p.Addr, "franz-idem") {
			idem := string(r.Key[:4]) == "idem"
			if idem != (r.ProducerID >= 0) {
				t.Fatalf("record %s stored with producer id %d", r.Key, r.ProducerID)
			}
			ids[r.ProducerID]++
		}
		if len(ids) != 2 || ids[-1] != 50 {
			t.Fatalf("records by producer id %v, want 50 from one idempotent producer and 50 with none", ids)
		}
	})
	for _, c := range codecs {
		feature(t, client, version, c.name, func(t *testing.T) {
			topic := "franz-" + c.name
			createTopic(t, adm, topic)
			recs := makeRecords(c.name, 300)
			franzProduce(t, ctx, p.Addr, topic, recs, kgo.ProducerBatchCompression(franzCodec(c.name)))
			checkStored(t, p.Addr, topic, recs, c.id)
		})
	}
	feature(t, client, version, "transactions", func(t *testing.T) {
		createTopic(t, adm, "franz-txn")
		committed, aborted := makeRecords("commit", 60), makeRecords("abort", 60)
		cl := franzClient(t, p.Addr, kgo.TransactionalID("franz-txn"))
		franzTransaction(t, ctx, cl, "franz-txn", committed[:30], kgo.TryCommit)
		franzTransaction(t, ctx, cl, "franz-txn", aborted, kgo.TryAbort)
		franzTransaction(t, ctx, cl, "franz-txn", committed[30:], kgo.TryCommit)
		checkTransactions(t, p.Addr, "franz-txn", committed, aborted)
	})
	feature(t, client, version, "group", func(t *testing.T) { testFranzGroup(t, ctx, p.Addr, adm) })
	feature(t, client, version, "commit", func(t *testing.T) { testFranzCommit(t, ctx, p.Addr, adm) })
	feature(t, client, version, "admin", func(t *testing.T) { testFranzAdmin(t, ctx, p.Addr, adm) })
}

func franzClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// franzProduce writes records to topic, each with a header n=<key>, and
// checks the offsets the broker assigned run from 0 in every partition.
func franzProduce(t *testing.T, ctx context.Context, addr, topic string, records []keyValue, opts ...kgo.Opt) {
	t.Helper()
	cl := franzClient(t, addr, append(opts, kgo.DefaultProduceTopic(topic))...)
	var rs []*kgo.Record
	for _, kv := range records {
		rs = append(rs, &kgo.Record{Key: []byte(kv.key), Value: []byte(kv.value),
			Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(kv.key)}}})
	}
	results := cl.ProduceSync(ctx, rs...)
	if err := results.FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	next := map[int32]int64{}
	for _, r := range results {
		if r.Record.Offset < next[r.Record.Partition] {
			t.Fatalf("partition %d: offset %d after %d", r.Record.Partition, r.Record.Offset, next[r.Record.Partition])
		}
		next[r.Record.Partition] = r.Record.Offset + 1
	}
	cl.Close()
}

// franzPoll polls cl until n records arrived.
func franzPoll(t *testing.T, ctx context.Context, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("polled %d of %d records: %v", len(out), n, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

func franzKVs(rs []*kgo.Record) []keyValue {
	out := make([]keyValue, len(rs))
	for i, r := range rs {
		out[i] = keyValue{string(r.Key), string(r.Value)}
	}
	return out
}

func franzCodec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	}
	return kgo.ZstdCompression()
}

// testFranzGroup runs two group members with franz-go's default balancer
// (cooperative-sticky): every record once, offsets auto-committed, and
// when one member leaves the other takes every partition.
func testFranzGroup(t *testing.T, ctx context.Context, addr string, adm *kadm.Client) {
	const topic, group = "franz-g", "franz-group"
	createTopic(t, adm, topic)
	seen := newConsumed()
	member := func(name string) (stop func()) {
		cl := franzClient(t, addr, kgo.ClientID(name), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.AutoCommitInterval(100*time.Millisecond), kgo.HeartbeatInterval(200*time.Millisecond))
		mctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() {
			for mctx.Err() == nil {
				fs := cl.PollFetches(mctx)
				fs.EachError(func(_ string, _ int32, err error) {
					if !errors.Is(err, context.Canceled) {
						t.Errorf("%s: %v", name, err)
					}
				})
				fs.EachRecord(func(r *kgo.Record) { seen.add(name, string(r.Value)) })
			}
		})
		return func() { cancel(); wg.Wait(); cl.Close() }
	}
	stopA, stopB := member("a"), member("b")
	defer stopA()
	g := waitStableSplit(t, adm, group, topic, 2)
	if g.Protocol != "cooperative-sticky" {
		t.Errorf("group protocol %q, want cooperative-sticky", g.Protocol)
	}
	first := consumeFirstRound(t, adm, addr, group, topic, seen)
	stopB() // leaves the group
	consumeAfterLeave(t, adm, addr, group, topic, seen, first, "a", heldByClient("a", topic))
}

// testFranzCommit commits chosen offsets by hand (auto-commit off) and
// checks that a new member of the group resumes exactly there.
func testFranzCommit(t *testing.T, ctx context.Context, addr string, adm *kadm.Client) {
	const topic, group = "franz-c", "franz-commit"
	createTopic(t, adm, topic)
	produceSpread(t, addr, topic, "c", 25)
	opts := []kgo.Opt{kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	cl := franzClient(t, addr, opts...)
	recs := franzPoll(t, ctx, cl, 4*25)
	// Commit everything but the last 15 records of partition 0.
	var keep []*kgo.Record
	for _, r := range recs {
		if r.Partition != 0 || r.Offset < 10 {
			keep = append(keep, r)
		}
	}
	if err := cl.CommitRecords(ctx, keep...); err != nil {
		t.Fatalf("commit: %v", err)
	}
	got := committed(t, adm, group, topic)
	if len(got) != groupPartitions || got[0] != 10 || got[1] != 25 || got[2] != 25 || got[3] != 25 {
		t.Fatalf("committed %v, want 10 on partition 0 and 25 elsewhere", got)
	}
	cl.Close() // leaves the group

	cl2 := franzClient(t, addr, opts...)
	rest := franzPoll(t, ctx, cl2, 15)
	for i, r := range rest {
		if r.Partition != 0 || r.Offset != int64(10+i) || string(r.Value) != "c-p0-"+strconv.Itoa(10+i) {
			t.Fatalf("resumed with %s at %d/%d, want partition 0 offset %d", r.Value, r.Partition, r.Offset, 10+i)
		}
	}
	if err := cl2.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	waitCommittedAtEnd(t, adm, group, topic)
}

// testFranzAdmin drives kadm: topics created with configs, partitions
// added, configs described and altered, offsets listed, records deleted,
// brokers listed and the topic deleted.
func testFranzAdmin(t *testing.T, ctx context.Context, addr string, adm *kadm.Client) {
	const topic = "franz-admin"
	retention := "3600000"
	created, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": &retention}, topic)
	if err == nil {
		err = created.Err
	}
	if err != nil || created.NumPartitions != 2 {
		t.Fatalf("create: %+v, %v", created, err)
	}
	if _, err := adm.CreatePartitions(ctx, 3, topic); err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	listed, err := adm.ListTopics(ctx, topic)
	if err != nil || len(listed[topic].Partitions) != 5 {
		t.Fatalf("list topics: %+v, %v; want 5 partitions", listed[topic], err)
	}
	maxBytes := "2000000"
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: &maxBytes}}, topic); err != nil {
		t.Fatalf("alter configs: %v", err)
	}
	described, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := described.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs: %v %v", err, rc.Err)
	}
	values := map[string]string{}
	for _, c := range rc.Configs {
		values[c.Key] = c.MaybeValue()
	}
	if values["retention.ms"] != retention || values["max.message.bytes"] != maxBytes {
		t.Fatalf("configs retention.ms=%q max.message.bytes=%q", values["retention.ms"], values["max.message.bytes"])
	}

	cl := franzClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 6; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 4, Key: []byte{'k', byte('0' + i)}, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close() // a producer refreshing metadata would create the topic again
	del := kadm.Offsets{}
	del.AddOffset(topic, 4, 2, -1)
	deleted, err := adm.DeleteRecords(ctx, del)
	if err == nil {
		err = deleted.Error()
	}
	if err != nil {
		t.Fatalf("delete records: %v", err)
	}
	if d, _ := deleted.Lookup(topic, 4); d.LowWatermark != 2 {
		t.Errorf("delete records: low watermark %d, want 2", d.LowWatermark)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup(topic, 4); s.Offset != 2 {
		t.Errorf("start offset of partition 4: %+v, want 2", s)
	}
	if e, _ := ends.Lookup(topic, 4); e.Offset != 6 {
		t.Errorf("end offset of partition 4: %+v, want 6", e)
	}
	produceTimed(t, addr, "franz-time", 5)
	after, err := adm.ListOffsetsAfterMilli(ctx, timedBase+2500, "franz-time")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := after.Lookup("franz-time", 1); o.Err != nil || o.Offset != 3 || o.Timestamp != timedBase+3000 {
		t.Errorf("offset after %d: %+v, want 3 at %d", timedBase+2500, o, timedBase+3000)
	}
	maxTS, err := adm.ListMaxTimestampOffsets(ctx, "franz-time")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := maxTS.Lookup("franz-time", 1); o.Err != nil || o.Offset != 4 || o.Timestamp != timedBase+4000 {
		t.Errorf("max timestamp offset: %+v, want 4 at %d", o, timedBase+4000)
	}
	brokers, err := adm.ListBrokers(ctx)
	if err != nil || len(brokers) != 1 || brokers[0].Host+":"+strconv.Itoa(int(brokers[0].Port)) != addr {
		t.Fatalf("brokers %+v, %v; want one at %s", brokers, err, addr)
	}
	dt, err := adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = dt.Err
	}
	if err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	// kgo answers metadata requests from its cache for MetadataMinAge.
	fresh := kadm.NewClient(franzClient(t, addr, kgo.MetadataMinAge(10*time.Millisecond)))
	waitFor(t, "the topic gone", 10*time.Second, func() bool {
		l, err := fresh.ListTopics(ctx)
		return err == nil && !l.Has(topic)
	})
}
