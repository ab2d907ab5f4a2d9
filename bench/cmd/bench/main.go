// Command bench is `make bench`: it runs Gregor, Apache Kafka 4.1 (the
// real broker from Maven Central, started as its own scripts start it) and
// franz-go's in-memory kfake through the same workloads, alternating
// between them each repetition, and writes BENCH.md at the repository
// root with medians, spreads and Gregor/Kafka and Gregor/kfake ratios.
//
// Environment (defaults in brackets):
//
//	BENCH_QUICK=1        a short run: 1 repetition, small sizes
//	BENCH_REPS           repetitions of W1-W3 and W5 per system [3]; a multiple of the number of systems runs each first equally often
//	BENCH_W1_MB          MB produced and consumed per W1 case [64]
//	BENCH_PERF_MB        MB per kafka-producer/consumer-perf-test case [192]
//	BENCH_W2_SECONDS     measured seconds per W2 rate [8]
//	BENCH_RECOVERY_GB    data written before the kill -9 [5]
//	BENCH_W4             run W4 (1,000 and 10,000 partitions) [1]
//	BENCH_W5             run W5 (three-node clusters of Gregor and Kafka) [1]
//	BENCH_W5_MB          MB produced and consumed per W5 case [64]
//	BENCH_ONLY=W5        run W5 alone (to work on it; BENCH.md then holds W5 only)
//	BENCH_CONSUMER_PERF  also run kafka-consumer-perf-test (needs groups) [1]
//	BENCH_CLIENT_TRACE   a directory: runtime/trace of the client in the first repetition's W1 franz-go rows
//	BENCH_GREGOR_CPUPROFILE  a directory: every process of this tree's gregor writes a CPU profile there (--cpuprofile)
//	BENCH_OUT            report path [BENCH.md in the repository root]
//	BENCH_GREGOR_BEFORE  path of an older gregor binary to measure as a fourth system
//	BENCH_GREGOR_BEFORE_LABEL  how BENCH.md describes that binary
//	BENCH_SYSTEMS        comma-separated subset of Gregor,Kafka,kfake to run (targeted measurements)
//	BENCH_KEEP=1         keep the run's scratch dir (data dirs and broker logs of W5)
//	BENCH_CACHE          where Kafka's jars and scratch data go [~/.cache/gregor-bench]
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// settings of one run, from the environment.
type settings struct {
	quick        bool
	reps         int
	w1Bytes      int64
	perfBytes    int64
	w2Dur        time.Duration
	w2Warm       time.Duration
	w2Rates      []int
	recovery     int64
	w4           bool
	w4Idle       time.Duration
	w5           bool
	w5Only       bool
	w5Bytes      int64
	w5Rate       int
	consumerPerf bool
	clientTrace  string
	out          string
	cache        string
}

// orderNote warns, when the systems cannot each run first equally often
// (the order rotates by one each repetition), that their ratios may lean
// on where each ran; "" when the order is balanced.
func orderNote(prefix string, reps, systems int) string {
	if systems < 2 || reps%systems == 0 {
		return ""
	}
	return fmt.Sprintf("%s%d repetitions of %d systems: the order rotates each repetition, so not every system ran first equally often;"+
		" for a comparison where a few percent matter, use a multiple of %d (BENCH_REPS)", prefix, reps, systems, systems)
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return v
	}
	return def
}

func envFloat(key string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(key), 64); err == nil {
		return v
	}
	return def
}

func loadSettings(repo string) settings {
	home, _ := os.UserHomeDir()
	s := settings{quick: os.Getenv("BENCH_QUICK") == "1", reps: 3, w1Bytes: 64 << 20, perfBytes: 192 << 20,
		w2Dur: 8 * time.Second, w2Warm: 2 * time.Second, w2Rates: []int{10000, 50000},
		recovery: 5e9, w4: true, w4Idle: 10 * time.Second, consumerPerf: true,
		w5: true, w5Bytes: 64 << 20, w5Rate: 10000,
		out: filepath.Join(repo, "BENCH.md"), cache: filepath.Join(home, ".cache", "gregor-bench")}
	if s.quick {
		s.perfBytes = 32 << 20
		s.reps, s.w1Bytes, s.w2Dur, s.w2Warm, s.recovery, s.w4Idle = 1, 16<<20, 3*time.Second, time.Second, 3e8, 3*time.Second
		s.w5Bytes = 16 << 20
	}
	s.reps = envInt("BENCH_REPS", s.reps)
	s.w1Bytes = int64(envFloat("BENCH_W1_MB", float64(s.w1Bytes>>20))) << 20
	s.perfBytes = int64(envFloat("BENCH_PERF_MB", float64(s.perfBytes>>20))) << 20
	s.w2Dur = time.Duration(envFloat("BENCH_W2_SECONDS", s.w2Dur.Seconds()) * float64(time.Second))
	s.recovery = int64(envFloat("BENCH_RECOVERY_GB", float64(s.recovery)/1e9) * 1e9)
	s.w4 = envInt("BENCH_W4", 1) == 1
	s.consumerPerf = envInt("BENCH_CONSUMER_PERF", 1) == 1
	s.w5 = envInt("BENCH_W5", 1) == 1
	s.w5Bytes = int64(envFloat("BENCH_W5_MB", float64(s.w5Bytes>>20))) << 20
	if os.Getenv("BENCH_ONLY") == "W5" {
		s.w5, s.w5Only, s.w4, s.recovery = true, true, false, 0
	}
	if s.clientTrace = os.Getenv("BENCH_CLIENT_TRACE"); s.clientTrace != "" {
		must(os.MkdirAll(s.clientTrace, 0o755))
	}
	if v := os.Getenv("BENCH_OUT"); v != "" {
		s.out = v
	}
	if v := os.Getenv("BENCH_CACHE"); v != "" {
		s.cache = v
	}
	return s
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

func must(err error) {
	if err != nil {
		logf("bench: %v", err)
		os.Exit(1)
	}
}

func main() {
	repo, err := findRepo()
	must(err)
	st := loadSettings(repo)
	began := time.Now()
	res := newResults()
	e := &env{repo: repo}
	must(os.MkdirAll(st.cache, 0o755))
	e.work, err = os.MkdirTemp(st.cache, "run-")
	must(err)
	if os.Getenv("BENCH_KEEP") != "1" {
		defer os.RemoveAll(e.work)
	}
	loadBefore := loadAvg()
	res.note(raiseFileLimit())
	if e.profileDir = os.Getenv("BENCH_GREGOR_CPUPROFILE"); e.profileDir != "" {
		must(os.MkdirAll(e.profileDir, 0o755))
		res.note("every gregor process wrote a CPU profile to " + e.profileDir + " (BENCH_GREGOR_CPUPROFILE), which costs it a little CPU")
	}
	if st.clientTrace != "" {
		res.note("the first repetition's W1 franz-go rows ran with the client traced (BENCH_CLIENT_TRACE=" + st.clientTrace + "), which slows the client")
	}

	logf("building Gregor and the kfake server")
	e.gregorBin = filepath.Join(repo, "bin", "gregor")
	if err := run(repo, "go", "build", "-o", e.gregorBin, "./cmd/gregor"); err != nil {
		if _, serr := os.Stat(e.gregorBin); serr != nil {
			must(err)
		}
		res.note("go build ./cmd/gregor failed (" + err.Error() + "); the existing bin/gregor was measured")
	}
	e.kfakeBin = filepath.Join(e.work, "kfakeserver")
	must(run(filepath.Join(repo, "bench"), "go", "build", "-o", e.kfakeBin, "./cmd/kfakeserver"))
	e.kafkaLibs, err = fetchKafka(repo, st.cache)
	must(err)
	if e.beforeBin = os.Getenv("BENCH_GREGOR_BEFORE"); e.beforeBin != "" {
		systems = append(systems, sysBefore)
	}
	if only := os.Getenv("BENCH_SYSTEMS"); only != "" {
		var kept []string
		for _, name := range systems {
			if strings.Contains(","+only+",", ","+name+",") {
				kept = append(kept, name)
			}
		}
		systems = kept
	}
	if !st.w5Only {
		res.note(orderNote("", st.reps, len(systems)))
	}

	for rep := 0; rep < st.reps && !st.w5Only; rep++ {
		for k := range systems {
			name := systems[(rep+k)%len(systems)]
			logf("repetition %d/%d: %s", rep+1, st.reps, name)
			if err := runRep(e, st, res, name, rep); err != nil {
				logf("  %s failed: %v", name, err)
				res.note(fmt.Sprintf("repetition %d, %s: %v", rep+1, name, err))
			}
		}
	}
	if st.w5 {
		var clustered []string // kfake has no cluster mode
		for _, name := range systems {
			if name == sysGregor || name == sysKafka {
				clustered = append(clustered, name)
			}
		}
		res.note(orderNote("W5: ", st.reps, len(clustered)))
		for rep := 0; rep < st.reps; rep++ {
			for k := range clustered {
				name := clustered[(rep+k)%len(clustered)]
				logf("W5 three nodes, repetition %d/%d: %s", rep+1, st.reps, name)
				if err := runW5(e, st, res, name, rep); err != nil {
					logf("  %s failed: %v", name, err)
					res.note(fmt.Sprintf("W5 repetition %d, %s: %v", rep+1, name, err))
				}
			}
		}
	}
	if st.w4 {
		for _, name := range systems {
			if name == sysBefore {
				continue
			}
			logf("W4 scale: %s", name)
			if err := runW4(e, name, res, st.w4Idle); err != nil {
				logf("  %v", err)
				res.note(fmt.Sprintf("W4 %s: %v", name, err))
			}
		}
	}
	recovery := st.recovery
	if free := freeBytes(st.cache); recovery > 0 && free < 3*recovery {
		scaled := free / 4
		res.note(fmt.Sprintf("recovery data scaled down from %.1f GB to %.1f GB: %.1f GB free", float64(recovery)/1e9, float64(scaled)/1e9, float64(free)/1e9))
		recovery = scaled
	}
	if recovery > 0 {
		for _, name := range systems {
			if name != sysGregor && name != sysKafka {
				continue
			}
			logf("W3 recovery after kill -9: %s", name)
			if err := runRecovery(e, name, res, recovery); err != nil {
				logf("  %v", err)
				res.note(fmt.Sprintf("recovery %s: %v", name, err))
			}
		}
	}
	rep := report{st: st, res: res, began: began, took: time.Since(began), loadBefore: loadBefore, loadAfter: loadAvg(), e: e}
	must(os.WriteFile(st.out, []byte(rep.markdown()), 0o644))
	logf("wrote %s (%s)", st.out, time.Since(began).Round(time.Second))
}

// runRep is one repetition of one system: a fresh start (start-up time,
// idle RSS), W1 with franz-go and with Kafka's tools, W2, then RSS under load.
func runRep(e *env, st settings, res *results, name string, rep int) error {
	s, dir, err := e.start(name, "")
	if err != nil {
		return err
	}
	if os.Getenv("BENCH_KEEP") != "1" {
		defer os.RemoveAll(dir)
	}
	defer s.stop()
	res.add(metric{section: "W3 resources", name: "start-up: exec to first answered Metadata", unit: "ms", target: 1.0 / 20}, name, float64(s.ready)/float64(time.Millisecond))
	time.Sleep(5 * time.Second)
	rss, _ := s.memKB()
	res.add(metric{section: "W3 resources", name: "RSS idle (5 s after start)", unit: "MB", target: 0.1}, name, float64(rss)/1024)
	logf("  %s ready in %s, idle RSS %.0f MB", name, s.ready.Round(time.Millisecond), float64(rss)/1024)

	if err := runW1Franz(s, res, st.w1Bytes, rep, st.clientTrace); err != nil {
		return err
	}
	rss, _ = s.memKB()
	res.add(metric{section: "W3 resources", name: "RSS right after W1 franz-go", unit: "MB", target: 0.1}, name, float64(rss)/1024)
	if name != sysBefore { // the older build is compared on franz-go and W2 only, to save time
		if err := runW1Perf(e, s, res, st.perfBytes, rep, st.consumerPerf); err != nil {
			return err
		}
	}
	for _, rate := range st.w2Rates {
		if err := runW2(s, res, rate, st.w2Dur, st.w2Warm, rep); err != nil {
			return fmt.Errorf("W2 %d/s: %w", rate, err)
		}
	}
	_, hwm := s.memKB()
	res.add(metric{section: "W3 resources", name: "peak RSS over W1+W2 (VmHWM)", unit: "MB", target: 0.1}, name, float64(hwm)/1024)
	return nil
}

// findRepo walks up from the working directory to the module root of Gregor.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/gregor-broker/gregor\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run bench inside the Gregor repository")
		}
		dir = parent
	}
}

func run(dir string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
	return cmd.Run()
}

// raiseFileLimit lifts the open-file limit the brokers inherit (10,000
// partitions need more than a default 1,024 or 20,000 descriptors; Kafka's
// operations guide asks for 100,000 or more).
func raiseFileLimit() string {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return "open-file limit unknown: " + err.Error()
	}
	was := lim.Max
	want := uint64(1 << 20)
	if lim.Max < want {
		lim.Max = want
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
		return fmt.Sprintf("open-file limit left at %d (raising it failed: %v)", lim.Cur, err)
	}
	return fmt.Sprintf("open-file limit (RLIMIT_NOFILE) of every broker: %d (raised from a hard limit of %d)", lim.Cur, was)
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
