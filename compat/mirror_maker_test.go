package compat

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// MirrorMaker 2 (bin/connect-mirror-maker.sh: Kafka Connect's mirror
// connectors in dedicated mode) is how a Kafka user copies a cluster into
// another, Gregor included. The jars are those compat/mk/mirror.mk copies
// from Maven Central (compat/mirror/pom.xml names the release).

// mirrorMakerLibs is the directory of MirrorMaker's jars, or fails the
// test saying how to install them.
func mirrorMakerLibs(t *testing.T) (dir, version string) {
	t.Helper()
	dir, version = installedJars(t, "mirror", "mirror-maker")
	requireFile(t, filepath.Join(dir, "connect-mirror-"+version+".jar"))
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatal("java is not installed: run `make compat-deps`")
	}
	return dir, version
}

// TestMirrorMaker2 mirrors one Gregor node ("upstream") into another
// ("downstream") with MirrorMaker 2 as its users run it, and checks what
// MirrorMaker promises: every record of a mirrored topic arrives in the
// topic "upstream.<name>" in its partition and order with its key, value,
// headers and timestamp; the topic's configs follow it; records written
// while it runs follow too; and a consumer group's offsets committed
// upstream are translated into committed offsets of the same group
// downstream, so that the group can move over and resume where it was.
func TestMirrorMaker2(t *testing.T) {
	libs, version := mirrorMakerLibs(t)
	up := harness.Start(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	down := harness.Start(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	const (
		topic      = "mm-orders"
		mirrored   = "upstream." + topic
		group      = "mm-readers"
		partitions = 3
		perRound   = 40
	)
	upAdm, downAdm := newAdmin(t, up.Addr), newAdmin(t, down.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if r, err := upAdm.CreateTopic(ctx, partitions, 1, map[string]*string{"retention.ms": kadm.StringPtr("86400000"),
		"max.message.bytes": kadm.StringPtr("500000")}, topic); err != nil || r.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, r.Err)
	}
	producer := newManualProducer(t, up.Addr, topic)
	var sent []*kgo.Record
	produce := func(round int) {
		t.Helper()
		for i := range perRound {
			r := &kgo.Record{Partition: int32(i % partitions), Key: fmt.Appendf(nil, "k-%d-%d", round, i),
				Value: fmt.Appendf(nil, "order %d of round %d", i, round), Timestamp: time.UnixMilli(1700000000000 + int64(round*1000+i)),
				Headers: []kgo.RecordHeader{{Key: "round", Value: fmt.Appendf(nil, "%d", round)}}}
			if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			sent = append(sent, r)
		}
	}
	produce(0)

	// The group has read everything upstream and committed. (MirrorMaker
	// translates only offsets at or past the last offset sync it keeps
	// for a partition, which after a burst is the burst's last record.)
	ends, err := upAdm.ListEndOffsets(ctx, topic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("end offsets upstream: %v %v", err, ends.Error())
	}
	committed := kadm.Offsets{}
	ends.Each(func(o kadm.ListedOffset) {
		committed.Add(kadm.Offset{Topic: topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
	})
	if resp, err := upAdm.CommitOffsets(ctx, group, committed); err != nil || resp.Error() != nil {
		t.Fatalf("commit upstream: %v %v", err, resp.Error())
	}

	dir := t.TempDir()
	props := filepath.Join(dir, "mm2.properties")
	config := strings.Join([]string{
		"clusters = upstream, downstream",
		"upstream.bootstrap.servers = " + up.Addr,
		"downstream.bootstrap.servers = " + down.Addr,
		"upstream->downstream.enabled = true",
		"upstream->downstream.topics = mm-.*",
		"upstream->downstream.groups = mm-.*",
		// One node on each side: every topic MirrorMaker makes has one replica.
		"replication.factor = 1",
		"checkpoints.topic.replication.factor = 1",
		"heartbeats.topic.replication.factor = 1",
		"offset-syncs.topic.replication.factor = 1",
		"offset.storage.replication.factor = 1",
		"status.storage.replication.factor = 1",
		"config.storage.replication.factor = 1",
		// Each record's offset is synced, so translation is exact, and
		// everything is refreshed every second rather than every ten minutes.
		"offset.lag.max = 0",
		"sync.group.offsets.enabled = true",
		"sync.group.offsets.interval.seconds = 1",
		"emit.checkpoints.interval.seconds = 1",
		"refresh.topics.interval.seconds = 1",
		"refresh.groups.interval.seconds = 1",
		"sync.topic.configs.interval.seconds = 1",
		"",
	}, "\n")
	if err := os.WriteFile(props, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	log4j, err := filepath.Abs(filepath.Join("tools", "log4j2.properties"))
	if err != nil {
		t.Fatal(err)
	}
	mm := exec.CommandContext(ctx, "java", "-Xmx512M", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile="+log4j, "-cp", filepath.Join(libs, "*"),
		"org.apache.kafka.connect.mirror.MirrorMaker", props)
	mm.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr bytes.Buffer
	mm.Stdout, mm.Stderr = &stderr, &stderr
	started := time.Now()
	if err := mm.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			mm.Process.Kill()
			mm.Wait()
			t.Logf("MirrorMaker %s output:\n%s", version, lastLines(stderr.String(), 60))
		}
	}()

	waitMirrored := func(n int) []*kgo.Record {
		t.Helper()
		var got []*kgo.Record
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if ends, err := downAdm.ListEndOffsets(ctx, mirrored); err == nil && ends.Error() == nil {
				var total int64
				ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
				if total >= int64(n) {
					got = storedRecords(t, down.Addr, mirrored)
					break
				}
			}
			if time.Now().After(deadline) || mm.ProcessState != nil {
				t.Fatalf("%s did not reach %d records downstream in 2 minutes", mirrored, n)
			}
			time.Sleep(500 * time.Millisecond)
		}
		return got
	}
	checkRecords := func(got []*kgo.Record) {
		t.Helper()
		if len(got) != len(sent) {
			t.Fatalf("%s holds %d records, %d were written upstream", mirrored, len(got), len(sent))
		}
		byPartition := map[int32][]*kgo.Record{}
		for _, r := range got {
			byPartition[r.Partition] = append(byPartition[r.Partition], r)
		}
		next := map[int32]int{}
		for _, want := range sent {
			p := want.Partition
			if next[p] >= len(byPartition[p]) {
				t.Fatalf("partition %d of %s lacks %s", p, mirrored, want.Key)
			}
			r := byPartition[p][next[p]]
			next[p]++
			if r.Offset != want.Offset || !bytes.Equal(r.Key, want.Key) || !bytes.Equal(r.Value, want.Value) ||
				!r.Timestamp.Equal(want.Timestamp) || len(r.Headers) != 1 || r.Headers[0].Key != "round" ||
				!bytes.Equal(r.Headers[0].Value, want.Headers[0].Value) {
				t.Fatalf("%s partition %d offset %d: key %q value %q at %v headers %v; upstream offset %d: key %q value %q at %v headers %v",
					mirrored, p, r.Offset, r.Key, r.Value, r.Timestamp, r.Headers, want.Offset, want.Key, want.Value, want.Timestamp, want.Headers)
			}
		}
	}
	checkRecords(waitMirrored(len(sent)))
	t.Logf("first %d records mirrored %v after MirrorMaker %s started", len(sent), time.Since(started).Round(time.Second), version)

	// The topic's partitions and configs came along.
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute", what)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	waitFor("the mirrored topic's configs", func() bool {
		rcs, err := downAdm.DescribeTopicConfigs(ctx, mirrored)
		if err != nil {
			return false
		}
		rc, err := rcs.On(mirrored, nil)
		if err != nil || rc.Err != nil {
			return false
		}
		want := map[string]string{"retention.ms": "86400000", "max.message.bytes": "500000"}
		for _, c := range rc.Configs {
			if v, ok := want[c.Key]; ok && c.Value != nil && *c.Value == v {
				delete(want, c.Key)
			}
		}
		return len(want) == 0
	})
	if td, err := downAdm.ListTopics(ctx, mirrored); err != nil || len(td[mirrored].Partitions) != partitions {
		t.Fatalf("%s downstream: %v %+v", mirrored, err, td[mirrored])
	}

	// The group's offsets, translated, are committed downstream.
	waitFor("the group's offsets downstream", func() bool {
		fetched, err := downAdm.FetchOffsets(ctx, group)
		if err != nil {
			return false
		}
		for p := range int32(partitions) {
			o, ok := fetched.Lookup(mirrored, p)
			if want, _ := committed.Lookup(topic, p); !ok || o.At != want.At {
				return false
			}
		}
		return true
	})

	// Records written while MirrorMaker runs follow.
	produce(1)
	checkRecords(waitMirrored(len(sent)))

	// SIGTERM stops it cleanly, as connect-mirror-maker.sh's users stop it.
	mm.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- mm.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("MirrorMaker did not stop within a minute of SIGTERM")
	}
	stopped = true
	if out := stderr.String(); strings.Contains(out, "] ERROR ") {
		t.Fatalf("MirrorMaker %s logged errors:\n%s", version, out)
	} else if s := strings.TrimSpace(out); s != "" {
		t.Logf("MirrorMaker %s warnings:\n%s", version, lastLines(s, 40))
	}
}
