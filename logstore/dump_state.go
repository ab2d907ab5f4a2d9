package logstore

// Dumping a partition's state files: producer snapshots and the leader
// epoch checkpoint.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// dumpProducerSnapshot prints one line per producer, in file order, as
// Kafka's dumpProducerIdSnapshot does.
func dumpProducerSnapshot(w *bufio.Writer, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	producers, err := decodeSnapshot(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for p := b[snapshotHeaderSize:]; len(p) >= snapshotEntrySize; p = p[snapshotEntrySize:] {
		pid := int64(binary.BigEndian.Uint64(p))
		e := producers[pid]
		txnFirst := "OptionalLong.empty"
		if e.txnFirstOffset >= 0 {
			txnFirst = fmt.Sprintf("OptionalLong[%d]", e.txnFirstOffset)
		}
		fmt.Fprintf(w, "producerId: %d producerEpoch: %d coordinatorEpoch: %d currentTxnFirstOffset: %s lastTimestamp: %d ",
			pid, e.epoch, e.coordinatorEpoch, txnFirst, e.lastTimestamp)
		if m, ok := e.last(); ok {
			fmt.Fprintf(w, "firstSequence: %d lastSequence: %d lastOffset: %d offsetDelta: %d timestamp: %d",
				m.firstSeq, m.lastSeq, m.lastOffset, m.offsetDelta, m.maxTimestamp)
		}
		w.WriteByte('\n')
	}
	return nil
}

// dumpLeaderEpochs prints the epochs of a leader-epoch-checkpoint, which
// Kafka's tool does not read.
func dumpLeaderEpochs(w *bufio.Writer, path string) error {
	if _, err := os.Stat(path); err != nil {
		return err // loadEpochCache reads a missing file as empty
	}
	c, err := loadEpochCache(filepath.Dir(path))
	if err != nil {
		return err
	}
	for _, e := range c.entries {
		fmt.Fprintf(w, "epoch: %d startOffset: %d\n", e.Epoch, e.StartOffset)
	}
	return nil
}
