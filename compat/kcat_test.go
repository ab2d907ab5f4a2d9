package compat

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
)

// kcat runs librdkafka's kcat against addr and returns its stdout.
func kcat(t *testing.T, addr, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", append([]string{"-b", addr}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("kcat %v: %v\n%s", args, err, stderr)
	}
	return string(out)
}

// TestKcat lists metadata, then produces and consumes with every codec
// librdkafka offers; keys and values must come back exactly.
func TestKcat(t *testing.T) {
	p := harness.Start(t, t.TempDir())
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		topic := "kcat-" + codec
		var lines []string
		for i := 0; i < 200; i++ {
			lines = append(lines, fmt.Sprintf("key-%d:%s value %d", i, codec, i))
		}
		input := strings.Join(lines, "\n") + "\n"
		kcat(t, p.Addr, input, "-P", "-t", topic, "-K", ":", "-z", codec, "-X", "enable.idempotence=true")
		out := kcat(t, p.Addr, "", "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k:%s\n")
		if out != input {
			t.Fatalf("%s: consumed\n%.300s\nwant\n%.300s", codec, out, input)
		}
		offsets := kcat(t, p.Addr, "", "-C", "-t", topic, "-o", "-1", "-e", "-f", "%o\n")
		if strings.TrimSpace(offsets) != "199" {
			t.Fatalf("%s: last offset %q, want 199", codec, offsets)
		}
	}
	meta := kcat(t, p.Addr, "", "-L")
	for _, want := range []string{"1 brokers:", "broker 1 at " + p.Addr, `topic "kcat-zstd" with 1 partitions:`, "partition 0, leader 1, replicas: 1, isrs: 1"} {
		if !strings.Contains(meta, want) {
			t.Fatalf("kcat -L lacks %q:\n%s", want, meta)
		}
	}
}
