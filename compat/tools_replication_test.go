package compat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/cmd/gregor/clustertest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// verifiableEvent is one JSON line of kafka-verifiable-producer.
type verifiableEvent struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Exception string `json:"exception"` // of a producer_send_error
	Message   string `json:"message"`
	Timestamp int64  `json:"timestamp"` // when the tool reported it, ms since the epoch
}

// checkReplication follows Kafka's own replication test: Kafka's
// verifiable producer (acks=all, no retries) writes to a topic with three
// replicas and min.insync.replicas=2 while the leader of a partition and
// then the active controller are killed with SIGKILL and restarted; every
// acknowledged value must then be read back once, at the offset its
// acknowledgement named.
func (e *cliEnv) checkReplication(t *testing.T, c *clustertest.Cluster) {
	const topic = "cli-replicated"
	addr := c.Nodes[0].Addr()
	e.run(t, "", e.cls.topics, "--bootstrap-server", addr, "--create", "--topic", topic,
		"--partitions", "3", "--replication-factor", "3", "--config", "min.insync.replicas=2")
	c.WaitAgreed(t, topic, 3, 3, time.Minute)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd, saveArchive := e.command(ctx, e.cls.verifiableProducer, "--topic", topic, "--bootstrap-server", strings.Join(c.Seeds(), ","),
		"--max-messages", "-1", "--throughput", "500", "--acks", "-1")
	defer saveArchive()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAndRestart := func(id int32) {
		time.Sleep(1500 * time.Millisecond)
		n := c.Node(id)
		n.Kill()
		time.Sleep(1500 * time.Millisecond)
		if err := n.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	leader, err := c.Partition(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	killAndRestart(leader.Leader)
	killAndRestart(c.Controller(t, time.Minute))
	c.WaitAgreed(t, topic, 3, 3, time.Minute)
	healed := time.Now()
	// Writes to a healed cluster; the producer may still fail sends for a
	// moment after, until it has refreshed its metadata.
	time.Sleep(4 * time.Second)
	cmd.Process.Signal(syscall.SIGTERM) // the tool closes its producer, says so, and exits 128+15
	if err := cmd.Wait(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 143 || !strings.Contains(stdout.String(), `"shutdown_complete"`) {
		t.Fatalf("kafka-verifiable-producer: %v\n%s", err, stderr.String())
	}

	acked := map[string]verifiableEvent{}
	failed := map[string]verifiableEvent{}
	errors, last := 0, -1
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var ev verifiableEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			t.Fatalf("kafka-verifiable-producer line %q", sc.Text())
		}
		switch ev.Name {
		case "producer_send_success":
			if _, dup := acked[ev.Value]; dup {
				t.Fatalf("value %s acknowledged twice", ev.Value)
			}
			acked[ev.Value] = ev
		case "producer_send_error":
			errors++
			failed[ev.Value] = ev
		default:
			continue
		}
		var v int
		fmt.Sscan(ev.Value, &v)
		last = max(last, v)
	}
	// The tool sends without retries (as in Kafka's system tests), so
	// sends in flight at a kill may fail; those to the healed cluster not.
	for v := max(last-300, 0); v <= last; v++ {
		if _, ok := acked[fmt.Sprint(v)]; !ok {
			ev := failed[fmt.Sprint(v)]
			t.Fatalf("value %d, sent to the healed cluster, not acknowledged (%+v, reported %v after the nodes agreed; %d of %d acknowledged, %d errors)",
				v, ev, time.UnixMilli(ev.Timestamp).Sub(healed), len(acked), last+1, errors)
		}
	}
	t.Logf("kafka-verifiable-producer: %d of %d acknowledged, %d errors, across two kill -9s", len(acked), last+1, errors)

	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < len(acked) && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if seen[v] {
				t.Fatalf("value %s read twice", v)
			}
			seen[v] = true
			if ev, ok := acked[v]; ok && (ev.Partition != r.Partition || ev.Offset != r.Offset) {
				t.Fatalf("value %s acknowledged at %d@%d, read at %d@%d", v, ev.Partition, ev.Offset, r.Partition, r.Offset)
			}
		})
	}
	for v := range acked {
		if !seen[v] {
			t.Fatalf("acknowledged value %s lost (%d of %d acknowledged values read)", v, len(seen), len(acked))
		}
	}
}
