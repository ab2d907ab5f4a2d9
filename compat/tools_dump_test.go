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

// Kafka's DumpLogSegments reads the files gregor wrote: every record with
// its offset, key and payload, every batch valid and where its position
// says, the codecs, the idempotent producers' sequences, the consumer
// offsets in __consumer_offsets, and, after a clean stop, the offset and
// time indexes and the producer snapshot.

// cliDumpBatch is one batch line of a .log dump and the record lines under it.
type cliDumpBatch struct {
	fields  map[string]string // baseOffset, lastOffset, count, producerId, position, size, ...
	records []cliDumpRecord
}

type cliDumpRecord struct {
	fields       map[string]string // offset, CreateTime, keySize, valueSize, sequence, ...
	key, payload string
}

func (b cliDumpBatch) int(t *testing.T, name string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(b.fields[name], 10, 64)
	if err != nil {
		t.Fatalf("batch field %s=%q: %v", name, b.fields[name], err)
	}
	return v
}

// cliPairs parses "name: value name: value ..." into a map.
func cliPairs(t *testing.T, s string) map[string]string {
	t.Helper()
	f := strings.Fields(s)
	if len(f)%2 != 0 {
		t.Fatalf("odd name/value line %q", s)
	}
	m := map[string]string{}
	for i := 0; i < len(f); i += 2 {
		name, ok := strings.CutSuffix(f[i], ":")
		if !ok {
			t.Fatalf("no name at %q in %q", f[i], s)
		}
		m[name] = f[i+1]
	}
	return m
}

// dump runs DumpLogSegments on files and returns stdout.
func (e *cliEnv) dump(t *testing.T, files []string, flags ...string) string {
	t.Helper()
	return e.run(t, "", e.cls.dump, append([]string{"--files", strings.Join(files, ",")}, flags...)...)
}

// dumpLogs dumps .log segments in one run of the tool and parses each
// one's batches (and, with --deep-iteration --print-data-log among flags,
// their records), by segment path.
func (e *cliEnv) dumpLogs(t *testing.T, segments []string, flags ...string) map[string][]cliDumpBatch {
	t.Helper()
	out := e.dump(t, segments, flags...)
	dumped := map[string][]cliDumpBatch{}
	var seg string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if path, ok := strings.CutPrefix(l, "Dumping "); ok {
			seg = path
			dumped[seg] = []cliDumpBatch{}
			continue
		}
		if seg == "" {
			t.Fatalf("DumpLogSegments printed %q before any file", l)
		}
		if strings.HasPrefix(l, "Log starting offset: ") {
			continue
		}
		batches := dumped[seg]
		rest, ok := strings.CutPrefix(l, "| ")
		if !ok {
			dumped[seg] = append(batches, cliDumpBatch{fields: cliPairs(t, l)})
			continue
		}
		if len(batches) == 0 {
			t.Fatalf("%s: record line before any batch: %q", seg, l)
		}
		var r cliDumpRecord
		head, kv, ok := strings.Cut(rest, " key: ")
		if ok {
			r.key, r.payload, _ = strings.Cut(kv, " payload: ")
		}
		r.fields = cliPairs(t, head)
		b := &batches[len(batches)-1]
		b.records = append(b.records, r)
	}
	for _, seg := range segments {
		if _, ok := dumped[seg]; !ok {
			t.Fatalf("DumpLogSegments did not dump %s:\n%.2000s", seg, out)
		}
	}
	return dumped
}

// cliCheckBatches checks what every dumped segment must show: valid v2
// batches one after the other, offsets dense, positions the running sum
// of sizes, and as many records as the count says when records are shown.
func cliCheckBatches(t *testing.T, segment string, batches []cliDumpBatch, deep bool) {
	t.Helper()
	var next, pos int64
	for i, b := range batches {
		if b.fields["isvalid"] != "true" || b.fields["magic"] != "2" {
			t.Fatalf("%s batch %d: %v", segment, i, b.fields)
		}
		base, last, count := b.int(t, "baseOffset"), b.int(t, "lastOffset"), b.int(t, "count")
		if base != next || last-base+1 != count || b.int(t, "position") != pos {
			t.Fatalf("%s batch %d: base %d last %d count %d position %s; want base %d position %d",
				segment, i, base, last, count, b.fields["position"], next, pos)
		}
		if deep && int64(len(b.records)) != count {
			t.Fatalf("%s batch %d: %d records shown, count %d", segment, i, len(b.records), count)
		}
		next, pos = last+1, pos+b.int(t, "size")
	}
}

// cliDumpedRecords are the records of deep dumps as cliRecords of partition.
func cliDumpedRecords(t *testing.T, partition int32, batches []cliDumpBatch) []cliRecord {
	t.Helper()
	var rs []cliRecord
	for _, b := range batches {
		for _, r := range b.records {
			o, err := strconv.ParseInt(r.fields["offset"], 10, 64)
			if err != nil {
				t.Fatalf("record offset %q", r.fields["offset"])
			}
			rs = append(rs, cliRecord{partition: partition, offset: o, key: r.key, value: r.payload})
		}
	}
	return rs
}

// segmentOf is the first segment of a partition in gregor's log dir.
func (e *cliEnv) segmentOf(topic string, partition int32, suffix string) string {
	return filepath.Join(e.dir, fmt.Sprintf("%s-%d", topic, partition), "00000000000000000000"+suffix)
}

// testIdempotence: the console and perf producers are idempotent by
// default; DumpLogSegments shows every batch with a producer id, epoch 0
// and sequences that run without gaps from 0 for each producer.
func (e *cliEnv) testIdempotence(t *testing.T) {
	check := func(segment string, batches []cliDumpBatch) {
		next := map[string]int64{}
		for i, b := range batches {
			pid := b.fields["producerId"]
			if pid == "-1" || b.fields["producerEpoch"] != "0" {
				t.Fatalf("%s batch %d has no idempotent producer: %v", segment, i, b.fields)
			}
			first, last := b.int(t, "baseSequence"), b.int(t, "lastSequence")
			if first != next[pid] || last-first+1 != b.int(t, "count") {
				t.Fatalf("%s batch %d: producer %s sequences %d-%d, want from %d", segment, i, pid, first, last, next[pid])
			}
			next[pid] = last + 1
		}
	}
	perf := e.segmentOf(cliPerfTopic, 0, ".log")
	segs := []string{perf}
	for p := int32(0); p < 3; p++ {
		segs = append(segs, e.segmentOf(cliConsoleTopic, p, ".log"))
	}
	dumped := e.dumpLogs(t, segs)
	for _, seg := range segs {
		cliCheckBatches(t, seg, dumped[seg], false)
		check(seg, dumped[seg])
	}
	batches := dumped[perf]
	last := batches[len(batches)-1]
	if n := last.int(t, "lastSequence"); n != cliPerfRecords-1 {
		t.Errorf("the perf producer's last sequence is %d, want %d", n, cliPerfRecords-1)
	}

	// kafka-transactions describe-producers shows the state the leader
	// keeps of the perf producer: the id, epoch, last sequence and last
	// timestamp of its last batch, and no open transaction.
	out := e.admin(t, e.cls.transactions, "describe-producers", "--topic", cliPerfTopic, "--partition", "0")
	rows := cliProducerRows(t, out)
	want := map[string]string{"ProducerId": last.fields["producerId"], "ProducerEpoch": "0", "LatestCoordinatorEpoch": "-1",
		"LastSequence": last.fields["lastSequence"], "LastTimestamp": last.fields["CreateTime"], "CurrentTransactionStartOffset": "None"}
	if len(rows) != 1 || fmt.Sprint(rows[0]) != fmt.Sprint(want) {
		t.Errorf("describe-producers: %v, want [%v]\n%s", rows, want, out)
	}
}

// cliProducerRows parses kafka-transactions describe-producers' table.
func cliProducerRows(t *testing.T, out string) []map[string]string {
	t.Helper()
	return cliColumns(t, out, "ProducerId")
}

// cliColumns parses a table of kafka-transactions whose header line starts
// with first: the rows after it, as maps from column name to value.
func cliColumns(t *testing.T, out, first string) []map[string]string {
	t.Helper()
	lines := cliLines(out)
	for len(lines) > 0 && !strings.HasPrefix(lines[0], first) {
		lines = lines[1:]
	}
	if len(lines) == 0 {
		t.Fatalf("no %s table in:\n%s", first, out)
	}
	cols := strings.Fields(lines[0])
	var rows []map[string]string
	for _, l := range lines[1:] {
		row := map[string]string{}
		for i, v := range strings.Fields(l) {
			if i < len(cols) {
				row[cols[i]] = v
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// cliOffsetsKey matches a decoded __consumer_offsets key of cliConsoleGroup.
var cliOffsetsKey = regexp.MustCompile(`^\{"type":"(\d)","data":\{"group":"` + cliConsoleGroup + `"(?:,"topic":"` + cliConsoleTopic + `","partition":(\d+))?\}\}$`)

// gpValueChecks match what Kafka's decoder prints for a value of each
// consumer group record type, with the subscribed topic where there is one.
var gpValueChecks = map[string]*regexp.Regexp{
	"3": regexp.MustCompile(`^\{"version":"0","data":\{"epoch":[1-9]\d*\}\}$`),
	"5": regexp.MustCompile(`"subscribedTopicNames":\["` + cliGPTopic + `"\]`),
	"6": regexp.MustCompile(`^\{"version":"0","data":\{"assignmentEpoch":[1-9]\d*\}\}$`),
	"7": regexp.MustCompile(`"topicPartitions":\[\{"topicId":"[^"]+","partitions":\[\d`),
	"8": regexp.MustCompile(`"memberEpoch":[1-9]\d*,"previousMemberEpoch":\d+,"state":[012],"assignedPartitions":\[\{"topicId"`),
}

var cliCommittedOffset = regexp.MustCompile(`^\{"version":"\d+","data":\{"offset":(\d+),`)

// testDumpLog: DumpLogSegments shows every record the console producer
// wrote, at the offsets the consumers saw; the codec of each compressed
// topic; the console group's commits and its deletion in
// __consumer_offsets. Then the broker stops cleanly and the tool verifies
// the offset and time indexes against the segments and reads the perf
// producer's state from the producer snapshot.
func (e *cliEnv) testDumpLog(t *testing.T) {
	if len(e.console) == 0 {
		t.Fatal("nothing was produced")
	}
	codecs := []string{"gzip", "snappy", "lz4", "zstd"}
	var segs []string
	for p := int32(0); p < 3; p++ {
		segs = append(segs, e.segmentOf(cliConsoleTopic, p, ".log"))
	}
	for _, codec := range codecs {
		segs = append(segs, e.segmentOf("cli-"+codec, 0, ".log"))
	}
	dumped := e.dumpLogs(t, segs, "--deep-iteration", "--print-data-log")
	var console []cliRecord
	for p := int32(0); p < 3; p++ {
		seg := e.segmentOf(cliConsoleTopic, p, ".log")
		cliCheckBatches(t, seg, dumped[seg], true)
		console = append(console, cliDumpedRecords(t, p, dumped[seg])...)
	}
	sameCLIRecords(t, "DumpLogSegments of "+cliConsoleTopic, console, e.console)

	for _, codec := range codecs {
		seg := e.segmentOf("cli-"+codec, 0, ".log")
		batches := dumped[seg]
		cliCheckBatches(t, seg, batches, true)
		for i, b := range batches {
			if b.fields["compresscodec"] != codec {
				t.Errorf("%s batch %d: compresscodec %s", seg, i, b.fields["compresscodec"])
			}
		}
		got := cliDumpedRecords(t, 0, batches)
		for i, r := range got {
			if want := fmt.Sprintf("p0@%d %s-key-%d=%s value %d", i, codec, i, codec, i); r.String() != want {
				t.Fatalf("%s: record %d is %v, want %s", seg, i, r, want)
			}
		}
		if len(got) != 50 {
			t.Errorf("%s: %d records", seg, len(got))
		}
	}

	e.checkOffsetsTopic(t)

	if err := e.p.Stop(); err != nil {
		t.Fatalf("gregor did not stop cleanly: %v", err)
	}
	index, timeIndex := e.segmentOf(cliPerfTopic, 0, ".index"), e.segmentOf(cliPerfTopic, 0, ".timeindex")
	entries := 0
	for _, l := range cliLines(e.dump(t, []string{index}))[1:] {
		if m := cliPairs(t, l); m["offset"] != "" && m["position"] != "" {
			entries++
		}
	}
	if entries < 100 { // 2 MB of batches, an entry per 4 KB
		t.Errorf("%s has %d entries", index, entries)
	}
	out := e.dump(t, []string{index, timeIndex}, "--verify-index-only")
	for _, bad := range []string{"ismatch", "out of order", "orrupt", "xception"} {
		if strings.Contains(out, bad) {
			t.Errorf("--verify-index-only found problems:\n%s", out)
			break
		}
	}
	if !strings.Contains(out, "Dumping "+timeIndex) {
		t.Errorf("--verify-index-only did not read %s:\n%s", timeIndex, out)
	}
	e.checkSnapshot(t)
}

// cliGPKey matches a decoded __consumer_offsets key of the consumer
// protocol group (tools_group_protocol_test.go): its type (3 group epoch,
// 5 member, 6 assignment epoch, 7 target, 8 current assignment).
var cliGPKey = regexp.MustCompile(`^\{"type":"([35678])","data":\{"groupId":"` + cliGPGroup + `"(?:,"memberId":"[^"]+")?\}\}$`)

// offsetsSegments are the non-empty first segments of a log dir's
// __consumer_offsets partitions; there must be some.
func offsetsSegments(t *testing.T, dir string) []string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "__consumer_offsets-*", "00000000000000000000.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no __consumer_offsets segments: %v", err)
	}
	var written []string
	for _, seg := range segs {
		if st, err := os.Stat(seg); err == nil && st.Size() > 0 {
			written = append(written, seg)
		}
	}
	if len(written) == 0 {
		t.Fatal("every __consumer_offsets segment is empty")
	}
	return written
}

// checkOffsetsTopic decodes every non-empty __consumer_offsets segment:
// the console group committed each partition's end offset at some point,
// had the console consumer as a member, and its last records are the
// tombstones of kafka-consumer-groups --delete. The consumer protocol
// group's records (Kafka's ConsumerGroup* records) decode too: its
// epochs, its members' subscriptions and assignments, and, after its
// --delete, tombstones as the last value of every key.
func (e *cliEnv) checkOffsetsTopic(t *testing.T) {
	t.Helper()
	written := offsetsSegments(t, e.dir)
	ends := map[int32]int64{}
	for _, r := range e.console {
		ends[r.partition] = r.offset + 1
	}
	committedEnd := map[int32]bool{}
	last := map[string]string{} // key -> last payload
	member := false
	gpLast := map[string]string{}
	gpSeen := map[string]bool{} // record type -> a decoded value seen
	for seg, batches := range e.dumpLogs(t, written, "--offsets-decoder") {
		cliCheckBatches(t, seg, batches, true)
		for _, b := range batches {
			for _, r := range b.records {
				if m := cliGPKey.FindStringSubmatch(r.key); m != nil {
					gpLast[r.key] = r.payload
					if gpValueChecks[m[1]].MatchString(r.payload) {
						gpSeen[m[1]] = true
					}
					continue
				}
				m := cliOffsetsKey.FindStringSubmatch(r.key)
				if m == nil {
					continue
				}
				last[r.key] = r.payload
				if m[1] == "2" && strings.Contains(r.payload, `"clientId":"console-consumer"`) {
					member = true
				}
				if m[1] == "1" {
					p, _ := strconv.Atoi(m[2])
					if c := cliCommittedOffset.FindStringSubmatch(r.payload); c != nil && c[1] == strconv.FormatInt(ends[int32(p)], 10) {
						committedEnd[int32(p)] = true
					}
				}
			}
		}
	}
	for _, typ := range []string{"3", "5", "6", "7", "8"} {
		if !gpSeen[typ] {
			t.Errorf("__consumer_offsets: no decodable record of type %s for %s (%d keys of it)", typ, cliGPGroup, len(gpLast))
		}
	}
	for k, v := range gpLast {
		if v != "<DELETE>" {
			t.Errorf("after --delete of %s, the last value of %s is %s", cliGPGroup, k, v)
		}
	}
	if len(committedEnd) != 3 || !member {
		t.Errorf("__consumer_offsets: end offsets committed for partitions %v, console consumer member recorded: %v", committedEnd, member)
	}
	if len(last) != 4 { // three offset keys and the group's metadata key
		t.Errorf("__consumer_offsets holds %d keys of the group: %v", len(last), last)
	}
	for k, v := range last {
		if v != "<DELETE>" {
			t.Errorf("after --delete, the last value of %s is %s", k, v)
		}
	}
}

// checkSnapshot dumps the perf partition's producer snapshot, written at
// the clean stop: one producer whose last sequence and offset are the
// perf test's last record.
func (e *cliEnv) checkSnapshot(t *testing.T) {
	t.Helper()
	snaps, _ := filepath.Glob(filepath.Join(e.dir, cliPerfTopic+"-0", "*.snapshot"))
	if len(snaps) == 0 {
		t.Fatal("no producer snapshot after a clean stop")
	}
	snap := snaps[len(snaps)-1]
	ls := cliLines(e.dump(t, []string{snap}))
	if len(ls) != 2 || ls[0] != "Dumping "+snap {
		t.Fatalf("DumpLogSegments %s:\n%s", snap, strings.Join(ls, "\n"))
	}
	m := cliPairs(t, ls[1])
	want := strconv.Itoa(cliPerfRecords - 1)
	if m["producerEpoch"] != "0" || m["lastSequence"] != want || m["lastOffset"] != want {
		t.Errorf("snapshot entry %v, want last sequence and offset %s", m, want)
	}
}
