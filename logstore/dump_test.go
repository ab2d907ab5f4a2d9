package logstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dumpBatch encodes a v2 batch of records (offset deltas 0.., timestamps
// baseTs + i) compressed with codec, CRC set.
func dumpBatch(t *testing.T, codec int8, baseTs int64, recs []kmsg.Record) []byte {
	t.Helper()
	var raw []byte
	for i := range recs {
		r := recs[i]
		r.OffsetDelta, r.TimestampDelta64 = int32(i), int64(i)
		r.Length = int32(len(r.AppendTo(nil)) - 1) // Length 0 takes one byte
		raw = r.AppendTo(raw)
	}
	data := raw
	if codec != protocol.CompressionNone {
		var err error
		if data, err = protocol.Compress(codec, raw); err != nil {
			t.Fatal(err)
		}
	}
	b := kmsg.RecordBatch{
		Length: int32(protocol.BatchHeaderSize - protocol.LogOverhead + len(data)), PartitionLeaderEpoch: -1,
		Magic: 2, Attributes: int16(codec), LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: baseTs, MaxTimestamp: baseTs + int64(len(recs)-1),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(recs)), Records: data,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], protocol.BatchCRC(out))
	return out
}

// dumpedLog is a closed partition written through the Log API, with the
// positions and headers of its batches read back from the .log.
type dumpedLog struct {
	dir     string
	end     int64
	pos     []int64
	headers []protocol.BatchHeader
}

func (d *dumpedLog) file(suffix string) string { return segmentPath(d.dir, 0, suffix) }

// batchAtPos is the header of the batch starting at pos.
func (d *dumpedLog) batchAtPos(t *testing.T, pos int64) protocol.BatchHeader {
	t.Helper()
	for i, p := range d.pos {
		if p == pos {
			return d.headers[i]
		}
	}
	t.Fatalf("no batch starts at position %d", pos)
	return protocol.BatchHeader{}
}

// writeDumpedLog appends 8 plain batches, one with keys, headers and a
// null record, one gzip batch and one idempotent batch, all in leader
// epoch 3, and closes the log.
func writeDumpedLog(t *testing.T) *dumpedLog {
	d, l := newTestLog(t, testConfig()) // an index entry every 256 bytes
	opts := AppendOptions{LogAppendTime: -1, LeaderEpoch: 3}
	for i := 0; i < 8; i++ {
		s := plain(5, 1000+l.LogEndOffset())
		s.fill = byte('a' + i)
		mustAppend(t, l, s.build(), opts)
	}
	mustAppend(t, l, dumpBatch(t, protocol.CompressionNone, 5000, []kmsg.Record{
		{Key: []byte("k1"), Value: []byte("hello"), Headers: []kmsg.Header{{Key: "h1", Value: []byte("x")}, {Key: "h2"}}},
		{},
	}), opts)
	mustAppend(t, l, dumpBatch(t, protocol.CompressionGzip, 6000, []kmsg.Record{
		{Key: []byte("g0"), Value: []byte("v0")}, {Key: []byte("g1"), Value: []byte("v1")}, {Key: []byte("g2"), Value: []byte("v2")},
	}), opts)
	mustAppend(t, l, idem(7, 0, 0, 4).build(), opts)
	dl := &dumpedLog{dir: l.Dir(), end: l.LogEndOffset()}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(dl.file(logSuffix))
	if err != nil {
		t.Fatal(err)
	}
	for pos := 0; pos < len(data); {
		h := decodeHeader(data[pos:])
		dl.pos, dl.headers = append(dl.pos, int64(pos)), append(dl.headers, h)
		pos += h.Size()
	}
	if len(dl.headers) != 11 {
		t.Fatalf("%d batches in the segment, want 11", len(dl.headers))
	}
	return dl
}

// dump runs DumpFile and returns its lines (without the "Dumping" line,
// which it checks) and report.
func dump(t *testing.T, path string, opts DumpOptions) ([]string, *DumpReport) {
	t.Helper()
	var out bytes.Buffer
	r, err := DumpFile(&out, path, opts)
	if err != nil {
		t.Fatalf("DumpFile(%s): %v", path, err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if lines[0] != "Dumping "+path {
		t.Fatalf("first line %q", lines[0])
	}
	return lines[1:], r
}

func problems(r *DumpReport) string {
	var b bytes.Buffer
	r.WriteProblems(&b)
	return b.String()
}

func TestDumpLogBatchesAndRecords(t *testing.T) {
	dl := writeDumpedLog(t)
	lines, r := dump(t, dl.file(logSuffix), DumpOptions{})
	if r.Corrupt() || len(r.NonConsecutive) > 0 {
		t.Fatalf("clean log reported: %s", problems(r))
	}
	if lines[0] != "Log starting offset: 0" || len(lines) != 1+len(dl.headers) {
		t.Fatalf("got %d lines, first %q", len(lines), lines[0])
	}
	want := fmt.Sprintf("baseOffset: 0 lastOffset: 4 count: 5 baseSequence: -1 lastSequence: -1 producerId: -1 "+
		"producerEpoch: -1 partitionLeaderEpoch: 3 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty "+
		"position: 0 CreateTime: 1004 size: 196 magic: 2 compresscodec: none crc: %d isvalid: true", dl.headers[0].CRC)
	if lines[1] != want {
		t.Fatalf("first batch:\n got %s\nwant %s", lines[1], want)
	}
	for i, h := range dl.headers {
		prefix := fmt.Sprintf("baseOffset: %d lastOffset: %d count: %d ", h.BaseOffset, h.LastOffset(), h.RecordCount)
		middle := fmt.Sprintf(" position: %d CreateTime: %d size: %d ", dl.pos[i], h.MaxTimestamp, h.Size())
		if l := lines[1+i]; !strings.HasPrefix(l, prefix) || !strings.Contains(l, middle) || !strings.HasSuffix(l, "isvalid: true") {
			t.Errorf("batch %d: %s", i, l)
		}
	}
	if l := lines[10]; !strings.Contains(l, "compresscodec: gzip") {
		t.Errorf("gzip batch: %s", l)
	}
	if l := lines[11]; !strings.Contains(l, "baseSequence: 0 lastSequence: 3 producerId: 7 producerEpoch: 0 ") {
		t.Errorf("idempotent batch: %s", l)
	}

	// Records, with keys and values.
	lines, r = dump(t, dl.file(logSuffix), DumpOptions{PrintData: true})
	if r.Corrupt() || len(r.NonConsecutive) > 0 {
		t.Fatalf("clean log reported: %s", problems(r))
	}
	var records []string
	for _, l := range lines {
		if strings.HasPrefix(l, "| ") {
			records = append(records, l)
		}
	}
	if int64(len(records)) != dl.end || len(lines) != 1+len(dl.headers)+len(records) {
		t.Fatalf("%d record lines of %d lines, want %d records", len(records), len(lines), dl.end)
	}
	for i, want := range map[int]string{
		0:  "| offset: 0 CreateTime: 1000 keySize: -1 valueSize: 20 sequence: -1 headerKeys: [] payload: aaaaaaaaaaaaaaaaaaaa",
		40: "| offset: 40 CreateTime: 5000 keySize: 2 valueSize: 5 sequence: -1 headerKeys: [h1,h2] key: k1 payload: hello",
		41: "| offset: 41 CreateTime: 5001 keySize: -1 valueSize: -1 sequence: -1 headerKeys: []",
		43: "| offset: 43 CreateTime: 6001 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [] key: g1 payload: v1",
		48: "| offset: 48 CreateTime: 1003 keySize: -1 valueSize: 20 sequence: 3 headerKeys: [] payload: " + strings.Repeat("y", 20),
	} {
		if records[i] != want {
			t.Errorf("record %d:\n got %s\nwant %s", i, records[i], want)
		}
	}

	// Deep iteration without data; and records alone.
	lines, _ = dump(t, dl.file(logSuffix), DumpOptions{Deep: true})
	if l := lines[2]; l != "| offset: 0 CreateTime: 1000 keySize: -1 valueSize: 20 sequence: -1 headerKeys: []" {
		t.Errorf("deep record line: %s", l)
	}
	lines, _ = dump(t, dl.file(logSuffix), DumpOptions{PrintData: true, SkipRecordMetadata: true})
	if l := lines[len(lines)-6]; l != "| key: g2 payload: v2" {
		t.Errorf("record without metadata: %q", l)
	}
}

func TestDumpIndexesAndState(t *testing.T) {
	dl := writeDumpedLog(t)
	lines, r := dump(t, dl.file(indexSuffix), DumpOptions{})
	raw, _ := os.ReadFile(dl.file(indexSuffix))
	if r.Corrupt() || len(lines) < 2 || len(lines) != len(raw)/offsetEntrySize {
		t.Fatalf("%d lines for %d index bytes: %q %s", len(lines), len(raw), lines, problems(r))
	}
	for _, l := range lines {
		var off, pos int64
		if _, err := fmt.Sscanf(l, "offset: %d position: %d", &off, &pos); err != nil {
			t.Fatalf("index line %q: %v", l, err)
		}
		if h := dl.batchAtPos(t, pos); h.LastOffset() != off {
			t.Errorf("%q: the batch there ends at %d", l, h.LastOffset())
		}
	}

	lines, r = dump(t, dl.file(timeIndexSuffix), DumpOptions{})
	if r.Corrupt() || len(lines) < 2 {
		t.Fatalf("time index: %q %s", lines, problems(r))
	}
	for _, l := range lines {
		var ts, off int64
		if _, err := fmt.Sscanf(l, "timestamp: %d offset: %d", &ts, &off); err != nil {
			t.Fatalf("time index line %q: %v", l, err)
		}
		found := false
		for _, h := range dl.headers {
			found = found || (h.LastOffset() == off && h.MaxTimestamp == ts)
		}
		if !found {
			t.Errorf("%q names no batch", l)
		}
	}

	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		lines, r = dump(t, dl.file(suffix), DumpOptions{VerifyIndexOnly: true})
		if len(lines) != 0 || r.Corrupt() {
			t.Errorf("verify %s: %q %s", suffix, lines, problems(r))
		}
		lines, r = dump(t, dl.file(suffix), DumpOptions{IndexSanityOnly: true})
		if want := dl.file(suffix) + " passed sanity check."; len(lines) != 1 || lines[0] != want || r.Corrupt() {
			t.Errorf("sanity %s: %q %s", suffix, lines, problems(r))
		}
	}

	lines, _ = dump(t, segmentPath(dl.dir, dl.end, snapshotSuffix), DumpOptions{})
	want := "producerId: 7 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: 1003 " +
		"firstSequence: 0 lastSequence: 3 lastOffset: 48 offsetDelta: 3 timestamp: 1003"
	if len(lines) != 1 || lines[0] != want {
		t.Errorf("snapshot:\n got %q\nwant %q", lines, want)
	}
	lines, _ = dump(t, filepath.Join(dl.dir, leaderEpochFile), DumpOptions{})
	if len(lines) != 1 || lines[0] != "epoch: 3 startOffset: 0" {
		t.Errorf("leader epochs: %q", lines)
	}
}

// patch overwrites bytes of a file at off.
func patch(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func TestDumpFindsDamage(t *testing.T) {
	dl := writeDumpedLog(t)

	// An index entry pointing at the previous entry's batch.
	raw, _ := os.ReadFile(dl.file(indexSuffix))
	e0, e1 := decodeOffsetEntry(raw), decodeOffsetEntry(raw[offsetEntrySize:])
	patch(t, dl.file(indexSuffix), offsetEntrySize+4, raw[4:8])
	_, r := dump(t, dl.file(indexSuffix), DumpOptions{VerifyIndexOnly: true})
	want := []DumpPair{{int64(e1.rel), int64(e0.rel)}}
	if len(r.IndexMismatches) != 1 || r.IndexMismatches[0] != want[0] || !r.Corrupt() {
		t.Fatalf("mismatches %v, want %v", r.IndexMismatches, want)
	}
	text := problems(r)
	if !strings.Contains(text, "Mismatches in :"+dl.file(indexSuffix)+"\n") ||
		!strings.Contains(text, fmt.Sprintf("  Index offset: %d, log offset: %d\n", e1.rel, e0.rel)) {
		t.Errorf("problems:\n%s", text)
	}
	_, r = dump(t, dl.file(indexSuffix), DumpOptions{IndexSanityOnly: true})
	if len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "failed sanity check") {
		t.Errorf("sanity check of a bad index: %q", r.Failures)
	}

	// A time index entry whose timestamp is not its batch's.
	traw, _ := os.ReadFile(dl.file(timeIndexSuffix))
	te := decodeTimeEntry(traw)
	patch(t, dl.file(timeIndexSuffix), 0, be64(te.ts+1))
	_, r = dump(t, dl.file(timeIndexSuffix), DumpOptions{})
	if len(r.TimestampMismatches) != 1 || r.TimestampMismatches[0] != (DumpPair{te.ts + 1, te.ts}) {
		t.Errorf("timestamp mismatches %v", r.TimestampMismatches)
	}

	// A value byte of batch 2 flipped: its CRC no longer matches.
	patch(t, dl.file(logSuffix), dl.pos[2]+protocol.BatchHeaderSize+10, []byte{'!'})
	lines, r := dump(t, dl.file(logSuffix), DumpOptions{})
	for i := range dl.headers {
		if !strings.HasSuffix(lines[1+i], fmt.Sprintf("isvalid: %t", i != 2)) {
			t.Errorf("batch %d: %s", i, lines[1+i])
		}
	}
	if r.InvalidBatches != 1 || !r.Corrupt() {
		t.Errorf("invalid batches %d", r.InvalidBatches)
	}

	// A torn write at the end.
	data, _ := os.ReadFile(dl.file(logSuffix))
	patch(t, dl.file(logSuffix), int64(len(data)), data[:30])
	lines, r = dump(t, dl.file(logSuffix), DumpOptions{Deep: true})
	if last := lines[len(lines)-1]; last != "Found 30 invalid bytes at the end of 00000000000000000000.log" || r.TrailingBytes != 30 {
		t.Errorf("torn tail: %q, %d trailing bytes", last, r.TrailingBytes)
	}
}

// TestDumpBadFiles feeds files that are not what their names say: each
// gives an error or a finding, never a panic.
func TestDumpBadFiles(t *testing.T) {
	dir := t.TempDir()
	garbage := bytes.Repeat([]byte{0xff, 0x00, 0x7f}, 100)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	seg := func(suffix string) string { return offsetName(0) + suffix }
	for _, c := range []struct {
		path    string
		errText string // "" means no error but a finding
	}{
		{filepath.Join(dir, offsetName(9)+logSuffix), "no such file"},
		{write("notes.txt", garbage), "unknown kind of file"},
		{write("segment.log", garbage), "not a segment file name"},
		{write(offsetName(5)+indexSuffix, garbage), "its segment is needed"},
		{write(seg(snapshotSuffix), garbage), "corrupt producer snapshot"},
		{write(leaderEpochFile, []byte("0\n1\nx y\n")), "malformed"},
		{write(seg(logSuffix), garbage), ""},
		{write(seg(indexSuffix), garbage), ""},
		{write(seg(timeIndexSuffix), garbage[:13]), ""},
	} {
		var out bytes.Buffer
		r, err := DumpFile(&out, c.path, DumpOptions{PrintData: true})
		switch {
		case c.errText != "" && (err == nil || !strings.Contains(err.Error(), c.errText)):
			t.Errorf("%s: error %v, want one saying %q", c.path, err, c.errText)
		case c.errText == "" && (err != nil || !r.Corrupt()):
			t.Errorf("%s: error %v, report %+v", c.path, err, r)
		}
	}
	// A directory named like a segment.
	if err := os.Mkdir(filepath.Join(dir, offsetName(1)+logSuffix), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := DumpFile(io.Discard, filepath.Join(dir, offsetName(1)+logSuffix), DumpOptions{}); err == nil {
		t.Error("dumping a directory: no error")
	}
}

// TestDumpTransactionFiles dumps a commit marker batch and a .txnindex
// entry as Kafka writes them (Gregor writes neither yet).
func TestDumpTransactionFiles(t *testing.T) {
	dir := t.TempDir()
	marker := kmsg.Record{Key: cat(be16(0), be16(1)), Value: cat(be16(0), be32(7))}
	marker.Length = int32(len(marker.AppendTo(nil)) - 1)
	recs := marker.AppendTo(nil)
	b := kmsg.RecordBatch{
		FirstOffset: 44, Length: int32(protocol.BatchHeaderSize - protocol.LogOverhead + len(recs)), PartitionLeaderEpoch: 0,
		Magic: 2, Attributes: protocol.AttrTransactional | protocol.AttrControl, FirstTimestamp: 9000, MaxTimestamp: 9000,
		ProducerID: 5, ProducerEpoch: 2, FirstSequence: -1, NumRecords: 1, Records: recs,
	}
	batch := b.AppendTo(nil)
	binary.BigEndian.PutUint32(batch[17:], protocol.BatchCRC(batch))
	logPath := segmentPath(dir, 44, logSuffix)
	if err := os.WriteFile(logPath, batch, 0o644); err != nil {
		t.Fatal(err)
	}
	lines, r := dump(t, logPath, DumpOptions{PrintData: true})
	if r.Corrupt() || len(lines) != 3 || lines[0] != "Log starting offset: 44" ||
		!strings.Contains(lines[1], "producerId: 5 producerEpoch: 2 partitionLeaderEpoch: 0 isTransactional: true isControl: true ") ||
		lines[2] != "| offset: 44 CreateTime: 9000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 7" {
		t.Fatalf("marker batch: %q %s", lines, problems(r))
	}

	// A batch the cleaner gave a delete horizon.
	hz := dumpBatch(t, protocol.CompressionNone, 5000, []kmsg.Record{{Key: []byte("gone")}})
	binary.BigEndian.PutUint16(hz[21:], protocol.AttrDeleteHorizon)
	binary.BigEndian.PutUint32(hz[17:], protocol.BatchCRC(hz))
	hzPath := segmentPath(dir, 0, logSuffix)
	if err := os.WriteFile(hzPath, hz, 0o644); err != nil {
		t.Fatal(err)
	}
	if lines, r = dump(t, hzPath, DumpOptions{}); r.Corrupt() || len(lines) != 2 ||
		!strings.Contains(lines[1], " deleteHorizonMs: OptionalLong[5000] position: 0 ") {
		t.Fatalf("delete horizon: %q", lines)
	}

	idxPath := segmentPath(dir, 44, indexSuffix)
	if err := os.WriteFile(idxPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if lines, r = dump(t, idxPath, DumpOptions{}); len(lines) != 1 || lines[0] != idxPath+" is empty." || r.Corrupt() {
		t.Fatalf("empty index: %q", lines)
	}

	txnPath := segmentPath(dir, 0, ".txnindex")
	if err := os.WriteFile(txnPath, cat(be16(0), be64(5), be64(43), be64(44), be64(45), []byte{1}), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, r = dump(t, txnPath, DumpOptions{})
	if len(lines) != 1 || lines[0] != "version: 0 producerId: 5 firstOffset: 43 lastOffset: 44 lastStableOffset: 45" ||
		len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "1 bytes after the last whole 34-byte entry") {
		t.Fatalf("txnindex: %q %q", lines, r.Failures)
	}
}

// FuzzDumpFiles dumps arbitrary bytes as a segment and as its indexes:
// whatever the bytes, each dump finishes without an error (damage is a
// finding in the report) and without a panic.
func FuzzDumpFiles(f *testing.F) {
	good := plain(3, 1000).build()
	f.Add(good, []byte{})
	f.Add(append(bytes.Clone(good), good[:40]...), cat(be32(2), be32(0)))
	f.Add(bytes.Repeat([]byte{0xff}, 80), cat(be64(1002), be32(2)))
	f.Fuzz(func(t *testing.T, log, index []byte) {
		dir := t.TempDir()
		for suffix, b := range map[string][]byte{logSuffix: log, indexSuffix: index, timeIndexSuffix: index} {
			if err := os.WriteFile(segmentPath(dir, 0, suffix), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			for _, opts := range []DumpOptions{{PrintData: true}, {IndexSanityOnly: true}} {
				if _, err := DumpFile(io.Discard, segmentPath(dir, 0, suffix), opts); err != nil {
					t.Fatalf("%s: %v", suffix, err)
				}
			}
		}
	})
}
