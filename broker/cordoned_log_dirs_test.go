package broker

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The config's own rules, as Kafka's KafkaConfig checks them: every entry
// a log dir, and * alone.
func TestCordonedLogDirsConfigRefusals(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	props := func() map[string]string { return map[string]string{"log.dirs": a + "," + b} }
	checkConfigRefusals(t, props, map[string]configRefusal{
		"an entry not in log.dirs": {map[string]string{"cordoned.log.dirs": a + ",/elsewhere"},
			"All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing entries : /elsewhere"},
		"* with another entry": {map[string]string{"cordoned.log.dirs": "*," + a},
			"When cordoned.log.dirs is set to *, it must not contain other values"},
	})
	for _, ok := range []string{a, a + "," + b, "*"} {
		p := props()
		p["cordoned.log.dirs"] = ok
		if _, _, err := ParseConfig(p); err != nil {
			t.Errorf("cordoned.log.dirs=%s: %v", ok, err)
		}
	}
}

// dirsAndCordons answers DescribeLogDirs v5 for every partition: each dir's
// partitions of topic, and which dirs are cordoned.
func dirsAndCordons(t *testing.T, rc *rawConn, topic string) (partitions map[string]int, cordoned map[string]bool) {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(5)
	resp := rc.request(req).(*kmsg.DescribeLogDirsResponse)
	partitions, cordoned = map[string]int{}, map[string]bool{}
	for _, d := range resp.Dirs {
		cordoned[d.Dir] = d.IsCordoned
		for _, dt := range d.Topics {
			if dt.Topic == topic {
				partitions[d.Dir] += len(dt.Partitions)
			}
		}
	}
	return partitions, cordoned
}

// A single node with two log dirs: cordoned.log.dirs from server.properties
// has no effect at metadata.version 4.2-IV1 (new partitions spread over
// both) and may not be changed; at 4.3-IV0 new partitions go only to the
// dir not cordoned, DescribeLogDirs v5 marks the cordoned one,
// AlterReplicaLogDirs will not move a replica into it, and with every
// dir cordoned (dynamically, *) no topic or partition is created, with
// Kafka's errors; removing the config lets them through.
func TestCordonedLogDirsSingleNode(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	br := startBrokerWith(t, map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": a + "," + b, "cordoned.log.dirs": a})
	rc := dialRaw(t, br)
	adm := newAdmin(t, br)

	createTopicRaw(t, rc, "before", 4)
	if parts, cordoned := dirsAndCordons(t, rc, "before"); parts[a] != 2 || parts[b] != 2 || cordoned[a] {
		t.Fatalf("at 4.2-IV1 the config has no effect: partitions %v, cordoned %v", parts, cordoned)
	}
	r := alterBroker(t, adm, kadm.SetConfig, "cordoned.log.dirs", "*")
	if r.Err == nil || !strings.Contains(r.ErrMessage, "The cordoned.log.dirs configuration value cannot be set because it requires metadata.version >= 4.3-IV0") {
		t.Fatalf("changing cordoned.log.dirs at 4.2-IV1: %v %q", r.Err, r.ErrMessage)
	}

	if resp := updateFeature(t, rc, "metadata.version", 30, 1); resp.ErrorCode != 0 {
		t.Fatalf("metadata.version to 4.3-IV0: %+v", resp)
	}
	createTopicRaw(t, rc, "after", 4)
	parts, cordoned := dirsAndCordons(t, rc, "after")
	if parts[a] != 0 || parts[b] != 4 || !cordoned[a] || cordoned[b] {
		t.Fatalf("with %s cordoned: partitions %v, cordoned %v", a, parts, cordoned)
	}
	move := kmsg.NewPtrAlterReplicaLogDirsRequest()
	move.SetVersion(2)
	move.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{{Dir: a, Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "after", Partitions: []int32{0}}}}}
	if resp := rc.request(move).(*kmsg.AlterReplicaLogDirsResponse); resp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("moving a replica into the cordoned dir: %+v", resp.Topics)
	}
	if r := alterBroker(t, adm, kadm.SetConfig, "cordoned.log.dirs", a+",/elsewhere"); r.Err == nil || !strings.Contains(r.ErrMessage, "Missing entries : /elsewhere") {
		t.Fatalf("cordoning a dir that is not a log dir: %v %q", r.Err, r.ErrMessage)
	}

	if r := alterBroker(t, adm, kadm.SetConfig, "cordoned.log.dirs", "*"); r.Err != nil {
		t.Fatalf("cordoning every dir: %v %s", r.Err, r.ErrMessage)
	}
	if _, cordoned := dirsAndCordons(t, rc, ""); !cordoned[a] || !cordoned[b] {
		t.Fatalf("with * cordoned: %v", cordoned)
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "refused", NumPartitions: 1, ReplicationFactor: 1},
		{Topic: "assigned", NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{br.cfg.NodeID}}}}}
	resp := rc.request(create).(*kmsg.CreateTopicsResponse)
	if got := resp.Topics[0]; got.ErrorCode != kerr.InvalidReplicationFactor.Code || got.ErrorMessage == nil ||
		*got.ErrorMessage != "Unable to replicate the partition 1 time(s): All brokers are currently fenced, or have all their log directories cordoned." {
		t.Errorf("creating a topic with every dir cordoned: %d %v", got.ErrorCode, got.ErrorMessage)
	}
	if got := resp.Topics[1]; got.ErrorCode != kerr.InvalidReplicaAssignment.Code || got.ErrorMessage == nil ||
		!strings.Contains(*got.ErrorMessage, "but all its log directories are cordoned") {
		t.Errorf("assigning a topic to a node with every dir cordoned: %d %v", got.ErrorCode, got.ErrorMessage)
	}
	more := kmsg.NewPtrCreatePartitionsRequest()
	more.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "after", Count: 5}}
	if got := rc.request(more).(*kmsg.CreatePartitionsResponse).Topics[0]; got.ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Errorf("adding a partition with every dir cordoned: %d %v", got.ErrorCode, got.ErrorMessage)
	}

	if r := alterBroker(t, adm, kadm.DeleteConfig, "cordoned.log.dirs", ""); r.Err != nil {
		t.Fatalf("removing the dynamic cordoned.log.dirs: %v %s", r.Err, r.ErrMessage)
	}
	// server.properties' value applies again: only a is cordoned.
	if got := rc.request(more).(*kmsg.CreatePartitionsResponse).Topics[0]; got.ErrorCode != 0 {
		t.Fatalf("adding a partition once b is open again: %d %v", got.ErrorCode, got.ErrorMessage)
	}
	if parts, cordoned := dirsAndCordons(t, rc, "after"); parts[a] != 0 || parts[b] != 5 || !cordoned[a] || cordoned[b] {
		t.Fatalf("after removing the dynamic config: partitions %v, cordoned %v", parts, cordoned)
	}
}
