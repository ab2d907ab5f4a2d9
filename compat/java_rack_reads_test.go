package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/cmd/gregor/clustertest"
)

// javaRackReads runs compat/java's rack-reads check (RackReadsCheck.java)
// on a three-node cluster whose brokers are in racks r1, r2 and r3 with
// Kafka's RackAwareReplicaSelector: a consumer given a follower's rack
// reads from that follower (KIP-392). Its RESULT becomes the rack-reads
// cell.
func javaRackReads(t *testing.T, classpath string) {
	dir := t.TempDir()
	var props []string
	for id := 1; id <= 3; id++ {
		path := filepath.Join(dir, fmt.Sprintf("node%d.properties", id))
		if err := os.WriteFile(path, []byte(fmt.Sprintf("broker.rack=r%d\n", id)), 0o644); err != nil {
			t.Fatal(err)
		}
		props = append(props, path)
	}
	c := clustertest.Start(t, clustertest.Options{Properties: props,
		Overrides: []string{"replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector"}})
	c.WaitBrokers(t, 3, time.Minute)
	rep := runProgram(t, 3*time.Minute, "java", "-cp", classpath, "gregor.compat.Main",
		strings.Join(c.Seeds(), ","), "javaracks", "rack-reads")
	recordReport(t, rep, "rack-reads")
}
