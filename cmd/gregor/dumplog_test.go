package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runGregor runs the built binary and returns stdout, stderr and the exit
// status.
func runGregor(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	bin, err := harness.Binary()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), 0
}

var batchLineRE = regexp.MustCompile(`^baseOffset: (\d+) lastOffset: (\d+) count: 1 baseSequence: (\d+) lastSequence: \d+ ` +
	`producerId: (\d+) producerEpoch: 0 partitionLeaderEpoch: \d+ isTransactional: false isControl: false ` +
	`deleteHorizonMs: OptionalLong.empty position: (\d+) CreateTime: \d+ size: (\d+) magic: 2 compresscodec: none crc: \d+ isvalid: (true|false)$`)

type dumpedBatch struct{ last, pos, size int64 }

// TestDumpLogOnBrokerSegment has the broker write a segment through a real
// client, stops it, and dumps the segment, its indexes and its producer
// snapshot with `gregor dump-log`; then damages copies of the files and
// checks that the damage is reported with a failing exit status.
func TestDumpLogOnBrokerSegment(t *testing.T) {
	dir := t.TempDir()
	p := harness.Start(t, dir, "log.index.interval.bytes=256")
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.DefaultProduceTopic("dumped"), kgo.AllowAutoTopicCreation(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 40
	for i := 0; i < n; i++ {
		r := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", 50)))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	if err := p.Stop(); err != nil {
		t.Fatalf("clean stop: %v", err)
	}
	seg := filepath.Join(dir, "dumped-0", "00000000000000000000")

	// The segment: one batch per produce, back to back, then its records.
	stdout, stderr, code := runGregor(t, "dump-log", "--print-data-log", seg+".log")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 2+2*n || lines[0] != "Dumping "+seg+".log" || lines[1] != "Log starting offset: 0" {
		t.Fatalf("%d lines:\n%s", len(lines), stdout)
	}
	var batches []dumpedBatch
	pos := int64(0)
	for i := 0; i < n; i++ {
		m := batchLineRE.FindStringSubmatch(lines[2+2*i])
		if m == nil || m[1] != strconv.Itoa(i) || m[2] != strconv.Itoa(i) || m[3] != strconv.Itoa(i) || m[5] != strconv.FormatInt(pos, 10) || m[7] != "true" {
			t.Fatalf("batch %d at %d: %s", i, pos, lines[2+2*i])
		}
		size, _ := strconv.ParseInt(m[6], 10, 64)
		batches = append(batches, dumpedBatch{int64(i), pos, size})
		pos += size
		want := fmt.Sprintf(`^\| offset: %d CreateTime: \d+ keySize: %d valueSize: %d sequence: %d headerKeys: \[\] key: k%d payload: value-%d-x{50}$`,
			i, len(fmt.Sprintf("k%d", i)), len(fmt.Sprintf("value-%d-", i))+50, i, i, i)
		if !regexp.MustCompile(want).MatchString(lines[3+2*i]) {
			t.Fatalf("record %d: %s", i, lines[3+2*i])
		}
	}
	if fi, err := os.Stat(seg + ".log"); err != nil || fi.Size() != pos {
		t.Fatalf("batches cover %d bytes of the segment (%v)", pos, err)
	}

	// The indexes: every offset index entry names the batch at its position.
	stdout, stderr, code = runGregor(t, "dump-log", seg+".index", seg+".timeindex")
	if code != 0 || stderr != "" {
		t.Fatalf("indexes: exit %d, stderr %s", code, stderr)
	}
	entries := regexp.MustCompile(`(?m)^offset: (\d+) position: (\d+)$`).FindAllStringSubmatch(stdout, -1)
	if len(entries) < 2 || !strings.Contains(stdout, "Dumping "+seg+".timeindex\ntimestamp: ") {
		t.Fatalf("index dump:\n%s", stdout)
	}
	for _, e := range entries {
		off, _ := strconv.ParseInt(e[1], 10, 64)
		at, _ := strconv.ParseInt(e[2], 10, 64)
		if off >= n || batches[off].pos != at {
			t.Errorf("index entry %s: batch %d is at %d", e[0], off, batches[min(off, n-1)].pos)
		}
	}
	stdout, stderr, code = runGregor(t, "dump-log", "--verify-index", seg+".index", seg+".timeindex")
	if code != 0 || stderr != "" || stdout != "Dumping "+seg+".index\nDumping "+seg+".timeindex\n" {
		t.Fatalf("verify: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}

	// The producer snapshot written on the clean stop.
	snaps, _ := filepath.Glob(filepath.Join(dir, "dumped-0", "*.snapshot"))
	if len(snaps) == 0 {
		t.Fatal("no producer snapshot after a clean stop")
	}
	stdout, _, code = runGregor(t, "dump-log", snaps[len(snaps)-1])
	want := fmt.Sprintf(`(?m)^producerId: \d+ producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty `+
		`lastTimestamp: \d+ firstSequence: %d lastSequence: %d lastOffset: %d offsetDelta: 0 timestamp: \d+$`, n-1, n-1, n-1)
	if code != 0 || !regexp.MustCompile(want).MatchString(stdout) {
		t.Fatalf("snapshot: exit %d\n%s", code, stdout)
	}

	// Damaged copies: an index entry pointing at the previous entry's batch,
	// and a batch whose CRC no longer matches.
	bad := t.TempDir()
	copyFile(t, seg+".log", filepath.Join(bad, "00000000000000000000.log"))
	copyFile(t, seg+".index", filepath.Join(bad, "00000000000000000000.index"))
	idx, _ := os.ReadFile(filepath.Join(bad, "00000000000000000000.index"))
	copy(idx[12:16], idx[4:8])
	os.WriteFile(filepath.Join(bad, "00000000000000000000.index"), idx, 0o644)
	logBytes, _ := os.ReadFile(filepath.Join(bad, "00000000000000000000.log"))
	binary.BigEndian.PutUint32(logBytes[batches[3].pos+17:], binary.BigEndian.Uint32(logBytes[batches[3].pos+17:])+1)
	os.WriteFile(filepath.Join(bad, "00000000000000000000.log"), logBytes, 0o644)
	stdout, stderr, code = runGregor(t, "dump-log", "--verify-index", filepath.Join(bad, "00000000000000000000.index"), filepath.Join(bad, "00000000000000000000.log"))
	e0 := int64(binary.BigEndian.Uint32(idx[0:]))
	e1 := int64(binary.BigEndian.Uint32(idx[8:]))
	wantErr := fmt.Sprintf("Mismatches in :%s\n  Index offset: %d, log offset: %d\n", filepath.Join(bad, "00000000000000000000.index"), e1, e0)
	if code != 1 || !strings.Contains(stderr, wantErr) || strings.Count(stdout, "isvalid: false") != 1 ||
		!strings.Contains(stdout, "baseOffset: 3 lastOffset: 3 ") {
		t.Fatalf("damage: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}

	// Bad invocations and files: a message and an exit status, no panic.
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"dump-log"}, 2, "no files given"},
		{[]string{"dump-log", "--bogus", seg + ".log"}, 2, "unknown flag --bogus"},
		{[]string{"dump-log", filepath.Join(bad, "00000000000000000007.log")}, 1, "no such file"},
		{[]string{"dump-log", filepath.Join(dir, "meta.properties")}, 1, "unknown kind of file"},
	} {
		_, stderr, code := runGregor(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.msg) || strings.Contains(stderr, "panic") {
			t.Errorf("%v: exit %d, stderr %s", c.args, code, stderr)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
