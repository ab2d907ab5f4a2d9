package share

import (
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"time"
)

// mrec is the model's view of one offset of the log.
type mrec struct {
	state      RecordState
	deliveries int16
	owner      string
	deadline   time.Time
	skipped    bool // dropped by AdvanceStart
}

// sim drives a partition with random calls next to a model of each offset,
// as the broker would: reads at FetchOffset, high watermark moving up,
// retention moving the log's start.
type sim struct {
	t        *testing.T
	seed     int64
	step     int
	rng      *rand.Rand
	cfg      Config
	p        *Partition
	log      []LogBatch
	inBatch  map[int64]bool
	model    map[int64]*mrec
	hwm      int64
	logStart int64
	now      time.Time
	start    int64 // the partition's start after the last step
}

func newSim(t *testing.T, seed int64) *sim {
	s := &sim{
		t:       t,
		seed:    seed,
		rng:     rand.New(rand.NewSource(seed)),
		cfg:     Config{LockDuration: 10 * time.Second, DeliveryLimit: 3, MaxInFlight: 20},
		p:       NewPartition(Snapshot{}),
		inBatch: map[int64]bool{},
		model:   map[int64]*mrec{},
		now:     t0,
	}
	var off int64
	for range 60 {
		if s.rng.Intn(4) == 0 {
			off += 1 + s.rng.Int63n(3) // compacted away
		}
		b := LogBatch{off, off + s.rng.Int63n(6)}
		s.log = append(s.log, b)
		for o := b.BaseOffset; o <= b.LastOffset; o++ {
			s.inBatch[o] = true
			s.model[o] = &mrec{}
		}
		off = b.LastOffset + 1
	}
	s.hwm = s.log[s.rng.Intn(5)].LastOffset + 1
	return s
}

func (s *sim) fail(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("seed %d step %d: "+format, append([]any{s.seed, s.step}, args...)...)
}

func (s *sim) members() (string, string) {
	if s.rng.Intn(2) == 0 {
		return "m1", "m2"
	}
	return "m2", "m1"
}

func (s *sim) release(m *mrec) {
	m.owner, m.deadline = "", time.Time{}
	m.state = Available
	if int(m.deliveries) >= s.cfg.DeliveryLimit {
		m.state = Archived
	}
}

func (s *sim) acquire() {
	s.p.AdvanceStart(s.logStart)
	s.afterAdvanceStart()
	member, _ := s.members()
	fetch := s.p.FetchOffset()
	var read []LogBatch
	k := 1 + s.rng.Intn(5) // as many as fit in the fetch's bytes
	for _, b := range s.log {
		if b.LastOffset >= fetch && b.BaseOffset < s.hwm && b.LastOffset >= s.logStart && len(read) < k {
			read = append(read, b)
		}
	}
	maxRecords, strict := s.rng.Intn(12), s.rng.Intn(2) == 0
	oldEnd := s.p.EndOffset()
	got := s.p.Acquire(member, read, s.hwm, maxRecords, strict, s.now, s.cfg)

	n := 0
	returned := map[int64]bool{}
	for i, a := range got {
		if a.FirstOffset > a.LastOffset {
			s.fail("acquired range %v", a)
		}
		if i > 0 && (a.FirstOffset <= got[i-1].LastOffset ||
			(a.FirstOffset == got[i-1].LastOffset+1 && a.DeliveryCount == got[i-1].DeliveryCount)) {
			s.fail("acquired ranges unsorted or unmerged: %v", got)
		}
		for o := a.FirstOffset; o <= a.LastOffset; o++ {
			m := s.model[o]
			if m == nil || !s.inBatch[o] || o >= s.hwm || o < fetch {
				s.fail("acquired offset %d outside the log read (fetch %d, hwm %d): %v", o, fetch, s.hwm, got)
			}
			if m.owner != "" || m.state != Available {
				s.fail("acquired offset %d held by %q in state %d", o, m.owner, m.state)
			}
			m.state, m.owner, m.deadline = acquired, member, s.now.Add(s.cfg.LockDuration)
			m.deliveries++
			if a.DeliveryCount != m.deliveries {
				s.fail("offset %d acquired with delivery count %d, want %d", o, a.DeliveryCount, m.deliveries)
			}
			returned[o] = true
			n++
		}
	}
	if strict && maxRecords > 0 && n > maxRecords {
		s.fail("strict acquisition of %d records, max %d", n, maxRecords)
	}
	for o := oldEnd; o < s.p.EndOffset(); o++ {
		if s.inBatch[o] && !returned[o] {
			s.fail("window grew over offset %d without acquiring it", o)
		}
	}
}

// owned is the offsets member holds, in order.
func (s *sim) owned(member string) []int64 {
	var os []int64
	for o, m := range s.model {
		if m.owner == member {
			os = append(os, o)
		}
	}
	slices.Sort(os)
	return os
}

func (s *sim) acknowledge() {
	member, other := s.members()
	os := s.owned(member)
	if len(os) == 0 {
		return
	}
	// One or two runs of consecutive offsets the member holds.
	var batches []AckBatch
	for i := s.rng.Intn(len(os)); i < len(os) && len(batches) < 2; {
		j := i
		for j+1 < len(os) && os[j+1] == os[j]+1 && s.rng.Intn(4) != 0 {
			j++
		}
		b := AckBatch{FirstOffset: os[i], LastOffset: os[j]}
		kinds := []AckType{AckGap, AckAccept, AckRelease, AckReject, AckRenew}
		if s.rng.Intn(2) == 0 {
			b.Types = []AckType{kinds[s.rng.Intn(len(kinds))]}
		} else {
			for range j - i + 1 {
				b.Types = append(b.Types, kinds[s.rng.Intn(len(kinds))])
			}
		}
		batches = append(batches, b)
		i = j + 1 + s.rng.Intn(3)
	}

	before := clone(s.p)
	switch s.rng.Intn(6) {
	case 0:
		if code := s.p.Acknowledge(other, batches, s.now, s.cfg); code != errInvalidRecordState {
			s.fail("ack of %s's records by %s: %d", member, other, code)
		}
	case 1:
		bad := slices.Clone(batches)
		last := &bad[len(bad)-1]
		last.Types = make([]AckType, last.LastOffset-last.FirstOffset+2)
		if code := s.p.Acknowledge(member, bad, s.now, s.cfg); code != errInvalidRequest {
			s.fail("malformed ack %v: %d", bad, code)
		}
	default:
		if code := s.p.Acknowledge(member, batches, s.now, s.cfg); code != 0 {
			s.fail("ack %v by %s: %d", batches, member, code)
		}
		for _, b := range batches {
			for o := b.FirstOffset; o <= b.LastOffset; o++ {
				t := b.Types[0]
				if len(b.Types) > 1 {
					t = b.Types[o-b.FirstOffset]
				}
				m := s.model[o]
				switch t {
				case AckAccept:
					m.state, m.owner, m.deadline = Acknowledged, "", time.Time{}
				case AckGap, AckReject:
					m.state, m.owner, m.deadline = Archived, "", time.Time{}
				case AckRelease:
					s.release(m)
				case AckRenew:
					m.deadline = s.now.Add(s.cfg.LockDuration)
				}
			}
		}
		return
	}
	if !reflect.DeepEqual(s.p, before) {
		s.fail("failed acknowledgement changed the state")
	}
}

func (s *sim) releaseMember() {
	member, _ := s.members()
	want := false
	for _, m := range s.model {
		if m.owner == member {
			m.owner, m.deadline, m.state = "", time.Time{}, Available
			m.deliveries = max(m.deliveries-1, 0)
			want = true
		}
	}
	if got := s.p.ReleaseMember(member, s.cfg); got != want {
		s.fail("ReleaseMember(%s) = %v, want %v", member, got, want)
	}
}

func (s *sim) expire() {
	want := false
	for _, m := range s.model {
		if m.owner != "" && !s.now.Before(m.deadline) {
			s.release(m)
			want = true
		}
	}
	if got := s.p.ExpireLocks(s.now, s.cfg); got != want {
		s.fail("ExpireLocks = %v, want %v", got, want)
	}
}

// afterAdvanceStart drops the model's state below the log's start, once
// the partition's start has passed it.
func (s *sim) afterAdvanceStart() {
	for o, m := range s.model {
		if o < s.logStart && o < s.p.StartOffset() && !m.skipped {
			m.skipped, m.owner, m.deadline = true, "", time.Time{}
		}
	}
}

func (s *sim) advanceLogStart() {
	var bases []int64
	for _, b := range s.log {
		if b.BaseOffset > s.logStart && b.BaseOffset <= s.hwm {
			bases = append(bases, b.BaseOffset)
		}
	}
	if len(bases) == 0 {
		return
	}
	s.logStart = bases[s.rng.Intn(min(len(bases), 3))]
	want := s.logStart > s.p.StartOffset()
	if got := s.p.AdvanceStart(s.logStart); got != want {
		s.fail("AdvanceStart(%d) = %v, want %v", s.logStart, got, want)
	}
	s.afterAdvanceStart()
}

func (s *sim) check() {
	p := s.p
	if p.StartOffset() < s.start {
		s.fail("start moved back from %d to %d", s.start, p.StartOffset())
	}
	for o := s.start; o < p.StartOffset(); o++ {
		if m := s.model[o]; m != nil && !m.skipped && m.state != Acknowledged && m.state != Archived {
			s.fail("start passed offset %d in state %d", o, m.state)
		}
	}
	s.start = p.StartOffset()
	if p.EndOffset() < p.StartOffset() || (len(p.recs) > 0 && p.recs[0].done()) {
		s.fail("window %s", dump(p))
	}

	held := 0
	var deadline time.Time
	for o := p.StartOffset(); o < p.EndOffset(); o++ {
		r := p.recs[o-p.StartOffset()]
		m := s.model[o]
		if m == nil {
			if r.state != Archived || r.deliveries != 0 {
				s.fail("compacted offset %d in state %d with %d deliveries", o, r.state, r.deliveries)
			}
			continue
		}
		if r.state != m.state || r.deliveries != m.deliveries || r.owner != m.owner || !r.deadline.Equal(m.deadline) {
			s.fail("offset %d is %+v, model %+v", o, r, *m)
		}
		if r.state == Available && int(r.deliveries) >= s.cfg.DeliveryLimit {
			s.fail("offset %d available after %d deliveries", o, r.deliveries)
		}
		if r.deliveries > int16(s.cfg.DeliveryLimit) {
			s.fail("offset %d delivered %d times", o, r.deliveries)
		}
		if r.state == acquired {
			held++
			if deadline.IsZero() || r.deadline.Before(deadline) {
				deadline = r.deadline
			}
		}
	}
	for o, m := range s.model {
		if o >= p.EndOffset() && (m.state != Available || m.deliveries != 0) {
			s.fail("offset %d past the end in state %d with %d deliveries", o, m.state, m.deliveries)
		}
	}
	if n := p.AcquiredCount(); n != held || n != len(s.owned("m1"))+len(s.owned("m2")) {
		s.fail("acquired count %d, window has %d", n, held)
	}
	if d, ok := p.NextDeadline(); ok != (held > 0) || !d.Equal(deadline) {
		s.fail("next deadline %v %v, want %v", d, ok, deadline)
	}

	// A new batch (at most 6 offsets, after a gap of at most 3) starts
	// only in a window of fewer than MaxInFlight offsets.
	if len(p.recs) >= s.cfg.MaxInFlight+9 {
		s.fail("window of %d offsets", len(p.recs))
	}
	var read []LogBatch
	for _, b := range s.log {
		if b.LastOffset >= p.FetchOffset() && b.BaseOffset < s.hwm {
			read = append(read, b)
		}
	}
	probe := clone(p).Acquire("probe", read, s.hwm, 0, false, s.now, s.cfg)
	if got := p.Acquirable(s.hwm, s.cfg); got != (len(probe) > 0) {
		s.fail("Acquirable = %v, but Acquire gave %v", got, probe)
	}

	snap := p.Snapshot()
	q := NewPartition(snap)
	if q.StartOffset() != p.StartOffset() || q.EndOffset() != p.EndOffset() {
		s.fail("rebuilt window [%d, %d), was [%d, %d)", q.StartOffset(), q.EndOffset(), p.StartOffset(), p.EndOffset())
	}
	for i, r := range p.recs {
		want := record{state: r.state, deliveries: r.deliveries}
		if want.state == acquired {
			want.state = Available
		}
		if q.recs[i] != want {
			s.fail("offset %d rebuilt as %+v, was %+v", p.StartOffset()+int64(i), q.recs[i], r)
		}
	}
	if !reflect.DeepEqual(q.Snapshot(), snap) {
		s.fail("snapshot of the rebuilt partition differs")
	}
}

func TestRandomized(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		s := newSim(t, seed)
		for s.step = 0; s.step < 400; s.step++ {
			s.now = s.now.Add(time.Duration(s.rng.Intn(3000)) * time.Millisecond)
			switch k := s.rng.Intn(100); {
			case k < 35:
				s.acquire()
			case k < 65:
				s.acknowledge()
			case k < 72:
				s.releaseMember()
			case k < 85:
				s.expire()
			case k < 95:
				for _, b := range s.log {
					if b.BaseOffset >= s.hwm {
						s.hwm = b.LastOffset + 1
						break
					}
				}
			default:
				s.advanceLogStart()
			}
			s.check()
		}
	}
}
