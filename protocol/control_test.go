package protocol

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestEndTxnMarkerRoundTrip(t *testing.T) {
	for _, m := range []EndTxnMarker{{Commit: true, CoordinatorEpoch: 7}, {Commit: false, CoordinatorEpoch: 0}} {
		b := AppendEndTxnMarker(nil, 42, 3, m, 1700000000000)
		h, err := ValidateStoredBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		if h.Attributes != AttrTransactional|AttrControl || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != -1 || h.RecordCount != 1 {
			t.Fatalf("header %+v", h)
		}
		got, err := ParseEndTxnMarker(b)
		if err != nil || got != m {
			t.Fatalf("parsed %+v, %v; want %+v", got, err, m)
		}
		// The record reads as Kafka's ControlRecordKey and EndTxnMarker.
		err = Records(b, func(r *Record) error {
			var k kmsg.ControlRecordKey
			if err := k.ReadFrom(r.Key); err != nil {
				return err
			}
			var v kmsg.EndTxnMarker
			if err := v.ReadFrom(r.Value); err != nil {
				return err
			}
			wantType := kmsg.ControlRecordKeyTypeAbort
			if m.Commit {
				wantType = kmsg.ControlRecordKeyTypeCommit
			}
			if k.Type != wantType || v.CoordinatorEpoch != m.CoordinatorEpoch {
				t.Errorf("kmsg reads %+v %+v", k, v)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ParseEndTxnMarker(AppendEmptyBatch(nil, BatchHeader{LastOffsetDelta: 0})); err == nil {
		t.Fatal("a data batch parsed as a marker")
	}
}

func TestEachBatch(t *testing.T) {
	two := AppendEndTxnMarker(AppendEndTxnMarker(nil, 1, 0, EndTxnMarker{}, 5), 2, 0, EndTxnMarker{Commit: true}, 6)
	var pids []int64
	if err := EachBatch(two, func(h BatchHeader, batch []byte) error {
		if len(batch) != h.Size() {
			t.Fatalf("batch of %d bytes, header says %d", len(batch), h.Size())
		}
		pids = append(pids, h.ProducerID)
		return nil
	}); err != nil || len(pids) != 2 || pids[0] != 1 || pids[1] != 2 {
		t.Fatalf("producers %v, %v", pids, err)
	}
	stop := errors.New("stop")
	calls := 0
	if err := EachBatch(two, func(BatchHeader, []byte) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("an error from fn: %v after %d calls", err, calls)
	}
	if err := EachBatch(two[:len(two)-1], func(BatchHeader, []byte) error { return nil }); err == nil {
		t.Fatal("a torn last batch was walked")
	}
}
