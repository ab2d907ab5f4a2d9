package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cpuSecondsOf reads another process's CPU clock: a busy child's figure
// matches what /proc/<pid>/stat counts in 10 ms ticks.
func TestCPUSecondsOfABusyChild(t *testing.T) {
	child := exec.Command("sh", "-c", "while :; do :; done")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	for deadline := time.Now().Add(20 * time.Second); statTicks(t, child.Process.Pid) < 20; {
		if time.Now().After(deadline) {
			t.Fatal("a busy child did not use 0.2 CPU s in 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	clock := cpuSecondsOf(child.Process.Pid)
	ticks := statTicks(t, child.Process.Pid)
	if clock < 0.19 {
		t.Fatalf("CPU clock %.3f s after /proc stat counted at least 20 ticks", clock)
	}
	if diff := clock - float64(ticks)/100; diff < -0.03 || diff > 0.03 {
		t.Fatalf("CPU clock %.3f s, /proc stat %d ticks", clock, ticks)
	}
	if own := cpuSecondsOf(os.Getpid()); own == clock {
		t.Fatalf("the child's clock reads the same as this process's: %.3f", own)
	}
}

func statTicks(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ut + st
}
