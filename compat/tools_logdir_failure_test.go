package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/cmd/gregor/clustertest"
	"github.com/gregor-broker/gregor/internal/diskfault"
	"github.com/twmb/franz-go/pkg/kgo"
)

// checkFailedLogDir makes the second log dir of one node of the
// three-node cluster fail (moved aside and a plain file put in its place,
// as Kafka's own tests fail a disk) and reads the outcome with Kafka's
// tools: kafka-log-dirs reports that dir with KafkaStorageException and
// the other dir as before; kafka-topics --under-replicated-partitions
// lists exactly the partitions whose replica on that node was in the
// failed dir, without it in their ISR; the node keeps running, and
// acks=all producers go on.
func (e *cliEnv) checkFailedLogDir(t *testing.T, c *clustertest.Cluster) {
	const topic = "cli-disk"
	addr := c.Nodes[0].Addr()
	e.run(t, "", e.cls.topics, "--bootstrap-server", addr, "--create", "--topic", topic,
		"--partitions", "8", "--replication-factor", "3")
	c.WaitAgreed(t, topic, 8, 3, time.Minute)
	node := c.Nodes[2]
	failing := node.LogDirs[1]
	var inFailing []int
	for p := range 8 {
		if _, err := os.Stat(filepath.Join(failing, fmt.Sprintf("%s-%d", topic, p))); err == nil {
			inFailing = append(inFailing, p)
		}
	}
	if len(inFailing) == 0 {
		t.Fatalf("node %d holds no partition of %s in %s", node.ID, topic, failing)
	}

	diskfault.Fail(t, failing)
	id := strconv.Itoa(int(node.ID))
	clustertest.Eventually(t, time.Minute, "kafka-log-dirs reporting the failed dir", func() error {
		out := e.run(t, "", e.cls.logDirs, "--bootstrap-server", addr, "--describe", "--broker-list", id, "--topic-list", topic)
		ls := cliLines(out)
		var desc struct {
			Brokers []struct {
				Broker  int
				LogDirs []struct {
					LogDir     string
					Error      *string
					Partitions []struct{ Partition string }
				}
			}
		}
		if len(ls) != 3 || json.Unmarshal([]byte(ls[2]), &desc) != nil || len(desc.Brokers) != 1 {
			return fmt.Errorf("kafka-log-dirs:\n%s", out)
		}
		for _, d := range desc.Brokers[0].LogDirs {
			switch {
			case d.LogDir == failing && (d.Error == nil || *d.Error != "org.apache.kafka.common.errors.KafkaStorageException"):
				return fmt.Errorf("the failed dir reported with error %v:\n%s", d.Error, out)
			case d.LogDir != failing && d.Error != nil:
				t.Fatalf("the healthy dir %s reported with error %s", d.LogDir, *d.Error)
			case d.LogDir != failing && len(d.Partitions)+len(inFailing) != 8:
				t.Fatalf("the healthy dir %s holds %d partitions of %s, want %d", d.LogDir, len(d.Partitions), topic, 8-len(inFailing))
			}
		}
		return nil
	})

	clustertest.Eventually(t, time.Minute, "the failed dir's replicas out of their ISRs", func() error {
		out := e.run(t, "", e.cls.topics, "--bootstrap-server", addr, "--describe", "--under-replicated-partitions", "--topic", topic)
		var under []int
		for _, l := range cliLines(out) {
			m := cliPartitionLine.FindStringSubmatch(l)
			if m == nil {
				return fmt.Errorf("unexpected line %q", l)
			}
			p, _ := strconv.Atoi(m[2])
			if slices.Contains(strings.Split(m[5], ","), id) || m[3] == id {
				return fmt.Errorf("partition %d: leader %s isr %s", p, m[3], m[5])
			}
			under = append(under, p)
		}
		if !slices.Equal(under, inFailing) {
			return fmt.Errorf("under-replicated partitions %v, want those in the failed dir %v", under, inFailing)
		}
		return nil
	})
	if node.State() != clustertest.StateRunning {
		t.Fatalf("node %d stopped although only its second log dir failed", node.ID)
	}
	cl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for p := range int32(8) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("after")}).FirstErr(); err != nil {
			t.Fatalf("producing to partition %d after the dir failed: %v", p, err)
		}
	}
}
