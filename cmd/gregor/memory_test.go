package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestTrailingLimit checks the soft limit's shape: a fixed headroom over
// small live heaps, half the live heap over large ones.
func TestTrailingLimit(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int64
	}{
		{0, memHeadroom},
		{2 << 20, 2<<20 + memHeadroom},
		{30 << 20, 30<<20 + memHeadroom},
		{32 << 20, 32<<20 + memHeadroom},
		{100 << 20, 150 << 20},
		{1 << 30, 3 << 29},
	} {
		if got := trailingLimit(c.live); got != c.want {
			t.Errorf("trailingLimit(%d MiB) = %d MiB, want %d MiB", c.live>>20, got>>20, c.want>>20)
		}
	}
}

// TestMemoryPolicySetsAndRestoresTheLimit starts the policy in this
// process: it must set a finite soft limit above the live heap, and
// stopping it must lift the limit again. With GOMEMLIMIT set it must
// leave the runtime alone.
func TestMemoryPolicySetsAndRestoresTheLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	stop := startMemoryPolicy()
	if got := debug.SetMemoryLimit(-1); got < memHeadroom || got == math.MaxInt64 {
		t.Fatalf("soft limit %d with the policy running, want a finite limit of at least %d", got, memHeadroom)
	}
	stop()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("soft limit %d after the policy stopped, want none", got)
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	stop = startMemoryPolicy()
	defer stop()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("soft limit %d although GOMEMLIMIT is set (to the runtime, before start)", got)
	}
}
