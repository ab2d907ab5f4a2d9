package compat

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
)

// javaRestart runs compat/java's restart check (RestartCheck.java): when
// the program prints RESTART, the broker is killed with SIGKILL and started
// again on the same address and log dir, and the program is told to go on
// with the same producer and consumer. Its RESULT becomes the restart cell.
func javaRestart(t *testing.T, version, classpath string) {
	const overrides = "group.initial.rebalance.delay.ms=0"
	dir := t.TempDir()
	p := harness.Start(t, dir, overrides)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-cp", classpath, "gregor.compat.Main", p.Addr, "javarestart", "restart")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var result *scriptResult
	restarted := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		t.Log(line)
		f := strings.Fields(line)
		switch {
		case line == "RESTART":
			p.Kill()
			p = harness.Start(t, dir, overrides, "listeners=PLAINTEXT://"+p.Addr)
			restarted = true
			if _, err := io.WriteString(stdin, "GO\n"); err != nil {
				t.Errorf("telling the program to go on: %v", err)
			}
		case len(f) >= 3 && f[0] == "RESULT" && f[1] == "restart":
			result = &scriptResult{feature: "restart", ok: f[2] == "ok", message: strings.Join(f[3:], " ")}
		}
	}
	waitErr := cmd.Wait()
	switch {
	case result == nil:
		result = &scriptResult{feature: "restart", message: "no result reported"}
	case !restarted:
		result = &scriptResult{feature: "restart", message: "the program never asked for the restart"}
	case waitErr != nil && result.ok:
		result = &scriptResult{feature: "restart", message: "program failed: " + waitErr.Error()}
	}
	note := ""
	if !result.ok {
		note = result.message
		t.Errorf("kafka-clients %s: restart failed: %s (exit: %v, ctx: %v)\nstderr:\n%s",
			version, result.message, waitErr, ctx.Err(), lastLines(stderr.String(), 80))
	}
	record("kafka-clients", version, "restart", result.ok, note)
}
