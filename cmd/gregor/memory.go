package main

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Gregor's memory policy: a soft memory limit that trails the live heap.
//
// Go's collector, left to GOGC=100, lets the heap grow to twice what was
// live after the last collection before it collects again. Gregor's live
// heap under a produce load is mostly request buffers (a 16-partition
// franz-go produce request is ~16 MB, and the frame pool keeps one or two
// for the next request), so twice the live heap meant ~80-100 MB resident
// for ~30 MB of live data (docs/perf/README.md). The buffers hold no
// pointers, so marking them costs next to nothing: collecting more often
// is cheap, and a heap that stays close to its live size is what keeps the
// broker small.
//
// A fixed soft limit (GOMEMLIMIT) would do that, but a broker whose live
// heap outgrows a fixed limit makes the collector run almost continuously
// (Go caps it at about half the CPU): a fixed default is a cliff. So the
// limit trails the live heap instead: every second it is set to the live
// heap plus max(memHeadroom, half the live heap), plus the runtime's
// memory that is not heap (stacks, GC metadata). Small heaps get a fixed
// headroom of 16 MiB instead of doubling; large ones are collected as with
// GOGC=50; GOGC=100 remains the backstop. Operators who set GOMEMLIMIT or
// GOGC keep the Go runtime's own behaviour.

const (
	memHeadroom      = 16 << 20
	memCheckInterval = time.Second
)

// trailingLimit is the soft memory limit for a live heap of live bytes.
func trailingLimit(live uint64) int64 {
	return int64(live + max(memHeadroom, live/2))
}

// startMemoryPolicy starts the trailing soft limit unless the environment
// sets GOMEMLIMIT or GOGC. It returns a function that stops it.
func startMemoryPolicy() (stop func()) {
	if os.Getenv("GOMEMLIMIT") != "" || os.Getenv("GOGC") != "" {
		return func() {}
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	apply := func() {
		metrics.Read(sample)
		for _, s := range sample {
			if s.Value.Kind() != metrics.KindUint64 {
				return
			}
		}
		// The limit covers all of the runtime's memory; what is not heap
		// (stacks, GC metadata, ...) is added so that the headroom is the
		// heap's.
		total, heap := sample[1].Value.Uint64(), uint64(0)
		for _, s := range sample[2:] {
			heap += s.Value.Uint64()
		}
		debug.SetMemoryLimit(int64(total-min(heap, total)) + trailingLimit(sample[0].Value.Uint64()))
	}
	apply()
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(memCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				apply()
			case <-done:
				debug.SetMemoryLimit(math.MaxInt64)
				return
			}
		}
	}()
	return func() { close(done); <-stopped }
}
