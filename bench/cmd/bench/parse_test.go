package main

import (
	"math"
	"testing"
)

func TestParseProducerPerf(t *testing.T) {
	out := "1000 records sent, 500.0 records/sec (0.49 MB/sec), 3.0 ms avg latency, 90.0 ms max latency.\n" +
		"200000 records sent, 54869.7 records/sec (53.58 MB/sec), 434.86 ms avg latency, 723.00 ms max latency, 424 ms 50th, 689 ms 95th, 715 ms 99th, 722 ms 99.9th.\n"
	if v, err := parseProducerPerf(out); err != nil || v != 53.58 {
		t.Fatalf("got %v, %v; want the summary line's 53.58", v, err)
	}
	if _, err := parseProducerPerf("WARN something\n"); err == nil {
		t.Fatal("no summary line must be an error")
	}
}

func TestParseConsumerPerf(t *testing.T) {
	out := "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n" +
		"2026-11-29 17:48:31:123, 2026-11-29 17:48:35:456, 192.0000, 44.31, 196608, 45374.6, 3012, 1321, 145.3444, 148832.7\n"
	if v, err := parseConsumerPerf(out); err != nil || v != 145.3444 {
		t.Fatalf("got %v, %v; want fetch.MB.sec 145.3444", v, err)
	}
	if _, err := parseConsumerPerf("start.time, end.time\n"); err == nil {
		t.Fatal("a header without values must be an error")
	}
}

func TestStatsAndPercentile(t *testing.T) {
	if med, lo, hi := stats([]float64{5, 1, 3, 2}); med != 2.5 || lo != 1 || hi != 5 {
		t.Fatalf("stats = %v %v %v", med, lo, hi)
	}
	sorted := make([]float64, 1000)
	for i := range sorted {
		sorted[i] = float64(i + 1)
	}
	for _, c := range []struct{ p, want float64 }{{50, 501}, {99, 991}, {99.9, 1000}} {
		if got := percentile(sorted, c.p); math.Abs(got-c.want) > 0 {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestOrderNote(t *testing.T) {
	for _, c := range []struct {
		reps, systems int
		warn          bool
	}{{3, 3, false}, {6, 3, false}, {3, 1, false}, {4, 2, false}, {3, 2, true}, {3, 4, true}} {
		note := orderNote("", c.reps, c.systems)
		if (note != "") != c.warn {
			t.Errorf("%d repetitions of %d systems: note %q", c.reps, c.systems, note)
		}
	}
}
