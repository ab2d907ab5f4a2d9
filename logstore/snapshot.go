package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// Kafka's producer snapshot file, version 1 (ProducerStateManager): int16
// version, uint32 CRC-32C of everything after the CRC, int32 entry count,
// then 46-byte entries. See doc.go for the drawing.
const (
	snapshotVersion    = 1
	snapshotHeaderSize = 10
	snapshotEntrySize  = 46
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errCorruptSnapshot = errors.New("corrupt producer snapshot")

// encodeSnapshot renders producer state as a snapshot file, entries sorted
// by producer id.
func encodeSnapshot(producers map[int64]*producerEntry) []byte {
	pids := make([]int64, 0, len(producers))
	for pid := range producers {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(pids)*snapshotEntrySize)
	binary.BigEndian.PutUint16(b[0:], snapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(pids)))
	for _, pid := range pids {
		e := producers[pid]
		lastSeq, lastOffset, offsetDelta := int32(-1), int64(-1), int32(0)
		if m, ok := e.last(); ok {
			lastSeq, lastOffset, offsetDelta = m.lastSeq, m.lastOffset, m.offsetDelta
		}
		b = binary.BigEndian.AppendUint64(b, uint64(pid))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(lastSeq))
		b = binary.BigEndian.AppendUint64(b, uint64(lastOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(offsetDelta))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastTimestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.coordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.txnFirstOffset))
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
	return b
}

// decodeSnapshot parses a snapshot file. Each producer gets at most its
// last batch back, which is all the file keeps.
func decodeSnapshot(b []byte) (map[int64]*producerEntry, error) {
	if len(b) < snapshotHeaderSize {
		return nil, errCorruptSnapshot
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != snapshotVersion {
		return nil, fmt.Errorf("%w: version %d", errCorruptSnapshot, v)
	}
	if binary.BigEndian.Uint32(b[2:]) != crc32.Checksum(b[6:], castagnoli) {
		return nil, fmt.Errorf("%w: CRC mismatch", errCorruptSnapshot)
	}
	n := int32(binary.BigEndian.Uint32(b[6:]))
	if n < 0 || int64(len(b)-snapshotHeaderSize) != int64(n)*snapshotEntrySize {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errCorruptSnapshot, n, len(b))
	}
	out := make(map[int64]*producerEntry, n)
	for p := b[snapshotHeaderSize:]; len(p) > 0; p = p[snapshotEntrySize:] {
		pid := int64(binary.BigEndian.Uint64(p[0:]))
		e := emptyProducerEntry()
		e.epoch = int16(binary.BigEndian.Uint16(p[8:]))
		lastSeq := int32(binary.BigEndian.Uint32(p[10:]))
		lastOffset := int64(binary.BigEndian.Uint64(p[14:]))
		offsetDelta := int32(binary.BigEndian.Uint32(p[22:]))
		ts := int64(binary.BigEndian.Uint64(p[26:]))
		e.coordinatorEpoch = int32(binary.BigEndian.Uint32(p[34:]))
		e.txnFirstOffset = int64(binary.BigEndian.Uint64(p[38:]))
		if e.txnFirstOffset < 0 {
			e.txnFirstOffset = -1
		}
		if lastOffset >= 0 {
			e.addBatch(e.epoch, batchMeta{
				firstSeq:     decrementSequence(lastSeq, offsetDelta),
				lastSeq:      lastSeq,
				lastOffset:   lastOffset,
				offsetDelta:  offsetDelta,
				maxTimestamp: ts,
			})
		}
		e.lastTimestamp = ts
		out[pid] = &e
	}
	return out, nil
}

// listSnapshots returns the offsets of the snapshot files in dir, ascending.
func listSnapshots(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var offs []int64
	for _, de := range ents {
		if off, ok := parseOffsetName(de.Name(), snapshotSuffix); ok && de.Type().IsRegular() {
			offs = append(offs, off)
		}
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs, nil
}

// writeSnapshot writes the snapshot for offset and deletes all but the
// newest keep snapshots.
func writeSnapshot(dir string, offset int64, producers map[int64]*producerEntry, keep int) error {
	if err := WriteFileAtomic(segmentPath(dir, offset, snapshotSuffix), encodeSnapshot(producers)); err != nil {
		return err
	}
	offs, err := listSnapshots(dir)
	if err != nil {
		return err
	}
	for i := 0; i < len(offs)-keep; i++ {
		if err := os.Remove(segmentPath(dir, offs[i], snapshotSuffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func removeSnapshot(dir string, off int64) error {
	err := os.Remove(filepath.Join(dir, offsetName(off)+snapshotSuffix))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
