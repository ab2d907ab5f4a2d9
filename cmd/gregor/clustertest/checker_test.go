package clustertest

import (
	"reflect"
	"strings"
	"testing"
)

func at(partition int32, offset int64) Position { return Position{"t", partition, offset} }

// history builds a checker from acknowledged writes (producer, value,
// partition, offset) and then reads (partition, offset, value).
type write struct {
	producer, value string
	pos             Position
}
type read struct {
	pos   Position
	value string
}

func history(attempts []string, acks []write, reads []read) Report {
	c := NewChecker()
	for _, v := range attempts {
		c.Attempt(v)
	}
	for _, w := range acks {
		c.Attempt(w.value)
		c.Ack(w.producer, w.value, w.pos)
	}
	for _, r := range reads {
		c.Consume(r.pos, r.value)
	}
	return c.Check()
}

func TestCheckerCleanHistory(t *testing.T) {
	r := history(
		[]string{"a3"}, // attempted, failed, stored anyway: allowed
		[]write{{"a", "a0", at(0, 0)}, {"b", "b0", at(1, 0)}, {"a", "a1", at(0, 1)}, {"a", "a2", at(1, 1)}},
		[]read{{at(0, 0), "a0"}, {at(0, 1), "a1"}, {at(1, 0), "b0"}, {at(1, 1), "a2"}, {at(0, 2), "a3"},
			{at(0, 0), "a0"}}, // a re-read of the same offset is no duplicate
	)
	if !r.OK() {
		t.Fatalf("clean history reported anomalies:\n%s", r)
	}
	if r.Attempted != 5 || r.Acked != 4 || r.Consumed != 5 || r.Recovered != 1 {
		t.Fatalf("counts: %s", r)
	}
}

func TestCheckerLost(t *testing.T) {
	r := history(nil,
		[]write{{"a", "a0", at(0, 0)}, {"a", "a1", at(0, 1)}, {"a", "a2", at(0, 2)}},
		[]read{{at(0, 0), "a0"}},
	)
	if want := []Lost{{"a1", at(0, 1), ""}, {"a2", at(0, 2), ""}}; !reflect.DeepEqual(r.Lost, want) {
		t.Fatalf("lost = %v, want [a1 a2]\n%s", r.Lost, r)
	}
	if r.OK() || len(r.Duplicated)+len(r.Reordered)+len(r.Unexpected)+len(r.Misplaced) != 0 {
		t.Fatalf("only losses expected:\n%s", r)
	}
	if !strings.Contains(r.String(), "lost: 2") || !strings.Contains(r.String(), "t/0: 2 at offsets 1-2") {
		t.Fatalf("summary does not name the losses:\n%s", r)
	}
}

func TestCheckerDuplicated(t *testing.T) {
	// A retry that was not deduplicated: a1 stored at offsets 1 and 2.
	r := history(nil,
		[]write{{"a", "a0", at(0, 0)}, {"a", "a1", at(0, 2)}},
		[]read{{at(0, 0), "a0"}, {at(0, 1), "a1"}, {at(0, 2), "a1"}},
	)
	want := []Duplicate{{"a1", []Position{at(0, 1), at(0, 2)}}}
	if !reflect.DeepEqual(r.Duplicated, want) {
		t.Fatalf("duplicated = %v, want %v", r.Duplicated, want)
	}
	if len(r.Lost)+len(r.Misplaced)+len(r.Reordered) != 0 {
		t.Fatalf("only the duplicate expected:\n%s", r)
	}
}

func TestCheckerReordered(t *testing.T) {
	// Producer a saw a0 then a1 then a2 acknowledged in partition 0, but
	// the log holds a1 before a0. Producer b's writes to another partition
	// and a's writes to partition 1 are in order.
	r := history(nil,
		[]write{{"a", "a0", at(0, 1)}, {"a", "a1", at(0, 0)}, {"a", "a2", at(0, 2)},
			{"a", "a3", at(1, 0)}, {"b", "b0", at(1, 1)}},
		[]read{{at(0, 0), "a1"}, {at(0, 1), "a0"}, {at(0, 2), "a2"}, {at(1, 0), "a3"}, {at(1, 1), "b0"}},
	)
	want := []Reorder{{"a", "a0", "a1", at(0, 1), at(0, 0)}}
	if !reflect.DeepEqual(r.Reordered, want) {
		t.Fatalf("reordered = %+v, want %+v", r.Reordered, want)
	}
	if len(r.Lost)+len(r.Duplicated)+len(r.Misplaced) != 0 {
		t.Fatalf("only the reorder expected:\n%s", r)
	}
}

func TestCheckerReorderSkipsLostWrites(t *testing.T) {
	// a1 is lost; a0 and a2 are compared with each other, in order.
	r := history(nil,
		[]write{{"a", "a0", at(0, 0)}, {"a", "a1", at(0, 1)}, {"a", "a2", at(0, 2)}},
		[]read{{at(0, 0), "a0"}, {at(0, 2), "a2"}},
	)
	if len(r.Reordered) != 0 || !reflect.DeepEqual(r.Lost, []Lost{{"a1", at(0, 1), ""}}) {
		t.Fatalf("want only a1 lost:\n%s", r)
	}
}

func TestCheckerUnexpected(t *testing.T) {
	r := history([]string{"a1"},
		[]write{{"a", "a0", at(0, 0)}},
		[]read{{at(0, 0), "a0"}, {at(0, 1), "a1"}, {at(0, 2), "zz"}},
	)
	want := []Unexpected{{"zz", at(0, 2)}}
	if !reflect.DeepEqual(r.Unexpected, want) || r.Recovered != 1 {
		t.Fatalf("unexpected = %v (recovered %d), want %v and 1", r.Unexpected, r.Recovered, want)
	}
}

func TestCheckerMisplacedAndInconsistent(t *testing.T) {
	// a0 was acknowledged at offset 0 and read there; then a new leader
	// that never had it wrote b0 at offset 0, and the final read finds a0
	// again at offset 1 (it came back some other way).
	r := history(nil,
		[]write{{"a", "a0", at(0, 0)}, {"b", "b0", at(0, 0)}},
		[]read{{at(0, 0), "a0"}, {at(0, 0), "b0"}, {at(0, 1), "a0"}},
	)
	if want := []Inconsistent{{at(0, 0), []string{"a0", "b0"}}}; !reflect.DeepEqual(r.Inconsistent, want) {
		t.Fatalf("inconsistent = %v, want %v", r.Inconsistent, want)
	}
	if want := []Misplaced{{"a0", at(0, 0), at(0, 1)}}; !reflect.DeepEqual(r.Misplaced, want) {
		t.Fatalf("misplaced = %v, want %v", r.Misplaced, want)
	}
	if len(r.Lost)+len(r.Duplicated)+len(r.Reordered)+len(r.Unexpected) != 0 {
		t.Fatalf("only the misplaced write and the inconsistent read expected:\n%s", r)
	}
}

func TestCheckerDuplicateIsNotAlsoAReorder(t *testing.T) {
	// a0 is stored twice, the second copy after a1; judged at its
	// acknowledged offset, the order a0, a1 holds.
	r := history(nil,
		[]write{{"a", "a0", at(0, 0)}, {"a", "a1", at(0, 1)}},
		[]read{{at(0, 0), "a0"}, {at(0, 1), "a1"}, {at(0, 2), "a0"}},
	)
	if len(r.Duplicated) != 1 || len(r.Reordered) != 0 {
		t.Fatalf("want one duplicate and no reorder:\n%s", r)
	}
}
