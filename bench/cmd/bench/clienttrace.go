package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
)

// clientTrace records, when BENCH_CLIENT_TRACE names a directory, an
// execution trace of this process (the franz-go client) over each measured
// W1 franz-go produce and consume of the first repetition of every system.
// The traces show whether the client ever waited for the broker (see
// docs/perf/README.md, "The client's own trace"); tracing slows the
// client, so a run with it is for that question, not for the table.
type clientTrace struct {
	dir string // "" when off
	f   *os.File
}

// start begins a trace named after the system, case and direction; a
// failure is recorded as a note and the row is measured untraced.
func (t *clientTrace) start(res *results, system string, c w1Case, direction string) {
	if t.dir == "" {
		return
	}
	name := strings.NewReplacer(" ", "-", "=", "", "+", "-").Replace(fmt.Sprintf("%s-%s-%s.trace", system, c, direction))
	f, err := os.Create(filepath.Join(t.dir, name))
	if err == nil {
		err = trace.Start(f)
	}
	if err != nil {
		res.note(fmt.Sprintf("client trace %s: %v", name, err))
		if f != nil {
			f.Close()
		}
		return
	}
	t.f = f
}

func (t *clientTrace) stop() {
	if t.f == nil {
		return
	}
	trace.Stop()
	t.f.Close()
	t.f = nil
}
