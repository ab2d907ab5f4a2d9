package compat

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
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

// kcatKeyedInput is n "key:value" lines for kcat -K :, with prefix in the
// values, and the records they make.
func kcatKeyedInput(prefix string, n int) (string, []keyValue) {
	var b strings.Builder
	want := make([]keyValue, n)
	for i := range want {
		want[i] = keyValue{fmt.Sprintf("key-%d", i), fmt.Sprintf("%s value %d", prefix, i)}
		fmt.Fprintf(&b, "%s:%s\n", want[i].key, want[i].value)
	}
	return b.String(), want
}

// kcatFails runs kcat against addr where it must fail, and returns what
// it printed (stdout and stderr).
func kcatFails(t *testing.T, addr string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "kcat", append([]string{"-b", addr}, args...)...).CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("kcat %v: %v, want it to fail:\n%s", args, err, out)
	}
	return string(out)
}

// kcatClientName is the matrix row of kcat.
const kcatClientName = "kcat"

// kcatVersionRE picks kcat's version and its librdkafka's out of `kcat -V`.
var kcatVersionRE = regexp.MustCompile(`Version (\S+) .*librdkafka (\S+)`)

// kcatVersion returns the installed kcat's version, with librdkafka's.
func kcatVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("kcat", "-V").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -V: %v (run `make compat-deps` to install kcat)\n%s", err, out)
	}
	m := kcatVersionRE.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no version in kcat -V:\n%s", out)
	}
	return m[1] + " (librdkafka " + m[2] + ")"
}

// TestKcat lists metadata, then produces and consumes with every codec
// librdkafka offers, all with the idempotent producer; keys and values
// must come back exactly, and franz-go must find them stored in batches
// of the codec asked for.
func TestKcat(t *testing.T) {
	version := kcatVersion(t)
	p := harness.Start(t, t.TempDir())
	for _, c := range append([]struct {
		name string
		id   int
	}{{"none", 0}}, codecs...) {
		topic := "kcat-" + c.name
		var lines []string
		var want []keyValue
		for i := 0; i < 200; i++ {
			lines = append(lines, fmt.Sprintf("key-%d:%s value %d", i, c.name, i))
			want = append(want, keyValue{fmt.Sprintf("key-%d", i), fmt.Sprintf("%s value %d", c.name, i)})
		}
		input := strings.Join(lines, "\n") + "\n"
		produce := func(t *testing.T) {
			kcat(t, p.Addr, input, "-P", "-t", topic, "-K", ":", "-z", c.name, "-X", "enable.idempotence=true")
			checkStored(t, p.Addr, topic, want, c.id)
		}
		consume := func(t *testing.T) {
			out := kcat(t, p.Addr, "", "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k:%s\n")
			if out != input {
				t.Fatalf("%s: consumed\n%.300s\nwant\n%.300s", c.name, out, input)
			}
			offsets := kcat(t, p.Addr, "", "-C", "-t", topic, "-o", "-1", "-e", "-f", "%o\n")
			if strings.TrimSpace(offsets) != "199" {
				t.Fatalf("%s: last offset %q, want 199", c.name, offsets)
			}
		}
		if c.name != "none" {
			feature(t, kcatClientName, version, c.name, func(t *testing.T) { produce(t); consume(t) })
			continue
		}
		feature(t, kcatClientName, version, "produce", produce)
		feature(t, kcatClientName, version, "consume", consume)
		feature(t, kcatClientName, version, "idempotence", func(t *testing.T) {
			ids := map[int64]int{}
			for _, r := range storedRecords(t, p.Addr, topic) {
				ids[r.ProducerID]++
			}
			if len(ids) != 1 || ids[-1] != 0 {
				t.Fatalf("records by producer id %v, want all from one idempotent producer", ids)
			}
		})
	}
	meta := kcat(t, p.Addr, "", "-L")
	for _, want := range []string{"1 brokers:", "broker 1 at " + p.Addr, `topic "kcat-zstd" with 1 partitions:`, "partition 0, leader 1, replicas: 1, isrs: 1"} {
		if !strings.Contains(meta, want) {
			t.Fatalf("kcat -L lacks %q:\n%s", want, meta)
		}
	}
}
