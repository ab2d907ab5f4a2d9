package logstore

// Transactions: the last stable offset and the aborted-transaction index,
// as Kafka's ProducerStateManager (ongoing and unreplicated transactions),
// UnifiedLog.lastStableOffset and TransactionIndex.
//
// A transaction starts at the first transactional data batch of a producer
// that has none open, and ends at its producer's next control batch (the
// marker). Until then it is ongoing; once ended it stays "unreplicated"
// until the high watermark passes its marker. The first unstable offset is
// the first offset of the oldest ongoing or unreplicated transaction (never
// below the log start); the last stable offset is that, or the high
// watermark when lower. Every ended transaction that was aborted gets an
// entry in the .txnindex of the segment its marker went to, with the last
// stable offset as it was when the marker was appended: the first offset
// of the oldest transaction of another producer still ongoing, else the
// marker's offset + 1. A marker with no transaction open (an empty one)
// changes no offset and gets no entry, as in Kafka since 2.8 (KAFKA-10702).

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gregor-broker/gregor/protocol"
)

// AbortedTxn is an entry of the aborted-transaction index (Kafka's
// AbortedTxn): the producer's aborted transaction spans offsets
// FirstOffset..LastOffset (its marker), and LastStableOffset was the last
// stable offset once it ended.
type AbortedTxn struct {
	ProducerID, FirstOffset, LastOffset, LastStableOffset int64
}

// .txnindex entry: int16 version 0, int64 producerId, firstOffset,
// lastOffset, lastStableOffset.
const (
	txnIndexSuffix    = ".txnindex"
	txnIndexEntrySize = 34
	txnIndexVersion   = 0
)

func putAbortedTxn(b []byte, a AbortedTxn) {
	binary.BigEndian.PutUint16(b, txnIndexVersion)
	binary.BigEndian.PutUint64(b[2:], uint64(a.ProducerID))
	binary.BigEndian.PutUint64(b[10:], uint64(a.FirstOffset))
	binary.BigEndian.PutUint64(b[18:], uint64(a.LastOffset))
	binary.BigEndian.PutUint64(b[26:], uint64(a.LastStableOffset))
}

// txnIndex is a segment's .txnindex: entries in memory (all of them, read
// when the segment is opened), written to the file like the other indexes
// (indexFile). The file exists only once an entry was written to it.
// Guarded by its segment's mu.
type txnIndex struct {
	indexFile
	entries []AbortedTxn
}

// load reads the file (none: no entries). It fails on a partial entry, an
// unknown version or last offsets that do not increase; the segment is
// then recovered, which rebuilds the index.
func (x *txnIndex) load() error {
	buf, err := readIndexFile(x.path, txnIndexEntrySize)
	if errors.Is(err, os.ErrNotExist) {
		x.entries, x.written, x.truncate = nil, 0, false
		return nil
	}
	if err != nil {
		return err
	}
	x.entries = make([]AbortedTxn, 0, len(buf)/txnIndexEntrySize)
	for p := buf; len(p) > 0; p = p[txnIndexEntrySize:] {
		if v := int16(binary.BigEndian.Uint16(p)); v != txnIndexVersion {
			return fmt.Errorf("transaction index %s: entry version %d", x.path, v)
		}
		a := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(p[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(p[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(p[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(p[26:])),
		}
		if err := x.append(a); err != nil {
			return err
		}
	}
	x.written, x.truncate = len(x.entries), false
	return nil
}

// append adds an entry in memory; last offsets must increase (Kafka's
// TransactionIndex.append).
func (x *txnIndex) append(a AbortedTxn) error {
	if n := len(x.entries); n > 0 && a.LastOffset <= x.entries[n-1].LastOffset {
		return fmt.Errorf("transaction index %s: last offset %d is not above %d", x.path, a.LastOffset, x.entries[n-1].LastOffset)
	}
	x.entries = append(x.entries, a)
	return nil
}

// truncateTo drops the entries whose marker is at or above offset (Kafka's
// TransactionIndex.truncateTo).
func (x *txnIndex) truncateTo(offset int64) {
	n := len(x.entries)
	for n > 0 && x.entries[n-1].LastOffset >= offset {
		n--
	}
	if n < len(x.entries) {
		x.entries = x.entries[:n]
		x.written, x.truncate = min(x.written, n), true
	}
}

func (x *txnIndex) reset() {
	x.entries = x.entries[:0]
	x.written, x.truncate = 0, true
}

// persist writes the pending entries (see segment.persistIndexes); a file
// that does not exist is not created just to be emptied.
func (x *txnIndex) persist(path string, data []byte, from, total int, cut, sync bool) error {
	if len(data) == 0 && cut {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	return x.write(path, data, from, total, txnIndexEntrySize, cut, sync)
}

// collect appends to dst the entries that may cover records in
// [fetchOffset, upperBound) and reports whether no later entry can (Kafka's
// TransactionIndex.collectAbortedTxns).
func (x *txnIndex) collect(dst []AbortedTxn, fetchOffset, upperBound int64) ([]AbortedTxn, bool) {
	for _, a := range x.entries {
		if a.LastOffset >= fetchOffset && a.FirstOffset < upperBound {
			dst = append(dst, a)
		}
		if a.LastStableOffset >= upperBound {
			return dst, true
		}
	}
	return dst, false
}

// txnMeta is a transaction the first unstable offset depends on.
type txnMeta struct{ pid, first, last int64 }

// txnState holds the ongoing and unreplicated transactions of a log and
// the first unstable offset they give, which readers load without a lock.
// Changes are made under Log.mu (appends, loads, truncation) and, for the
// high watermark, without it; mu comes after Log.mu.
type txnState struct {
	mu           sync.Mutex
	ongoing      []txnMeta // by first offset
	unreplicated []txnMeta // ended, marker not yet below the high watermark; by first offset
	writing      int64     // first offset of a transaction being written, not yet in ongoing
	first        atomic.Int64
}

func newTxnState() *txnState {
	t := &txnState{writing: math.MaxInt64}
	t.first.Store(math.MaxInt64)
	return t
}

// recompute stores the first unstable offset; the caller holds mu.
func (t *txnState) recompute() {
	first := t.writing
	if len(t.ongoing) > 0 {
		first = min(first, t.ongoing[0].first)
	}
	if len(t.unreplicated) > 0 {
		first = min(first, t.unreplicated[0].first)
	}
	t.first.Store(first)
}

func insertByFirst(list []txnMeta, m txnMeta) []txnMeta {
	i, _ := slices.BinarySearchFunc(list, m.first, func(e txnMeta, first int64) int { return cmp.Compare(e.first, first) })
	return slices.Insert(list, i, m)
}

// reset rebuilds the ongoing transactions from producer state (a load or
// truncation); nothing is unreplicated then, as in Kafka.
func (t *txnState) reset(producers map[int64]*producerEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ongoing, t.unreplicated, t.writing = t.ongoing[:0], t.unreplicated[:0], math.MaxInt64
	for pid, e := range producers {
		if e.txnFirstOffset >= 0 {
			t.ongoing = insertByFirst(t.ongoing, txnMeta{pid: pid, first: e.txnFirstOffset, last: -1})
		}
	}
	t.recompute()
}

// beginWrite lowers the first unstable offset to first, the offset of the
// first transactional data batch about to be published, before its bytes
// become readable (a follower could otherwise fetch them and move the high
// watermark past them while they still count as stable), until endWrite
// or reset.
func (t *txnState) beginWrite(first int64) {
	t.mu.Lock()
	t.writing = min(t.writing, first)
	t.recompute()
	t.mu.Unlock()
}

func (t *txnState) endWrite() {
	t.mu.Lock()
	if t.writing != math.MaxInt64 {
		t.writing = math.MaxInt64
		t.recompute()
	}
	t.mu.Unlock()
}

func (t *txnState) start(pid, first int64) {
	t.mu.Lock()
	t.ongoing = insertByFirst(t.ongoing, txnMeta{pid: pid, first: first, last: -1})
	t.recompute()
	t.mu.Unlock()
}

// lastStableFor is Kafka's lastStableOffset(completedTxn): the first
// offset of the oldest ongoing transaction of another producer, else the
// offset after the marker.
func (t *txnState) lastStableFor(pid, marker int64) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.ongoing {
		if m.pid != pid {
			return m.first
		}
	}
	return marker + 1
}

// complete ends pid's transaction starting at first with the marker at
// last; it stays unstable while the high watermark is at or below last.
// hw is loaded under mu: a concurrent SetHighWatermark either stored it
// before, or prunes after.
func (t *txnState) complete(pid, first, last int64, highWatermark *atomic.Int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	hw := highWatermark.Load()
	if i := slices.IndexFunc(t.ongoing, func(m txnMeta) bool { return m.pid == pid && m.first == first }); i >= 0 {
		t.ongoing = slices.Delete(t.ongoing, i, i+1)
	}
	if last >= hw {
		t.unreplicated = insertByFirst(t.unreplicated, txnMeta{pid: pid, first: first, last: last})
	}
	t.recompute()
}

// highWatermark forgets the ended transactions whose markers are below hw
// (Kafka's onHighWatermarkUpdated).
func (t *txnState) highWatermark(hw int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.unreplicated) == 0 {
		return
	}
	t.unreplicated = slices.DeleteFunc(t.unreplicated, func(m txnMeta) bool { return m.last < hw })
	t.recompute()
}

// applyTxnEvents brings the transaction state up to date with the
// transactions the batches just written (or replayed) started and ended,
// in Kafka's order: the starts first, then each end, an aborted one
// recorded in seg's .txnindex (seg nil: not recorded) with the last stable
// offset it leaves; then ends beginWrite. The caller holds l.mu.
func (l *Log) applyTxnEvents(seg *segment) error {
	ev := l.producers.events
	for _, e := range ev {
		if e.marker < 0 {
			l.txns.start(e.pid, e.first)
		}
	}
	var err error
	for _, e := range ev {
		if e.marker < 0 {
			continue
		}
		if e.abort && seg != nil {
			a := AbortedTxn{ProducerID: e.pid, FirstOffset: e.first, LastOffset: e.marker,
				LastStableOffset: l.txns.lastStableFor(e.pid, e.marker)}
			seg.mu.Lock()
			err = errors.Join(err, seg.txn.append(a))
			seg.mu.Unlock()
		}
		l.txns.complete(e.pid, e.first, e.marker, &l.hw)
	}
	l.producers.events = ev[:0]
	l.txns.endWrite()
	return err
}

// firstTxnData is the offset of the first transactional data batch among
// batches (already carrying their offsets), math.MaxInt64 when none.
func firstTxnData(batches []byte) int64 {
	for p := 0; p+protocol.BatchHeaderSize <= len(batches); {
		h := decodeHeader(batches[p:])
		if h.Attributes&(protocol.AttrTransactional|protocol.AttrControl) == protocol.AttrTransactional {
			return h.BaseOffset
		}
		p += h.Size()
	}
	return math.MaxInt64
}

// LastStableOffset is the offset below which every record's transaction
// is decided and the marker deciding it is below the high watermark:
// min(first unstable offset, high watermark). A read_committed fetch reads
// below it. It takes no lock and allocates nothing.
func (l *Log) LastStableOffset() int64 {
	hw := l.hw.Load()
	if first, ok := l.FirstUnstableOffset(); ok && first < hw {
		return first
	}
	return hw
}

// FirstUnstableOffset is the first offset of the oldest transaction that
// is open, or ended by a marker the high watermark has not passed yet
// (raised to the log start offset); ok is false when there is none.
func (l *Log) FirstUnstableOffset() (int64, bool) {
	first := l.txns.first.Load()
	if first == math.MaxInt64 {
		return -1, false
	}
	return max(first, l.logStart.Load()), true
}

// AppendAbortedTxns appends to dst the aborted transactions that may have
// records in [fetchOffset, upperBound) (LastOffset >= fetchOffset and
// FirstOffset < upperBound), in log order, as Kafka's
// collectAbortedTransactions: from the segment holding fetchOffset on,
// stopping at the first entry whose last stable offset reaches upperBound.
// It reads memory only and allocates nothing when dst has room.
func (l *Log) AppendAbortedTxns(dst []AbortedTxn, fetchOffset, upperBound int64) []AbortedTxn {
	segs := l.segments()
	for i := floorSegment(segs, fetchOffset); i < len(segs); i++ {
		s := segs[i]
		s.mu.RLock()
		var done bool
		dst, done = s.txn.collect(dst, fetchOffset, upperBound)
		s.mu.RUnlock()
		if done {
			break
		}
	}
	return dst
}
