package logstore

// Dumping log dir files for people, in the shape of Kafka's DumpLogSegments
// (kafka.tools.DumpLogSegments), so that output and habits carry over:
// `gregor dump-log` is a thin flag parser around DumpFile. The files are
// read with this package's own decoders (scanner, decodeHeader, the index
// entry decoders, decodeSnapshot, loadEpochCache) and never written. What a
// dump finds wrong goes into a DumpReport, which the caller prints after
// all files, as Kafka prints its mismatch lists to stderr at the end.
//
// Per file type (chosen by name, as Kafka does):
//
//	.log          a line per batch; with Deep, a "| offset: ..." line per record
//	.index        "offset: O position: P" per entry, each checked against the batch at P
//	.timeindex    "timestamp: T offset: O" per entry, each checked against its batch
//	.txnindex     a line per aborted transaction
//	.snapshot     a line per producer
//	leader-epoch-checkpoint   "epoch: E startOffset: O" per entry (Kafka's tool has none)

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
)

// DumpOptions are the switches of gregor dump-log, named after Kafka's.
type DumpOptions struct {
	// PrintData prints keys and values as UTF-8 strings (--print-data-log);
	// it implies Deep.
	PrintData bool
	// Deep prints every record, decompressing batches (--deep-iteration).
	Deep bool
	// SkipRecordMetadata leaves offset, timestamp, sizes, sequence and
	// header keys out of record lines (--skip-record-metadata).
	SkipRecordMetadata bool
	// VerifyIndexOnly checks index entries without printing them
	// (--verify-index, Kafka's --verify-index-only). Entries are checked
	// either way.
	VerifyIndexOnly bool
	// IndexSanityOnly runs only the check Gregor makes when it loads an
	// index (--index-sanity-check).
	IndexSanityOnly bool
}

// DumpPair is two numbers a finding sets side by side; what they are
// depends on the list it is in.
type DumpPair struct{ A, B int64 }

// DumpReport is what dumping one file found wrong with it.
type DumpReport struct {
	Path string // absolute, as Kafka names files in its reports

	// IndexMismatches pairs an .index entry's offset with the last offset of
	// the batch at its position (-1: no batch there).
	IndexMismatches []DumpPair
	// TimestampMismatches pairs a .timeindex entry's timestamp with the
	// largest record timestamp of the batch it names.
	TimestampMismatches []DumpPair
	// OutOfOrderTimestamps pairs a .timeindex timestamp with the previous
	// entry's, when it is not larger.
	OutOfOrderTimestamps []DumpPair
	// OffsetsNotFound pairs a .timeindex entry's offset with the last offset
	// of the batch found for it (-1: none): no batch ends at that offset.
	OffsetsNotFound []DumpPair
	// NonConsecutive pairs a record offset with the next record's when they
	// are not consecutive (Deep only). Compaction leaves such gaps, so this
	// alone is not damage.
	NonConsecutive []DumpPair
	// InvalidBatches counts batches whose CRC does not match (isvalid: false).
	InvalidBatches int
	// TrailingBytes is the size of what follows the last whole batch and is
	// not one (a torn write, garbage).
	TrailingBytes int64
	// Failures describes other damage: records that do not parse, a failed
	// sanity check, a partial index entry.
	Failures []string
}

// Corrupt reports whether the file is damaged: anything found except
// offset gaps.
func (r *DumpReport) Corrupt() bool {
	return len(r.IndexMismatches) > 0 || len(r.TimestampMismatches) > 0 || len(r.OutOfOrderTimestamps) > 0 ||
		len(r.OffsetsNotFound) > 0 || r.InvalidBatches > 0 || r.TrailingBytes > 0 || len(r.Failures) > 0
}

func (r *DumpReport) fail(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

// WriteProblems prints the findings in the words of Kafka's tool (which
// prints the same lists newest first); the CRC count and Failures are
// Gregor's own.
func (r *DumpReport) WriteProblems(w io.Writer) error {
	bw := bufio.NewWriter(w)
	list := func(head, line string, pairs []DumpPair) {
		if len(pairs) == 0 {
			return
		}
		fmt.Fprintln(bw, head)
		for _, p := range pairs {
			fmt.Fprintf(bw, line+"\n", p.A, p.B)
		}
	}
	list("Mismatches in :"+r.Path, "  Index offset: %d, log offset: %d", r.IndexMismatches)
	list("Found timestamp mismatch in :"+r.Path, "  Index timestamp: %d, log timestamp: %d", r.TimestampMismatches)
	list("Found out of order timestamp in :"+r.Path, "  Index timestamp: %d, Previously indexed timestamp: %d", r.OutOfOrderTimestamps)
	list("The following indexed offsets are not found in the log.", "Indexed offset: %d, found log offset: %d", r.OffsetsNotFound)
	list("Non-consecutive offsets in "+r.Path, "  %d is followed by %d", r.NonConsecutive)
	if r.InvalidBatches > 0 {
		fmt.Fprintf(bw, "Found %d batches with an invalid CRC in %s\n", r.InvalidBatches, r.Path)
	}
	for _, f := range r.Failures {
		fmt.Fprintln(bw, f)
	}
	return bw.Flush()
}

// DumpFile prints the content of one log dir file to w, starting with
// Kafka's "Dumping <path>" line. The error is for a file that cannot be
// dumped at all (missing, unknown kind, unreadable, a snapshot failing its
// CRC); damage found while dumping is in the report.
func DumpFile(w io.Writer, path string, opts DumpOptions) (*DumpReport, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	r := &DumpReport{Path: abs}
	bw := bufio.NewWriterSize(w, 64<<10)
	fmt.Fprintf(bw, "Dumping %s\n", path)
	name := filepath.Base(path)
	switch {
	case name == leaderEpochFile:
		err = dumpLeaderEpochs(bw, path)
	case strings.HasSuffix(name, logSuffix):
		err = dumpLog(bw, path, opts, r)
	case strings.HasSuffix(name, indexSuffix):
		err = dumpOffsetIndex(bw, path, opts, r)
	case strings.HasSuffix(name, timeIndexSuffix):
		err = dumpTimeIndex(bw, path, opts, r)
	case strings.HasSuffix(name, snapshotSuffix):
		err = dumpProducerSnapshot(bw, path)
	case strings.HasSuffix(name, txnIndexSuffix):
		err = dumpTxnIndex(bw, path, r)
	default:
		err = fmt.Errorf("%s: unknown kind of file (dump-log reads .log, .index, .timeindex, .txnindex, .snapshot and %s)", path, leaderEpochFile)
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	var pe *fs.PathError
	if err != nil && !errors.As(err, &pe) && !strings.Contains(err.Error(), path) {
		err = fmt.Errorf("%s: %w", path, err)
	}
	return r, err
}

// segmentBase is the base offset in a segment file's name.
func segmentBase(path, suffix string) (int64, error) {
	base, ok := parseOffsetName(filepath.Base(path), suffix)
	if !ok {
		return 0, fmt.Errorf("%s: not a segment file name (20-digit base offset, then %s)", path, suffix)
	}
	return base, nil
}
