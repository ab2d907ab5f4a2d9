package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/gregor-broker/gregor/internal/freeport"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKill9LosesNothingAcknowledged produces with acks=all from several
// goroutines, kills the broker with SIGKILL mid-stream, restarts it on the
// same data and checks that every acknowledged record is there, in order.
func TestKill9LosesNothingAcknowledged(t *testing.T) {
	dir := t.TempDir()
	p := harness.Start(t, dir, "num.partitions=3")
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.DefaultProduceTopic("durable"),
		kgo.AllowAutoTopicCreation(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(3),
		kgo.ProduceRequestTimeout(5*time.Second), kgo.RecordDeliveryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	var mu sync.Mutex
	acked := map[string]bool{}
	ackedOffsets := map[int32]int64{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				v := fmt.Sprintf("w%d-%d", w, i)
				r := &kgo.Record{Key: []byte(v), Value: []byte(v)}
				if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
					return
				}
				mu.Lock()
				acked[v] = true
				if r.Offset >= ackedOffsets[r.Partition] {
					ackedOffsets[r.Partition] = r.Offset + 1
				}
				mu.Unlock()
			}
		}(w)
	}
	// Kill once a good number of writes have been acknowledged.
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 5000 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.Kill()
	cancel()
	cl.Close() // fails whatever is still buffered or in flight
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 1000 {
		t.Fatalf("only %d writes acknowledged before the kill", len(acked))
	}

	p2 := harness.Start(t, dir)
	consumer, err := kgo.NewClient(kgo.SeedBrokers(p2.Addr), kgo.ConsumeTopics("durable"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	seen := map[string]bool{}
	lastPerWriter := map[string]int{}
	cctx, ccancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer ccancel()
	for missing := len(acked); missing > 0; {
		fetches := consumer.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatalf("%d acknowledged records missing after restart (of %d)", missing, len(acked))
		}
		fetches.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if seen[v] {
				t.Errorf("record %s consumed twice", v)
			}
			seen[v] = true
			if acked[v] {
				missing--
			}
			// Each writer's records keep their order within a partition.
			var w, i int
			fmt.Sscanf(v, "w%d-%d", &w, &i)
			key := strconv.Itoa(w) + "/" + strconv.Itoa(int(r.Partition))
			if prev, ok := lastPerWriter[key]; ok && i <= prev {
				t.Errorf("writer %d out of order in partition %d: %d after %d", w, r.Partition, i, prev)
			}
			lastPerWriter[key] = i
		})
	}
	t.Logf("%d acknowledged records all present after kill -9", len(acked))
}

// TestServeRejectsBadConfig checks that a bad value stops the start with
// a message naming the key, and an unknown key only warns.
func TestServeRejectsBadConfig(t *testing.T) {
	bin, err := harness.Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "serve", "--override", "num.partitions=many", "--override", "log.dirs="+t.TempDir()).CombinedOutput()
	if err == nil || !regexp.MustCompile(`num\.partitions`).Match(out) {
		t.Fatalf("bad value: err %v, output %s", err, out)
	}
	props := filepath.Join(t.TempDir(), "server.properties")
	os.WriteFile(props, []byte("# test\nlisteners=PLAINTEXT://127.0.0.1:0\nno.such.key=1\nlog.dirs="+t.TempDir()+"\n"), 0o644)
	cmd := exec.Command(bin, "serve", props)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	warned := false
	for sc.Scan() {
		line := sc.Text()
		if regexp.MustCompile(`unknown config key no\.such\.key`).MatchString(line) {
			warned = true
		}
		if harness.ListeningRE.MatchString(line) {
			break
		}
	}
	if !warned {
		t.Fatal("no warning for an unknown key before listening")
	}
	// SIGTERM shuts down cleanly with exit status 0.
	cmd.Process.Signal(syscall.SIGTERM)
	go io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// TestServeWritesCPUProfile checks that --cpuprofile leaves a CPU profile
// (gzip-compressed protobuf naming cpu nanoseconds) after SIGTERM, and that
// the flag without a file is refused.
func TestServeWritesCPUProfile(t *testing.T) {
	bin, err := harness.Binary()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "serve", "--cpuprofile").CombinedOutput(); err == nil || !strings.Contains(string(out), "--cpuprofile needs a value") {
		t.Fatalf("--cpuprofile without a file: err %v, output %s", err, out)
	}
	profile := filepath.Join(t.TempDir(), "cpu.pprof")
	cmd := exec.Command(bin, "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
		"--override", "log.dirs="+t.TempDir(), "--cpuprofile", profile)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !harness.ListeningRE.MatchString(sc.Text()) {
	}
	cmd.Process.Signal(syscall.SIGTERM)
	go io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	f, err := os.Open(profile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("profile is not gzip: %v", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil || !bytes.Contains(data, []byte("cpu")) || !bytes.Contains(data, []byte("nanoseconds")) {
		t.Fatalf("profile of %d bytes (%v) does not name cpu nanoseconds", len(data), err)
	}
}

// A node whose controller quorum never answers waits for it at start;
// SIGTERM then stops it cleanly, as a signal stops Kafka's start. (It
// was ignored: the process waited for the quorum forever.) A client
// connected meanwhile, which waits to be served, does not hold the stop
// up either (it did: the stop waited for that connection forever).
func TestSigtermStopsAStartWaitingForTheQuorum(t *testing.T) {
	bin, err := harness.Binary()
	if err != nil {
		t.Fatal(err)
	}
	ports, err := freeport.Ports(1) // no controller listens there
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--override", "process.roles=broker", "--override", "node.id=2",
		"--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "controller.listener.names=CONTROLLER",
		"--override", fmt.Sprintf("controller.quorum.bootstrap.servers=127.0.0.1:%d", ports[0]),
		"--override", "log.dirs="+t.TempDir())
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var log strings.Builder
	var client string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if _, addr, ok := strings.Cut(sc.Text(), "listener=PLAINTEXT addr="); ok {
			client = addr
		}
		if strings.Contains(sc.Text(), "waiting for the controller quorum") {
			break
		}
	}
	if client == "" {
		t.Fatalf("no PLAINTEXT listener logged\n%s", log.String())
	}
	waiting, err := net.Dial("tcp", client)
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	// ApiVersions v0, correlation id 1, no client id: what a client sends first.
	if _, err := waiting.Write([]byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past its first registration attempt
	cmd.Process.Signal(syscall.SIGTERM)
	go io.Copy(io.Discard, stderr)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, log.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("still running 5 s after SIGTERM\n%s", log.String())
	}
}

// TestTornTailIsTruncatedOnRestart kills the broker, leaves half a batch
// at the end of the active segment (a write torn by the crash), and checks
// that the restarted binary drops exactly that tail: every acknowledged
// record is served and new records continue at the next offset.
func TestTornTailIsTruncatedOnRestart(t *testing.T) {
	dir := t.TempDir()
	p := harness.Start(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.DefaultProduceTopic("torn"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("r%d", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	p.Kill()

	segment := filepath.Join(dir, "torn-0", "00000000000000000000.log")
	data, err := os.ReadFile(segment)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(segment, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(data[:len(data)/3]) // the start of a batch copied, cut short
	f.Close()

	p2 := harness.Start(t, dir)
	cl2, err := kgo.NewClient(kgo.SeedBrokers(p2.Addr), kgo.DefaultProduceTopic("torn"),
		kgo.ConsumeTopics("torn"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	r := kgo.StringRecord("after")
	if err := cl2.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if r.Offset != 100 {
		t.Fatalf("first record after recovery got offset %d, want 100", r.Offset)
	}
	for got := 0; got < 101; {
		fetches := cl2.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		fetches.EachRecord(func(rec *kgo.Record) {
			want := fmt.Sprintf("r%d", got)
			if got == 100 {
				want = "after"
			}
			if string(rec.Value) != want || rec.Offset != int64(got) {
				t.Fatalf("offset %d: %q, want %q at %d", rec.Offset, rec.Value, want, got)
			}
			got++
		})
	}
	if fi, err := os.Stat(segment); err != nil || fi.Size() <= int64(len(data)) || fi.Size() >= int64(len(data)+len(data)/3) {
		t.Fatalf("segment is %v bytes after recovery and one append; it held %d before the torn write", fi.Size(), len(data))
	}
}
