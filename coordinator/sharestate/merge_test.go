package sharestate

import (
	"slices"
	"testing"
)

// The expected lists were checked against Kafka 4.4's
// PersisterStateBatchCombiner on the same input.
func TestCombineBatches(t *testing.T) {
	for _, tc := range []struct {
		name          string
		stored, newer []StateBatch
		start         int64
		want          []StateBatch
	}{
		{
			name:   "a new state overrides the middle of a run",
			stored: []StateBatch{sb(0, 9, 0, 1)},
			newer:  []StateBatch{sb(3, 5, 2, 1)},
			start:  -1,
			want:   []StateBatch{sb(0, 2, 0, 1), sb(3, 5, 2, 1), sb(6, 9, 0, 1)},
		},
		{
			name:   "a batch straddling the start offset is cut",
			stored: []StateBatch{sb(0, 9, 0, 1), sb(10, 19, 2, 1)},
			start:  5,
			want:   []StateBatch{sb(5, 9, 0, 1), sb(10, 19, 2, 1)},
		},
		{
			name:   "batches below the start offset are dropped",
			stored: []StateBatch{sb(0, 9, 0, 1), sb(10, 19, 2, 1)},
			start:  12,
			want:   []StateBatch{sb(12, 19, 2, 1)},
		},
		{
			name:   "adjacent runs in the same state are joined",
			stored: []StateBatch{sb(0, 4, 0, 1)},
			newer:  []StateBatch{sb(5, 9, 0, 1)},
			start:  -1,
			want:   []StateBatch{sb(0, 9, 0, 1)},
		},
		{
			name:   "the higher delivery count wins, not the newer batch",
			stored: []StateBatch{sb(0, 9, 0, 2)},
			newer:  []StateBatch{sb(0, 9, 0, 1)},
			start:  -1,
			want:   []StateBatch{sb(0, 9, 0, 2)},
		},
		{
			// Kafka's testNonSequentialBatchUpdates: moving the start
			// offset and acknowledging a later batch keeps the one between.
			name:   "a batch between the start offset and the new one is kept",
			stored: []StateBatch{sb(100, 109, 2, 1), sb(110, 119, 1, 2), sb(120, 129, 1, 0)},
			newer:  []StateBatch{sb(120, 129, 2, 1)},
			start:  110,
			want:   []StateBatch{sb(110, 119, 1, 2), sb(120, 129, 2, 1)},
		},
		{
			// Kafka's combiner before 4.4 left [0-4] and [5-10] apart.
			name:   "runs are joined across a batch the merge swallowed",
			stored: []StateBatch{sb(0, 4, 2, 1), sb(5, 6, 0, 1)},
			newer:  []StateBatch{sb(5, 10, 2, 1)},
			start:  -1,
			want:   []StateBatch{sb(0, 10, 2, 1)},
		},
		{
			name:   "several new batches inside one",
			stored: []StateBatch{sb(0, 20, 0, 1)},
			newer:  []StateBatch{sb(2, 3, 4, 1), sb(5, 5, 2, 1), sb(6, 8, 2, 1)},
			start:  -1,
			want:   []StateBatch{sb(0, 1, 0, 1), sb(2, 3, 4, 1), sb(4, 4, 0, 1), sb(5, 8, 2, 1), sb(9, 20, 0, 1)},
		},
		{
			name:   "a single batch is only cut",
			stored: []StateBatch{sb(3, 9, 0, 1)},
			start:  7,
			want:   []StateBatch{sb(7, 9, 0, 1)},
		},
		{
			name:  "nothing",
			start: -1,
			want:  []StateBatch{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := slices.Clone(tc.stored)
			got := combineBatches(tc.stored, tc.newer, tc.start)
			if got == nil || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if !slices.Equal(stored, tc.stored) {
				t.Fatalf("the stored batches were changed: %v, were %v", tc.stored, stored)
			}
		})
	}
}

// Whatever the input, the result covers each offset once, in order, with
// the highest-priority state any input batch gives it, and joins what can
// be joined.
func TestCombineBatchesInvariants(t *testing.T) {
	seed := uint64(7)
	next := func(n int) int {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int(seed % uint64(n))
	}
	gen := func() []StateBatch {
		var out []StateBatch
		for range next(5) {
			f := int64(next(30))
			out = append(out, sb(f, f+int64(next(8)), []int8{0, 2, 4}[next(3)], int16(next(3))))
		}
		return out
	}
	for range 2000 {
		stored, newer := gen(), gen()
		start := int64(-1)
		if next(2) == 0 {
			start = int64(next(20))
		}
		got := combineBatches(stored, newer, start)
		want := map[int64]priority{}
		for _, b := range append(slices.Clone(stored), newer...) {
			for o := max(b.FirstOffset, start); o <= b.LastOffset; o++ {
				if p, ok := want[o]; !ok || b.priority().compare(p) > 0 {
					want[o] = b.priority()
				}
			}
		}
		if len(want) <= 1 || len(stored)+len(newer) <= 1 {
			continue // a lone batch is answered as it is
		}
		seen := 0
		for i, b := range got {
			if b.FirstOffset > b.LastOffset {
				t.Fatalf("empty batch %v in %v", b, got)
			}
			if i > 0 {
				prev := got[i-1]
				if b.FirstOffset <= prev.LastOffset {
					t.Fatalf("%v overlaps or is out of order in %v", b, got)
				}
				if b.FirstOffset == prev.LastOffset+1 && b.priority() == prev.priority() {
					t.Fatalf("%v and %v not joined in %v (from %v + %v, start %d)", prev, b, got, stored, newer, start)
				}
			}
			for o := b.FirstOffset; o <= b.LastOffset; o++ {
				if p, ok := want[o]; !ok || p != b.priority() {
					t.Fatalf("offset %d is %v in %v, want %v (from %v + %v, start %d)", o, b.priority(), got, p, stored, newer, start)
				}
				seen++
			}
		}
		if seen != len(want) {
			t.Fatalf("%v covers %d offsets, want %d (from %v + %v, start %d)", got, seen, len(want), stored, newer, start)
		}
	}
}
