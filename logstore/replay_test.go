package logstore

import (
	"testing"

	"github.com/gregor-broker/gregor/protocol"
)

// ReplayCommitted gives every batch below the high watermark once, in
// order, and goes on from the new start when the start moves during the
// replay.
func TestReplayCommitted(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4096 // several segments
	// The records' timestamps are from 1970: time retention, which the
	// move of the start kicks, would take the segment holding 150 too.
	cfg.RetentionMs = -1
	_, l := newTestLog(t, cfg)
	appendN(t, l, 60, 5)
	l.SetHighWatermark(250) // the last 10 batches not committed
	var bases []int64
	moved := false
	err := l.ReplayCommitted(func(b []byte) error {
		return protocol.EachBatch(b, func(h protocol.BatchHeader, _ []byte) error {
			bases = append(bases, h.BaseOffset)
			if h.BaseOffset == 50 && !moved {
				moved = true
				if _, err := l.DeleteRecordsBefore(150); err != nil {
					t.Fatal(err)
				}
				// The retention pass the move kicks deletes the segment
				// being replayed.
				waitFor(t, "the first segment deleted", func() bool { return segmentBases(l)[0] == 100 })
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	last := int64(-1)
	for _, b := range bases {
		if b <= last {
			t.Fatalf("batch %d after %d: %v", b, last, bases)
		}
		last = b
	}
	if last != 245 {
		t.Fatalf("last batch replayed %d, want 245 (the high watermark is 250): %v", last, bases)
	}
	if !moved || !containsOffset(bases, 150) {
		t.Fatalf("the replay did not go on from the new start 150: %v", bases)
	}
}

func containsOffset(offsets []int64, want int64) bool {
	for _, o := range offsets {
		if o == want {
			return true
		}
	}
	return false
}
