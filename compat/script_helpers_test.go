package compat

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Clients in other languages (compat/python, compat/js, compat/java) are
// programs that take a bootstrap address and a topic prefix and print
//
//	VERSION <client> <version...>
//	RESULT <feature> ok|fail <message>
//
// The helpers here run such a program against a broker, record every
// RESULT in the matrix, fail the test on any failure or missing feature,
// and check afterwards, with franz-go, what the program left in the broker:
// the codec of each compression topic's batches and the producer id in the
// idempotence topic's batches, so a client that silently fell back to no
// compression or no idempotence cannot pass; and for the scripts in
// compat/js and compat/python, the committed and aborted records of the
// transactions feature, so a broker that gets transactions wrong fails here
// even if the client's own consumer agreed with it.

// scriptFeatures are the features every script must report.
var scriptFeatures = []string{"produce", "consume", "group", "commit", "admin", "idempotence", "gzip", "snappy", "lz4", "zstd",
	"transactions"}

type scriptResult struct {
	feature string
	ok      bool
	message string
}

// scriptReport is what one run of a script printed.
type scriptReport struct {
	client, version string
	results         []scriptResult
}

// requireFile fails the test, pointing at `make compat-deps`, when a
// dependency the Makefile installs is missing.
func requireFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is missing (%v): run `make compat-deps` first", path, err)
	}
}

// venvPython is the Python of the virtualenv compat/mk/python.mk fills.
func venvPython(t *testing.T) string {
	t.Helper()
	python := filepath.Join(".venv", "bin", "python")
	requireFile(t, python)
	return python
}

// kafkajsNode is node, with kafkajs installed in compat/js.
func kafkajsNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
	requireFile(t, filepath.Join("js", "node_modules", "kafkajs", "package.json"))
	return node
}

// runScript runs name with args, then the broker address and prefix, and
// parses its output. The program's stderr is logged when it fails.
func runScript(t *testing.T, timeout time.Duration, addr, prefix, name string, args ...string) scriptReport {
	t.Helper()
	return runProgram(t, timeout, name, append(args, addr, prefix)...)
}

// runProgram is runScript for a program whose arguments are all given.
func runProgram(t *testing.T, timeout time.Duration, name string, args ...string) scriptReport {
	t.Helper()
	return runProgramEnv(t, timeout, nil, name, args...)
}

// runProgramEnv is runProgram with env (KEY=value) added to the program's
// environment, for tests that run in parallel and so cannot t.Setenv.
func runProgramEnv(t *testing.T, timeout time.Duration, env []string, name string, args ...string) scriptReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second // stop waiting for output after a kill
	err := cmd.Run()
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), stdout.String())
	if err != nil {
		t.Errorf("%s %v: %v (ctx: %v)\nstderr:\n%s", name, args, err, ctx.Err(), lastLines(stderr.String(), 60))
	}
	var rep scriptReport
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[0] == "VERSION":
			rep.client, rep.version = f[1], strings.Join(f[2:], " ")
		case len(f) >= 3 && f[0] == "RESULT" && (f[2] == "ok" || f[2] == "fail"):
			rep.results = append(rep.results, scriptResult{f[1], f[2] == "ok", strings.Join(f[3:], " ")})
		}
	}
	if rep.client == "" {
		t.Fatalf("%s printed no VERSION line; stderr:\n%s", name, lastLines(stderr.String(), 60))
	}
	if err != nil || t.Failed() {
		t.Logf("stderr of %s:\n%s", name, lastLines(stderr.String(), 200))
	}
	return rep
}

// recordReport puts every result in the matrix and fails the test on a
// failed feature or a missing one of expected (scriptFeatures when none
// are named).
func recordReport(t *testing.T, rep scriptReport, expected ...string) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range rep.results {
		seen[r.feature] = true
		note := ""
		if !r.ok {
			note = r.message
			t.Errorf("%s %s: %s failed: %s", rep.client, rep.version, r.feature, r.message)
		}
		record(rep.client, rep.version, r.feature, r.ok, note)
	}
	if len(expected) == 0 {
		expected = scriptFeatures
	}
	for _, f := range expected {
		if !seen[f] {
			t.Errorf("%s %s reported no result for %s", rep.client, rep.version, f)
			record(rep.client, rep.version, f, false, "no result reported")
		}
	}
}

// scriptTopicRecords reads the first n records of partition 0 of topic.
func scriptTopicRecords(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Errorf("%s: read %d of %d records: %v", topic, len(out), n, ctx.Err())
			return out
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Errorf("fetch %s: %v", topic, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// checkScriptTopics checks, for the features the script passed, that the
// compression topics hold batches of their codec and that the idempotence
// topic's batches carry a producer id.
// Topics are named <prefix>-<feature> and hold n records in partition 0.
func checkScriptTopics(t *testing.T, addr, prefix string, rep scriptReport, n int) {
	t.Helper()
	codecs := map[string]uint8{"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
	for _, r := range rep.results {
		codec, isCodec := codecs[r.feature]
		if !r.ok || (!isCodec && r.feature != "idempotence") {
			continue
		}
		topic := prefix + "-" + r.feature
		var problem string
		for i, rec := range scriptTopicRecords(t, addr, topic, n) {
			switch {
			case isCodec && rec.Attrs.CompressionType() != codec:
				problem = fmt.Sprintf("record %d stored with codec %d, want %d", rec.Offset, rec.Attrs.CompressionType(), codec)
			case !isCodec && rec.ProducerID < 0:
				problem = fmt.Sprintf("record %d stored without a producer id", rec.Offset)
			case int64(i) != rec.Offset:
				problem = fmt.Sprintf("record %d at position %d", rec.Offset, i)
			}
			if problem != "" {
				break
			}
		}
		if problem != "" {
			t.Errorf("%s %s: %s: %s", rep.client, rep.version, topic, problem)
			record(rep.client, rep.version, r.feature, false, "broker check: "+problem)
		}
	}
}

// scriptRecords are the records a script's records(feature, n) makes
// (compat/js/kafkajs_compat.js, compat/python/compatlib.py).
func scriptRecords(feature string, n int) []keyValue {
	out := make([]keyValue, n)
	for i := range out {
		out[i] = keyValue{fmt.Sprintf("k-%d", i), strings.Repeat(fmt.Sprintf("%s value %d ", feature, i), 20)}
	}
	return out
}

// checkScriptTransactions checks with franz-go, when the script passed its
// transactions feature, what that feature left in the broker:
// <prefix>-txn holds the committed transactions "txn-first" and
// "txn-second" and the aborted "txn-aborted" (30 records each), the
// consume-transform-produce output <prefix>-txn-out the 100 "txn-out"
// records, all committed, and the group <prefix>-txn-group has committed
// the end offsets of the 100-record input <prefix>-txn-in.
func checkScriptTransactions(t *testing.T, addr, prefix string, rep scriptReport) {
	t.Helper()
	if !passed(rep, "transactions") {
		return
	}
	ok := t.Run("transactions-broker-check", func(t *testing.T) {
		committed := append(scriptRecords("txn-first", 30), scriptRecords("txn-second", 30)...)
		checkTransactions(t, addr, prefix+"-txn", committed, scriptRecords("txn-aborted", 30))
		checkTransactions(t, addr, prefix+"-txn-out", scriptRecords("txn-out", 100), nil)
		adm := newAdmin(t, addr)
		total := int64(0)
		for _, end := range endOffsets(t, adm, prefix+"-txn-in") {
			total += end
		}
		if total != 100 {
			t.Errorf("%s-txn-in holds %d records, want 100", prefix, total)
		}
		waitCommittedAtEnd(t, adm, prefix+"-txn-group", prefix+"-txn-in")
	})
	if !ok {
		record(rep.client, rep.version, "transactions", false, "broker check failed (see the test log)")
	}
}

// passed tells whether the script reported feature as ok.
func passed(rep scriptReport, feature string) bool {
	for _, r := range rep.results {
		if r.feature == feature {
			return r.ok
		}
	}
	return false
}

// lastLines returns at most n trailing lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
