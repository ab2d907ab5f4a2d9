package sharestate

import (
	"cmp"
	"slices"
)

// StateBatch is the state of a run of offsets of a share-partition: its
// delivery state (0 available, 2 acknowledged, 4 archived) and delivery
// count (Kafka's PersisterStateBatch).
type StateBatch struct {
	FirstOffset   int64
	LastOffset    int64
	DeliveryState int8
	DeliveryCount int16
}

// priority is what a batch says of its offsets. When batches disagree
// about an offset, the one with the higher delivery count wins, then the
// one with the later delivery state.
type priority struct {
	count int16
	state int8
}

func (p priority) compare(o priority) int {
	if c := cmp.Compare(p.count, o.count); c != 0 {
		return c
	}
	return cmp.Compare(p.state, o.state)
}

func (b StateBatch) priority() priority {
	return priority{b.DeliveryCount, b.DeliveryState}
}

// combineBatches merges newer batches into the stored ones as Kafka's
// PersisterStateBatchCombiner does (4.4: a sweep over the batches'
// offsets):
//
//   - with a start offset other than -1, batches ending below it are
//     dropped and one straddling it keeps only its part from it on;
//   - none or one batch left is the answer as it is;
//   - otherwise every offset some batch covers takes the delivery count
//     and state of the covering batch of highest priority (delivery
//     count, then delivery state; whether it is stored or new does not
//     matter), and neighbouring offsets with the same count and state
//     form one batch, in offset order.
//
// A share-partition leader's new state for an offset has a higher
// delivery count (a new delivery) or a later state (acknowledged,
// archived), so it replaces the stored one.
func combineBatches(stored, newer []StateBatch, startOffset int64) []StateBatch {
	combined := make([]StateBatch, 0, len(stored)+len(newer))
	for _, list := range [][]StateBatch{stored, newer} {
		for _, b := range list {
			switch {
			case startOffset == -1 || b.FirstOffset >= startOffset:
				combined = append(combined, b)
			case b.LastOffset >= startOffset:
				b.FirstOffset = startOffset
				combined = append(combined, b)
			}
		}
	}
	if len(combined) < 2 {
		return combined
	}

	// Each batch begins at its first offset and ends after its last; at
	// an offset, the batches ending there go before those beginning.
	type event struct {
		offset int64
		begin  bool
		p      priority
	}
	events := make([]event, 0, 2*len(combined))
	for _, b := range combined {
		events = append(events, event{b.FirstOffset, true, b.priority()}, event{b.LastOffset + 1, false, b.priority()})
	}
	slices.SortStableFunc(events, func(a, b event) int {
		if c := cmp.Compare(a.offset, b.offset); c != 0 {
			return c
		}
		switch {
		case a.begin == b.begin:
			return 0
		case a.begin:
			return 1
		}
		return -1
	})

	out := make([]StateBatch, 0, len(combined))
	active := map[priority]int{} // the batches covering the sweep's position
	var top priority
	covered := false
	from := int64(-1)
	for i := 0; i < len(events); {
		at := events[i].offset
		if covered && at > from {
			out = appendRun(out, from, at-1, top)
		}
		for ; i < len(events) && events[i].offset == at; i++ {
			e := events[i]
			if e.begin {
				active[e.p]++
			} else if active[e.p]--; active[e.p] == 0 {
				delete(active, e.p)
			}
		}
		covered = len(active) > 0
		first := true
		for p := range active {
			if first || p.compare(top) > 0 {
				top, first = p, false
			}
		}
		from = at
	}
	return out
}

// appendRun adds offsets first to last in state p, joining them to the
// previous batch when it ends just before in the same state.
func appendRun(out []StateBatch, first, last int64, p priority) []StateBatch {
	if n := len(out); n > 0 && out[n-1].LastOffset+1 == first && out[n-1].priority() == p {
		out[n-1].LastOffset = last
		return out
	}
	return append(out, StateBatch{FirstOffset: first, LastOffset: last, DeliveryState: p.state, DeliveryCount: p.count})
}
