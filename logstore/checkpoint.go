package logstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Kafka's CheckpointFile format: "<version>\n<count>\n" then one entry per
// line. Only version 0 exists for the files we write.
const checkpointVersion = 0

// formatCheckpoint renders entries (already formatted lines) as a checkpoint file.
func formatCheckpoint(lines []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// readCheckpoint returns the entry lines of a checkpoint file, each split on
// spaces into want fields. A missing or empty file has no entries.
func readCheckpoint(path string, want int) ([][]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() {
		return nil, nil // empty file, as Kafka creates it
	}
	if v, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err != nil || v != checkpointVersion {
		return nil, fmt.Errorf("%s: unrecognised checkpoint version %q", path, sc.Text())
	}
	if !sc.Scan() {
		return nil, fmt.Errorf("%s: missing entry count", path)
	}
	n, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%s: bad entry count %q", path, sc.Text())
	}
	out := make([][]string, 0, n)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != want {
			return nil, fmt.Errorf("%s: malformed line %q", path, sc.Text())
		}
		out = append(out, f)
	}
	if len(out) != n {
		return nil, fmt.Errorf("%s: expected %d entries, found %d", path, n, len(out))
	}
	return out, nil
}

// writeOffsetCheckpoint writes "topic partition offset" lines, sorted so
// the file's bytes depend only on its contents.
func writeOffsetCheckpoint(path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, compareTP)
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, offsets[tp])
	}
	return WriteFileAtomic(path, formatCheckpoint(lines))
}

func readOffsetCheckpoint(path string) (map[TopicPartition]int64, error) {
	rows, err := readCheckpoint(path, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(rows))
	for _, r := range rows {
		p, err1 := strconv.ParseInt(r[1], 10, 32)
		off, err2 := strconv.ParseInt(r[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: malformed entry %q", path, strings.Join(r, " "))
		}
		out[TopicPartition{Topic: r[0], Partition: int32(p)}] = off
	}
	return out, nil
}

func compareTP(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}
