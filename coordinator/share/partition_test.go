package share

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	t0  = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg = Config{LockDuration: 30 * time.Second, DeliveryLimit: 5, MaxInFlight: 2000}
)

// dump renders the window as "start: s0 s1 …", one letter per state
// (a Available, q Acquired, k Acknowledged, d Archiving, x Archived) and the delivery
// count.
func dump(p *Partition) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d:", p.start)
	for _, r := range p.recs {
		fmt.Fprintf(&b, " %c%d", "aqkdx"[r.state], r.deliveries)
	}
	return b.String()
}

func clone(p *Partition) *Partition {
	return &Partition{start: p.start, recs: slices.Clone(p.recs)}
}

// batches builds log batches from pairs of base and last offsets.
func batches(offsets ...int64) []LogBatch {
	var bs []LogBatch
	for i := 0; i < len(offsets); i += 2 {
		bs = append(bs, LogBatch{offsets[i], offsets[i+1]})
	}
	return bs
}

func acks(first, last int64, types ...AckType) []AckBatch {
	return []AckBatch{{FirstOffset: first, LastOffset: last, Types: types}}
}

func TestAcquireNew(t *testing.T) {
	for _, tc := range []struct {
		name       string
		start      int64
		batches    []LogBatch
		end        int64
		maxRecords int
		strict     bool
		maxInFl    int
		want       []Acquired
		wantDump   string
	}{
		{
			name: "whole batches until the count is reached", batches: batches(0, 4, 5, 9, 10, 14), end: 15, maxRecords: 7,
			want: []Acquired{{0, 9, 1}}, wantDump: "0: q1 q1 q1 q1 q1 q1 q1 q1 q1 q1",
		},
		{
			name: "first batch whole past the count", batches: batches(0, 4, 5, 9), end: 10, maxRecords: 1,
			want: []Acquired{{0, 4, 1}}, wantDump: "0: q1 q1 q1 q1 q1",
		},
		{
			name: "strict cuts the batch", batches: batches(0, 4, 5, 9, 10, 14), end: 15, maxRecords: 7, strict: true,
			want: []Acquired{{0, 6, 1}}, wantDump: "0: q1 q1 q1 q1 q1 q1 q1",
		},
		{
			name: "strict count of one", batches: batches(0, 4), end: 5, maxRecords: 1, strict: true,
			want: []Acquired{{0, 0, 1}}, wantDump: "0: q1",
		},
		{
			name: "no limit stops at end", batches: batches(0, 4, 5, 9, 10, 14), end: 12,
			want: []Acquired{{0, 11, 1}}, wantDump: "0: q1 q1 q1 q1 q1 q1 q1 q1 q1 q1 q1 q1",
		},
		{
			name: "nothing below end", start: 5, batches: batches(5, 9), end: 5,
			wantDump: "5:",
		},
		{
			name: "max in flight stops new batches", batches: batches(0, 4, 5, 9, 10, 14), end: 15, maxInFl: 8,
			want: []Acquired{{0, 9, 1}}, wantDump: "0: q1 q1 q1 q1 q1 q1 q1 q1 q1 q1",
		},
		{
			name: "one batch may exceed max in flight", batches: batches(0, 4, 5, 9), end: 10, maxInFl: 3,
			want: []Acquired{{0, 4, 1}}, wantDump: "0: q1 q1 q1 q1 q1",
		},
		{
			name: "batch read from its middle", start: 3, batches: batches(0, 4, 5, 6), end: 7, maxRecords: 2, strict: true,
			want: []Acquired{{3, 4, 1}}, wantDump: "3: q1 q1",
		},
		{
			name: "compacted offsets are archived", batches: batches(0, 1, 5, 6), end: 7,
			want: []Acquired{{0, 1, 1}, {5, 6, 1}}, wantDump: "0: q1 q1 x0 x0 x0 q1 q1",
		},
		{
			name: "compacted offsets at the start are skipped", start: 0, batches: batches(3, 4), end: 5,
			want: []Acquired{{3, 4, 1}}, wantDump: "3: q1 q1",
		},
		{
			name: "compacted offsets only up to a batch taken", batches: batches(0, 1, 5, 6), end: 7, maxRecords: 2,
			want: []Acquired{{0, 1, 1}}, wantDump: "0: q1 q1",
		},
		{
			name: "a batch at end is not taken, nor the gap before it", batches: batches(0, 1, 5, 6), end: 5,
			want: []Acquired{{0, 1, 1}}, wantDump: "0: q1 q1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			if tc.maxInFl != 0 {
				c.MaxInFlight = tc.maxInFl
			}
			p := NewPartition(Snapshot{StartOffset: tc.start})
			got := p.Acquire("m1", tc.batches, tc.end, tc.maxRecords, tc.strict, t0, c)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("acquired %v, want %v", got, tc.want)
			}
			if d := dump(p); d != tc.wantDump {
				t.Errorf("window %q, want %q", d, tc.wantDump)
			}
			for _, r := range p.recs {
				if r.state == acquired && (r.owner != "m1" || !r.deadline.Equal(t0.Add(c.LockDuration))) {
					t.Errorf("acquired record %+v, want owner m1 and deadline at lock duration", r)
				}
			}
		})
	}
}

func TestMaxInFlight(t *testing.T) {
	c := cfg
	c.MaxInFlight = 10
	p := NewPartition(Snapshot{})
	log := batches(0, 4, 5, 9, 10, 14)
	if !p.Acquirable(15, c) {
		t.Fatal("empty partition with records below end not acquirable")
	}
	if got := p.Acquire("m1", log, 15, 0, false, t0, c); !reflect.DeepEqual(got, []Acquired{{0, 9, 1}}) {
		t.Fatalf("acquired %v", got)
	}
	if p.Acquirable(15, c) {
		t.Error("full window acquirable")
	}
	if got := p.Acquire("m2", log[2:], 15, 0, false, t0, c); got != nil {
		t.Errorf("full window acquired %v", got)
	}
	if p.FetchOffset() != 10 || p.EndOffset() != 10 {
		t.Errorf("fetch %d end %d, want 10 10", p.FetchOffset(), p.EndOffset())
	}

	// Accepting the first record frees one slot: the next batch is taken whole.
	if code := p.Acknowledge("m1", acks(0, 0, AckAccept), t0, c); code != 0 {
		t.Fatalf("accept: %d", code)
	}
	if !p.Acquirable(15, c) {
		t.Error("window with room not acquirable")
	}
	if p.Acquirable(10, c) {
		t.Error("acquirable with nothing new below end")
	}
	if got := p.Acquire("m2", log[2:], 15, 0, false, t0, c); !reflect.DeepEqual(got, []Acquired{{10, 14, 1}}) {
		t.Errorf("acquired %v", got)
	}
	if p.StartOffset() != 1 || p.EndOffset() != 15 || p.AcquiredCount() != 14 {
		t.Errorf("start %d end %d acquired %d, want 1 15 14", p.StartOffset(), p.EndOffset(), p.AcquiredCount())
	}
}

func TestRedelivery(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxRecords int
		strict     bool
		want       []Acquired
	}{
		{"no limit", 0, false, []Acquired{{1, 2, 2}, {5, 9, 1}}},
		{"redeliveries count towards the limit", 2, false, []Acquired{{1, 2, 2}}},
		{"then whole batches", 3, false, []Acquired{{1, 2, 2}, {5, 9, 1}}},
		{"strict", 3, true, []Acquired{{1, 2, 2}, {5, 5, 1}}},
		{"strict within redeliveries", 1, true, []Acquired{{1, 1, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPartition(Snapshot{})
			p.Acquire("m1", batches(0, 4), 10, 0, false, t0, cfg)
			if code := p.Acknowledge("m1", acks(1, 2, AckRelease), t0, cfg); code != 0 {
				t.Fatalf("release: %d", code)
			}
			if p.FetchOffset() != 1 {
				t.Fatalf("fetch offset %d, want 1", p.FetchOffset())
			}
			if d, want := dump(p), "0: q1 a1 a1 q1 q1"; d != want {
				t.Fatalf("window %q, want %q", d, want)
			}
			got := p.Acquire("m2", batches(0, 4, 5, 9), 10, tc.maxRecords, tc.strict, t0, cfg)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("acquired %v, want %v", got, tc.want)
			}
			for _, a := range got {
				for o := a.FirstOffset; o <= a.LastOffset; o++ {
					if r := p.recs[o-p.start]; r.owner != "m2" {
						t.Errorf("offset %d owned by %q", o, r.owner)
					}
				}
			}
			if r := p.recs[0]; r.owner != "m1" || r.state != acquired {
				t.Errorf("m1's offset 0 now %+v", r)
			}
		})
	}
}

func TestRedeliveryMergesEqualCounts(t *testing.T) {
	p := NewPartition(Snapshot{StartOffset: 0, Batches: []StateBatch{
		{0, 1, Available, 2}, {2, 2, Acknowledged, 1}, {3, 3, Available, 2}, {4, 5, Available, 1},
	}})
	got := p.Acquire("m1", batches(0, 5, 6, 7), 8, 0, false, t0, cfg)
	want := []Acquired{{0, 1, 3}, {3, 3, 3}, {4, 5, 2}, {6, 7, 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("acquired %v, want %v", got, want)
	}
}

func TestDeliveryLimit(t *testing.T) {
	c := cfg
	c.DeliveryLimit = 2
	log := batches(0, 2)
	release := map[string]func(p *Partition, now time.Time){
		"AckRelease": func(p *Partition, now time.Time) {
			if code := p.Acknowledge("m1", acks(0, 2, AckRelease), now, c); code != 0 {
				t.Errorf("release: %d", code)
			}
		},
		"ExpireLocks": func(p *Partition, now time.Time) {
			if !p.ExpireLocks(now.Add(c.LockDuration), c) {
				t.Error("ExpireLocks changed nothing")
			}
		},
	}
	for name, release := range release {
		t.Run(name, func(t *testing.T) {
			p := NewPartition(Snapshot{})
			p.Acquire("m1", log, 3, 0, false, t0, c)
			release(p, t0)
			if d, want := dump(p), "0: a1 a1 a1"; d != want {
				t.Fatalf("after the first release %q, want %q", d, want)
			}
			got := p.Acquire("m1", log, 3, 0, false, t0, c)
			if want := []Acquired{{0, 2, 2}}; !reflect.DeepEqual(got, want) {
				t.Fatalf("second acquisition %v, want %v", got, want)
			}
			release(p, t0)
			if d, want := dump(p), "3:"; d != want {
				t.Errorf("after the second release %q, want %q", d, want)
			}
			if p.FetchOffset() != 3 || p.AcquiredCount() != 0 || p.Acquirable(3, c) {
				t.Errorf("fetch %d acquired %d acquirable %v", p.FetchOffset(), p.AcquiredCount(), p.Acquirable(3, c))
			}
		})
	}
}

func TestDeliveryLimitArchivesOnlyAtTheLimit(t *testing.T) {
	c := cfg
	c.DeliveryLimit = 2
	p := NewPartition(Snapshot{Batches: []StateBatch{{0, 0, Available, 1}}})
	p.Acquire("m1", batches(0, 1), 2, 0, false, t0, c)
	p.ExpireLocks(t0.Add(c.LockDuration), c)
	// Offset 0 reached the limit, offset 1 did not; the start stops at 1.
	if d, want := dump(p), "1: a1"; d != want {
		t.Errorf("window %q, want %q", d, want)
	}
}

// With a dead-letter queue, a rejected record and one released at the
// delivery limit are Archiving: the start stops at them until the queue
// has them. They are handed out once, persisted as state 3, handed out
// again after a reload with the cause Kafka gives them on load, and
// archived by FinishArchiving.
func TestDeadLetterQueueArchiving(t *testing.T) {
	c := cfg
	c.DeliveryLimit, c.DLQ = 2, true
	p := NewPartition(Snapshot{Batches: []StateBatch{{0, 0, Available, 1}}})
	p.Acquire("m1", batches(0, 3), 4, 0, false, t0, c)
	if code := p.Acknowledge("m1", []AckBatch{{0, 3, []AckType{AckRelease, AckReject, AckAccept, AckGap}}}, t0, c); code != 0 {
		t.Fatalf("acknowledge: %d", code)
	}
	// 0 reached the limit, 1 was rejected; 2 accepted, 3 a gap.
	if d, want := dump(p), "0: d2 d1 k1 x1"; d != want {
		t.Fatalf("window %q, want %q", d, want)
	}
	if got := p.Snapshot(); !reflect.DeepEqual(got.Batches, []StateBatch{{0, 0, Archiving, 2}, {1, 1, Archiving, 1}, {2, 2, Acknowledged, 1}, {3, 3, Archived, 1}}) {
		t.Errorf("snapshot %+v", got)
	}
	want := []ToArchive{{0, 0, 2, DeliveryCountExceeded}, {1, 1, 1, ClientReject}}
	if got := p.TakeArchiving(c); !reflect.DeepEqual(got, want) {
		t.Fatalf("to archive %+v, want %+v", got, want)
	}
	if got := p.TakeArchiving(c); got != nil {
		t.Errorf("handed out twice: %+v", got)
	}

	// A new leader reads the snapshot back and sends them again; a
	// record under the limit was rejected, as Kafka reckons on load.
	if got := NewPartition(p.Snapshot()).TakeArchiving(c); !reflect.DeepEqual(got, want) {
		t.Errorf("after a reload: %+v, want %+v", got, want)
	}
	c3 := c
	c3.DeliveryLimit = 3
	if got, want3 := NewPartition(p.Snapshot()).TakeArchiving(c3), []ToArchive{{0, 0, 2, ClientReject}, {1, 1, 1, ClientReject}}; !reflect.DeepEqual(got, want3) {
		t.Errorf("after a reload under a limit of 3: %+v, want %+v", got, want3)
	}

	if !p.FinishArchiving(want) || p.StartOffset() != 4 {
		t.Errorf("after FinishArchiving the window is %q, want it empty at 4", dump(p))
	}
	if p.FinishArchiving(want) {
		t.Error("FinishArchiving changed records already archived")
	}

	// Without a queue they are archived at once.
	c.DLQ = false
	r := NewPartition(Snapshot{})
	r.Acquire("m1", batches(0, 0), 1, 0, false, t0, c)
	r.Acknowledge("m1", acks(0, 0, AckReject), t0, c)
	if d := dump(r); d != "1:" {
		t.Errorf("rejected without a queue: %q", d)
	}
}

func TestLoweredDeliveryLimit(t *testing.T) {
	c := cfg
	c.DeliveryLimit = 2
	p := NewPartition(Snapshot{Batches: []StateBatch{{0, 1, Available, 3}, {2, 2, Available, 1}}})
	got := p.Acquire("m1", batches(0, 2), 3, 0, false, t0, c)
	if want := []Acquired{{2, 2, 2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("acquired %v, want %v", got, want)
	}
	if d, want := dump(p), "2: q2"; d != want {
		t.Errorf("window %q, want %q", d, want)
	}
}

func TestLockExpiry(t *testing.T) {
	p := NewPartition(Snapshot{})
	if _, ok := p.NextDeadline(); ok {
		t.Error("deadline with nothing acquired")
	}
	p.Acquire("m1", batches(0, 1), 2, 0, false, t0, cfg)
	p.Acquire("m2", batches(2, 3), 4, 0, false, t0.Add(time.Second), cfg)
	if d, ok := p.NextDeadline(); !ok || !d.Equal(t0.Add(cfg.LockDuration)) {
		t.Errorf("next deadline %v %v, want %v", d, ok, t0.Add(cfg.LockDuration))
	}
	before := clone(p)
	if p.ExpireLocks(t0.Add(cfg.LockDuration-time.Nanosecond), cfg) {
		t.Error("lock expired before its deadline")
	}
	if !reflect.DeepEqual(p, before) {
		t.Error("early ExpireLocks changed the state")
	}
	if !p.ExpireLocks(t0.Add(cfg.LockDuration), cfg) {
		t.Error("lock not expired at its deadline")
	}
	if d, want := dump(p), "0: a1 a1 q1 q1"; d != want {
		t.Errorf("window %q, want %q", d, want)
	}
	if d, ok := p.NextDeadline(); !ok || !d.Equal(t0.Add(time.Second+cfg.LockDuration)) {
		t.Errorf("next deadline %v %v", d, ok)
	}
	if code := p.Acknowledge("m1", acks(0, 0, AckAccept), t0, cfg); code != errInvalidRecordState {
		t.Errorf("ack after expiry: %d, want %d", code, errInvalidRecordState)
	}
	p.ExpireLocks(t0.Add(time.Hour), cfg)
	if _, ok := p.NextDeadline(); ok || p.AcquiredCount() != 0 {
		t.Error("acquisitions left after all locks expired")
	}
}

func TestRenew(t *testing.T) {
	p := NewPartition(Snapshot{})
	p.Acquire("m1", batches(0, 2), 3, 0, false, t0, cfg)
	renewAt := t0.Add(20 * time.Second)
	code := p.Acknowledge("m1", []AckBatch{{0, 1, []AckType{AckRenew, AckAccept}}, {2, 2, []AckType{AckRenew}}}, renewAt, cfg)
	if code != 0 {
		t.Fatalf("renew: %d", code)
	}
	if d, want := dump(p), "0: q1 k1 q1"; d != want {
		t.Errorf("window %q, want %q", d, want)
	}
	if d, ok := p.NextDeadline(); !ok || !d.Equal(renewAt.Add(cfg.LockDuration)) {
		t.Errorf("next deadline %v, want %v", d, renewAt.Add(cfg.LockDuration))
	}
	if p.ExpireLocks(t0.Add(cfg.LockDuration), cfg) {
		t.Error("renewed lock expired at the first deadline")
	}
	if !p.ExpireLocks(renewAt.Add(cfg.LockDuration), cfg) {
		t.Error("renewed lock not expired at its deadline")
	}
	if d, want := dump(p), "0: a1 k1 a1"; d != want {
		t.Errorf("window %q, want %q", d, want)
	}
}

func TestAcknowledgeApplies(t *testing.T) {
	p := NewPartition(Snapshot{})
	p.Acquire("m1", batches(0, 6), 7, 0, false, t0, cfg)
	code := p.Acknowledge("m1", []AckBatch{
		{0, 5, []AckType{AckAccept, AckReject, AckGap, AckRelease, AckRenew, AckAccept}},
	}, t0.Add(time.Second), cfg)
	if code != 0 {
		t.Fatalf("ack: %d", code)
	}
	if d, want := dump(p), "3: a1 q1 k1 q1"; d != want {
		t.Errorf("window %q, want %q", d, want)
	}
	if p.FetchOffset() != 3 || p.AcquiredCount() != 2 {
		t.Errorf("fetch %d acquired %d, want 3 2", p.FetchOffset(), p.AcquiredCount())
	}
	// Settling the rest empties the window.
	if code := p.Acknowledge("m1", []AckBatch{{4, 4, []AckType{AckAccept}}, {6, 6, []AckType{AckReject}}}, t0, cfg); code != 0 {
		t.Fatalf("ack: %d", code)
	}
	p.Acquire("m2", batches(0, 6), 7, 0, false, t0, cfg)
	if code := p.Acknowledge("m2", acks(3, 3, AckAccept), t0, cfg); code != 0 {
		t.Fatalf("ack: %d", code)
	}
	if d, want := dump(p), "7:"; d != want || p.EndOffset() != 7 {
		t.Errorf("window %q end %d, want %q 7", d, p.EndOffset(), want)
	}
	if code := p.Acknowledge("m2", nil, t0, cfg); code != 0 {
		t.Errorf("no acknowledgements: %d", code)
	}
}

func TestAcknowledgeErrors(t *testing.T) {
	// Window 10..19: 10-12 acquired by m1, 13 available, 14 acknowledged,
	// 15-19 acquired by m2.
	setup := func() *Partition {
		p := NewPartition(Snapshot{StartOffset: 10, Batches: []StateBatch{{13, 13, Available, 1}, {14, 14, Acknowledged, 1}}})
		p.Acquire("m1", batches(10, 12), 20, 0, false, t0, cfg)
		p.Acquire("m2", batches(15, 19), 20, 0, false, t0, cfg)
		if d, want := dump(p), "10: q1 q1 q1 a1 k1 q1 q1 q1 q1 q1"; d != want {
			t.Fatalf("setup %q, want %q", d, want)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		acks []AckBatch
		want int16
	}{
		{"first after last", acks(12, 11, AckAccept), errInvalidRequest},
		{"no types", acks(10, 11), errInvalidRequest},
		{"too few types", acks(10, 12, AckAccept, AckAccept), errInvalidRequest},
		{"too many types", acks(10, 10, AckAccept, AckAccept), errInvalidRequest},
		{"unknown type", acks(10, 10, 5), errInvalidRequest},
		{"negative type", acks(10, 11, AckAccept, -1), errInvalidRequest},
		{"overlapping batches", []AckBatch{{10, 11, []AckType{AckAccept}}, {11, 12, []AckType{AckRelease}}}, errInvalidRequest},
		{"unordered batches", []AckBatch{{12, 12, []AckType{AckAccept}}, {10, 10, []AckType{AckAccept}}}, errInvalidRequest},
		{"malformed after a valid batch", []AckBatch{{10, 10, []AckType{AckAccept}}, {11, 11, []AckType{9}}}, errInvalidRequest},
		{"malformed after a foreign batch", []AckBatch{{15, 15, []AckType{AckAccept}}, {16, 15, []AckType{AckAccept}}}, errInvalidRequest},
		{"another member's records", acks(15, 16, AckAccept), errInvalidRecordState},
		{"partly another member's", acks(12, 15, AckAccept), errInvalidRecordState},
		{"valid batch then another member's", []AckBatch{{10, 12, []AckType{AckAccept}}, {15, 15, []AckType{AckAccept}}}, errInvalidRecordState},
		{"below start", acks(9, 10, AckAccept), errInvalidRecordState},
		{"far below start", acks(0, 2, AckAccept), errInvalidRecordState},
		{"at end", acks(20, 20, AckAccept), errInvalidRecordState},
		{"available", acks(13, 13, AckAccept), errInvalidRecordState},
		{"acknowledged", acks(14, 14, AckRelease), errInvalidRecordState},
		{"renew of another member's", acks(15, 15, AckRenew), errInvalidRecordState},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := setup()
			before := clone(p)
			if got := p.Acknowledge("m1", tc.acks, t0.Add(time.Second), cfg); got != tc.want {
				t.Errorf("code %d, want %d", got, tc.want)
			}
			if !reflect.DeepEqual(p, before) {
				t.Errorf("state changed: %s, was %s", dump(p), dump(before))
			}
		})
	}
}

func TestReleaseMember(t *testing.T) {
	p := NewPartition(Snapshot{})
	p.Acquire("m1", batches(0, 1), 4, 0, false, t0, cfg)
	p.Acquire("m2", batches(2, 3), 4, 0, false, t0, cfg)
	if p.ReleaseMember("m3", cfg) {
		t.Error("releasing a member holding nothing changed something")
	}
	if !p.ReleaseMember("m2", cfg) {
		t.Error("releasing m2 changed nothing")
	}
	if d, want := dump(p), "0: q1 q1 a0 a0"; d != want {
		t.Errorf("window %q, want %q", d, want)
	}
	if p.recs[0].owner != "m1" || p.recs[2].owner != "" {
		t.Errorf("owners %q %q", p.recs[0].owner, p.recs[2].owner)
	}
	if p.ReleaseMember("m2", cfg) {
		t.Error("second release changed something")
	}
	if p.FetchOffset() != 2 || p.AcquiredCount() != 2 {
		t.Errorf("fetch %d acquired %d, want 2 2", p.FetchOffset(), p.AcquiredCount())
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	p := NewPartition(Snapshot{StartOffset: 100})
	p.Acquire("m1", batches(100, 104, 107, 109), 110, 0, false, t0, cfg)
	p.Acknowledge("m1", []AckBatch{{101, 101, []AckType{AckRelease}}, {103, 104, []AckType{AckAccept, AckReject}}}, t0, cfg)
	p.Acquire("m2", batches(100, 104), 110, 0, false, t0, cfg)
	if d, want := dump(p), "100: q1 q2 q1 k1 x1 x0 x0 q1 q1 q1"; d != want {
		t.Fatalf("window %q, want %q", d, want)
	}
	s := p.Snapshot()
	want := Snapshot{StartOffset: 100, Batches: []StateBatch{
		{100, 100, Available, 1},
		{101, 101, Available, 2},
		{102, 102, Available, 1},
		{103, 103, Acknowledged, 1},
		{104, 104, Archived, 1},
		{105, 106, Archived, 0},
		{107, 109, Available, 1},
	}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("snapshot %+v\nwant %+v", s, want)
	}
	q := NewPartition(s)
	if d, want := dump(q), "100: a1 a2 a1 k1 x1 x0 x0 a1 a1 a1"; d != want {
		t.Errorf("rebuilt %q, want %q", d, want)
	}
	if q.AcquiredCount() != 0 || q.FetchOffset() != 100 || q.EndOffset() != 110 {
		t.Errorf("rebuilt acquired %d fetch %d end %d", q.AcquiredCount(), q.FetchOffset(), q.EndOffset())
	}
	if !reflect.DeepEqual(q.Snapshot(), s) {
		t.Errorf("snapshot of the rebuilt partition %+v", q.Snapshot())
	}
}

func TestNewPartition(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     Snapshot
		dump  string
		fetch int64
	}{
		{"empty", Snapshot{StartOffset: 7}, "7:", 7},
		{
			"gaps are available and leading settled records skipped",
			Snapshot{StartOffset: 10, Batches: []StateBatch{{10, 11, Acknowledged, 1}, {13, 13, Archived, 2}, {15, 16, Available, 3}}},
			"12: a0 x2 a0 a3 a3", 12,
		},
		{
			"all settled",
			Snapshot{StartOffset: 10, Batches: []StateBatch{{10, 11, Acknowledged, 1}, {12, 12, Archived, 5}}},
			"13:", 13,
		},
		{
			"acquired is available",
			Snapshot{StartOffset: 0, Batches: []StateBatch{{0, 0, Acknowledged, 1}, {1, 2, acquired, 2}}},
			"1: a2 a2", 1,
		},
		{
			"batches below the start are ignored",
			Snapshot{StartOffset: 5, Batches: []StateBatch{{0, 6, Available, 1}}},
			"5: a1 a1", 5,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPartition(tc.s)
			if d := dump(p); d != tc.dump {
				t.Errorf("window %q, want %q", d, tc.dump)
			}
			if p.FetchOffset() != tc.fetch {
				t.Errorf("fetch offset %d, want %d", p.FetchOffset(), tc.fetch)
			}
		})
	}
}

func TestAdvanceStart(t *testing.T) {
	setup := func() *Partition {
		p := NewPartition(Snapshot{})
		p.Acquire("m1", batches(0, 9), 10, 0, false, t0, cfg)
		p.Acknowledge("m1", []AckBatch{{3, 4, []AckType{AckAccept, AckReject}}, {6, 6, []AckType{AckRelease}}}, t0, cfg)
		if d, want := dump(p), "0: q1 q1 q1 k1 x1 q1 a1 q1 q1 q1"; d != want {
			t.Fatalf("setup %q, want %q", d, want)
		}
		return p
	}

	p := setup()
	if p.AdvanceStart(0) {
		t.Error("AdvanceStart to the start changed something")
	}
	if !p.AdvanceStart(2) {
		t.Error("AdvanceStart(2) changed nothing")
	}
	if d, want := dump(p), "2: q1 k1 x1 q1 a1 q1 q1 q1"; d != want {
		t.Errorf("window %q, want %q", d, want)
	}
	if code := p.Acknowledge("m1", acks(1, 1, AckAccept), t0, cfg); code != errInvalidRecordState {
		t.Errorf("ack of a dropped record: %d, want %d", code, errInvalidRecordState)
	}

	// Up to settled records: the start moves past them too.
	p = setup()
	p.AdvanceStart(3)
	if d, want := dump(p), "5: q1 a1 q1 q1 q1"; d != want {
		t.Errorf("window %q, want %q", d, want)
	}
	if p.AcquiredCount() != 4 {
		t.Errorf("acquired %d, want 4", p.AcquiredCount())
	}
	if p.AdvanceStart(4) {
		t.Error("AdvanceStart below the start changed something")
	}

	// Past the end: the window empties and the start is the log's.
	p = setup()
	p.AdvanceStart(25)
	if d, want := dump(p), "25:"; d != want || p.EndOffset() != 25 || p.FetchOffset() != 25 {
		t.Errorf("window %q end %d fetch %d, want %q 25 25", d, p.EndOffset(), p.FetchOffset(), want)
	}
	if _, ok := p.NextDeadline(); ok {
		t.Error("deadline left after dropping all acquisitions")
	}
	if got := p.Acquire("m1", batches(25, 26), 27, 0, false, t0, cfg); !reflect.DeepEqual(got, []Acquired{{25, 26, 1}}) {
		t.Errorf("acquired %v", got)
	}
}

func TestReset(t *testing.T) {
	p := NewPartition(Snapshot{})
	p.Acquire("m1", batches(0, 9), 10, 0, false, t0, cfg)
	p.Acknowledge("m1", acks(0, 9, AckAccept), t0, cfg)
	p.Acquire("m1", batches(10, 14), 15, 0, false, t0, cfg)
	p.ReleaseMember("m1", cfg)
	for _, offset := range []int64{100, 3} {
		p.Reset(offset)
		if p.StartOffset() != offset || p.EndOffset() != offset || p.FetchOffset() != offset || p.AcquiredCount() != 0 {
			t.Errorf("after Reset(%d): start %d end %d fetch %d", offset, p.StartOffset(), p.EndOffset(), p.FetchOffset())
		}
		if s := p.Snapshot(); !reflect.DeepEqual(s, Snapshot{StartOffset: offset}) {
			t.Errorf("snapshot after Reset(%d): %+v", offset, s)
		}
	}
	got := p.Acquire("m1", batches(0, 4), 5, 0, false, t0, cfg)
	if want := []Acquired{{3, 4, 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("acquired %v, want %v", got, want)
	}
}

// TestDeliveryComplete counts the records past the start whose delivery
// is over: accepted, rejected or archived at the delivery limit, but not
// those acquired or available.
func TestDeliveryComplete(t *testing.T) {
	c := cfg
	c.DeliveryLimit = 1
	p := NewPartition(Snapshot{StartOffset: 0})
	p.Acquire("m", batches(0, 5), 6, 0, false, t0, c)
	// 0 stays acquired, so nothing moves the start.
	if code := p.Acknowledge("m", acks(1, 5, AckAccept, AckReject, AckRelease, AckAccept, AckRelease), t0, c); code != 0 {
		t.Fatalf("acknowledging: %d", code)
	}
	if got := p.DeliveryComplete(); got != 5 || p.StartOffset() != 0 {
		t.Fatalf("delivery complete %d at start %d (%s), want 5 at 0", got, p.StartOffset(), dump(p))
	}
	// Released at the limit, 0 is archived: the start passes them all.
	p.ExpireLocks(t0.Add(c.LockDuration), c)
	if got := p.DeliveryComplete(); got != 0 || p.StartOffset() != 6 || p.AcquiredCount() != 0 {
		t.Fatalf("after releasing 0: delivery complete %d, start %d (%s), want 0 at 6", got, p.StartOffset(), dump(p))
	}
}

// A record released because its member's session ended was not
// delivered: its delivery count goes back down, and one at the delivery
// limit is not archived (SharePartition.releaseAcquiredRecords).
func TestReleaseMemberUndoesDelivery(t *testing.T) {
	c := cfg
	c.DeliveryLimit = 2
	p := NewPartition(Snapshot{Batches: []StateBatch{{0, 0, Available, 1}}})
	if got := p.Acquire("m1", batches(0, 1), 2, 0, false, t0, c); !reflect.DeepEqual(got, []Acquired{{0, 0, 2}, {1, 1, 1}}) {
		t.Fatalf("acquired %v", got)
	}
	p.ReleaseMember("m1", c)
	if d, want := dump(p), "0: a1 a0"; d != want {
		t.Errorf("window %q, want %q", d, want)
	}
	if got := p.Acquire("m2", batches(0, 1), 2, 0, false, t0, c); !reflect.DeepEqual(got, []Acquired{{0, 0, 2}, {1, 1, 1}}) {
		t.Errorf("acquired again %v, want the same delivery counts", got)
	}
}

// In strict mode (record limit) the new records taken stop at the
// window's room as well as at the record count: Kafka takes the smaller
// of maxFetchRecords and the records left to max in-flight
// (SharePartition.lastOffsetAndMaxRecordsToAcquire).
func TestMaxInFlightStrict(t *testing.T) {
	c := cfg
	c.MaxInFlight = 10
	p := NewPartition(Snapshot{})
	log := batches(0, 19)
	if got := p.Acquire("m1", log, 20, 6, true, t0, c); !reflect.DeepEqual(got, []Acquired{{0, 5, 1}}) {
		t.Fatalf("acquired %v", got)
	}
	if got := p.Acquire("m1", log, 20, 6, true, t0, c); !reflect.DeepEqual(got, []Acquired{{6, 9, 1}}) {
		t.Errorf("with room for 4 acquired %v, want 6-9", got)
	}
}

// A gap before the next batch counts in the window's room too.
func TestMaxInFlightStrictGap(t *testing.T) {
	c := cfg
	c.MaxInFlight = 10
	p := NewPartition(Snapshot{})
	if got := p.Acquire("m1", batches(0, 7), 20, 8, true, t0, c); !reflect.DeepEqual(got, []Acquired{{0, 7, 1}}) {
		t.Fatalf("acquired %v", got)
	}
	if got := p.Acquire("m1", batches(12, 19), 20, 8, true, t0, c); got != nil {
		t.Errorf("past the window's room acquired %v", got)
	}
	if got := p.Acquire("m1", batches(9, 19), 20, 8, true, t0, c); !reflect.DeepEqual(got, []Acquired{{9, 9, 1}}) {
		t.Errorf("acquired %v, want 9-9 (8 is a gap)", got)
	}
}
