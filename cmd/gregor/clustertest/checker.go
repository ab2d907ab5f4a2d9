package clustertest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Position is where a record sits: topic, partition, offset.
type Position struct {
	Topic     string
	Partition int32
	Offset    int64
}

func (p Position) String() string { return fmt.Sprintf("%s/%d@%d", p.Topic, p.Partition, p.Offset) }

// Checker records a history of writes and reads and judges it with the
// semantics of Jepsen's queue checker, applied to Kafka's partitioned
// log. Values identify records and must be unique per attempted write.
// It is safe for concurrent use.
type Checker struct {
	mu        sync.Mutex
	attempted map[string]bool
	acked     map[string]ack
	ackOrder  map[streamKey][]string // values in the order their producer saw them acknowledged
	consumed  map[Position]string
	reads     map[Position][]string // every distinct value read at a position, for Inconsistent
}

type ack struct {
	producer string
	pos      Position
}

// streamKey is one producer's writes into one partition.
type streamKey struct {
	producer  string
	topic     string
	partition int32
}

// NewChecker returns an empty history.
func NewChecker() *Checker {
	return &Checker{
		attempted: map[string]bool{},
		acked:     map[string]ack{},
		ackOrder:  map[streamKey][]string{},
		consumed:  map[Position]string{},
		reads:     map[Position][]string{},
	}
}

// Attempt records that a write of value is about to be sent. A write that
// then fails may or may not be stored; either is correct.
func (c *Checker) Attempt(value string) {
	c.mu.Lock()
	c.attempted[value] = true
	c.mu.Unlock()
}

// Ack records that producer's write of value was acknowledged at pos.
// Acks of one producer must be recorded in the order it received them.
func (c *Checker) Ack(producer, value string, pos Position) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.attempted[value] = true
	c.acked[value] = ack{producer, pos}
	k := streamKey{producer, pos.Topic, pos.Partition}
	c.ackOrder[k] = append(c.ackOrder[k], value)
}

// Consume records a record read at pos. Reading the same position again
// (a consumer that re-reads after a rebalance or restart) is no duplicate.
// The latest read of a position is the one judged (the final full read
// comes last); earlier reads of another value there are Inconsistent.
func (c *Checker) Consume(pos Position, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.consumed[pos] = value
	for _, v := range c.reads[pos] {
		if v == value {
			return
		}
	}
	c.reads[pos] = append(c.reads[pos], value)
}

// Acked is how many writes were acknowledged so far.
func (c *Checker) Acked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.acked)
}

// AckedValues returns every acknowledged value.
func (c *Checker) AckedValues() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.acked))
	for v := range c.acked {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// Duplicate is one value consumed at more than one position.
type Duplicate struct {
	Value     string
	Positions []Position
}

// Reorder is a pair of one producer's writes to one partition that were
// acknowledged in one order and stored in the other.
type Reorder struct {
	Producer             string
	Earlier, Later       string   // in acknowledgement order
	EarlierPos, LaterPos Position // where they were consumed; LaterPos.Offset < EarlierPos.Offset
}

// Misplaced is a write consumed somewhere other than where it was
// acknowledged.
type Misplaced struct {
	Value           string
	Acked, Consumed Position
}

// Lost is an acknowledged write that was never consumed.
type Lost struct {
	Value string
	Acked Position
	There string // what the read found at that position instead ("" if nothing)
}

// Unexpected is a record consumed that no one attempted to write.
type Unexpected struct {
	Value string
	Pos   Position
}

// Inconsistent is a position read with different values by different
// reads: data that was visible and then replaced.
type Inconsistent struct {
	Pos    Position
	Values []string
}

// Report is the checker's verdict. The slices list the anomalies; the
// counts describe the history.
type Report struct {
	Attempted, Acked, Consumed int
	Recovered                  int // attempted, not acknowledged, yet consumed (allowed)

	Lost         []Lost // acknowledged, never consumed
	Duplicated   []Duplicate
	Reordered    []Reorder
	Misplaced    []Misplaced
	Unexpected   []Unexpected
	Inconsistent []Inconsistent
}

// OK reports whether the history has no anomaly.
func (r Report) OK() bool {
	return len(r.Lost)+len(r.Duplicated)+len(r.Reordered)+len(r.Misplaced)+len(r.Unexpected)+len(r.Inconsistent) == 0
}

// String summarises the report with up to five examples of each anomaly.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "attempted %d, acknowledged %d, consumed %d (of which %d not acknowledged)",
		r.Attempted, r.Acked, r.Consumed, r.Recovered)
	list := func(name string, n int, item func(i int) string) {
		if n == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s: %d", name, n)
		for i := 0; i < n && i < 5; i++ {
			b.WriteString("\n  " + item(i))
		}
	}
	list("lost", len(r.Lost), func(i int) string {
		l := r.Lost[i]
		if l.There == "" {
			return fmt.Sprintf("%s acknowledged at %v, nothing read there", l.Value, l.Acked)
		}
		return fmt.Sprintf("%s acknowledged at %v, %s read there", l.Value, l.Acked, l.There)
	})
	if len(r.Lost) > 0 {
		b.WriteString("\nlost per partition:" + lostRanges(r.Lost))
	}
	list("duplicated", len(r.Duplicated), func(i int) string {
		return fmt.Sprintf("%s at %v", r.Duplicated[i].Value, r.Duplicated[i].Positions)
	})
	list("reordered", len(r.Reordered), func(i int) string {
		o := r.Reordered[i]
		return fmt.Sprintf("producer %s acknowledged %s (%v) before %s (%v)", o.Producer, o.Earlier, o.EarlierPos, o.Later, o.LaterPos)
	})
	list("misplaced", len(r.Misplaced), func(i int) string {
		return fmt.Sprintf("%s acknowledged at %v, consumed at %v", r.Misplaced[i].Value, r.Misplaced[i].Acked, r.Misplaced[i].Consumed)
	})
	list("unexpected", len(r.Unexpected), func(i int) string {
		return fmt.Sprintf("%s at %v", r.Unexpected[i].Value, r.Unexpected[i].Pos)
	})
	list("inconsistent", len(r.Inconsistent), func(i int) string {
		return fmt.Sprintf("%v read as %q", r.Inconsistent[i].Pos, r.Inconsistent[i].Values)
	})
	return b.String()
}

// Check judges the history. Call it after a full read from the beginning
// of every partition written to.
func (c *Checker) Check() Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := Report{Attempted: len(c.attempted), Acked: len(c.acked), Consumed: len(c.consumed)}

	where := map[string][]Position{} // value -> every position it was consumed at
	for pos, v := range c.consumed {
		where[v] = append(where[v], pos)
	}
	for v, ps := range where {
		sortPositions(ps)
		if len(ps) > 1 {
			r.Duplicated = append(r.Duplicated, Duplicate{v, ps})
		}
		if !c.attempted[v] {
			r.Unexpected = append(r.Unexpected, Unexpected{v, ps[0]})
			continue
		}
		a, ok := c.acked[v]
		if !ok {
			r.Recovered++
			continue
		}
		if !containsPosition(ps, a.pos) {
			r.Misplaced = append(r.Misplaced, Misplaced{v, a.pos, ps[0]})
		}
	}
	for v, a := range c.acked {
		if _, ok := where[v]; !ok {
			r.Lost = append(r.Lost, Lost{v, a.pos, c.consumed[a.pos]})
		}
	}
	for pos, vs := range c.reads {
		if len(vs) > 1 {
			r.Inconsistent = append(r.Inconsistent, Inconsistent{pos, append([]string(nil), vs...)})
		}
	}
	r.Reordered = c.reorders(where)

	sort.Slice(r.Lost, func(i, j int) bool { return positionLess(r.Lost[i].Acked, r.Lost[j].Acked) })
	sort.Slice(r.Duplicated, func(i, j int) bool { return r.Duplicated[i].Value < r.Duplicated[j].Value })
	sort.Slice(r.Misplaced, func(i, j int) bool { return r.Misplaced[i].Value < r.Misplaced[j].Value })
	sort.Slice(r.Unexpected, func(i, j int) bool { return r.Unexpected[i].Value < r.Unexpected[j].Value })
	sort.Slice(r.Inconsistent, func(i, j int) bool { return positionLess(r.Inconsistent[i].Pos, r.Inconsistent[j].Pos) })
	return r
}

// reorders walks each producer's acknowledged writes to each partition in
// acknowledgement order and reports every consecutive pair (skipping
// writes not consumed in that partition) whose consumed offsets go down.
// A write read at several offsets counts at the one it was acknowledged
// at when it was read there, else at the lowest.
func (c *Checker) reorders(where map[string][]Position) []Reorder {
	keys := make([]streamKey, 0, len(c.ackOrder))
	for k := range c.ackOrder {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.producer != b.producer {
			return a.producer < b.producer
		}
		if a.topic != b.topic {
			return a.topic < b.topic
		}
		return a.partition < b.partition
	})
	var out []Reorder
	for _, k := range keys {
		var prev string
		var prevPos Position
		havePrev := false
		for _, v := range c.ackOrder[k] {
			// Where it was acknowledged, if it was read there: a duplicate
			// elsewhere is reported as such, not as a reorder too.
			pos, ok := c.acked[v].pos, containsPosition(where[v], c.acked[v].pos)
			if !ok {
				pos, ok = firstIn(where[v], k.topic, k.partition)
			}
			if !ok {
				continue
			}
			if havePrev && pos.Offset < prevPos.Offset {
				out = append(out, Reorder{k.producer, prev, v, prevPos, pos})
			}
			prev, prevPos, havePrev = v, pos, true
		}
	}
	return out
}

// firstIn returns the lowest of ps in the given partition.
func firstIn(ps []Position, topic string, partition int32) (Position, bool) {
	for _, p := range ps { // sorted
		if p.Topic == topic && p.Partition == partition {
			return p, true
		}
	}
	return Position{}, false
}

func containsPosition(ps []Position, p Position) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

func positionLess(a, b Position) bool {
	if a.Topic != b.Topic {
		return a.Topic < b.Topic
	}
	if a.Partition != b.Partition {
		return a.Partition < b.Partition
	}
	return a.Offset < b.Offset
}

func sortPositions(ps []Position) {
	sort.Slice(ps, func(i, j int) bool { return positionLess(ps[i], ps[j]) })
}

// lostRanges summarises lost writes per partition: how many and the
// lowest and highest offset they were acknowledged at.
func lostRanges(lost []Lost) string {
	type span struct {
		n        int
		min, max int64
	}
	spans := map[string]*span{}
	var keys []string
	for _, l := range lost {
		k := fmt.Sprintf("%s/%d", l.Acked.Topic, l.Acked.Partition)
		sp, ok := spans[k]
		if !ok {
			sp = &span{min: l.Acked.Offset, max: l.Acked.Offset}
			spans[k] = sp
			keys = append(keys, k)
		}
		sp.n++
		sp.min, sp.max = min(sp.min, l.Acked.Offset), max(sp.max, l.Acked.Offset)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s: %d at offsets %d-%d;", k, spans[k].n, spans[k].min, spans[k].max)
	}
	return b.String()
}
