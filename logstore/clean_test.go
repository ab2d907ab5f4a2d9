package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/protocol"
)

// kv is a record of a compaction test; a nil value is a tombstone.
type kv struct {
	key   string
	value []byte
}

// keyedBatch builds a client batch of records with keys (offsets from 0,
// timestamps ts) in codec, optionally idempotent.
func keyedBatch(t testing.TB, recs []kv, ts int64, codec int16, pid int64, epoch int16, seq int32) []byte {
	t.Helper()
	rs := make([]protocol.Record, len(recs))
	for i, r := range recs {
		rs[i] = protocol.Record{Offset: int64(i), Timestamp: ts, Key: []byte(r.key), Value: r.value}
	}
	b, err := protocol.AppendBatch(nil, protocol.BatchHeader{PartitionLeaderEpoch: -1, Attributes: codec,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, rs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// model is what a compacted log must show: for each key its last offset
// and value, and every record appended, by offset.
type model struct {
	last    map[string]int64
	records map[int64]kv
}

func newModel() *model { return &model{last: map[string]int64{}, records: map[int64]kv{}} }

// appendKeyed appends one batch of recs and records it in the model.
func (m *model) appendKeyed(t testing.TB, l *Log, recs []kv, codec int16) {
	t.Helper()
	res := mustAppend(t, l, keyedBatch(t, recs, time.Now().UnixMilli(), codec, -1, -1, -1), noStamp)
	for i, r := range recs {
		m.records[res.BaseOffset+int64(i)] = r
		m.last[r.key] = res.BaseOffset + int64(i)
	}
	l.SetHighWatermark(l.LogEndOffset())
}

var codecs = []int16{protocol.CompressionNone, protocol.CompressionGzip, protocol.CompressionSnappy, protocol.CompressionLz4, protocol.CompressionZstd}

// fillKeyed appends n batches of 5 records over keys k0..k(keys-1), about
// one in eight a tombstone, in every codec in turn.
func (m *model) fillKeyed(t testing.TB, l *Log, rng *rand.Rand, n, keys int) {
	t.Helper()
	for i := 0; i < n; i++ {
		recs := make([]kv, 5)
		for j := range recs {
			k := fmt.Sprintf("k%d", rng.Intn(keys))
			var v []byte
			if rng.Intn(8) != 0 {
				v = fmt.Appendf(nil, "value of %s at %d.%d %s", k, i, j, bytes.Repeat([]byte("x"), rng.Intn(40)))
			}
			recs[j] = kv{k, v}
		}
		m.appendKeyed(t, l, recs, codecs[i%len(codecs)])
	}
}

// readRecord is a record read back from the log.
type readRecord struct {
	offset int64
	key    string
	value  []byte
}

// readLog reads the whole log from its start the way a consumer does,
// checking every batch, and returns the records and the batch headers.
func readLog(t testing.TB, l *Log) ([]readRecord, []protocol.BatchHeader) {
	t.Helper()
	var recs []readRecord
	var hdrs []protocol.BatchHeader
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		res, err := l.Read(off, 1<<20, l.LogEndOffset())
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(res.Records) == 0 {
			break
		}
		for p := 0; p < len(res.Records); {
			h := decodeHeader(res.Records[p:])
			b := res.Records[p : p+h.Size()]
			if _, err := protocol.ValidateStoredBatch(b); err != nil {
				t.Fatalf("batch at %d: %v", h.BaseOffset, err)
			}
			hdrs = append(hdrs, h)
			err := protocol.Records(b, func(r *protocol.Record) error {
				if r.Offset >= off {
					recs = append(recs, readRecord{r.Offset, string(r.Key), bytes.Clone(r.Value)})
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			p += h.Size()
		}
		off = res.NextOffset
	}
	return recs, hdrs
}

// checkCompacted checks the log against the model after cleans up to
// cleanedTo: below it exactly each key's last record (and no tombstone
// when tombstonesGone), from it on every record; offsets strictly
// increasing; and the latest value of every key the same as the model's.
func (m *model) checkCompacted(t testing.TB, l *Log, cleanedTo int64, tombstonesGone bool) {
	t.Helper()
	recs, _ := readLog(t, l)
	lastBelow := map[string]int64{}
	for off, r := range m.records {
		if off < cleanedTo && off >= lastBelow[r.key] {
			lastBelow[r.key] = off
		}
	}
	var want []int64
	for off, r := range m.records {
		if off < l.LogStartOffset() {
			continue
		}
		if off >= cleanedTo || (lastBelow[r.key] == off && !(tombstonesGone && r.value == nil)) {
			want = append(want, off)
		}
	}
	slices.Sort(want)
	got := make([]int64, len(recs))
	for i, r := range recs {
		got[i] = r.offset
		if i > 0 && r.offset <= recs[i-1].offset {
			t.Fatalf("offsets do not increase: %d after %d", r.offset, recs[i-1].offset)
		}
		w := m.records[r.offset]
		if r.key != w.key || !bytes.Equal(r.value, w.value) || (r.value == nil) != (w.value == nil) {
			t.Fatalf("record %d: got %s=%q, appended %s=%q", r.offset, r.key, r.value, w.key, w.value)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("kept offsets differ:\n got  %v\n want %v", got, want)
	}
	m.checkNewest(t, recs)
}

// checkNewest checks that the last record of every key read is the
// model's last record of that key (a key whose last record is a
// tombstone may be missing altogether).
func (m *model) checkNewest(t testing.TB, recs []readRecord) {
	t.Helper()
	seen := map[string]int64{}
	for _, r := range recs {
		seen[r.key] = r.offset
	}
	for k, off := range m.last {
		got, ok := seen[k]
		if !ok && m.records[off].value == nil {
			continue
		}
		if got != off {
			t.Fatalf("key %s: newest offset read %d (present %v), appended %d", k, got, ok, off)
		}
	}
}

func compactConfig() Config {
	c := testConfig()
	c.Compact, c.Delete = true, false
	c.SegmentBytes = 4000
	c.DeleteRetentionMs = int64(time.Hour / time.Millisecond)
	return c
}

func newCompactedLog(t testing.TB, cfg Config) (*Dir, *Log) {
	t.Helper()
	d := openTestDir(t, t.TempDir())
	d.SetCleaner(0, time.Second) // the tests clean with CleanNow
	t.Cleanup(func() { d.Close() })
	l, err := d.CreateLog(TopicPartition{"c", 0}, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d, l
}

func TestCompactionKeepsNewestPerKey(t *testing.T) {
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 0 // tombstones go at the clean after the first
	d, l := newCompactedLog(t, cfg)
	m := newModel()
	rng := rand.New(rand.NewSource(1))
	m.fillKeyed(t, l, rng, 300, 60)
	before := l.Size()
	active := l.active().base

	end, err := d.CleanNow(l.TopicPartition())
	if err != nil {
		t.Fatal(err)
	}
	if end != active {
		t.Fatalf("cleaned to %d, the active segment starts at %d", end, active)
	}
	if ck, ok := d.CleanerCheckpoint(l.TopicPartition()); !ok || ck != end {
		t.Fatalf("cleaner checkpoint %d %v", ck, ok)
	}
	if got := string(readFileOrEmpty(filepath.Join(d.Path(), cleanerFile))); got != fmt.Sprintf("0\n1\nc 0 %d\n", end) {
		t.Fatalf("cleaner-offset-checkpoint %q", got)
	}
	m.checkCompacted(t, l, end, false) // first clean: tombstones get their horizon and stay
	if l.Size() >= before/2 {
		t.Fatalf("cleaning shrank %d bytes only to %d", before, l.Size())
	}
	_, hdrs := readLog(t, l)
	horizons := 0
	for _, h := range hdrs {
		if _, ok := h.DeleteHorizon(); ok {
			horizons++
		}
	}
	if horizons == 0 {
		t.Fatal("no batch got a delete horizon")
	}

	// The next clean, once delete.retention.ms (0) has passed, drops the
	// tombstones of the first round.
	first := time.Now().UnixMilli()
	waitFor(t, "the clock to move", func() bool { return time.Now().UnixMilli() > first })
	m.fillKeyed(t, l, rng, 40, 60)
	end2, err := d.CleanNow(l.TopicPartition())
	if err != nil || end2 <= end {
		t.Fatalf("second clean to %d: %v", end2, err)
	}
	recs, _ := readLog(t, l)
	for _, r := range recs {
		if r.offset < end && r.value == nil {
			t.Fatalf("tombstone at %d survived its delete horizon", r.offset)
		}
	}
	m.checkNewest(t, recs)

	// Reopened, the log reads the same.
	path := d.Path()
	d.Close()
	d = openTestDir(t, path)
	defer d.Close()
	recs2, _ := readLog(t, d.Log(TopicPartition{"c", 0}))
	if !slices.EqualFunc(recs, recs2, func(a, b readRecord) bool {
		return a.offset == b.offset && a.key == b.key && bytes.Equal(a.value, b.value)
	}) {
		t.Fatal("the log reads differently after reopening")
	}
}

func TestCompactionWithSmallOffsetMap(t *testing.T) {
	d, l := newCompactedLog(t, compactConfig())
	d.cleaner.mu.Lock()
	d.cleaner.mapEntries = 25 // fewer than the 60 keys: each clean maps part of the dirty section
	d.cleaner.mu.Unlock()
	m := newModel()
	m.fillKeyed(t, l, rand.New(rand.NewSource(2)), 200, 60)
	active := l.active().base
	var ends []int64
	for end := int64(0); end < active; {
		var err error
		if end, err = d.CleanNow(l.TopicPartition()); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, end)
		if len(ends) > 100 {
			t.Fatalf("cleaning makes no progress: %v", ends)
		}
		recs, _ := readLog(t, l)
		m.checkNewest(t, recs)
	}
	if len(ends) < 3 {
		t.Fatalf("the small map cleaned everything in %d passes", len(ends))
	}
	m.checkCompacted(t, l, active, false)
}

func TestCompactionKeepsProducersLastBatch(t *testing.T) {
	path := t.TempDir()
	d := openTestDir(t, path)
	d.SetCleaner(0, time.Second)
	l, err := d.CreateLog(TopicPartition{"c", 0}, RandomUUID(), compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	mustAppend(t, l, keyedBatch(t, []kv{{"a", []byte("1")}, {"b", []byte("1")}}, now, 0, 7, 0, 0), noStamp)    // 0-1 seq 0-1
	mustAppend(t, l, keyedBatch(t, []kv{{"a", []byte("2")}, {"b", []byte("2")}}, now, 0, 7, 0, 2), noStamp)    // 2-3 seq 2-3
	mustAppend(t, l, keyedBatch(t, []kv{{"a", []byte("3")}, {"b", []byte("3")}}, now, 0, -1, -1, -1), noStamp) // 4-5
	for i := 0; i < 40; i++ {
		mustAppend(t, l, keyedBatch(t, []kv{{"c", []byte("x")}}, now, 0, -1, -1, -1), noStamp)
	}
	l.SetHighWatermark(l.LogEndOffset())
	cfg := l.Config()
	cfg.SegmentBytes = 100 // roll at the next append
	l.SetConfig(cfg)
	mustAppend(t, l, keyedBatch(t, []kv{{"d", []byte("x")}}, now, 0, -1, -1, -1), noStamp)
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := d.CleanNow(l.TopicPartition()); err != nil {
		t.Fatal(err)
	}
	_, hdrs := readLog(t, l)
	// Batch 0-1 went; 2-3, the producer's last, stays as an empty batch with
	// its sequence numbers; 4-5 stays whole; of the c batches only the last,
	// and the last before the active segment is that one.
	if hdrs[0].BaseOffset != 2 || hdrs[0].RecordCount != 0 || hdrs[0].LastOffsetDelta != 1 || hdrs[0].ProducerID != 7 ||
		hdrs[0].BaseSequence != 2 || hdrs[0].BaseTimestamp != -1 || hdrs[0].MaxTimestamp != now {
		t.Fatalf("first batch after cleaning: %+v", hdrs[0])
	}
	if hdrs[1].BaseOffset != 4 || hdrs[1].RecordCount != 2 || hdrs[2].BaseOffset != 45 || len(hdrs) != 4 {
		t.Fatalf("batches after cleaning: %+v", hdrs)
	}
	d.crash()
	d = openTestDir(t, path)
	defer d.Close()
	l = d.Log(TopicPartition{"c", 0})
	// The producer state rebuilt from the compacted log still knows seq 3.
	dup := keyedBatch(t, []kv{{"a", []byte("2")}, {"b", []byte("2")}}, now, 0, 7, 0, 2)
	if res, err := l.Append(dup, noStamp); err != nil || !res.Duplicate || res.BaseOffset != 2 {
		t.Fatalf("retry of the last batch: %+v %v", res, err)
	}
	if _, err := l.Append(keyedBatch(t, []kv{{"a", []byte("5")}}, now, 0, 7, 0, 5), noStamp); ErrorCode(err) != CodeOutOfOrderSequenceNumber {
		t.Fatalf("sequence gap: %v", err)
	}
	mustAppend(t, l, keyedBatch(t, []kv{{"a", []byte("4")}}, now, 0, 7, 0, 4), noStamp)
}

func TestCompactionLagSettings(t *testing.T) {
	cfg := compactConfig()
	cfg.MinCompactionLagMs = int64(time.Hour / time.Millisecond)
	d, l := newCompactedLog(t, cfg)
	m := newModel()
	m.fillKeyed(t, l, rand.New(rand.NewSource(3)), 60, 10)
	// Everything is younger than min.compaction.lag.ms: nothing to clean.
	if end, err := d.CleanNow(l.TopicPartition()); err != nil || end != 0 {
		t.Fatalf("clean within the lag: %d %v", end, err)
	}
	c := l.cleanableRange(-1, time.Now().UnixMilli())
	if c.cleanableBytes != 0 || c.needNow {
		t.Fatalf("cleanable within the lag: %+v", c)
	}
	// max.compaction.lag.ms: a log whose oldest dirty segment began longer
	// ago must be cleaned whatever its ratio.
	cfg.MinCompactionLagMs = 0
	cfg.MaxCompactionLagMs = 1
	cfg.MinCleanableDirtyRatio = 1
	l.SetConfig(cfg)
	if c := l.cleanableRange(-1, time.Now().UnixMilli()+10); !c.needNow || c.cleanableBytes == 0 {
		t.Fatalf("max lag passed but no clean needed: %+v", c)
	}
	if cleaned, err := d.cleaner.cleanFilthiest(func() bool { return false }); !cleaned || err != nil {
		t.Fatalf("cleaner skipped a log past max.compaction.lag.ms: %v", err)
	}
	m.checkCompacted(t, l, l.active().base, false)
}

func TestBackgroundCleanerPicksDirtyLogs(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	defer d.Close()
	d.SetCleaner(0, time.Second)
	cfg := compactConfig()
	dirty, err := d.CreateLog(TopicPartition{"dirty", 0}, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MinCleanableDirtyRatio = 1 // never dirty enough
	lazy, err := d.CreateLog(TopicPartition{"lazy", 0}, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	plainCfg := compactConfig()
	plainCfg.Compact, plainCfg.Delete = false, true
	deleteOnly, err := d.CreateLog(TopicPartition{"delete", 0}, RandomUUID(), plainCfg)
	if err != nil {
		t.Fatal(err)
	}
	m := newModel()
	for _, l := range []*Log{dirty, lazy, deleteOnly} {
		m.fillKeyed(t, l, rand.New(rand.NewSource(4)), 80, 10)
	}
	if r := dirty.cleanableRange(-1, time.Now().UnixMilli()).ratio(); r != 1 {
		t.Fatalf("a never cleaned log has dirty ratio %v", r)
	}
	d.SetCleaner(2, 5*time.Millisecond)
	waitFor(t, "the cleaner", func() bool { _, ok := d.CleanerCheckpoint(dirty.TopicPartition()); return ok })
	// The cleaner goes on looking; the others never qualify.
	d.SetCleaner(0, time.Second)
	if _, ok := d.CleanerCheckpoint(lazy.TopicPartition()); ok {
		t.Fatal("a log below min.cleanable.dirty.ratio was cleaned")
	}
	if _, ok := d.CleanerCheckpoint(deleteOnly.TopicPartition()); ok {
		t.Fatal("a log without the compact policy was cleaned")
	}
	if cleaned, err := d.cleaner.cleanFilthiest(func() bool { return false }); cleaned || err != nil {
		t.Fatalf("a clean log chosen again: %v", err)
	}
}

func TestReadsDuringCleaning(t *testing.T) {
	d, l := newCompactedLog(t, compactConfig())
	m := newModel()
	rng := rand.New(rand.NewSource(5))
	m.fillKeyed(t, l, rng, 150, 40)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for off := l.LogStartOffset(); off < l.LogEndOffset(); {
					res, err := l.Read(off, 4096, l.LogEndOffset())
					if err != nil {
						errs <- err
						return
					}
					if len(res.Records) == 0 {
						break
					}
					off = res.NextOffset
				}
			}
		}()
	}
	for i := 0; i < 5; i++ {
		m.fillKeyed(t, l, rng, 30, 40)
		if _, err := d.CleanNow(l.TopicPartition()); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("read during cleaning: %v", err)
	default:
	}
	m.checkCompacted(t, l, l.active().base, false)
}

var errInjected = errors.New("injected crash")

func TestCrashDuringSwap(t *testing.T) {
	// One image, cleaned with a crash injected before a file operation of
	// the swap: each one of the first two groups and of the last group.
	src := t.TempDir()
	d := openTestDir(t, src)
	d.SetCleaner(0, time.Second)
	cfg := compactConfig()
	cfg.SegmentBytes = 600 // small segments, grouped by two or three when cleaned
	l, err := d.CreateLog(TopicPartition{"c", 0}, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := newModel()
	m.fillKeyed(t, l, rand.New(rand.NewSource(6)), 60, 20)
	active := l.active().base
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.SegmentBytes = 1500
	tp := TopicPartition{"c", 0}
	open := func(root string) *Dir {
		d := openTestDir(t, root)
		d.SetCleaner(0, time.Second)
		d.Log(tp).SetConfig(cfg) // topic configs are the broker's to keep
		return d
	}
	// cleanCrashingAt cleans a copy of the image, failing the k-th step;
	// it returns the copy and the step's name ("" when there were fewer).
	cleanCrashingAt := func(k int) (string, string, int) {
		root := t.TempDir()
		copyTree(t, src, root)
		d := open(root)
		n := 0
		var at string
		d.cleaner.step = func(what string) error {
			if n == k {
				at = what
				return errInjected
			}
			n++
			return nil
		}
		if _, err := d.CleanNow(tp); err != nil && !errors.Is(err, errInjected) {
			t.Fatalf("step %d: %v", k, err)
		}
		d.crash()
		return root, at, n
	}
	_, _, total := cleanCrashingAt(-1)
	groups := 0
	for _, g := range groupSegments(segmentsIn(l.segments(), 0, active), cfg, active) {
		if len(g) > 1 {
			groups++
		}
	}
	t.Logf("%d swap steps, %d multi-segment groups", total, groups)
	if total < 30 || groups < 2 {
		t.Fatalf("%d swap steps in %d multi-segment groups: not enough to test", total, groups)
	}
	for k := 0; k < total; k++ {
		if k == 30 {
			k = total - 15
		}
		root, at, _ := cleanCrashingAt(k)
		d := open(root)
		l := d.Log(tp)
		recs, _ := readLog(t, l)
		m.checkNewest(t, recs)
		if l.LogEndOffset() != int64(len(m.records)) {
			t.Fatalf("crash at step %d (%s): log end %d", k, at, l.LogEndOffset())
		}
		for _, suffix := range []string{cleanedSuffix, swapSuffix, deletedSuffix} {
			if f := filesWithSuffix(t, l.Dir(), suffix); len(f) > 0 {
				t.Fatalf("crash at step %d (%s): %v left after open", k, at, f)
			}
		}
		end, err := d.CleanNow(tp)
		if err != nil || end != active {
			t.Fatalf("crash at step %d (%s): the next clean: %d %v", k, at, end, err)
		}
		m.checkCompacted(t, l, active, false)
		d.Close()
	}
}

func TestCleanerCheckpointDropsMissingLogs(t *testing.T) {
	path := t.TempDir()
	d := openTestDir(t, path)
	if _, err := d.CreateLog(TopicPartition{"here", 0}, RandomUUID(), compactConfig()); err != nil {
		t.Fatal(err)
	}
	d.Close()
	ck := map[TopicPartition]int64{{"here", 0}: 0, {"gone", 3}: 500}
	if err := writeOffsetCheckpoint(filepath.Join(path, cleanerFile), ck); err != nil {
		t.Fatal(err)
	}
	d = openTestDir(t, path)
	defer d.Close()
	if _, ok := d.CleanerCheckpoint(TopicPartition{"gone", 3}); ok {
		t.Fatal("checkpoint of a missing log kept")
	}
	if off, ok := d.CleanerCheckpoint(TopicPartition{"here", 0}); !ok || off != 0 {
		t.Fatalf("checkpoint of an existing log: %d %v", off, ok)
	}
}

// A compressed record above max.decompressed.message.bytes fails the clean
// and leaves the log as it was, uncleanable until the limit changes; an
// uncompressed one is not held to the limit.
func TestCleanerHonoursRecordLimit(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	defer d.Close()
	d.SetCleaner(0, time.Second)
	cfg := compactConfig()
	cfg.MaxDecompressedRecordBytes = 8 // below every record's body
	mixed, err := d.CreateLog(TopicPartition{"mixed", 0}, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := newModel()
	m.fillKeyed(t, mixed, rand.New(rand.NewSource(5)), 80, 10)
	before, _ := readLog(t, mixed)
	if cleaned, err := d.cleaner.cleanFilthiest(func() bool { return false }); !cleaned || !errors.Is(err, protocol.ErrRecordTooLarge) {
		t.Fatalf("clean over the record limit: cleaned %v, %v", cleaned, err)
	}
	if after, _ := readLog(t, mixed); !slices.EqualFunc(before, after, func(a, b readRecord) bool {
		return a.offset == b.offset && a.key == b.key && bytes.Equal(a.value, b.value)
	}) {
		t.Fatal("a failed clean changed the log")
	}
	if d.Offline() != nil {
		t.Fatalf("a record over the limit took the dir offline: %v", d.Offline())
	}
	if cleaned, err := d.cleaner.cleanFilthiest(func() bool { return false }); cleaned || err != nil {
		t.Fatalf("an uncleanable log was tried again at the same limit: %v", err)
	}
	cfg.MaxDecompressedRecordBytes = 0
	mixed.SetConfig(cfg)
	if cleaned, err := d.cleaner.cleanFilthiest(func() bool { return false }); !cleaned || err != nil {
		t.Fatalf("clean after the limit was raised: cleaned %v, %v", cleaned, err)
	}
	m.checkCompacted(t, mixed, mixed.active().base, false)

	cfg.MaxDecompressedRecordBytes = 8
	plainLog, err := d.CreateLog(TopicPartition{"uncompressed", 0}, RandomUUID(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	pm, rng := newModel(), rand.New(rand.NewSource(6))
	for i := 0; i < 80; i++ {
		recs := make([]kv, 5)
		for j := range recs {
			k := fmt.Sprintf("k%d", rng.Intn(10))
			recs[j] = kv{k, fmt.Appendf(nil, "value of %s at %d.%d", k, i, j)}
		}
		pm.appendKeyed(t, plainLog, recs, protocol.CompressionNone)
	}
	if _, err := d.CleanNow(plainLog.TopicPartition()); err != nil {
		t.Fatalf("uncompressed records were held to the limit: %v", err)
	}
	pm.checkCompacted(t, plainLog, plainLog.active().base, false)
}

// max.compaction.lag.ms shortens segment.ms for a compacted log (Kafka's
// LogConfig.maxSegmentMs), so records in the active segment become
// cleanable within the lag; a log without the compact policy rolls by
// segment.ms alone.
func TestMaxCompactionLagRollsTheActiveSegment(t *testing.T) {
	cfg := compactConfig()
	cfg.SegmentMs = int64(time.Hour / time.Millisecond)
	cfg.MaxCompactionLagMs = 100
	_, l := newCompactedLog(t, cfg)
	for _, ts := range []int64{1000, 1100, 1101} {
		mustAppend(t, l, keyedBatch(t, []kv{{"k", []byte("v")}}, ts, 0, -1, -1, -1), noStamp)
	}
	// 1101 is more than max.compaction.lag.ms newer than the first batch.
	if got := fmt.Sprint(segmentBases(l)); got != "[0 2]" {
		t.Fatalf("compacted log segments %s, want [0 2]", got)
	}

	cfg.Compact, cfg.Delete = false, true
	_, l = newTestLog(t, cfg)
	for _, ts := range []int64{1000, 1100, 1101} {
		mustAppend(t, l, keyedBatch(t, []kv{{"k", []byte("v")}}, ts, 0, -1, -1, -1), noStamp)
	}
	if got := fmt.Sprint(segmentBases(l)); got != "[0]" {
		t.Fatalf("delete-only log segments %s, want [0]", got)
	}
}

// Each cleaner thread's offset map is sized from its share of
// log.cleaner.dedupe.buffer.size, at most 2 GiB of it (Kafka's
// SkimpyOffsetMap takes an int size and ignores the excess).
func TestDedupeBufferPerThreadCap(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	defer d.Close()
	d.SetCleanerDedupeBufferSize(4<<20, 2) // (2 MiB / 24 bytes) * 0.9
	if want := 78642; d.cleaner.mapEntries != want {
		t.Fatalf("4 MiB over 2 threads: %d entries, want %d", d.cleaner.mapEntries, want)
	}
	d.SetCleanerDedupeBufferSize(8<<30, 2) // ((2^31 - 1) / 24) * 0.9
	if want := 80530636; d.cleaner.mapEntries != want {
		t.Fatalf("4 GiB per thread: %d entries, want the 2 GiB cap's %d", d.cleaner.mapEntries, want)
	}
}

// A clean in progress stops when the log's cleanup policy drops compact
// (Kafka's LogManager.updateTopicConfig aborts it): the segments not yet
// swapped in keep every record, and no first dirty offset is recorded.
func TestCleanStopsWhenCompactIsTurnedOff(t *testing.T) {
	cfg := compactConfig()
	d, l := newCompactedLog(t, cfg)
	m := newModel()
	m.fillKeyed(t, l, rand.New(rand.NewSource(5)), 120, 10)
	l.SetHighWatermark(l.LogEndOffset())
	if n := len(l.segments()); n < 4 {
		t.Fatalf("%d segments, want several groups to clean", n)
	}
	lastSeg := l.segments()[len(l.segments())-2]
	before := lastSeg.size.Load()
	// Once the first group is swapped in, the policy changes before the
	// next batch is read (the throttle's clock is read for every batch,
	// outside the log's lock, where step is called).
	swapped, changed := false, false
	d.cleaner.step = func(string) error { swapped = true; return nil }
	th := NewIOThrottle(1e18)
	th.now = func() time.Time {
		if swapped && !changed {
			changed = true
			cfg.Compact, cfg.Delete = false, true
			l.SetConfig(cfg)
		}
		return time.Now()
	}
	d.SetCleanerThrottle(th)
	if _, err := d.CleanNow(l.TopicPartition()); !errors.Is(err, errCleanAborted) {
		t.Fatalf("clean after compact was turned off: %v", err)
	}
	if _, ok := d.CleanerCheckpoint(l.TopicPartition()); ok {
		t.Fatal("an aborted clean recorded a first dirty offset")
	}
	if s := l.segments()[len(l.segments())-2]; s != lastSeg || s.size.Load() != before {
		t.Fatal("the last segment to clean was cleaned after compact was turned off")
	}
}

// An empty key is a key, and an empty value is a value, not a tombstone,
// as in Kafka (hasKey / hasValue: not null): a rebuilt batch keeps them
// empty, even as the first bytes a clean copies.
func TestCleanKeepsEmptyKeysAndValues(t *testing.T) {
	d, l := newCompactedLog(t, compactConfig())
	mustAppend(t, l, keyedBatch(t, []kv{{"", []byte{}}, {"k", []byte("1")}}, 1000, 0, -1, -1, -1), noStamp) // 0-1
	mustAppend(t, l, keyedBatch(t, []kv{{"k", []byte("2")}}, 1000, 0, -1, -1, -1), noStamp)                 // 2: supersedes 1
	l.mu.Lock()
	if _, err := l.roll(l.end.Load()); err != nil {
		t.Fatal(err)
	}
	l.mu.Unlock()
	mustAppend(t, l, keyedBatch(t, []kv{{"x", []byte("3")}}, 1000, 0, -1, -1, -1), noStamp) // active
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := d.CleanNow(l.TopicPartition()); err != nil {
		t.Fatal(err)
	}
	res, err := l.Read(0, 1<<20, l.LogEndOffset()) // the cleaned segment
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for p := 0; p < len(res.Records) && err == nil; {
		h := decodeHeader(res.Records[p:])
		err = protocol.Records(res.Records[p:p+h.Size()], func(r *protocol.Record) error {
			got = append(got, fmt.Sprintf("%d key nil=%v %q value nil=%v %q", r.Offset, r.Key == nil, r.Key, r.Value == nil, r.Value))
			return nil
		})
		p += h.Size()
	}
	want := []string{`0 key nil=false "" value nil=false ""`, `2 key nil=false "k" value nil=false "2"`}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("after cleaning: %q %v, want %q", got, err, want)
	}
}
