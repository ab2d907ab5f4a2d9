package logstore

// Cleaning one log: Kafka's LogCleaner.Cleaner.doClean, per partition.
//
// The log is split at the first dirty offset (the cleaner checkpoint, or
// the log start) into a clean head and a dirty tail; the dirty tail is
// cleanable up to the first uncleanable offset: never the active segment,
// never past the high watermark or an open transaction, and not segments
// with records newer than min.compaction.lag.ms. A clean
//
//  1. maps every key in the cleanable dirty section to its last offset
//     (keys as MD5 digests, as Kafka's SkimpyOffsetMap; a full map ends
//     the section early, at a batch boundary);
//  2. rewrites, in groups of segments that fit one segment, every segment
//     from the start of the log up to the end of the mapped section,
//     keeping a record when it is past the mapped section, or is its key's
//     last record and has a value or is a tombstone still within its
//     delete horizon. Records without a key are dropped;
//  3. swaps each rewritten group in (swap.go) and returns the offset after
//     the mapped section, the next first dirty offset.
//
// Batches are kept byte for byte when all their records stay; otherwise
// they are rebuilt with the same base offset, last offset delta, producer
// id/epoch/base sequence, leader epoch, attributes and codec (protocol's
// AppendBatch). A batch that keeps a tombstone gets a delete horizon (now
// + delete.retention.ms) the first time; its tombstones go at the first
// clean after the horizon (KIP-534). A batch left without records is
// dropped, except, as an empty header-only batch, the last data batch of a
// producer the log still tracks (its sequence numbers must survive) and
// the batch just before the first uncleanable offset (so the last offset
// of a cleaning round is not lost).
//
// Transactions, as Kafka's cleaner: the aborted transactions are read from
// the .txnindex entries ahead of the walk, so that a batch of an aborted
// transaction is known as it is met (its producer is then between the
// transaction's first offset and its abort marker). Such batches put no key
// in the offset map and lose all their records (kept empty by the rules
// above only). Committed transactions are cleaned like any records.
// Control batches are all kept, byte for byte, and so are the .txnindex
// entries of the rewritten segments (the rewritten segment gets those of
// its group). Kafka removes a marker once its transaction has no records
// left and delete.retention.ms has passed, and then its entry; Gregor
// keeps both: a few bytes per transaction, and consumers skip the markers.

import (
	"cmp"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/gregor-broker/gregor/protocol"
)

// cleanable is the section of a log a clean would work on, and its size
// (Kafka's LogToClean).
type cleanable struct {
	firstDirty       int64 // where the dirty section starts
	firstUncleanable int64 // base of the first segment not to clean
	cleanBytes       int64 // bytes of the segments below firstDirty
	cleanableBytes   int64 // bytes of the segments in [firstDirty, firstUncleanable)
	needNow          bool  // max.compaction.lag.ms has passed for a dirty segment
}

func (c cleanable) totalBytes() int64 { return c.cleanBytes + c.cleanableBytes }

func (c cleanable) ratio() float64 {
	if c.totalBytes() == 0 {
		return 0
	}
	return float64(c.cleanableBytes) / float64(c.totalBytes())
}

// segmentsIn is Kafka's logSegments(from, to): the segment holding from
// (or the first) and those after it with base offsets below to.
func segmentsIn(segs []*segment, from, to int64) []*segment {
	if from >= to {
		return nil
	}
	i := max(sort.Search(len(segs), func(i int) bool { return segs[i].base > from })-1, 0)
	j := sort.Search(len(segs), func(j int) bool { return segs[j].base >= to })
	if i >= j {
		return nil
	}
	return segs[i:j]
}

// cleanableRange works out what a clean would do now (unix ms), given the
// cleaner checkpoint (-1: none). Kafka's LogCleanerManager.cleanableOffsets,
// calculateCleanableBytes and maxCompactionDelay.
func (l *Log) cleanableRange(checkpoint, now int64) cleanable {
	l.mu.Lock()
	cfg := l.cfg
	segs := l.segments()
	start, end := l.logStart.Load(), l.end.Load()
	l.mu.Unlock()
	stable := l.LastStableOffset()

	var c cleanable
	c.firstDirty = checkpoint
	if checkpoint < start || checkpoint > end {
		c.firstDirty = start
	}
	active := segs[len(segs)-1]
	dirtyDone := segmentsIn(segs, c.firstDirty, active.base) // dirty, not active
	uncleanable := min(stable, active.base)
	if cfg.MinCompactionLagMs > 0 {
		for _, s := range dirtyDone {
			if s.largestTimestamp() > now-cfg.MinCompactionLagMs {
				uncleanable = min(uncleanable, s.base)
				break
			}
		}
	}
	uncleanable = max(uncleanable, c.firstDirty)
	c.firstUncleanable = segs[floorSegment(segs, uncleanable)].base
	for _, s := range segmentsIn(segs, min(c.firstDirty, c.firstUncleanable), c.firstUncleanable) {
		c.cleanableBytes += s.size.Load()
	}
	for _, s := range segs {
		if s.base < c.firstDirty {
			c.cleanBytes += s.size.Load()
		}
	}
	if cfg.MaxCompactionLagMs < 1<<63-1 {
		cleanUntil := now - cfg.MaxCompactionLagMs
		for _, s := range dirtyDone {
			if ts := s.firstBatchTimestamp(); ts > 0 && ts < cleanUntil {
				c.needNow = true
				break
			}
		}
	}
	return c
}

// cleanOptions are what the Dir's cleaner passes to a clean.
type cleanOptions struct {
	now        int64              // unix ms the clean runs at
	mapEntries int                // offset map capacity (keys)
	aborted    func() bool        // polled between batches
	step       func(string) error // called before each swap step (tests)
	throttle   *IOThrottle        // charged with every batch read and written; nil: none
	maxRecord  int                // the log's max.decompressed.message.bytes (Config.recordLimit)
}

// io charges the throttle with n bytes read or written.
func (o cleanOptions) io(n int) error { return o.throttle.charge(n, o.aborted) }

// clean cleans the section c of the log (see the top of this file) and
// returns the offset to checkpoint as the next first dirty offset. The
// caller holds l.cleanMu. Reads and appends go on meanwhile; l.mu is taken
// only to swap each group in.
func (l *Log) clean(c cleanable, o cleanOptions) (int64, error) {
	cfg := l.Config()
	o.maxRecord = cfg.recordLimit()
	segs := l.segments()
	om := newOffsetMap(o.mapEntries)
	if err := l.buildOffsetMap(segs, c.firstDirty, c.firstUncleanable, om, o); err != nil {
		return 0, err
	}
	endOffset := om.latest + 1
	if endOffset <= c.firstDirty {
		return 0, fmt.Errorf("the offset map (%d keys) cannot hold one batch at offset %d", om.limit, c.firstDirty)
	}
	toClean := segmentsIn(segs, 0, endOffset)
	upper := endOffset // the end of the last segment cleaned
	if len(toClean) < len(segs) {
		upper = segs[len(toClean)].base
	}
	f := &recordFilter{om: om, now: o.now, deleteRetentionMs: cfg.DeleteRetentionMs, maxRecord: o.maxRecord,
		producers: l.lastRecordsOfProducers(), upperBound: c.firstUncleanable,
		aborted: l.abortedIn(segs[0].base, upper)}
	for _, group := range groupSegments(toClean, cfg, c.firstUncleanable) {
		if err := l.cleanGroup(group, f, cfg, o); err != nil {
			return 0, err
		}
	}
	return endOffset, nil
}

// offsetMap maps keys (MD5 digests) to the last offset seen for them.
type offsetMap struct {
	m      map[[16]byte]int64
	limit  int
	latest int64 // last offset the map covers (-1: none)
}

func newOffsetMap(limit int) *offsetMap {
	return &offsetMap{m: make(map[[16]byte]int64, min(limit, 1<<16)), limit: max(limit, 1), latest: -1}
}

// get returns the last offset of key, or -1.
func (m *offsetMap) get(key []byte) int64 {
	if off, ok := m.m[md5.Sum(key)]; ok {
		return off
	}
	return -1
}

// buildOffsetMap maps the keys of the records in [start, end) (Kafka's
// buildOffsetMap): segment by segment, stopping when the map is full.
func (l *Log) buildOffsetMap(segs []*segment, start, end int64, om *offsetMap, o cleanOptions) error {
	dirty := segmentsIn(segs, start, end)
	aborted := l.abortedIn(start, end)
	for i, s := range dirty {
		next := end
		if i+1 < len(dirty) {
			next = dirty[i+1].base
		}
		full, err := mapSegment(s, start, om, aborted, o)
		if err != nil || full {
			return err
		}
		om.latest = max(om.latest, next-1) // offsets gaps at the segment's end
	}
	return nil
}

var errMapFull = errors.New("offset map full")

// mapSegment adds the keys of one segment's records from offset start on,
// but those of aborted transactions; full reports that the map filled up
// before the segment's end.
func mapSegment(s *segment, start int64, om *offsetMap, aborted *abortedTxns, o cleanOptions) (full bool, err error) {
	sc := newScanner(s.log, s.lookup(start), s.size.Load(), 1<<20)
	for {
		h, at, err := sc.next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, storageErr("map "+s.log.Name(), err)
		}
		if o.aborted() {
			return false, errCleanAborted
		}
		if h.LastOffset() < start {
			continue
		}
		batch, err := sc.batch(&h, at)
		if err != nil {
			return false, storageErr("map "+s.log.Name(), err)
		}
		if err := o.io(len(batch)); err != nil {
			return false, err
		}
		if !aborted.skip(&h, batch) && h.Attributes&protocol.AttrControl == 0 {
			err = protocol.RecordsWithin(batch, o.maxRecord, func(r *protocol.Record) error {
				if r.Key == nil || r.Offset < start {
					return nil
				}
				if len(om.m) >= om.limit {
					return errMapFull
				}
				om.m[md5.Sum(r.Key)] = r.Offset
				return nil
			})
			if errors.Is(err, errMapFull) {
				return true, nil
			}
			if err != nil {
				return false, err
			}
		}
		om.latest = max(om.latest, h.LastOffset())
	}
}

// groupSegments is Kafka's groupSegmentsBySize: consecutive segments whose
// .log files together fit segment.bytes, whose indexes together fit
// segment.index.bytes, and whose offsets fit one segment's 4-byte relative
// offsets, are rewritten into one.
func groupSegments(segs []*segment, cfg Config, firstUncleanable int64) [][]*segment {
	var groups [][]*segment
	for i := 0; i < len(segs); {
		j := i + 1
		logSize := segs[i].size.Load()
		idxSize, tidxSize := segs[i].indexBytes()
		for ; j < len(segs); j++ {
			s := segs[j]
			x, tx := s.indexBytes()
			lastOffset := firstUncleanable - 1 // of s, at worst
			if j+1 < len(segs) {
				lastOffset = segs[j+1].base - 1
			}
			if logSize+s.size.Load() > cfg.SegmentBytes || idxSize+x > int64(cfg.SegmentIndexBytes) ||
				tidxSize+tx > int64(cfg.SegmentIndexBytes) || (s.size.Load() > 0 && lastOffset-segs[i].base > 1<<31-1) {
				break
			}
			logSize, idxSize, tidxSize = logSize+s.size.Load(), idxSize+x, tidxSize+tx
		}
		groups = append(groups, segs[i:j:j])
		i = j
	}
	return groups
}

// cleanGroup rewrites a group of segments into <base>.log.cleaned and
// swaps it in.
func (l *Log) cleanGroup(group []*segment, f *recordFilter, cfg Config, o cleanOptions) (err error) {
	dst, err := openSegmentFilesSuffix(l.dir, group[0].base, cleanedSuffix, cfg, true, l.logger)
	if err != nil {
		return storageErr("create cleaned segment", err)
	}
	dst.loaded = true
	swapping := false
	defer func() {
		if err != nil && !swapping {
			dst.removeFiles()
		}
	}()
	w := cleanWriter{dst: dst, interval: cfg.IndexIntervalBytes}
	for _, s := range group {
		if err := f.cleanSegment(s, &w, o); err != nil {
			return err
		}
		s.mu.RLock()
		dst.txn.entries = append(dst.txn.entries, s.txn.entries...)
		s.mu.RUnlock()
	}
	if err := w.flush(); err != nil {
		return storageErr("write "+dst.log.Name(), err)
	}
	if err := errors.Join(dst.finish(), dst.sync()); err != nil {
		return storageErr("write "+dst.log.Name(), err)
	}
	if mtime := group[len(group)-1].lastModified(); mtime > 0 {
		t := time.UnixMilli(mtime)
		_ = os.Chtimes(dst.log.Name(), t, t)
	}
	swapping, err = l.replaceSegments(dst, group, o.step)
	return err
}

// cleanWriter appends kept batches to the cleaned segment in large writes.
type cleanWriter struct {
	dst      *segment
	interval int
	buf      []byte
	batches  []appendedBatch
}

func (w *cleanWriter) add(batch []byte) error {
	h := decodeHeader(batch)
	w.buf = append(w.buf, batch...)
	w.batches = append(w.batches, appendedBatch{lastOffset: h.LastOffset(), maxTs: h.MaxTimestamp, size: int64(len(batch))})
	if len(w.buf) >= 1<<20 {
		return w.flush()
	}
	return nil
}

func (w *cleanWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	size, err := w.dst.append(w.buf, w.batches, w.interval)
	if err != nil {
		return err
	}
	w.dst.size.Store(size)
	w.buf, w.batches = w.buf[:0], w.batches[:0]
	return nil
}

// lastRecord is what the cleaner must keep of a producer the log tracks:
// its last data batch (by last offset), or its last marker's epoch.
type lastRecord struct {
	lastDataOffset int64 // -1: the producer's last entry is a marker
	epoch          int16
}

func (l *Log) lastRecordsOfProducers() map[int64]lastRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int64]lastRecord, len(l.producers.producers))
	for pid, e := range l.producers.producers {
		r := lastRecord{lastDataOffset: -1, epoch: e.epoch}
		if m, ok := e.last(); ok {
			r.lastDataOffset = m.lastOffset
		}
		out[pid] = r
	}
	return out
}

// recordFilter decides, batch by batch, what a clean keeps.
type recordFilter struct {
	om                *offsetMap
	now               int64
	deleteRetentionMs int64
	producers         map[int64]lastRecord
	upperBound        int64 // the first uncleanable offset
	aborted           *abortedTxns
	maxRecord         int // max.decompressed.message.bytes

	kept  []protocol.Record // scratch for one batch
	arena []byte            // their keys, values and headers
	out   []byte            // the rebuilt batch
}

// cleanSegment passes every batch of s through the filter into w.
func (f *recordFilter) cleanSegment(s *segment, w *cleanWriter, o cleanOptions) error {
	sc := newScanner(s.log, 0, s.size.Load(), 1<<20)
	for {
		h, at, err := sc.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return storageErr("clean "+s.log.Name(), err)
		}
		if o.aborted() {
			return errCleanAborted
		}
		batch, err := sc.batch(&h, at)
		if err != nil {
			return storageErr("clean "+s.log.Name(), err)
		}
		out, err := f.filter(f.out[:0], &h, batch)
		if err != nil {
			return storageErr("clean "+s.log.Name(), err)
		}
		f.out = out
		if len(out) > 0 {
			if err := w.add(out); err != nil {
				return storageErr("write "+w.dst.log.Name(), err)
			}
		}
		if err := o.io(len(batch) + len(out)); err != nil {
			return err
		}
	}
}

// filter appends to dst what is kept of one batch (nothing, the batch as
// it is, a rebuilt batch, or an empty header-only batch).
func (f *recordFilter) filter(dst []byte, h *protocol.BatchHeader, batch []byte) ([]byte, error) {
	aborted := f.aborted.skip(h, batch)
	if h.Attributes&protocol.AttrControl != 0 {
		return append(dst, batch...), nil
	}
	retainEmpty := h.LastOffset()+1 == f.upperBound
	if p, ok := f.producers[h.ProducerID]; ok && h.ProducerID >= 0 && p.lastDataOffset >= 0 && p.lastDataOffset == h.LastOffset() {
		retainEmpty = true
	}
	if aborted {
		if retainEmpty {
			return protocol.AppendEmptyBatch(dst, *h), nil
		}
		return dst, nil
	}
	f.kept, f.arena = f.kept[:0], f.arena[:0]
	all, tombstones := true, false
	err := protocol.RecordsWithin(batch, f.maxRecord, func(r *protocol.Record) error {
		if !f.retain(h, r) {
			all = false
			return nil
		}
		tombstones = tombstones || r.Value == nil
		f.kept = append(f.kept, f.copyRecord(r))
		return nil
	})
	if err != nil {
		return dst, err
	}
	horizon, hasHorizon := h.DeleteHorizon()
	switch {
	case len(f.kept) > 0 && all && (hasHorizon || !tombstones):
		return append(dst, batch...), nil
	case len(f.kept) > 0 && tombstones && !hasHorizon:
		return protocol.AppendBatchWithDeleteHorizon(dst, *h, f.now+f.deleteRetentionMs, f.kept)
	case len(f.kept) > 0 && hasHorizon:
		return protocol.AppendBatchWithDeleteHorizon(dst, *h, horizon, f.kept)
	case len(f.kept) > 0:
		return protocol.AppendBatch(dst, *h, f.kept)
	case retainEmpty:
		return protocol.AppendEmptyBatch(dst, *h), nil
	}
	return dst, nil
}

// retain is Kafka's Cleaner.shouldRetainRecord for v2 batches.
func (f *recordFilter) retain(h *protocol.BatchHeader, r *protocol.Record) bool {
	if r.Offset > f.om.latest {
		return true // past the mapped section
	}
	if r.Key == nil || r.Offset < f.om.get(r.Key) {
		return false
	}
	if r.Value != nil {
		return true
	}
	horizon, ok := h.DeleteHorizon()
	return !ok || f.now < horizon
}

// copyRecord copies a record out of the iterator's reused memory.
func (f *recordFilter) copyRecord(r *protocol.Record) protocol.Record {
	c := *r
	c.Key, c.Value = f.save(r.Key), f.save(r.Value)
	c.Headers = nil
	for _, hd := range r.Headers {
		c.Headers = append(c.Headers, protocol.Header{Key: hd.Key, Value: f.save(hd.Value)})
	}
	return c
}

func (f *recordFilter) save(b []byte) []byte {
	if b == nil {
		return nil
	}
	// A fresh slice when the arena would move, so earlier copies stay
	// valid; and never a nil one, or an empty key or value saved first
	// would come out null (no key, a tombstone).
	if len(f.arena)+len(b) > cap(f.arena) || f.arena == nil {
		f.arena = make([]byte, 0, max(2*cap(f.arena), len(b), 4096))
	}
	f.arena = append(f.arena, b...)
	return f.arena[len(f.arena)-len(b) : len(f.arena) : len(f.arena)]
}

// abortedTxns follows, batch by batch in log order, which producers are
// inside an aborted transaction (Kafka's CleanedTransactionMetadata, but
// for removing markers).
type abortedTxns struct {
	ahead  []AbortedTxn   // by first offset, not reached yet
	inside map[int64]bool // producers between an aborted transaction's first offset and its marker
}

// abortedIn prepares to walk [from, to): the aborted transactions with
// records there, from the segments' .txnindex entries.
func (l *Log) abortedIn(from, to int64) *abortedTxns {
	ahead := l.AppendAbortedTxns(nil, from, to)
	slices.SortStableFunc(ahead, func(a, b AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return &abortedTxns{ahead: ahead, inside: map[int64]bool{}}
}

// skip reports whether the batch (the next in log order) belongs to an
// aborted transaction; an abort marker ends its producer's.
func (a *abortedTxns) skip(h *protocol.BatchHeader, batch []byte) bool {
	for len(a.ahead) > 0 && a.ahead[0].FirstOffset <= h.LastOffset() {
		a.inside[a.ahead[0].ProducerID] = true
		a.ahead = a.ahead[1:]
	}
	if h.Attributes&protocol.AttrControl != 0 {
		if abort, _, ok := parseMarker(batch); ok && abort {
			delete(a.inside, h.ProducerID)
		}
		return false
	}
	return h.Attributes&protocol.AttrTransactional != 0 && a.inside[h.ProducerID]
}
