package clustertest

import (
	"testing"
	"time"
)

// singleNode is a one-node cluster (one voter), where the workload, the
// full read and the checker can be exercised without replication.
var singleNode = Options{Nodes: 1, Overrides: []string{
	"min.insync.replicas=1", "default.replication.factor=1", "offsets.topic.replication.factor=1",
}}

// TestWorkloadAcrossKill9 runs the writers, the full read and the checker
// end to end on one node killed with SIGKILL mid-stream and restarted:
// the history must come out clean, and the checker must have judged real
// data (acknowledged writes before and after the kill, all read back).
func TestWorkloadAcrossKill9(t *testing.T) {
	c := Start(t, singleNode)
	c.CreateTopic(t, "work", 3, 1, 60*time.Second)
	chk := NewChecker()
	w := StartWriters(t, c, chk, "work", 2)
	w.WaitAcked(t, 300, 60*time.Second)
	n := c.Node(1)
	n.Kill()
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	w.WaitAcked(t, 300, 60*time.Second)
	w.Stop()
	ReadAll(t, c, chk, "work", 60*time.Second)
	r := chk.Check()
	t.Log(r)
	if !r.OK() {
		t.Fatalf("anomalies:\n%s", r)
	}
	if r.Acked < 600 || r.Consumed < r.Acked {
		t.Fatalf("too little judged: %s", r)
	}
}
