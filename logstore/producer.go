package logstore

import (
	"cmp"
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"github.com/gregor-broker/gregor/protocol"
)

// batchesToRetain is how many recent batches per producer are remembered
// for duplicate detection (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN,
// matching max.in.flight.requests.per.connection <= 5).
const batchesToRetain = 5

// batchMeta is what is remembered of one appended idempotent batch.
type batchMeta struct {
	firstSeq, lastSeq int32
	lastOffset        int64
	offsetDelta       int32 // lastOffset - firstOffset
	maxTimestamp      int64
}

func (m batchMeta) firstOffset() int64 { return m.lastOffset - int64(m.offsetDelta) }

// producerEntry is the state of one producer id, as Kafka's ProducerStateEntry.
type producerEntry struct {
	epoch            int16
	batches          [batchesToRetain]batchMeta // ring, oldest first from start
	start, n         int
	lastTimestamp    int64
	coordinatorEpoch int32
	txnFirstOffset   int64 // -1: no open transaction
}

func emptyProducerEntry() producerEntry {
	return producerEntry{epoch: -1, lastTimestamp: -1, coordinatorEpoch: -1, txnFirstOffset: -1}
}

// txnOpenIn reports whether the producer has a transaction open that was
// begun in epoch.
func (e *producerEntry) txnOpenIn(epoch int16) bool {
	return e.txnFirstOffset >= 0 && e.epoch == epoch
}

func (e *producerEntry) batch(i int) batchMeta { return e.batches[(e.start+i)%batchesToRetain] }

func (e *producerEntry) last() (batchMeta, bool) {
	if e.n == 0 {
		return batchMeta{}, false
	}
	return e.batch(e.n - 1), true
}

// setEpoch moves to a new epoch, forgetting the old epoch's batches.
func (e *producerEntry) setEpoch(epoch int16) {
	if e.epoch != epoch {
		e.epoch, e.start, e.n = epoch, 0, 0
	}
}

func (e *producerEntry) addBatch(epoch int16, m batchMeta) {
	e.setEpoch(epoch)
	if e.n == batchesToRetain {
		e.start = (e.start + 1) % batchesToRetain
		e.n--
	}
	e.batches[(e.start+e.n)%batchesToRetain] = m
	e.n++
	e.lastTimestamp = m.maxTimestamp
}

// duplicate finds a remembered batch with exactly this epoch and sequence range.
func (e *producerEntry) duplicate(epoch int16, firstSeq, lastSeq int32) (batchMeta, bool) {
	if epoch != e.epoch {
		return batchMeta{}, false
	}
	for i := 0; i < e.n; i++ {
		if m := e.batch(i); m.firstSeq == firstSeq && m.lastSeq == lastSeq {
			return m, true
		}
	}
	return batchMeta{}, false
}

// decrementSequence is seq - d, wrapping below 0 to MaxInt32 like Kafka.
func decrementSequence(seq, d int32) int32 {
	if seq < d {
		return int32(int64(math.MaxInt32) - int64(d-seq) + 1)
	}
	return seq - d
}

func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// producerState maps producer ids to their state; guarded by Log.mu.
type producerState struct {
	producers map[int64]*producerEntry
	pending   []pendingProducer // scratch for one append's validation
	events    []txnEvent        // transactions started and ended by the batches validated or replayed since begin
	verifying map[int64]*txnVerification
	lastToken uint64 // the last verification token handed out
}

// txnEvent is a transaction starting (marker -1) or ended by the marker at
// offset marker.
type txnEvent struct {
	pid, first, marker int64
	abort              bool
}

// pendingProducer is a producer's state as an append in progress would leave it.
type pendingProducer struct {
	pid            int64
	committedEpoch int16 // the epoch before this append (-1: unknown producer)
	added          int   // batches added by this append
	entry          producerEntry
	transactional  bool // the append has a transactional batch or marker of this producer
}

func newProducerState() *producerState {
	return &producerState{producers: map[int64]*producerEntry{}, verifying: map[int64]*txnVerification{}}
}

// begin starts validating a new append.
func (ps *producerState) begin() { ps.pending, ps.events = ps.pending[:0], ps.events[:0] }

func (ps *producerState) pendingFor(pid int64) *pendingProducer {
	for i := range ps.pending {
		if ps.pending[i].pid == pid {
			return &ps.pending[i]
		}
	}
	p := pendingProducer{pid: pid, committedEpoch: -1, entry: emptyProducerEntry()}
	if cur := ps.producers[pid]; cur != nil {
		p.entry = *cur
		p.committedEpoch = cur.epoch
	}
	ps.pending = append(ps.pending, p)
	return &ps.pending[len(ps.pending)-1]
}

// checkDuplicate reports whether a client batch repeats one of the last
// batches its producer appended (against the committed state, as Kafka).
func (ps *producerState) checkDuplicate(h *protocol.BatchHeader) (batchMeta, bool) {
	if h.ProducerID < 0 || h.BaseSequence < 0 || h.Attributes&protocol.AttrControl != 0 {
		return batchMeta{}, false
	}
	cur := ps.producers[h.ProducerID]
	if cur == nil {
		return batchMeta{}, false
	}
	return cur.duplicate(h.ProducerEpoch, h.BaseSequence, h.LastSequence())
}

// errMarkerRetry is validate's answer to a transactions V2 marker that was
// already written (AppendOptions.MarkerTxnVersion).
var errMarkerRetry = errors.New("the marker is a retry of one already written")

// validate checks a client batch that is to get offsets base..base+lastOffsetDelta
// against the producer's state (including earlier batches of the same
// append) and records it as pending. batch is needed for control batches only.
func (ps *producerState) validate(h *protocol.BatchHeader, base int64, batch []byte, opts *AppendOptions) error {
	p := ps.pendingFor(h.ProducerID)
	e := &p.entry
	transactional := h.Attributes&protocol.AttrTransactional != 0
	p.transactional = p.transactional || transactional
	if h.ProducerEpoch < e.epoch {
		return errorf(CodeInvalidProducerEpoch, "producer %d epoch %d is older than the current epoch %d",
			h.ProducerID, h.ProducerEpoch, e.epoch)
	}
	if h.Attributes&protocol.AttrControl != 0 {
		abort, coord, ok := parseMarker(batch)
		if !ok {
			return errorf(CodeCorruptMessage, "producer %d: control batch without a transaction marker", h.ProducerID)
		}
		if e.coordinatorEpoch > coord {
			return errorf(CodeTransactionCoordinatorFenced, "producer %d: coordinator epoch %d is older than %d",
				h.ProducerID, coord, e.coordinatorEpoch)
		}
		if opts.MarkerTxnVersion >= 2 && h.ProducerEpoch == e.epoch {
			if e.txnFirstOffset < 0 {
				return errMarkerRetry
			}
			return errorf(CodeInvalidProducerEpoch, "producer %d: a transactions V2 marker's epoch %d must be above the epoch %d of the open transaction",
				h.ProducerID, h.ProducerEpoch, e.epoch)
		}
		ps.applyControl(h.ProducerID, e, h, base, abort, coord)
		return nil
	}
	if transactional {
		if err := ps.checkVerification(p, h, opts); err != nil {
			return err
		}
	}
	firstSeq := h.BaseSequence
	if firstSeq < 0 {
		// No sequence: written by a coordinator (transactional offset
		// commits), which Kafka checks for epoch only.
	} else if h.ProducerEpoch != e.epoch {
		if firstSeq != 0 && e.epoch != -1 {
			return errorf(CodeOutOfOrderSequenceNumber, "producer %d: new epoch %d must start at sequence 0, got %d",
				h.ProducerID, h.ProducerEpoch, firstSeq)
		}
	} else {
		lastSeq := int32(-1)
		if m, ok := e.last(); ok && (p.added > 0 || h.ProducerEpoch == p.committedEpoch) {
			lastSeq = m.lastSeq
		}
		if p.committedEpoch != -1 && !inSequence(lastSeq, firstSeq) {
			return errorf(CodeOutOfOrderSequenceNumber, "producer %d epoch %d: sequence %d does not follow %d",
				h.ProducerID, h.ProducerEpoch, firstSeq, lastSeq)
		}
	}
	if e.txnFirstOffset >= 0 && !transactional {
		return errorf(CodeInvalidTxnState, "producer %d: non-transactional batch inside an open transaction", h.ProducerID)
	}
	ps.applyData(h.ProducerID, e, h, base)
	p.added++
	return nil
}

// commit makes the pending states of a validated append current.
func (ps *producerState) commit() {
	for i := range ps.pending {
		p := &ps.pending[i]
		if cur := ps.producers[p.pid]; cur != nil {
			*cur = p.entry
		} else {
			e := p.entry
			ps.producers[p.pid] = &e
		}
		if p.transactional {
			// The transaction has started here, or ended: either way a
			// verification in progress is answered.
			delete(ps.verifying, p.pid)
		}
	}
	ps.pending = ps.pending[:0]
}

// replay applies a batch read back from the log, without validation (as
// Kafka does when rebuilding state or appending as a follower).
func (ps *producerState) replay(h *protocol.BatchHeader, batch []byte) {
	if h.ProducerID < 0 {
		return
	}
	e := ps.producers[h.ProducerID]
	if e == nil {
		ne := emptyProducerEntry()
		e = &ne
		ps.producers[h.ProducerID] = e
	}
	if h.Attributes&protocol.AttrTransactional != 0 {
		delete(ps.verifying, h.ProducerID)
	}
	if h.Attributes&protocol.AttrControl != 0 {
		// An empty control batch (Kafka's cleaner empties markers whose
		// transaction is gone) changes nothing.
		if abort, coord, ok := parseMarker(batch); ok {
			ps.applyControl(h.ProducerID, e, h, h.BaseOffset, abort, coord)
		}
		return
	}
	ps.applyData(h.ProducerID, e, h, h.BaseOffset)
}

func (ps *producerState) applyData(pid int64, e *producerEntry, h *protocol.BatchHeader, base int64) {
	e.addBatch(h.ProducerEpoch, batchMeta{
		firstSeq:     h.BaseSequence,
		lastSeq:      h.LastSequence(),
		lastOffset:   base + int64(h.LastOffsetDelta),
		offsetDelta:  h.LastOffsetDelta,
		maxTimestamp: h.MaxTimestamp,
	})
	if h.Attributes&protocol.AttrTransactional != 0 && e.txnFirstOffset < 0 {
		e.txnFirstOffset = base
		ps.events = append(ps.events, txnEvent{pid: pid, first: base, marker: -1})
	}
}

// applyControl applies the marker at offset marker; it ends the open
// transaction if there is one (Kafka's appendEndTxnMarker).
func (ps *producerState) applyControl(pid int64, e *producerEntry, h *protocol.BatchHeader, marker int64, abort bool, coordinatorEpoch int32) {
	if e.txnFirstOffset >= 0 {
		ps.events = append(ps.events, txnEvent{pid: pid, first: e.txnFirstOffset, marker: marker, abort: abort})
	}
	e.setEpoch(h.ProducerEpoch)
	e.coordinatorEpoch = coordinatorEpoch
	e.txnFirstOffset = -1
	e.lastTimestamp = h.MaxTimestamp
}

// parseMarker reads a control batch's end-transaction marker: its first
// record's key (int16 version, int16 type: 0 abort, 1 commit) and value
// (int16 version, int32 coordinatorEpoch). Control batches are never
// compressed. Unlike protocol.ParseEndTxnMarker it allocates nothing.
func parseMarker(batch []byte) (abort bool, coordinatorEpoch int32, ok bool) {
	if len(batch) <= protocol.BatchHeaderSize {
		return false, -1, false
	}
	b := batch[protocol.BatchHeaderSize:]
	skipVarint := func() bool {
		_, n := binary.Varint(b)
		if n <= 0 {
			return false
		}
		b = b[n:]
		return true
	}
	if !skipVarint() || len(b) < 1 { // length, attributes
		return false, -1, false
	}
	b = b[1:]
	if !skipVarint() || !skipVarint() { // timestampDelta, offsetDelta
		return false, -1, false
	}
	klen, n := binary.Varint(b)
	if n <= 0 || klen < 4 || int64(len(b)-n) < klen {
		return false, -1, false
	}
	typ := binary.BigEndian.Uint16(b[n+2:])
	if typ > 1 {
		return false, -1, false
	}
	b = b[n+int(klen):]
	vlen, n := binary.Varint(b)
	if n <= 0 || vlen < 6 || int64(len(b)-n) < vlen {
		return false, -1, false
	}
	v := b[n:]
	return typ == 0, int32(binary.BigEndian.Uint32(v[2:])), true
}

// ActiveProducer is what DescribeProducers reports of one producer id the
// log keeps state for (Kafka's DescribeProducersResponseData.ProducerState).
type ActiveProducer struct {
	ID               int64
	Epoch            int16
	LastSequence     int32 // -1: no batch of this epoch remembered
	LastTimestamp    int64
	CoordinatorEpoch int32
	TxnStartOffset   int64 // -1: no open transaction
}

// ActiveProducers lists the producers the log keeps state for, by id.
func (l *Log) ActiveProducers() []ActiveProducer {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ActiveProducer, 0, len(l.producers.producers))
	for pid, e := range l.producers.producers {
		ap := ActiveProducer{ID: pid, Epoch: e.epoch, LastSequence: -1, LastTimestamp: e.lastTimestamp,
			CoordinatorEpoch: e.coordinatorEpoch, TxnStartOffset: e.txnFirstOffset}
		if m, ok := e.last(); ok {
			ap.LastSequence = m.lastSeq
		}
		out = append(out, ap)
	}
	slices.SortFunc(out, func(a, b ActiveProducer) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
