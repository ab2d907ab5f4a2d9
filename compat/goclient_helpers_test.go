package compat

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Helpers shared by the Go client tests (franzgo_, sarama_, kafkago_ and
// confluent_test.go): each client produces and consumes its own records,
// and franz-go reads back what the broker stored, so that a client that
// silently dropped a codec or a record is caught by one that is known to
// work.

// failedNote names a failed test for the matrix's notes; nothing if it passed.
func failedNote(t *testing.T) string {
	if t.Failed() {
		return "failed in " + t.Name()
	}
	return ""
}

// codecs lists the compression codecs by Kafka's name and the number a
// record batch carries in its attributes.
var codecs = []struct {
	name string
	id   int
}{{"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}}

// keyValue is one record as the tests compare it.
type keyValue struct{ key, value string }

func (kv keyValue) String() string { return kv.key + "=" + kv.value }

// makeRecords returns n records with keys and values derived from prefix;
// the values are long and repetitive enough that every codec shrinks them.
func makeRecords(prefix string, n int) []keyValue {
	out := make([]keyValue, n)
	for i := range out {
		out[i] = keyValue{
			key:   fmt.Sprintf("%s-key-%d", prefix, i),
			value: fmt.Sprintf("%s-value-%d-%s", prefix, i, strings.Repeat("gregor ", 20)),
		}
	}
	return out
}

// sameRecords fails unless got holds exactly the records of want, in any
// order (records spread over partitions come back interleaved).
func sameRecords(t *testing.T, what string, got, want []keyValue) {
	t.Helper()
	str := func(kvs []keyValue) []string {
		s := make([]string, len(kvs))
		for i, kv := range kvs {
			s[i] = kv.String()
		}
		sort.Strings(s)
		return s
	}
	g, w := str(got), str(want)
	if len(g) != len(w) {
		t.Fatalf("%s: %d records, want %d", what, len(g), len(w))
	}
	for i := range g {
		if g[i] != w[i] {
			t.Fatalf("%s: record %q, want %q", what, g[i], w[i])
		}
	}
}

// storedRecords reads every record of topic from the start to the end
// offsets the broker reports, with franz-go.
func storedRecords(t *testing.T, addr, topic string) []*kgo.Record {
	t.Helper()
	adm := newAdmin(t, addr)
	var total int64
	for _, end := range endOffsets(t, adm, topic) {
		total += end
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for int64(len(out)) < total {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records of %s: %v", len(out), total, topic, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch %s: %v", topic, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// checkStored fails unless topic holds exactly want, every record in a
// batch compressed with codec (0 for none).
func checkStored(t *testing.T, addr, topic string, want []keyValue, codec int) {
	t.Helper()
	recs := storedRecords(t, addr, topic)
	got := make([]keyValue, len(recs))
	for i, r := range recs {
		got[i] = keyValue{string(r.Key), string(r.Value)}
		if c := int(r.Attrs.CompressionType()); c != codec {
			t.Fatalf("%s: record at %d/%d stored with codec %d, want %d", topic, r.Partition, r.Offset, c, codec)
		}
	}
	sameRecords(t, topic+" as stored", got, want)
}

// timedBase is the timestamp of the first record produceTimed writes.
const timedBase = 1700000000000

// produceTimed writes n records to partition 1 of a new topic, stamped
// timedBase, timedBase+1s, ..., for clients to look offsets up by time.
func produceTimed(t *testing.T, addr, topic string, n int) {
	t.Helper()
	createTopic(t, newAdmin(t, addr), topic)
	cl := newManualProducer(t, addr, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < n; i++ {
		r := &kgo.Record{Partition: 1, Value: []byte(fmt.Sprintf("t%d", i)), Timestamp: time.UnixMilli(timedBase + int64(i)*1000)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}
