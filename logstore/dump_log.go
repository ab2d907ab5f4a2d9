package logstore

// Dumping a .log segment: Kafka's batch and record lines.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/gregor-broker/gregor/protocol"
)

func dumpLog(w *bufio.Writer, path string, opts DumpOptions, r *DumpReport) error {
	base, err := segmentBase(path, logSuffix)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Log starting offset: %d\n", base)
	deep := opts.Deep || opts.PrintData
	lastOffset := int64(-1)
	sc := newScanner(f, 0, st.Size(), 1<<20)
	for {
		h, pos, err := sc.next()
		if err == io.EOF {
			return nil
		}
		var batch []byte
		if err == nil {
			batch, err = sc.batch(&h, pos)
		}
		if errors.Is(err, errTorn) {
			r.TrailingBytes = st.Size() - pos
			fmt.Fprintf(w, "Found %d invalid bytes at the end of %s\n", r.TrailingBytes, filepath.Base(path))
			return nil
		}
		if err != nil {
			return err
		}
		valid := protocol.BatchCRC(batch) == h.CRC
		if !valid {
			r.InvalidBatches++
		}
		writeBatchLine(w, &h, pos, valid)
		if deep {
			if err := dumpRecords(w, &h, batch, opts, r, &lastOffset); err != nil {
				fmt.Fprintf(w, "| records of the batch at position %d do not parse: %v\n", pos, err)
				r.fail("%s: records of the batch at position %d do not parse: %v", r.Path, pos, err)
			}
		}
	}
}

// writeBatchLine is Kafka's printBatchLevel for a v2 batch.
func writeBatchLine(w *bufio.Writer, h *protocol.BatchHeader, pos int64, valid bool) {
	horizon := "OptionalLong.empty"
	if ms, ok := h.DeleteHorizon(); ok {
		horizon = fmt.Sprintf("OptionalLong[%d]", ms)
	}
	fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s",
		h.BaseOffset, h.LastOffset(), h.RecordCount, h.BaseSequence, h.LastSequence(), h.ProducerID, h.ProducerEpoch,
		h.PartitionLeaderEpoch, h.Attributes&protocol.AttrTransactional != 0, h.Attributes&protocol.AttrControl != 0, horizon)
	fmt.Fprintf(w, " position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		pos, timestampType(h), h.MaxTimestamp, h.Size(), h.Magic, codecName(h.Compression()), h.CRC, valid)
}

func timestampType(h *protocol.BatchHeader) string {
	if h.Attributes&protocol.AttrTimestampType != 0 {
		return "LogAppendTime"
	}
	return "CreateTime"
}

// codecName is Kafka's CompressionType.name.
func codecName(c int8) string {
	switch c {
	case protocol.CompressionNone:
		return "none"
	case protocol.CompressionGzip:
		return "gzip"
	case protocol.CompressionSnappy:
		return "snappy"
	case protocol.CompressionLz4:
		return "lz4"
	case protocol.CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", c)
}

// dumpRecords prints one line per record, as Kafka's deep iteration does,
// and notes offsets that do not follow on from the previous record's.
func dumpRecords(w *bufio.Writer, h *protocol.BatchHeader, batch []byte, opts DumpOptions, r *DumpReport, lastOffset *int64) error {
	control := h.Attributes&protocol.AttrControl != 0
	return protocol.Records(batch, func(rec *protocol.Record) error {
		if *lastOffset >= 0 && rec.Offset != *lastOffset+1 {
			r.NonConsecutive = append(r.NonConsecutive, DumpPair{*lastOffset, rec.Offset})
		}
		*lastOffset = rec.Offset
		prefix := "| "
		if !opts.SkipRecordMetadata {
			fmt.Fprintf(w, "%soffset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [",
				prefix, rec.Offset, timestampType(h), rec.Timestamp, nullableLen(rec.Key), nullableLen(rec.Value),
				recordSequence(h, rec.Offset))
			for i, hd := range rec.Headers {
				if i > 0 {
					w.WriteByte(',')
				}
				w.WriteString(hd.Key)
			}
			w.WriteByte(']')
			prefix = " "
			if control {
				w.WriteString(controlDescription(rec))
			}
		}
		if opts.PrintData && !control {
			if rec.Key != nil {
				fmt.Fprintf(w, "%skey: %s", prefix, javaString(rec.Key))
			}
			if rec.Value != nil {
				fmt.Fprintf(w, " payload: %s", javaString(rec.Value))
			}
		}
		return w.WriteByte('\n')
	})
}

func nullableLen(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// recordSequence is Kafka's DefaultRecord.sequence: the batch's base
// sequence plus the offset delta, wrapping past MaxInt32; -1 without one.
func recordSequence(h *protocol.BatchHeader, offset int64) int32 {
	one := *h
	one.LastOffsetDelta = int32(offset - h.BaseOffset)
	return one.LastSequence()
}

// controlTypes are Kafka's ControlRecordType ids.
var controlTypes = []string{"ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "KRAFT_VERSION", "KRAFT_VOTERS"}

// controlDescription describes a control record: the key is int16 version,
// int16 type; a transaction marker's value is int16 version, int32
// coordinator epoch.
func controlDescription(rec *protocol.Record) string {
	id := int16(-1)
	if len(rec.Key) >= 4 {
		id = int16(binary.BigEndian.Uint16(rec.Key[2:]))
	}
	if (id == 0 || id == 1) && len(rec.Value) >= 6 {
		return fmt.Sprintf(" endTxnMarker: %s coordinatorEpoch: %d", controlTypes[id], int32(binary.BigEndian.Uint32(rec.Value[2:])))
	}
	name := "UNKNOWN"
	if id >= 0 && int(id) < len(controlTypes) {
		name = controlTypes[id]
	}
	return fmt.Sprintf(" controlType: %s(%d)", name, id)
}

// javaString decodes UTF-8 as Java's new String(bytes, UTF_8) does, each
// undecodable byte becoming U+FFFD.
func javaString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var s strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		s.WriteRune(r)
		b = b[n:]
	}
	return s.String()
}
