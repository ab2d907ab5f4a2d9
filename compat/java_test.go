package compat

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
)

// The Java reference client, org.apache.kafka:kafka-clients, runs from
// compat/java: a Maven project whose main program (gregor.compat.Main)
// drives the producer, consumer and AdminClient with their default settings
// and prints RESULT lines (see script_helpers_test.go). compat/mk/java.mk
// builds it once per version listed in compat/java/versions into
// compat/java/target/kafka-<version>/ (classes, and every runtime jar under
// dependency/); each version runs against its own fresh broker, started
// with group.initial.rebalance.delay.ms=0 as Kafka's shipped
// server.properties sets it for development (the default 3 s delay on every
// new group's first join would double the run time and prove nothing more).

// javaAdminChecks are the AdminClient checks the program reports as
// admin-<name>; the matrix shows them as one admin cell.
var javaAdminChecks = []string{"topics", "partitions", "cluster", "groups", "offsets", "configs", "logdirs"}

// TestJavaKafkaClients runs compat/java against the newest 4.x and the
// newest 3.x kafka-clients that Maven Central serves: every feature on one
// broker, then the restart check (java_restart_test.go) on another, reads
// from the closest replica on a cluster (java_rack_reads_test.go), and
// SASL and TLS on a broker with secured listeners (java_security_test.go).
func TestJavaKafkaClients(t *testing.T) {
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatalf("java is not installed: run `make compat-deps` first")
	}
	for _, version := range javaVersions(t) {
		t.Run(version, func(t *testing.T) {
			// The versions run side by side: most of each run is
			// waiting on group rebalances, not using the CPU.
			t.Parallel()
			dir := filepath.Join("java", "target", "kafka-"+version)
			requireFile(t, filepath.Join(dir, "dependency", "kafka-clients-"+version+".jar"))
			requireFile(t, filepath.Join(dir, "classes", "gregor", "compat", "Main.class"))
			requireFresh(t, filepath.Join(dir, ".built"), filepath.Join("java", "src"))
			p := harness.Start(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
			classpath := filepath.Join(dir, "classes") + string(os.PathListSeparator) + filepath.Join(dir, "dependency", "*")
			rep := runScript(t, 6*time.Minute, p.Addr, "java", "java", "-cp", classpath, "gregor.compat.Main")
			if rep.client != "kafka-clients" || rep.version != version {
				t.Errorf("program reported %q %q, want kafka-clients %s", rep.client, rep.version, version)
			}
			rep = foldJavaAdmin(rep)
			recordReport(t, rep)
			checkScriptTopics(t, p.Addr, "java", rep, 1000)
			checkJavaTopicCodecs(t, p.Addr, rep)
			t.Run("restart", func(t *testing.T) { javaRestart(t, version, classpath) })
			t.Run("rack-reads", func(t *testing.T) { javaRackReads(t, classpath) })
			t.Run("security", func(t *testing.T) { javaSecurity(t, classpath) })
		})
	}
}

// checkJavaTopicCodecs checks that each codec check's second topic,
// java-<codec>-topic (compression.type=<codec>, written uncompressed by
// the producer), holds batches the broker compressed with that codec.
func checkJavaTopicCodecs(t *testing.T, addr string, rep scriptReport) {
	t.Helper()
	codecs := map[string]uint8{"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
	for _, r := range rep.results {
		codec, isCodec := codecs[r.feature]
		if !isCodec || !r.ok {
			continue
		}
		topic := "java-" + r.feature + "-topic"
		for _, rec := range scriptTopicRecords(t, addr, topic, 500) {
			if got := rec.Attrs.CompressionType(); got != codec {
				problem := fmt.Sprintf("%s: record %d stored with codec %d, want %d", topic, rec.Offset, got, codec)
				t.Errorf("kafka-clients %s: %s", rep.version, problem)
				record(rep.client, rep.version, r.feature, false, "broker check: "+problem)
				break
			}
		}
	}
}

// javaVersions reads compat/java/versions, one kafka-clients version a line.
func javaVersions(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("java", "versions"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if v := strings.TrimSpace(sc.Text()); v != "" {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		t.Fatal("compat/java/versions lists no version")
	}
	return out
}

// requireFresh fails the test when a file under src changed after the
// build stamp was written: the classes would not be the current sources.
func requireFresh(t *testing.T, stamp, src string) {
	t.Helper()
	requireFile(t, stamp)
	st, _ := os.Stat(stamp)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil && info.ModTime().After(st.ModTime()) {
			t.Fatalf("%s changed after the last build: run `make compat-deps` first", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// foldJavaAdmin replaces the admin-<name> results by one admin result that
// passes only if every one of javaAdminChecks was reported and passed; its
// message names the failed ones (recordReport makes it a test error).
func foldJavaAdmin(rep scriptReport) scriptReport {
	return foldJavaResults(rep, "admin", javaAdminChecks)
}

// foldJavaResults replaces the <cell>-<name> results by one cell result
// that passes only if every one of names was reported and passed; its
// message names the failed ones.
func foldJavaResults(rep scriptReport, cell string, names []string) scriptReport {
	folded := scriptResult{feature: cell, ok: true}
	seen := map[string]bool{}
	var rest []scriptResult
	var failed []string
	for _, r := range rep.results {
		name, isPart := strings.CutPrefix(r.feature, cell+"-")
		if !isPart {
			rest = append(rest, r)
			continue
		}
		seen[name] = true
		if !r.ok {
			failed = append(failed, r.feature+": "+r.message)
		}
	}
	for _, name := range names {
		if !seen[name] {
			failed = append(failed, cell+"-"+name+": no result reported")
		}
	}
	if len(failed) > 0 {
		folded.ok = false
		folded.message = strings.Join(failed, "; ")
	}
	rep.results = append(rest, folded)
	return rep
}

// TestFoldJavaAdmin checks the folding of admin-<name> results: all
// passing make a passing admin cell; a failed or a missing one fails it,
// named in the message; other features pass through.
func TestFoldJavaAdmin(t *testing.T) {
	var all []scriptResult
	for _, n := range javaAdminChecks {
		all = append(all, scriptResult{feature: "admin-" + n, ok: true})
	}
	rep := foldJavaAdmin(scriptReport{results: append([]scriptResult{{feature: "produce", ok: true}}, all...)})
	if len(rep.results) != 2 || rep.results[0].feature != "produce" || rep.results[1] != (scriptResult{feature: "admin", ok: true}) {
		t.Fatalf("all passing: %+v", rep.results)
	}
	broken := append([]scriptResult{}, all[1:]...)
	broken[0] = scriptResult{feature: broken[0].feature, ok: false, message: "boom"}
	rep = foldJavaAdmin(scriptReport{results: broken})
	admin := rep.results[len(rep.results)-1]
	want := "admin-" + javaAdminChecks[1] + ": boom; admin-" + javaAdminChecks[0] + ": no result reported"
	if admin.ok || admin.message != want {
		t.Fatalf("one failed, one missing: %+v, want message %q", admin, want)
	}
}
