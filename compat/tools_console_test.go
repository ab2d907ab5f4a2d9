package compat

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafka-console-producer and kafka-console-consumer: records go in as
// "key<TAB>value" lines and come out with partition and offset printed;
// franz-go reads what the broker stored and is the reference for both.

const (
	cliConsoleTopic = "cli-console"
	cliConsoleGroup = "cli-console-group"
)

// cliRecord is one record as a tool or franz-go saw it.
type cliRecord struct {
	partition int32
	offset    int64
	key       string
	value     string
	timestamp int64 // milliseconds; 0 where the tool does not print it
	codec     int8  // franz-go's compression attribute; 0 where unknown
}

func (r cliRecord) String() string {
	return fmt.Sprintf("p%d@%d %s=%s", r.partition, r.offset, r.key, r.value)
}

// cliInput is n console-producer lines with keys, "<prefix>-key-i\t<prefix> value i".
func cliInput(prefix string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%s-key-%d\t%s value %d\n", prefix, i, prefix, i)
	}
	return b.String()
}

// produceConsole runs kafka-console-producer with keyed input.
func (e *cliEnv) produceConsole(t *testing.T, topic, input string, extra ...string) {
	t.Helper()
	args := append([]string{"--bootstrap-server", e.p.Addr, "--topic", topic,
		"--reader-property", "parse.key=true"}, extra...)
	if out := e.run(t, input, e.cls.producer, args...); strings.TrimSpace(out) != "" {
		t.Fatalf("console producer printed %q", out)
	}
}

// consumeConsole runs kafka-console-consumer until it has n records and
// parses what it printed (partition, offset, key, value).
func (e *cliEnv) consumeConsole(t *testing.T, topic string, n int, extra ...string) []cliRecord {
	t.Helper()
	args := append([]string{"--bootstrap-server", e.p.Addr, "--topic", topic,
		"--max-messages", strconv.Itoa(n), "--timeout-ms", "60000",
		"--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
		"--formatter-property", "print.key=true"}, extra...)
	r := e.try(t, "", e.cls.consumer, args...)
	if r.err != nil {
		t.Fatalf("console consumer %v: %v\n%s\n%s", extra, r.err, r.stdout, r.stderr)
	}
	if want := fmt.Sprintf("Processed a total of %d messages", n); !strings.Contains(r.stderr, want) {
		t.Fatalf("console consumer did not say %q:\n%s", want, r.stderr)
	}
	return cliParseConsole(t, r.stdout)
}

// cliParseConsole parses "Partition:P\tOffset:O\tkey\tvalue" lines.
func cliParseConsole(t *testing.T, out string) []cliRecord {
	t.Helper()
	var rs []cliRecord
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 4 || !strings.HasPrefix(f[0], "Partition:") || !strings.HasPrefix(f[1], "Offset:") {
			t.Fatalf("unexpected console consumer line %q", l)
		}
		p, err1 := strconv.Atoi(strings.TrimPrefix(f[0], "Partition:"))
		o, err2 := strconv.ParseInt(strings.TrimPrefix(f[1], "Offset:"), 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("bad console consumer line %q", l)
		}
		rs = append(rs, cliRecord{partition: int32(p), offset: o, key: f[2], value: f[3]})
	}
	return rs
}

// createTopic creates a topic through franz-go, for the features that do
// not test kafka-topics.
func (e *cliEnv) createTopic(t *testing.T, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// cliStored reads every record of topic through franz-go, sorted by
// partition and offset.
func (e *cliEnv) cliStored(t *testing.T, topic string) []cliRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := e.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	ends.Each(func(o kadm.ListedOffset) { want += int(o.Offset) })
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.p.Addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []cliRecord
	for len(rs) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("franz-go read %d of %d records of %s", len(rs), want, topic)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("franz-go fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			rs = append(rs, cliRecord{partition: r.Partition, offset: r.Offset, key: string(r.Key),
				value: string(r.Value), timestamp: r.Timestamp.UnixMilli(), codec: int8(r.Attrs.CompressionType())})
		})
	}
	sortCLIRecords(rs)
	return rs
}

func sortCLIRecords(rs []cliRecord) {
	slices.SortFunc(rs, func(a, b cliRecord) int {
		if a.partition != b.partition {
			return int(a.partition - b.partition)
		}
		return int(a.offset - b.offset)
	})
}

// sameCLIRecords compares partition, offset, key and value.
func sameCLIRecords(t *testing.T, what string, got, want []cliRecord) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	sortCLIRecords(g)
	sortCLIRecords(w)
	if len(g) != len(w) {
		t.Fatalf("%s: %d records, want %d", what, len(g), len(w))
	}
	for i := range g {
		if g[i].String() != w[i].String() {
			t.Fatalf("%s: record %d is %v, want %v", what, i, g[i], w[i])
		}
	}
}

// testConsoleProduce: 200 keyed records through kafka-console-producer
// into a 3-partition topic, read back with franz-go: every key once with
// its value, offsets dense from 0 in each partition, one key always in one
// partition, and each partition in the order of the input.
func (e *cliEnv) testConsoleProduce(t *testing.T) {
	e.createTopic(t, cliConsoleTopic, 3)
	const n = 200
	e.produceConsole(t, cliConsoleTopic, cliInput("console", n))
	stored := e.cliStored(t, cliConsoleTopic)
	if len(stored) != n {
		t.Fatalf("stored %d records, want %d", len(stored), n)
	}
	next := map[int32]int64{}
	lastIndex := map[int32]int{}
	seen := map[string]bool{}
	for _, r := range stored {
		var i int
		if _, err := fmt.Sscanf(r.key, "console-key-%d", &i); err != nil || r.value != fmt.Sprintf("console value %d", i) {
			t.Fatalf("stored record %v does not match the input", r)
		}
		if seen[r.key] {
			t.Fatalf("key %s stored twice", r.key)
		}
		seen[r.key] = true
		if r.offset != next[r.partition] {
			t.Fatalf("partition %d: offset %d, want %d", r.partition, r.offset, next[r.partition])
		}
		if idx, ok := lastIndex[r.partition]; ok && i < idx {
			t.Fatalf("partition %d: input line %d stored after line %d", r.partition, i, idx)
		}
		lastIndex[r.partition], next[r.partition] = i, r.offset+1
	}
	if len(next) != 3 {
		t.Errorf("records went to %d partitions, want all 3", len(next))
	}
	e.console = stored
}

// testConsoleConsume: kafka-console-consumer in a group reads the 200
// records from the beginning, with the partition and offset franz-go saw.
func (e *cliEnv) testConsoleConsume(t *testing.T) {
	if len(e.console) == 0 {
		t.Fatal("nothing was produced")
	}
	got := e.consumeConsole(t, cliConsoleTopic, len(e.console), "--from-beginning", "--group", cliConsoleGroup)
	sameCLIRecords(t, "console consumer", got, e.console)
}

// cliCodecIDs are the record-batch compression attributes.
var cliCodecIDs = map[string]int8{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// testCodec: kafka-console-producer compresses with codec into a topic
// that its first Metadata request creates (num.partitions, 1); the batches
// are stored compressed with it (franz-go sees the attribute) and the
// console consumer, assigned the partition without a group, reads every
// record back.
func (e *cliEnv) testCodec(t *testing.T, codec string) {
	topic := "cli-" + codec // created by the producer's Metadata request
	const n = 50
	e.produceConsole(t, topic, cliInput(codec, n), "--compression-codec", codec)
	stored := e.cliStored(t, topic)
	for i, r := range stored {
		want := cliRecord{offset: int64(i), key: fmt.Sprintf("%s-key-%d", codec, i), value: fmt.Sprintf("%s value %d", codec, i)}
		if r.String() != want.String() || r.codec != cliCodecIDs[codec] {
			t.Fatalf("stored %v with codec %d, want %v with %d", r, r.codec, want, cliCodecIDs[codec])
		}
	}
	if len(stored) != n {
		t.Fatalf("stored %d records, want %d", len(stored), n)
	}
	got := e.consumeConsole(t, topic, n, "--partition", "0", "--offset", "earliest")
	sameCLIRecords(t, "console consumer", got, stored)
}
