package logstore

import (
	"bytes"
	"encoding/hex"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s:\n got % x\nwant % x", what, got, want)
	}
}

// TestGoldenFiles appends six batches of 172 bytes (three records with
// 30-byte values each) with index.interval.bytes = 200 and pins every file
// the log dir then holds, byte for byte, against bytes derived by hand from
// Kafka's formats.
func TestGoldenFiles(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	tp := TopicPartition{"golden", 0}
	topicID := [16]byte{15: 1}
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 200
	l, err := d.CreateLog(tp, topicID, cfg)
	if err != nil {
		t.Fatal(err)
	}

	baseTs := []int64{1000, 1500, 1200, 2000, 2500, 3000}
	var want []byte
	for i, ts := range baseTs {
		s := plain(3, ts)
		s.valueSize = 30
		s.fill = 'a'
		epoch := int32(0)
		if i >= 3 {
			epoch = 3
		}
		if i == 3 || i == 4 {
			s.pid, s.epoch, s.seq = 7, 2, int32(3*(i-3))
		}
		b := s.build()
		if len(b) != 172 {
			t.Fatalf("batch %d is %d bytes, want 172", i, len(b))
		}
		want = append(want, at(b, int64(3*i), epoch)...)
		res := mustAppend(t, l, b, AppendOptions{LogAppendTime: -1, LeaderEpoch: epoch})
		if res.BaseOffset != int64(3*i) || res.LastOffset != int64(3*i+2) {
			t.Fatalf("batch %d got offsets %d..%d", i, res.BaseOffset, res.LastOffset)
		}
	}
	l.SetHighWatermark(18)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	pdir := filepath.Join(root, "golden-0")
	gotLog := readFile(t, filepath.Join(pdir, "00000000000000000000.log"))
	checkBytes(t, ".log", gotLog, want)
	// The first batch spelled out: header fields, then its first record.
	checkBytes(t, ".log batch 0 header", gotLog[:61+37], unhex(t, `
		0000000000000000 000000a0 00000000 02 8b37fda1
		0000 00000002 00000000000003e8 00000000000003ea
		ffffffffffffffff ffff ffffffff 00000003
		48 00 00 00 01 3c`+strings.Repeat("61", 30)+`00`))

	// .index: an entry before batch 2 (344 bytes since the last entry >
	// 200; offsets 6..8 at byte 344) and batch 4 (offsets 12..14 at 688).
	checkBytes(t, ".index", readFile(t, filepath.Join(pdir, "00000000000000000000.index")), unhex(t, `
		00000008 00000158
		0000000e 000002b0`))
	// .timeindex: with each index entry the max timestamp so far (1502 in
	// batch 1 ending at offset 5; 2502 in batch 4 ending at 14), and on
	// close the final max (3002, offset 17).
	checkBytes(t, ".timeindex", readFile(t, filepath.Join(pdir, "00000000000000000000.timeindex")), unhex(t, `
		00000000000005de 00000005
		00000000000009c6 0000000e
		0000000000000bba 00000011`))

	// Producer 7 wrote batches 3 and 4 (sequences 0..2, 3..5); the snapshot
	// taken on close at the log end offset 18 keeps its last batch.
	entries := cat(be32(1),
		be64(7), be16(2), be32(5), be64(14), be32(2), be64(2502), be32(-1), be64(-1))
	crc := crc32.Checksum(entries, crc32.MakeTable(crc32.Castagnoli))
	checkBytes(t, ".snapshot", readFile(t, filepath.Join(pdir, "00000000000000000018.snapshot")),
		cat(be16(1), be32(int32(crc)), entries))

	checkBytes(t, "partition.metadata", readFile(t, filepath.Join(pdir, "partition.metadata")),
		[]byte("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"))
	checkBytes(t, "leader-epoch-checkpoint", readFile(t, filepath.Join(pdir, "leader-epoch-checkpoint")),
		[]byte("0\n2\n0 0\n3 9\n"))
	checkBytes(t, "recovery-point-offset-checkpoint", readFile(t, filepath.Join(root, "recovery-point-offset-checkpoint")),
		[]byte("0\n1\ngolden 0 18\n"))
	checkBytes(t, "replication-offset-checkpoint", readFile(t, filepath.Join(root, "replication-offset-checkpoint")),
		[]byte("0\n1\ngolden 0 18\n"))
	checkBytes(t, "log-start-offset-checkpoint", readFile(t, filepath.Join(root, "log-start-offset-checkpoint")),
		[]byte("0\n0\n"))
	checkBytes(t, ".kafka_cleanshutdown", readFile(t, filepath.Join(root, ".kafka_cleanshutdown")),
		[]byte(`{"version":0,"brokerEpoch":-1}`))

	meta := string(readFile(t, filepath.Join(root, "meta.properties")))
	re := regexp.MustCompile(`^#\n#(Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d [A-Z+\-0-9]+ \d{4}\n` +
		`node\.id=1\ndirectory\.id=[A-Za-z0-9_][A-Za-z0-9_\-]{21}\nversion=1\ncluster\.id=test-cluster\n$`)
	if !re.MatchString(meta) {
		t.Errorf("meta.properties:\n%s", meta)
	}

	// The files list of the partition dir is exactly Kafka's.
	ents, _ := os.ReadDir(pdir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	wantNames := "00000000000000000000.index 00000000000000000000.log 00000000000000000000.timeindex " +
		"00000000000000000018.snapshot leader-epoch-checkpoint partition.metadata"
	if got := strings.Join(names, " "); got != wantNames {
		t.Errorf("partition dir holds %s\nwant %s", got, wantNames)
	}
}

// TestDocExamples pins the index examples drawn in doc.go.
func TestDocExamples(t *testing.T) {
	checkBytes(t, "index entry", cat(be32(119-100), be32(8230)), unhex(t, "00 00 00 13  00 00 20 26"))
	checkBytes(t, "time index entry", cat(be64(1700000000000), be32(119-100)), unhex(t, "00 00 01 8b cf e5 68 00  00 00 00 13"))
	if got := UUIDString([16]byte{15: 1}); got != "AAAAAAAAAAAAAAAAAAAAAQ" {
		t.Errorf("uuid: %s", got)
	}
}

// TestGoldenTxnIndex pins the .txnindex Kafka's TransactionIndex reads:
// producer 7 writes offsets 0..1 in a transaction and aborts it with the
// marker at offset 2; no other transaction is open, so the entry's last
// stable offset is 3, the offset after the marker. Fields: int16 version
// 0, producerId, firstOffset, lastOffset, lastStableOffset.
func TestGoldenTxnIndex(t *testing.T) {
	root := t.TempDir()
	d := openTestDir(t, root)
	l, err := d.CreateLog(TopicPartition{"golden", 0}, [16]byte{15: 1}, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, txnData(7, 0, 0, 2), noStamp)
	mustAppend(t, l, endTxn(7, 0, false, 0), noStamp)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	checkBytes(t, ".txnindex", readFile(t, filepath.Join(root, "golden-0", "00000000000000000000.txnindex")), unhex(t, `
		0000 0000000000000007 0000000000000000 0000000000000002 0000000000000003`))
}
