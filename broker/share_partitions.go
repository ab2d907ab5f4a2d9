package broker

import (
	"strings"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/coordinator/share"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/protocol"
)

// sharePartitions are the share-partitions this broker leads: for each
// share group reading a partition led here, its in-flight records
// (coordinator/share), read from the share coordinator on first use and
// written back after every change a restart must not lose
// (acknowledgements, releases, expired locks; acquisitions are not
// written, as in Kafka: after a failover they are available again, with
// the delivery counts last written). A share-partition belongs to one
// leader epoch: when the partition's leader epoch moves it is read again.
type sharePartitions struct {
	b   *Broker
	dlq *shareDLQ
	mu  sync.Mutex
	m   map[shareKey]*sharePartition
}

// sharePartition is one share-partition led here. Its mutex serialises
// every operation on it, state write included, so writes land in order.
type sharePartition struct {
	key  shareKey
	part *partition

	mu          sync.Mutex
	leaderEpoch int32
	stateEpoch  int32
	state       *share.Partition // nil until read, or after a failed write
	timer       *time.Timer      // the next lock expiry
	dropped     bool
	// archiving: a dead-letter queue write of this share-partition is
	// under way; the next waits for it, so the queue gets them in order.
	archiving bool
}

func newSharePartitions(b *Broker) *sharePartitions {
	return &sharePartitions{b: b, dlq: newShareDLQ(b), m: map[shareKey]*sharePartition{}}
}

// get returns the share-partition of group on p, which this broker leads.
func (sps *sharePartitions) get(k shareKey, p *partition) *sharePartition {
	sps.mu.Lock()
	defer sps.mu.Unlock()
	sp := sps.m[k]
	if sp == nil || sp.part != p {
		sp = &sharePartition{key: k, part: p, leaderEpoch: -1}
		sps.m[k] = sp
	}
	return sp
}

// forget drops a share-partition (its state was deleted or reset), so the
// next use reads it again.
func (sps *sharePartitions) forget(k shareKey) {
	sps.mu.Lock()
	sp := sps.m[k]
	delete(sps.m, k)
	sps.mu.Unlock()
	if sp != nil {
		sp.mu.Lock()
		sp.drop()
		sp.mu.Unlock()
	}
}

// close stops every lock timer and dead-letter queue write.
func (sps *sharePartitions) close() {
	sps.dlq.close()
	sps.mu.Lock()
	defer sps.mu.Unlock()
	for k, sp := range sps.m {
		sp.mu.Lock()
		sp.drop()
		sp.mu.Unlock()
		delete(sps.m, k)
	}
}

// drop forgets the state and stops the lock timer; sp.mu is held.
func (sp *sharePartition) drop() {
	sp.dropped = true
	sp.state = nil
	if sp.timer != nil {
		sp.timer.Stop()
		sp.timer = nil
	}
}

// ready makes sure the state is loaded for the partition's current leader
// epoch; sp.mu is held. It returns a Kafka error code.
func (sps *sharePartitions) ready(sp *sharePartition) int16 {
	st := sp.part.state.Load()
	if st.leader != sp.part.topic.node {
		sp.drop()
		return errNotLeaderOrFollower
	}
	sp.dropped = false
	if sp.state != nil && sp.leaderEpoch == st.leaderEpoch {
		if sp.state.AdvanceStart(sp.part.log.LogStartOffset()) {
			return sps.write(sp)
		}
		return 0
	}
	sp.drop()
	sp.dropped = false
	persisted, code := sps.b.shareState.readState(sp.key, st.leaderEpoch)
	if code != 0 {
		return code
	}
	sp.leaderEpoch, sp.stateEpoch = st.leaderEpoch, persisted.stateEpoch
	snap := persisted.snapshot
	fresh := !persisted.initialized
	if fresh {
		snap = share.Snapshot{StartOffset: sps.b.shareStartOffset(sp.key.group, sp.part.log)}
	}
	sp.state = share.NewPartition(snap)
	if sp.state.AdvanceStart(sp.part.log.LogStartOffset()) || fresh {
		return sps.write(sp)
	}
	sps.archive(sp) // what the last leader left Archiving
	return 0
}

// write stores the share-partition's state; sp.mu is held. A failed write
// drops the state, so that the next use reads what was stored. Records
// that went Archiving are sent to the dead-letter queue once written so.
func (sps *sharePartitions) write(sp *sharePartition) int16 {
	code := sps.b.shareState.writeState(sp.key, sp.stateEpoch, sp.leaderEpoch, sp.state.Snapshot(), sp.state.DeliveryComplete())
	if code != 0 {
		sps.b.logger.Warn("writing share-partition state failed", "group", sp.key.group,
			"topic", sp.part.topic.name, "partition", sp.part.index, "error", errorMessageText(code))
		sp.drop()
		return code
	}
	sps.archive(sp)
	return 0
}

// archive hands the records newly Archiving to the dead-letter queue,
// unless a write is under way (its end calls archive again); sp.mu is
// held.
func (sps *sharePartitions) archive(sp *sharePartition) {
	if sp.archiving || sp.state == nil || sp.dropped {
		return
	}
	if runs := sp.state.TakeArchiving(sps.b.shareConfigFor(sp.key.group)); len(runs) > 0 {
		sp.archiving = true
		sps.dlq.archive(sp, sp.state, runs)
	}
}

// shareStartOffset is where a share group starts reading a partition it
// has no state for: share.auto.offset.reset (latest, earliest, or
// by_duration, the first offset at most that long ago).
func (b *Broker) shareStartOffset(group string, l *logstore.Log) int64 {
	reset := strings.ToLower(b.shareGroupSettings(group).autoOffsetReset)
	switch {
	case reset == "earliest":
		return l.LogStartOffset()
	case strings.HasPrefix(reset, "by_duration:"):
		d, _ := parseISODuration(reset[len("by_duration:"):]) // validated when set
		off, _, ok, err := l.OffsetForTimestamp(time.Now().Add(-d).UnixMilli())
		if err != nil {
			// A record above max.decompressed.message.bytes hides where
			// the duration begins: start where no record is skipped.
			b.logger.Warn("share group starts at the log start: its by_duration offset lookup failed", "group", group, "partition", l.TopicPartition().String(), "err", err)
			return l.LogStartOffset()
		}
		if ok {
			return off
		}
	}
	return l.HighWatermark()
}

// shareReadMaxBytes caps one share-partition's read: the records are
// copied to be filtered, and a fetch is bounded by its MaxRecords anyway
// (500 by default in Kafka's client), which this holds many times over
// for records up to a few KiB. The first batch is read whole, however large.
const shareReadMaxBytes = 4 << 20

// shareFetched is what one partition of a ShareFetch got.
type shareFetched struct {
	records  []byte
	acquired []share.Acquired
	code     int16
}

// acquire hands member up to maxRecords records (maxBytes of batches, the
// first batch whole) that no one holds. Without strict, records delivered
// for the first time are answered in runs of about batchSize.
func (sps *sharePartitions) acquire(sp *sharePartition, member string, maxRecords int, strict bool, batchSize, maxBytes int) shareFetched {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if code := sps.ready(sp); code != 0 {
		return shareFetched{code: code}
	}
	cfg := sps.b.shareConfigFor(sp.key.group)
	now := time.Now()
	if sp.state.ExpireLocks(now, cfg) {
		if code := sps.write(sp); code != 0 {
			return shareFetched{code: code}
		}
	}
	l := sp.part.log
	end := l.HighWatermark()
	readCommitted := sps.b.shareGroupSettings(sp.key.group).readCommitted
	if readCommitted {
		end = l.LastStableOffset()
	}
	if !sp.state.Acquirable(end, cfg) {
		return shareFetched{}
	}
	from := sp.state.FetchOffset()
	read, err := l.Read(from, min(maxBytes, shareReadMaxBytes), end)
	if err != nil {
		return shareFetched{code: logstore.ErrorCode(err)}
	}
	kept, batches := deliverableBatches(read.Records, l, from, end, readCommitted)
	acquired := sp.state.Acquire(member, batches, end, maxRecords, strict, now, cfg)
	sps.armTimer(sp)
	if len(acquired) == 0 {
		return shareFetched{}
	}
	if !strict {
		acquired = splitFirstDeliveries(acquired, batches, batchSize)
	}
	return shareFetched{records: trimToAcquired(kept, acquired), acquired: acquired}
}

// splitFirstDeliveries cuts the runs of records delivered for the first
// time at the first record batch at least batchSize records into the run,
// and so on, as Kafka's SharePartition.createBatches answers new records
// in its batch-optimized acquire mode; redeliveries stay as they are.
func splitFirstDeliveries(acquired []share.Acquired, batches []share.LogBatch, batchSize int) []share.Acquired {
	var out []share.Acquired
	for _, a := range acquired {
		if a.DeliveryCount != 1 || a.LastOffset-a.FirstOffset+1 <= int64(batchSize) {
			out = append(out, a)
			continue
		}
		first := a.FirstOffset
		for _, b := range batches {
			if b.BaseOffset > a.LastOffset {
				break
			}
			if b.BaseOffset-first >= int64(batchSize) {
				out = append(out, share.Acquired{FirstOffset: first, LastOffset: b.BaseOffset - 1, DeliveryCount: 1})
				first = b.BaseOffset
			}
		}
		out = append(out, share.Acquired{FirstOffset: first, LastOffset: a.LastOffset, DeliveryCount: 1})
	}
	return out
}

// acknowledge applies member's acknowledgements and writes the state.
func (sps *sharePartitions) acknowledge(sp *sharePartition, member string, acks []share.AckBatch) int16 {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if code := sps.ready(sp); code != 0 {
		return code
	}
	cfg := sps.b.shareConfigFor(sp.key.group)
	now := time.Now()
	expired := sp.state.ExpireLocks(now, cfg)
	code := sp.state.Acknowledge(member, acks, now, cfg)
	if code != 0 && !expired {
		return code
	}
	if wc := sps.write(sp); wc != 0 {
		return wc
	}
	sps.armTimer(sp)
	sp.part.wake() // released records may be fetched again
	return code
}

// release makes member's acquired records available again: its share
// session ended.
func (sps *sharePartitions) release(sp *sharePartition, member string) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.state == nil || sp.dropped {
		return
	}
	if sp.state.ReleaseMember(member, sps.b.shareConfigFor(sp.key.group)) {
		sps.write(sp)
		sp.part.wake()
	}
}

// armTimer sets the timer to the next lock expiry; sp.mu is held.
func (sps *sharePartitions) armTimer(sp *sharePartition) {
	if sp.timer != nil {
		sp.timer.Stop()
		sp.timer = nil
	}
	at, ok := sp.state.NextDeadline()
	if !ok {
		return
	}
	sp.timer = time.AfterFunc(time.Until(at), func() { sps.expire(sp) })
}

func (sps *sharePartitions) expire(sp *sharePartition) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.state == nil || sp.dropped {
		return
	}
	if sp.state.ExpireLocks(time.Now(), sps.b.shareConfigFor(sp.key.group)) {
		sps.write(sp)
		sp.part.wake()
	}
	if sp.state != nil {
		sps.armTimer(sp)
	}
}

// deliverableBatches walks the batches read and returns those a share
// group may be given, with their offsets: control batches and, when
// reading committed records, batches of aborted transactions are left
// out (their offsets are archived as gaps).
func deliverableBatches(records []byte, l *logstore.Log, from, end int64, readCommitted bool) ([]byte, []share.LogBatch) {
	var aborted []logstore.AbortedTxn
	if readCommitted {
		aborted = l.AppendAbortedTxns(nil, from, end)
	}
	open := map[int64]bool{} // producers whose aborted transaction is under way
	kept := make([]byte, 0, len(records))
	var batches []share.LogBatch
	for rest := records; len(rest) > 0; {
		h, err := protocol.ParseBatchHeader(rest)
		if err != nil || h.Size() > len(rest) {
			break
		}
		batch := rest[:h.Size()]
		rest = rest[h.Size():]
		for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
			open[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		control := h.Attributes&protocol.AttrControl != 0
		if control {
			delete(open, h.ProducerID)
			continue
		}
		if h.Attributes&protocol.AttrTransactional != 0 && open[h.ProducerID] {
			continue
		}
		kept = append(kept, batch...)
		batches = append(batches, share.LogBatch{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset()})
	}
	return kept, batches
}

// trimToAcquired keeps the batches that hold an acquired record.
func trimToAcquired(records []byte, acquired []share.Acquired) []byte {
	first, last := acquired[0].FirstOffset, acquired[len(acquired)-1].LastOffset
	out := records[:0]
	for rest := records; len(rest) > 0; {
		h, _ := protocol.ParseBatchHeader(rest) // checked by deliverableBatches
		batch := rest[:h.Size()]
		rest = rest[h.Size():]
		if h.LastOffset() >= first && h.BaseOffset <= last {
			out = append(out, batch...)
		}
	}
	return out
}
