package share

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// RecordState ids are Kafka's (persisted DeliveryState uses 0, 2, 3, 4).
type RecordState int8

// Kafka's ACQUIRED (1) is unexported: the name Acquired is the type of the
// ranges Acquire returns, and no Snapshot holds the state.
const (
	Available    RecordState = 0
	acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archiving    RecordState = 3 // on its way to the dead-letter queue (KIP-1191)
	Archived     RecordState = 4
)

// DLQCause is why a record goes to the dead-letter queue; the text is
// Kafka's (ShareGroupDLQManager), written in the record's headers.
type DLQCause int8

const (
	ClientReject          DLQCause = 1
	DeliveryCountExceeded DLQCause = 2
)

func (c DLQCause) String() string {
	if c == ClientReject {
		return "Offset rejected by client."
	}
	return "Offset delivery count exceeded the threshold."
}

// AckType ids are Kafka's AcknowledgeTypes in ShareFetch/ShareAcknowledge.
type AckType int8

const (
	AckGap     AckType = 0
	AckAccept  AckType = 1
	AckRelease AckType = 2
	AckReject  AckType = 3
	AckRenew   AckType = 4 // ShareFetch/ShareAcknowledge v2 (KIP-1222)
)

// StateBatch is a run of offsets with the same state and delivery count.
type StateBatch struct {
	FirstOffset, LastOffset int64       // inclusive
	State                   RecordState // Available, Acknowledged, Archiving or Archived in a Snapshot
	DeliveryCount           int16
}

// Snapshot is what is persisted: the start offset and the in-flight records
// from it, as runs of equal (state, delivery count). Acquired records are
// written as Available with their delivery count (a lock does not survive a
// restart).
type Snapshot struct {
	StartOffset int64
	// Batches are sorted, non-overlapping and at or above StartOffset.
	// Offsets between them are Available with no deliveries; the window
	// ends after the last one.
	Batches []StateBatch
}

// Config is the group's share settings. A DeliveryLimit or MaxInFlight
// of zero or less means no limit.
type Config struct {
	LockDuration  time.Duration // share.record.lock.duration.ms (30 s)
	DeliveryLimit int           // group.share.delivery.count.limit (5)
	MaxInFlight   int           // group.share.partition.max.record.locks (2000)
	// DLQ sends rejected records, and those that reach DeliveryLimit, to
	// Archiving rather than Archived: the group has a dead-letter queue.
	DLQ bool
}

// LogBatch is one record batch as read from the log: its base and last offset.
type LogBatch struct{ BaseOffset, LastOffset int64 }

// Acquired is a range handed to a member, as ShareFetch's AcquiredRecords.
type Acquired struct {
	FirstOffset, LastOffset int64
	DeliveryCount           int16
}

// AckBatch is one AcknowledgementBatch of ShareFetch/ShareAcknowledge.
type AckBatch struct {
	FirstOffset, LastOffset int64
	Types                   []AckType // one type for the whole range, or one per offset
}

var (
	errInvalidRequest     = kerr.InvalidRequest.Code
	errInvalidRecordState = kerr.InvalidRecordState.Code
)

// record is the state of one in-flight offset.
type record struct {
	state      RecordState
	deliveries int16
	owner      string    // the member an Acquired record is locked to
	deadline   time.Time // when that lock expires
	cause      DLQCause  // why an Archiving record is (0: read back from a snapshot)
	sending    bool      // an Archiving record handed out by TakeArchiving
}

func (r *record) done() bool { return r.state == Acknowledged || r.state == Archived }

// settle ends an acquisition in state.
func (r *record) settle(state RecordState) {
	r.state, r.owner, r.deadline = state, "", time.Time{}
}

// archive ends an acquisition for good: Archiving, for the dead-letter
// queue, when the group has one, else Archived.
func (r *record) archive(cause DLQCause, cfg Config) {
	if !cfg.DLQ {
		r.settle(Archived)
		return
	}
	r.settle(Archiving)
	r.cause, r.sending = cause, false
}

// release ends an acquisition without an acknowledgement.
func (r *record) release(cfg Config) {
	if cfg.DeliveryLimit > 0 && int(r.deliveries) >= cfg.DeliveryLimit {
		r.archive(DeliveryCountExceeded, cfg)
	} else {
		r.settle(Available)
	}
}

// Partition is the in-flight state of one share-partition.
type Partition struct {
	start int64
	recs  []record // recs[i] is offset start+i
}

// NewPartition rebuilds a partition from its persisted state. Records
// persisted Archiving are to be sent to the dead-letter queue again
// (TakeArchiving).
func NewPartition(s Snapshot) *Partition {
	p := &Partition{start: s.StartOffset}
	end := s.StartOffset
	for _, b := range s.Batches {
		end = max(end, b.LastOffset+1)
	}
	p.recs = make([]record, end-p.start)
	for _, b := range s.Batches {
		state := b.State
		if state != Acknowledged && state != Archived && state != Archiving {
			state = Available
		}
		for o := max(b.FirstOffset, p.start); o <= b.LastOffset; o++ {
			p.recs[o-p.start] = record{state: state, deliveries: b.DeliveryCount}
		}
	}
	p.advance()
	return p
}

func (p *Partition) StartOffset() int64 { return p.start }

// EndOffset is the offset after the in-flight window (== StartOffset when
// nothing is in flight).
func (p *Partition) EndOffset() int64 { return p.start + int64(len(p.recs)) }

// FetchOffset is where the caller should read the log from to acquire: the
// first Available in-flight offset, else EndOffset.
func (p *Partition) FetchOffset() int64 {
	for i, r := range p.recs {
		if r.state == Available {
			return p.start + int64(i)
		}
	}
	return p.EndOffset()
}

// Acquire hands records to member: first the Available in-flight records
// covered by batches (redeliveries), then new records beyond EndOffset from
// batches, below end (the high watermark or last stable offset, exclusive).
// Without strict, whole batches are taken while fewer than maxRecords
// records were; with strict, no more than maxRecords are. maxRecords <= 0
// means no limit. The batches must be in offset order, as read from the
// log.
func (p *Partition) Acquire(member string, batches []LogBatch, end int64, maxRecords int, strict bool, now time.Time, cfg Config) []Acquired {
	var out []Acquired
	taken := 0
	full := func() bool { return maxRecords > 0 && taken >= maxRecords }
	deadline := now.Add(cfg.LockDuration)
	take := func(o int64) {
		r := &p.recs[o-p.start]
		r.state, r.owner, r.deadline = acquired, member, deadline
		r.deliveries++
		taken++
		if n := len(out); n > 0 && out[n-1].LastOffset+1 == o && out[n-1].DeliveryCount == r.deliveries {
			out[n-1].LastOffset = o
			return
		}
		out = append(out, Acquired{FirstOffset: o, LastOffset: o, DeliveryCount: r.deliveries})
	}

	for _, b := range batches {
		if full() {
			break
		}
		for o := max(b.BaseOffset, p.start); o <= b.LastOffset && o < p.EndOffset(); o++ {
			if strict && full() {
				break
			}
			r := &p.recs[o-p.start]
			if r.state != Available {
				continue
			}
			// The limit may have been lowered since the record was released.
			if cfg.DeliveryLimit > 0 && int(r.deliveries) >= cfg.DeliveryLimit {
				r.settle(Archived)
				continue
			}
			take(o)
		}

		first, last := max(b.BaseOffset, p.EndOffset()), min(b.LastOffset, end-1)
		if first > last || (strict && full()) {
			continue
		}
		if cfg.MaxInFlight > 0 && len(p.recs) >= cfg.MaxInFlight {
			break
		}
		if strict && maxRecords > 0 {
			last = min(last, first+int64(maxRecords-taken)-1)
		}
		if strict && cfg.MaxInFlight > 0 {
			// No further than the window has room for, as Kafka's
			// lastOffsetAndMaxRecordsToAcquire.
			if last = min(last, p.start+int64(cfg.MaxInFlight)-1); last < first {
				break
			}
		}
		// Offsets no batch holds, up to this one, are archived.
		for p.EndOffset() < first {
			p.recs = append(p.recs, record{state: Archived})
		}
		p.recs = append(p.recs, make([]record, last-first+1)...)
		for o := first; o <= last; o++ {
			take(o)
		}
	}
	p.advance()
	return out
}

// Acknowledge applies a member's acknowledgements; all or nothing: it
// returns 0, or a Kafka error code and changes nothing. Batches out of
// offset order or overlapping are INVALID_REQUEST.
func (p *Partition) Acknowledge(member string, acks []AckBatch, now time.Time, cfg Config) int16 {
	if !ValidAcks(acks) {
		return errInvalidRequest
	}
	for _, a := range acks {
		if a.FirstOffset < p.start || a.LastOffset >= p.EndOffset() {
			return errInvalidRecordState
		}
		for _, r := range p.recs[a.FirstOffset-p.start : a.LastOffset-p.start+1] {
			if r.state != acquired || r.owner != member {
				return errInvalidRecordState
			}
		}
	}

	for _, a := range acks {
		for o := a.FirstOffset; o <= a.LastOffset; o++ {
			t := a.Types[0]
			if len(a.Types) > 1 {
				t = a.Types[o-a.FirstOffset]
			}
			r := &p.recs[o-p.start]
			switch t {
			case AckAccept:
				r.settle(Acknowledged)
			case AckGap:
				r.settle(Archived)
			case AckReject:
				r.archive(ClientReject, cfg)
			case AckRelease:
				r.release(cfg)
			case AckRenew:
				r.deadline = now.Add(cfg.LockDuration)
			}
		}
	}
	p.advance()
	return 0
}

// ValidAcks reports whether acknowledgement batches are well formed: in
// offset order without overlaps, each with one type or one per offset, of
// known types. Kafka answers others INVALID_REQUEST before it looks at the
// partition (KafkaApis.validateAcknowledgementBatches).
func ValidAcks(acks []AckBatch) bool {
	for i, a := range acks {
		if a.FirstOffset > a.LastOffset ||
			(len(a.Types) != 1 && int64(len(a.Types)) != a.LastOffset-a.FirstOffset+1) ||
			(i > 0 && a.FirstOffset <= acks[i-1].LastOffset) {
			return false
		}
		for _, t := range a.Types {
			if t < AckGap || t > AckRenew {
				return false
			}
		}
	}
	return true
}

// ReleaseMember makes the member's acquired records available again (its
// session ended); reports whether anything changed. As in Kafka
// (SharePartition.releaseAcquiredRecords), they were not delivered: their
// delivery count goes back down, and none is archived for reaching
// DeliveryLimit.
func (p *Partition) ReleaseMember(member string, cfg Config) bool {
	changed := false
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == acquired && r.owner == member {
			r.settle(Available)
			r.deliveries = max(r.deliveries-1, 0)
			changed = true
		}
	}
	p.advance()
	return changed
}

// ExpireLocks releases acquisitions whose lock expired by now; reports
// whether anything changed.
func (p *Partition) ExpireLocks(now time.Time, cfg Config) bool {
	return p.releaseIf(cfg, func(r *record) bool { return !now.Before(r.deadline) })
}

func (p *Partition) releaseIf(cfg Config, match func(*record) bool) bool {
	changed := false
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == acquired && match(r) {
			r.release(cfg)
			changed = true
		}
	}
	p.advance()
	return changed
}

// NextDeadline is the earliest lock deadline, if any record is acquired.
func (p *Partition) NextDeadline() (time.Time, bool) {
	var next time.Time
	found := false
	for _, r := range p.recs {
		if r.state == acquired && (!found || r.deadline.Before(next)) {
			next, found = r.deadline, true
		}
	}
	return next, found
}

// Acquirable reports whether Acquire could hand out anything with the
// log's records below end.
func (p *Partition) Acquirable(end int64, cfg Config) bool {
	for _, r := range p.recs {
		if r.state == Available {
			return true
		}
	}
	return end > p.EndOffset() && (cfg.MaxInFlight <= 0 || len(p.recs) < cfg.MaxInFlight)
}

// AdvanceStart moves the start up to logStart when the log's start passed
// it (retention, DeleteRecords), dropping in-flight state below; reports a
// change.
func (p *Partition) AdvanceStart(logStart int64) bool {
	if logStart <= p.start {
		return false
	}
	p.drop(int(min(logStart, p.EndOffset()) - p.start))
	p.start = logStart
	p.advance()
	return true
}

// Reset drops all in-flight state and starts at offset
// (AlterShareGroupOffsets); the caller checks no member holds locks.
func (p *Partition) Reset(offset int64) {
	p.start, p.recs = offset, nil
}

// AcquiredCount is the number of records currently Acquired (any member).
func (p *Partition) AcquiredCount() int { return p.count(acquired) }

// DeliveryComplete is the number of in-flight records past the start
// offset whose delivery is over, acknowledged or archived (KIP-1226's
// delivery complete count: the lag leaves them out).
func (p *Partition) DeliveryComplete() int { return p.count(Acknowledged) + p.count(Archived) }

// ToArchive is a run of Archiving records for the dead-letter queue.
type ToArchive struct {
	FirstOffset, LastOffset int64 // inclusive
	DeliveryCount           int16
	Cause                   DLQCause
}

// TakeArchiving hands out the Archiving records not handed out before,
// as runs of equal delivery count and cause; the caller writes them to
// the dead-letter queue and then calls FinishArchiving. A record read
// back Archiving from a snapshot gets the cause Kafka gives it on load:
// the delivery count exceeded if it reached the limit, else a rejection.
func (p *Partition) TakeArchiving(cfg Config) []ToArchive {
	var out []ToArchive
	for i := range p.recs {
		r := &p.recs[i]
		if r.state != Archiving || r.sending {
			continue
		}
		r.sending = true
		if r.cause == 0 {
			r.cause = ClientReject
			if cfg.DeliveryLimit > 0 && int(r.deliveries) >= cfg.DeliveryLimit {
				r.cause = DeliveryCountExceeded
			}
		}
		o := p.start + int64(i)
		if n := len(out); n > 0 && out[n-1].LastOffset+1 == o && out[n-1].DeliveryCount == r.deliveries && out[n-1].Cause == r.cause {
			out[n-1].LastOffset = o
			continue
		}
		out = append(out, ToArchive{FirstOffset: o, LastOffset: o, DeliveryCount: r.deliveries, Cause: r.cause})
	}
	return out
}

// FinishArchiving archives the records of runs that are still Archiving
// (the dead-letter queue has them, or gave up on them), and moves the
// start over them; reports whether anything changed.
func (p *Partition) FinishArchiving(runs []ToArchive) bool {
	changed := false
	for _, run := range runs {
		for o := max(run.FirstOffset, p.start); o <= run.LastOffset && o < p.EndOffset(); o++ {
			if r := &p.recs[o-p.start]; r.state == Archiving {
				r.settle(Archived)
				changed = true
			}
		}
	}
	p.advance()
	return changed
}

func (p *Partition) count(state RecordState) int {
	n := 0
	for _, r := range p.recs {
		if r.state == state {
			n++
		}
	}
	return n
}

// Snapshot is the state to persist.
func (p *Partition) Snapshot() Snapshot {
	s := Snapshot{StartOffset: p.start}
	for i, r := range p.recs {
		o := p.start + int64(i)
		state := r.state
		if state == acquired {
			state = Available
		}
		if n := len(s.Batches); n > 0 && s.Batches[n-1].State == state && s.Batches[n-1].DeliveryCount == r.deliveries {
			s.Batches[n-1].LastOffset = o
			continue
		}
		s.Batches = append(s.Batches, StateBatch{FirstOffset: o, LastOffset: o, State: state, DeliveryCount: r.deliveries})
	}
	return s
}

// advance moves the start over the leading Acknowledged and Archived records.
func (p *Partition) advance() {
	n := 0
	for n < len(p.recs) && p.recs[n].done() {
		n++
	}
	p.drop(n)
}

// drop removes the first n records of the window.
func (p *Partition) drop(n int) {
	p.start += int64(n)
	p.recs = p.recs[n:]
	if len(p.recs) == 0 {
		p.recs = nil
	}
}
