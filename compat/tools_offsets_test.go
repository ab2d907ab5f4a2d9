package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// kafka-get-offsets (GetOffsetShell) and kafka-delete-records against
// offsets and timestamps franz-go read; kafka-producer-perf-test and
// kafka-consumer-perf-test summaries.

// getOffsets runs kafka-get-offsets and parses its "topic:partition:offset"
// lines into "topic:partition" -> offset.
func (e *cliEnv) getOffsets(t *testing.T, args ...string) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	for _, l := range cliLines(e.admin(t, e.cls.offsets, args...)) {
		i := strings.LastIndexByte(l, ':')
		o, err := strconv.ParseInt(l[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("unexpected kafka-get-offsets line %q", l)
		}
		got[l[:i]] = o
	}
	return got
}

// cliExpectOffsets builds the expected map, one entry per partition that has
// an answer (want returns false where the broker has none).
func cliExpectOffsets(topic string, partitions int32, want func(p int32) (int64, bool)) map[string]int64 {
	m := map[string]int64{}
	for p := int32(0); p < partitions; p++ {
		if o, ok := want(p); ok {
			m[fmt.Sprintf("%s:%d", topic, p)] = o
		}
	}
	return m
}

func cliSameOffsetMaps(t *testing.T, what string, got, want map[string]int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// testGetOffsets: latest, earliest, max timestamp, earliest local and
// by-timestamp offsets of a 2-partition topic written by two producer
// runs, then the same after kafka-delete-records moved partition 0's
// start; --topic-partitions selects partitions.
func (e *cliEnv) testGetOffsets(t *testing.T) {
	const topic = "cli-offsets"
	e.createTopic(t, topic, 2)
	e.produceConsole(t, topic, cliInput("first", 20))
	e.produceConsole(t, topic, cliInput("second", 20))
	stored := e.cliStored(t, topic)
	byPartition := map[int32][]cliRecord{}
	for _, r := range stored {
		byPartition[r.partition] = append(byPartition[r.partition], r)
	}
	// firstAtOrAfter is the first offset of p at or after offset from whose
	// timestamp is at least ts: what a by-timestamp lookup answers.
	firstAtOrAfter := func(p int32, from, ts int64) (int64, bool) {
		for _, r := range byPartition[p] {
			if r.offset >= from && r.timestamp >= ts {
				return r.offset, true
			}
		}
		return 0, false
	}
	// maxTimestamp is the first offset holding p's largest timestamp.
	maxTimestamp := func(p int32) (int64, bool) {
		best := int64(-1)
		var off int64
		for _, r := range byPartition[p] {
			if r.timestamp > best {
				best, off = r.timestamp, r.offset
			}
		}
		return off, best >= 0
	}
	end := func(p int32) (int64, bool) { return int64(len(byPartition[p])), true }
	start := func(p int32) (int64, bool) { return 0, true }

	cliSameOffsetMaps(t, "latest", e.getOffsets(t, "--topic", topic), cliExpectOffsets(topic, 2, end))
	cliSameOffsetMaps(t, "--time latest", e.getOffsets(t, "--topic", topic, "--time", "latest"), cliExpectOffsets(topic, 2, end))
	cliSameOffsetMaps(t, "--time -2", e.getOffsets(t, "--topic", topic, "--time", "-2"), cliExpectOffsets(topic, 2, start))
	cliSameOffsetMaps(t, "--time -3", e.getOffsets(t, "--topic", topic, "--time", "-3"), cliExpectOffsets(topic, 2, maxTimestamp))
	cliSameOffsetMaps(t, "--time -4", e.getOffsets(t, "--topic", topic, "--time", "-4"), cliExpectOffsets(topic, 2, start))
	// A timestamp inside the second run, and one past every record.
	var second int64
	for _, r := range stored {
		if strings.HasPrefix(r.key, "second-") && (second == 0 || r.timestamp < second) {
			second = r.timestamp
		}
	}
	cliSameOffsetMaps(t, "--time <second run>", e.getOffsets(t, "--topic", topic, "--time", strconv.FormatInt(second, 10)),
		cliExpectOffsets(topic, 2, func(p int32) (int64, bool) { return firstAtOrAfter(p, 0, second) }))
	future := strconv.FormatInt(stored[len(stored)-1].timestamp+3_600_000, 10)
	if got := e.getOffsets(t, "--topic", topic, "--time", future); len(got) != 0 {
		t.Errorf("offsets for a timestamp past every record: %v", got)
	}
	cliSameOffsetMaps(t, "--topic-partitions", e.getOffsets(t, "--topic-partitions", topic+":1"),
		map[string]int64{topic + ":1": int64(len(byPartition[1]))})

	// kafka-delete-records moves partition 0's log start to 5.
	spec := filepath.Join(t.TempDir(), "delete.json")
	if err := os.WriteFile(spec, []byte(`{"version":1,"partitions":[{"topic":"`+topic+`","partition":0,"offset":5}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := e.admin(t, e.cls.deleteRecords, "--offset-json-file", spec)
	if !regexp.MustCompile(`partition: ` + topic + `-0\s+low_watermark: 5`).MatchString(out) {
		t.Fatalf("kafka-delete-records said:\n%s", out)
	}
	moved := func(p int32) (int64, bool) {
		if p == 0 {
			return 5, true
		}
		return 0, true
	}
	cliSameOffsetMaps(t, "earliest after delete-records", e.getOffsets(t, "--topic", topic, "--time", "earliest"), cliExpectOffsets(topic, 2, moved))
	cliSameOffsetMaps(t, "earliest-local after delete-records", e.getOffsets(t, "--topic", topic, "--time", "-4"), cliExpectOffsets(topic, 2, moved))
	cliSameOffsetMaps(t, "--time 0 after delete-records", e.getOffsets(t, "--topic", topic, "--time", "0"),
		cliExpectOffsets(topic, 2, func(p int32) (int64, bool) { o, _ := moved(p); return firstAtOrAfter(p, o, 0) }))
	cliSameOffsetMaps(t, "latest after delete-records", e.getOffsets(t, "--topic", topic), cliExpectOffsets(topic, 2, end))
}

// cliPerfSummary matches kafka-producer-perf-test's last line.
var cliPerfSummary = regexp.MustCompile(`^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, [\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$`)

const (
	cliPerfTopic   = "cli-perf"
	cliPerfRecords = 20000
	cliPerfSize    = 100
)

// testPerf: kafka-producer-perf-test sends 20,000 records with acks=all
// (to a topic its Metadata request creates)
// and reports all of them sent; the log end offset agrees; then
// kafka-consumer-perf-test reads the same number of records and bytes.
func (e *cliEnv) testPerf(t *testing.T) {
	out := e.run(t, "", e.cls.producerPerf, "--topic", cliPerfTopic,
		"--num-records", strconv.Itoa(cliPerfRecords), "--record-size", strconv.Itoa(cliPerfSize),
		"--throughput", "-1", "--command-property", "bootstrap.servers="+e.p.Addr, "acks=all")
	ls := cliLines(out)
	if len(ls) == 0 {
		t.Fatal("producer perf test printed nothing")
	}
	m := cliPerfSummary.FindStringSubmatch(ls[len(ls)-1])
	if m == nil || m[1] != strconv.Itoa(cliPerfRecords) {
		t.Fatalf("producer perf test summary %q, want %d records sent", ls[len(ls)-1], cliPerfRecords)
	}
	t.Logf("producer perf test: %s", ls[len(ls)-1])
	if ends := e.endOffsetsOf(t, cliPerfTopic); ends[0] != cliPerfRecords {
		t.Fatalf("log end offset %d after the perf test, want %d", ends[0], cliPerfRecords)
	}

	out = e.admin(t, e.cls.consumerPerf, "--topic", cliPerfTopic, "--num-records", strconv.Itoa(cliPerfRecords),
		"--timeout", "60000")
	ls = cliLines(out)
	if len(ls) != 2 || !strings.HasPrefix(ls[0], "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg") {
		t.Fatalf("consumer perf test printed:\n%s", out)
	}
	f := strings.Split(ls[1], ", ")
	if len(f) < 5 {
		t.Fatalf("consumer perf test row %q", ls[1])
	}
	mb := fmt.Sprintf("%.4f", float64(cliPerfRecords*cliPerfSize)/(1024*1024))
	if f[2] != mb || f[4] != strconv.Itoa(cliPerfRecords) {
		t.Errorf("consumer perf test consumed %s MB in %s records, want %s MB in %d", f[2], f[4], mb, cliPerfRecords)
	}
}
