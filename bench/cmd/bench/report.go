package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"
)

// report renders BENCH.md.
type report struct {
	st                    settings
	res                   *results
	e                     *env
	began                 time.Time
	took                  time.Duration
	loadBefore, loadAfter string
}

func (r report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# Gregor vs Apache Kafka vs kfake")
	p("")
	p("Written by `make bench` (bench/cmd/bench) on %s, in %s.", r.began.UTC().Format("2006-01-02 15:04 MST"), r.took.Round(time.Second))
	p("Every number below comes from this one run. Each value is the **median** of the repetitions, with the")
	p("spread (min-max) in brackets; ratios are Gregor/Kafka and Gregor/kfake of the medians.")
	p("")
	p("## Machine and versions")
	p("")
	for _, m := range machine() {
		p("- %s", m)
	}
	p("- Load average before / after the run: %s / %s. The machine is shared with other agents' builds and tests,", r.loadBefore, r.loadAfter)
	p("  so absolute numbers are noisy; the systems alternate every repetition so that noise hits all of them alike.")
	p("- Apache Kafka %s (org.apache.kafka:kafka_2.13 and kafka-tools from Maven Central), KRaft combined mode,", kafkaVersion)
	p("  its shipped server.properties (bench/kafka/server.properties: only ports and log.dirs changed), -Xms1G -Xmx1G and")
	p("  the JVM flags of bin/kafka-run-class.sh; Gregor is started with the same server.properties.")
	p("- Gregor: this working tree, `go build ./cmd/gregor`%s.", vcs(r.e.repo))
	if r.before() {
		label := os.Getenv("BENCH_GREGOR_BEFORE_LABEL")
		if label == "" {
			label = r.e.beforeBin
		}
		p("- Gregor before: %s; an older build measured in the same run as a fourth system (BENCH_GREGOR_BEFORE), on W1 franz-go and W2.", label)
	}
	p("- kfake: github.com/twmb/franz-go/pkg/kfake %s in its own process (bench/cmd/kfakeserver), in memory.", benchModVersion(r.e.repo, "github.com/twmb/franz-go/pkg/kfake"))
	p("- Client: franz-go %s in the bench process; Kafka's kafka-producer-perf-test / kafka-consumer-perf-test %s.", modVersion("github.com/twmb/franz-go"), kafkaVersion)
	p("- Settings: %d repetitions; W1 %d MB per franz-go case, %d MB per perf-tool case; W2 %s measured after %s warm-up per rate; W5 %d MB per case, latency at %d records/s; recovery %.1f GB.",
		r.st.reps, r.st.w1Bytes>>20, r.st.perfBytes>>20, r.st.w2Dur, r.st.w2Warm, r.st.w5Bytes>>20, r.st.w5Rate, float64(r.st.recovery)/1e9)
	p("")
	p("Command: `make bench` (= `cd bench && go run ./cmd/bench`)%s.", quickNote(r.st.quick))
	p("")
	r.summary(&b)
	r.targets(&b)
	section := ""
	for _, k := range r.res.ordered() {
		m := r.res.metrics[k]
		if m.section == cpuSection {
			if section != cpuSection {
				section = cpuSection
				r.cpuTable(&b)
			}
			continue
		}
		if m.section != section {
			section = m.section
			p("")
			p("## %s", section)
			p("")
			if r.before() {
				p("| metric | Gregor | Kafka | kfake | Gregor/Kafka | Gregor/kfake | Gregor before | Gregor/before |")
				p("|---|---|---|---|---|---|---|---|")
			} else {
				p("| metric | Gregor | Kafka | kfake | Gregor/Kafka | Gregor/kfake |")
				p("|---|---|---|---|---|---|")
			}
		}
		row := r.res.samples[k]
		g, _, _ := stats(row[sysGregor])
		kf, _, _ := stats(row[sysKafka])
		kk, _, _ := stats(row[sysKfake])
		line := fmt.Sprintf("| %s (%s) | %s | %s | %s | %s | %s |", m.name, m.unit, cell(row[sysGregor]), cell(row[sysKafka]), cell(row[sysKfake]), ratio(g, kf, row[sysKafka]), ratio(g, kk, row[sysKfake]))
		if r.before() {
			gb, _, _ := stats(row[sysBefore])
			line += fmt.Sprintf(" %s | %s |", cell(row[sysBefore]), ratio(g, gb, row[sysBefore]))
		}
		p("%s", line)
	}
	p("")
	p("## How each workload is measured")
	p("")
	for _, line := range methods {
		p("- %s", line)
	}
	if len(r.res.notes) > 0 {
		p("")
		p("## Notes from this run")
		p("")
		for _, n := range r.res.notes {
			p("- %s", strings.ReplaceAll(n, "\n", " "))
		}
	}
	return b.String()
}

func (r report) before() bool { return r.e.beforeBin != "" }

// summary counts the targets met and gives the broker-side CPU figures
// that tell whether a throughput number is the broker's limit or the
// clients'.
func (r report) summary(b *strings.Builder) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	met, all := 0, 0
	for _, k := range r.res.ordered() {
		m, row := r.res.metrics[k], r.res.samples[k]
		g, _, _ := stats(row[sysGregor])
		if m.target > 0 && len(row[sysGregor]) > 0 && len(row[sysKafka]) > 0 {
			kf, _, _ := stats(row[sysKafka])
			all++
			if (m.higher && g >= m.target*kf) || (!m.higher && g <= m.target*kf) {
				met++
			}
		}
		if m.kfake && len(row[sysGregor]) > 0 && len(row[sysKfake]) > 0 {
			kk, _, _ := stats(row[sysKfake])
			all++
			if g >= kk {
				met++
			}
		}
	}
	p("## Summary")
	p("")
	p("%d of %d target rows below are met in this run.", met, all)
	for _, k := range r.res.ordered() {
		m, row := r.res.metrics[k], r.res.samples[k]
		if m.section != w5Section || !strings.HasPrefix(m.name, "cores busy") || len(row[sysGregor]) == 0 {
			continue
		}
		g, _, _ := stats(row[sysGregor])
		kf, _, _ := stats(row[sysKafka])
		p("W5, %s: Gregor %.2f, Kafka %.2f of the machine's 2 cores.", m.name, g, kf)
	}
	p("The clients (franz-go in the bench process, or the JVM perf tools) share the same 2 cores; where a broker")
	p("is far from busy, its throughput row measures the client as much as the broker. Each throughput row's")
	p("client and broker CPU are in \"%s\", and beside every row not met below.", cpuSection)
	p("")
}

// targets writes the targets with met / not met and the numbers.
func (r report) targets(b *strings.Builder) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	p("## Targets (issue 7), from this run")
	p("")
	p("| target | metric | Gregor | reference | ratio | |")
	p("|---|---|---|---|---|---|")
	for _, k := range r.res.ordered() {
		m := r.res.metrics[k]
		row := r.res.samples[k]
		g, _, _ := stats(row[sysGregor])
		if m.target > 0 && len(row[sysGregor]) > 0 && len(row[sysKafka]) > 0 {
			kf, _, _ := stats(row[sysKafka])
			want, met := "", false
			if m.higher {
				want, met = fmt.Sprintf(">= %.2gx Kafka", m.target), g >= m.target*kf
			} else {
				want, met = fmt.Sprintf("<= %s of Kafka", frac(m.target)), g <= m.target*kf
			}
			p("| %s | %s | %.4g %s | %.4g %s | %.2f | %s%s |", want, m.section+": "+m.name, g, m.unit, kf, m.unit, g/kf, metStr(met), r.cpuNote(m, met))
		}
		if m.kfake && len(row[sysGregor]) > 0 && len(row[sysKfake]) > 0 {
			kk, _, _ := stats(row[sysKfake])
			p("| >= kfake | %s | %.4g %s | %.4g %s | %.2f | %s%s |", m.section+": "+m.name, g, m.unit, kk, m.unit, g/kk, metStr(g >= kk), r.cpuNote(m, g >= kk))
		}
	}
}

// cpuNote gives, for a row not met, the CPU its client and Gregor used.
func (r report) cpuNote(m *metric, met bool) string {
	if met {
		return ""
	}
	name := cpuSection + "/" + m.section + ": " + m.name
	client, broker := r.res.samples[name+cpuClient][sysGregor], r.res.samples[name+cpuBroker][sysGregor]
	if len(client) == 0 || len(broker) == 0 {
		return ""
	}
	c, _, _ := stats(client)
	b, _, _ := stats(broker)
	return fmt.Sprintf(" (client %.2f, Gregor %.2f %s)", c, b, r.res.metrics[name+cpuClient].unit)
}

// cpuTable writes cpuSection: per throughput row, the client's and the
// broker's CPU for each system side by side.
func (r report) cpuTable(b *strings.Builder) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	p("")
	p("## %s", cpuSection)
	p("")
	p("franz-go rows: cores busy (CPU seconds per second of the measured time, which starts after the producer's")
	p("first record, sent alone to connect and get a producer id, or when the consumer is made; the client's")
	p("close, under a millisecond, falls in the CPU but not the time) of the bench process, which is the client,")
	p("and of the broker.")
	p("Perf-tool rows: CPU seconds of the tool's whole JVM (start and warm-up included) and of the broker while")
	p("it ran. The machine has 2 cores. Medians of the repetitions.")
	p("")
	p("| row | unit | Gregor: client | Gregor: broker | Kafka: client | Kafka: broker | kfake: client | kfake: broker |")
	p("|---|---|---|---|---|---|---|---|")
	for _, k := range r.res.ordered() {
		m := r.res.metrics[k]
		if m.section != cpuSection || !strings.HasSuffix(m.name, cpuClient) {
			continue
		}
		row := strings.TrimSuffix(m.name, cpuClient)
		client, broker := r.res.samples[k], r.res.samples[cpuSection+"/"+row+cpuBroker]
		line := fmt.Sprintf("| %s | %s |", row, m.unit)
		for _, sys := range []string{sysGregor, sysKafka, sysKfake} {
			line += fmt.Sprintf(" %s | %s |", median(client[sys]), median(broker[sys]))
		}
		p("%s", line)
	}
}

func median(v []float64) string {
	if len(v) == 0 {
		return "n/a"
	}
	med, _, _ := stats(v)
	return fmt.Sprintf("%.2f", med)
}

func frac(t float64) string {
	return fmt.Sprintf("1/%.0f", 1/t)
}

func metStr(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

func cell(v []float64) string {
	if len(v) == 0 {
		return "n/a"
	}
	med, lo, hi := stats(v)
	if len(v) == 1 {
		return fmt.Sprintf("%.4g", med)
	}
	return fmt.Sprintf("%.4g (%.4g-%.4g)", med, lo, hi)
}

func ratio(a, b float64, ref []float64) string {
	if len(ref) == 0 || b == 0 || a == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func quickNote(q bool) string {
	if q {
		return " with BENCH_QUICK=1 (a short run: one repetition, small sizes)"
	}
	return ""
}

func vcs(repo string) string {
	head := cmdOut("git", "-C", repo, "log", "-1", "--format=%h %s")
	if head == "" {
		return ""
	}
	dirty := ""
	if cmdOut("git", "-C", repo, "status", "--porcelain", "--untracked-files=no") != "" {
		dirty = ", with uncommitted changes"
	}
	return fmt.Sprintf(" at commit %s%s", head, dirty)
}

// benchModVersion reads a module's version from bench/go.mod (kfake is
// built into its own binary, not this one).
func benchModVersion(repo, path string) string {
	b, err := os.ReadFile(repo + "/bench/go.mod")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	return "?"
}

func modVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "?"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			return d.Version
		}
	}
	return "?"
}

// methods explains the workloads in the report.
var methods = []string{
	"W1 franz-go: first an unmeasured pass of all 16 cases at a quarter of the size (so a JVM broker runs compiled code, as in service); then per case a new topic, made writable first (one small record to each partition, since Kafka lists a leader before the leader's log exists and franz-go then waits 5 s for fresh metadata); one kgo producer (no compression, default 10 ms linger, 1 MB batches) produces the case's bytes of random (incompressible) values and waits for every ack; then one kgo consumer assigned every partition directly (no group) reads them all from the start; the topic is then deleted. MB/s counts record values only.",
	"W1 Kafka perf tools: on a topic made writable as above, kafka-producer-perf-test --throughput -1 with acks=1 (idempotence off) or acks=all (idempotence on); kafka-consumer-perf-test (a consumer group) reports fetch.MB.sec, which leaves out the group join.",
	"W2 latency: 1-KB records on a 1-partition topic at a fixed rate, producer with linger 0 and acks=all (idempotent), consumer assigned the partition. Record i is due at start+i/rate and carries that time; latency = receipt - due time, so a stall is charged to every record that should have been sent during it (no coordinated omission). Percentiles over the measured seconds after the warm-up. The producer waits for each due time with nanosleep(2) (Go's timers round waits under 1 ms up to 1 ms when the process is idle); how late it still sent records is the \"producer's lateness p99\" row, a part of every system's latency that is the load generator's.",
	"W3 start-up: from exec of the broker process to the first answered Metadata request (ApiVersions, then Metadata listing a broker, on a fresh connection, probed every 2 ms). Kafka's `kafka-storage format` runs before and is not counted.",
	"W3 memory: VmRSS of the broker process 5 s after start, right after W1 franz-go, and VmHWM (peak) after W1+W2, from /proc/<pid>/status. CPU: utime+stime of the broker from /proc/<pid>/stat over the W1 franz-go cases divided by bytes produced+consumed.",
	"W3 recovery: a topic of 8 partitions filled with 1-KB records (acks=1), SIGKILL right after the last ack, restart on the same log dir; times from exec to the first answered Metadata and to ListOffsets showing every acked record. One run per system (kfake keeps nothing).",
	"W5 three nodes: per system and repetition, a fresh cluster of three combined broker+controller nodes on 127.0.0.1 (distinct ports and log dirs; each node gets the same server.properties as one-node runs with its own node.id and the static controller.quorum.voters of all three; Kafka's dirs formatted with one cluster id, each JVM -Xms1G -Xmx1G). Topics of replication factor 3 with min.insync.replicas=2; after an unmeasured warm-up (a quarter of a case, 16 partitions), franz-go produces the case's bytes of 1-KB records with acks=all and idempotence to 1 and 16 partitions (topics made writable first, as W1) and consumes them (seeded with all three nodes, as W1); cores busy is the CPU seconds of the three nodes from the first produced record to the last ack, divided by that time; latency as W2 at a fixed rate on a 1-partition topic of the same kind; RSS of every node after that. kfake has no cluster mode: n/a.",
	"W4 scale: one broker per system, topics of 1,000 partitions created until 1,000 and then 10,000 partitions, each timed until Metadata lists a leader for all its partitions (Kafka answers that from its metadata image, before its broker has created the logs) and until one record produced to each partition is acknowledged (franz-go, acks=all; partitions not served yet are retried); after 5 s of settling, CPU over the idle period, VmRSS, and the median of 20 full Metadata requests (all topics). One run per system.",
}
