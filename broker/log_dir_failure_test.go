package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/internal/diskfault"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceCodes sends one batch to each partition at acks=1 and returns
// each partition's error code.
func produceCodes(t *testing.T, rc *rawConn, topic string, partitions []int32, batch []byte) map[int32]int16 {
	t.Helper()
	batches := map[int32][]byte{}
	for _, p := range partitions {
		batches[p] = batch
	}
	resp := rc.request(produceOf(1, topic, batches, partitions)).(*kmsg.ProduceResponse)
	codes := map[int32]int16{}
	for _, rp := range resp.Topics[0].Partitions {
		codes[rp.Partition] = rp.ErrorCode
	}
	return codes
}

// TestLogDirFailure: when one of a broker's two log dirs fails, the
// partitions in it answer KAFKA_STORAGE_ERROR and show as offline, the
// other dir keeps serving and takes the new partitions, and nothing
// acknowledged is lost once the disk is back. A failure of the first dir,
// which holds the metadata, halts the broker.
func TestLogDirFailure(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": first + "," + second, "log.segment.bytes": "4096"}
	b := startBrokerWith(t, props)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "disk", 4)
	var inFirst, inSecond []int32
	for name := range describeDirs(t, rc, 4)[second] {
		var p int32
		fmt.Sscanf(strings.TrimPrefix(name, "disk-"), "%d", &p)
		inSecond = append(inSecond, p)
	}
	for name := range describeDirs(t, rc, 4)[first] {
		var p int32
		fmt.Sscanf(strings.TrimPrefix(name, "disk-"), "%d", &p)
		inFirst = append(inFirst, p)
	}
	if len(inFirst) != 2 || len(inSecond) != 2 {
		t.Fatalf("partitions %v in the first dir and %v in the second, want two in each", inFirst, inSecond)
	}
	all := append(append([]int32{}, inFirst...), inSecond...)
	acked := map[int32]int{}
	produced := 0
	send := func(ps []int32) map[int32]int16 {
		produced++
		codes := produceCodes(t, rc, "disk", ps, testBatch(20, fmt.Sprint("r", produced), -1, -1, -1, 0))
		for p, code := range codes {
			if code == 0 {
				acked[p] += 20
			}
		}
		return codes
	}
	for range 3 {
		for p, code := range send(all) {
			if code != 0 {
				t.Fatalf("produce to partition %d: error %d", p, code)
			}
		}
	}

	mend := diskfault.Fail(t, second)
	failedAt := 0
	for i := 0; i < 50 && failedAt == 0; i++ { // until a segment roll needs a new file
		for _, code := range send(inSecond) {
			if code == errKafkaStorageError {
				failedAt = i + 1
			} else if code != 0 {
				t.Fatalf("produce to the broken dir: error %d, want KAFKA_STORAGE_ERROR", code)
			}
		}
	}
	if failedAt == 0 {
		t.Fatal("no produce to the broken dir failed")
	}
	waitFor(t, func() bool { // the dir reported offline
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.SetVersion(4)
		for _, d := range rc.request(req).(*kmsg.DescribeLogDirsResponse).Dirs {
			if d.Dir == second {
				return d.ErrorCode == errKafkaStorageError && len(d.Topics) == 0
			}
		}
		return false
	})

	for p, code := range send(all) {
		if want := int16(0); slices.Contains(inSecond, p) && code != errKafkaStorageError || !slices.Contains(inSecond, p) && code != want {
			t.Fatalf("produce to partition %d after the failure: error %d", p, code)
		}
	}
	for _, p := range inSecond {
		req := fetchReq(12, "disk", 0, 0, 1)
		req.Topics[0].Partitions[0].Partition = p
		if code := rc.request(req).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != errKafkaStorageError {
			t.Fatalf("fetch of offline partition %d: error %d, want KAFKA_STORAGE_ERROR", p, code)
		}
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.SetVersion(7)
		lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "disk", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: p, Timestamp: -1, CurrentLeaderEpoch: -1}}}}
		if code := rc.request(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; code != errKafkaStorageError {
			t.Fatalf("ListOffsets of offline partition %d: error %d, want KAFKA_STORAGE_ERROR", p, code)
		}
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	topicName := "disk"
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: &topicName}}
	for _, mp := range rc.request(meta).(*kmsg.MetadataResponse).Topics[0].Partitions {
		offline := slices.Contains(inSecond, mp.Partition)
		if offline != (mp.ErrorCode == errLeaderNotAvailable && mp.Leader == -1 && len(mp.OfflineReplicas) == 1) {
			t.Fatalf("metadata of partition %d (offline %v): %+v", mp.Partition, offline, mp)
		}
	}
	createTopicRaw(t, rc, "after", 3)
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(4)
	for _, d := range rc.request(req).(*kmsg.DescribeLogDirsResponse).Dirs {
		n := 0
		for _, dt := range d.Topics {
			n += len(dt.Partitions)
		}
		if d.Dir == first && (d.ErrorCode != 0 || n != len(inFirst)+3) {
			t.Fatalf("the online dir: error %d, %d partitions, want the new topic's 3 added to its %d", d.ErrorCode, n, len(inFirst))
		}
	}
	notHalted(t, b, "with a dir still online")

	// The first dir holds the metadata: its failure halts the broker.
	mendFirst := diskfault.Fail(t, first)
	for i := 0; i < 50; i++ {
		if send(inFirst)[inFirst[0]] == errKafkaStorageError {
			break
		}
	}
	awaitHalt(t, b, "metadata log dir", 10*time.Second)
	b.Close() // writes nothing: both dirs are offline
	mend()
	mendFirst()

	// Every acknowledged record is there after a restart.
	b = startBrokerWith(t, props)
	rc = dialRaw(t, b)
	for _, p := range all {
		if got := len(fetchPartition(t, rc, "disk", p)); got != acked[p] {
			t.Fatalf("partition %d after the restart: %d records, want the %d acknowledged", p, got, acked[p])
		}
	}
	if codes := produceCodes(t, rc, "disk", all, testBatch(1, "again", -1, -1, -1, 0)); codes[inSecond[0]] != 0 {
		t.Fatalf("produce after the restart: %v", codes)
	}
}

// diskCluster is three brokers with two log dirs each and a topic "disk"
// of six partitions (replication factor 3, min.insync.replicas 2, 4 KB
// segments) whose replicas are all assigned to their dirs.
type diskCluster struct {
	*testCluster
	cl *kgo.Client // acks=all, records go to the partition they name
	// inFirst and inSecond are the partitions whose replica on broker 1
	// is in its first or its second log dir.
	inFirst, inSecond []int32
}

const diskPartitions = 6

func startDiskCluster(t *testing.T) *diskCluster {
	// A failed dir the controller has not learnt of in a second halts a
	// node: the tests' nodes, which report it, must not.
	c := clusterProps(t, 3, 0, map[string]string{"log.dir.failure.timeout.ms": "1000"})
	for i := range c.props {
		c.props[i]["log.dirs"] = t.TempDir() + "," + t.TempDir()
	}
	c.startAll()
	dc := &diskCluster{testCluster: c, cl: c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))}
	res, err := kadm.NewClient(dc.cl).CreateTopic(ctxT(t), diskPartitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2"), "segment.bytes": kadm.StringPtr("4096")}, "disk")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	c.waitFor("every replica assigned to its log dir", func() bool {
		it := dc.image().Topics["disk"]
		if it == nil {
			return false
		}
		for _, p := range it.Partitions {
			if len(p.Directories) != 3 {
				return false
			}
		}
		return true
	})
	second := c.nodes[0].dirs.All()[1].DirectoryID()
	for i, p := range dc.image().Topics["disk"].Partitions {
		if p.Directories[1] == second {
			dc.inSecond = append(dc.inSecond, int32(i))
		} else {
			dc.inFirst = append(dc.inFirst, int32(i))
		}
	}
	if len(dc.inSecond) == 0 || len(dc.inFirst) < 2 {
		t.Fatalf("broker 1's replicas: %v in its first dir, %v in its second; want some in each", dc.inFirst, dc.inSecond)
	}
	return dc
}

// image is the metadata a running node last applied, taken from the
// last node, which the tests never stop.
func (dc *diskCluster) image() *controller.Image {
	return dc.nodes[len(dc.nodes)-1].cluster.image()
}

// waitBroker1OutOf waits until broker 1 is in the ISR of every partition
// of "disk" but those of failed, and leads none of those.
func (dc *diskCluster) waitBroker1OutOf(failed []int32) {
	dc.waitFor(fmt.Sprintf("broker 1 out of the ISRs of partitions %v only", failed), func() bool {
		for i, p := range dc.image().Topics["disk"].Partitions {
			out := slices.Contains(failed, int32(i))
			if out && (p.Leader == 1 || slices.Contains(p.ISR, 1)) || !out && !slices.Contains(p.ISR, 1) {
				return false
			}
		}
		return true
	})
}

// ackedRecords produces to every partition of "disk" and keeps what was
// acknowledged, for readAll.
type ackedRecords struct {
	dc    *diskCluster
	byP   map[int32][]string
	total int
}

func (a *ackedRecords) produce(t *testing.T, rounds int) {
	t.Helper()
	for range rounds {
		for p := range int32(diskPartitions) {
			a.total++
			v := fmt.Sprintf("%d-%0100d", a.total, 0)
			if err := a.dc.cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "disk", Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("partition %d: %v", p, err)
			}
			a.byP[p] = append(a.byP[p], v)
		}
	}
}

// readAll consumes "disk" from the start and checks that every partition
// holds exactly the acknowledged records, in order.
func (a *ackedRecords) readAll(t *testing.T) {
	t.Helper()
	consumer := a.dc.client(kgo.ConsumeTopics("disk"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[int32][]string{}
	for n := 0; n < a.total; {
		fs := consumer.PollFetches(ctxT(t))
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			n++
		})
	}
	for p := range int32(diskPartitions) {
		if !slices.Equal(got[p], a.byP[p]) {
			t.Fatalf("partition %d: read %d records, %d acknowledged", p, len(got[p]), len(a.byP[p]))
		}
	}
}

// TestClusterLogDirFailure: three brokers with two log dirs each; one
// replica is moved into a broker's second dir first. When that dir fails,
// the controller learns it from the
// broker's heartbeat (KIP-858): that broker's replicas in the failed dir
// leave their ISRs and leadership and show as offline, its replicas in
// the other dir stay in their ISRs, the broker keeps running, and acks=all
// producers lose nothing.
func TestClusterLogDirFailure(t *testing.T) {
	dc := startDiskCluster(t)
	c, cl, inFirst, inSecond := dc.testCluster, dc.cl, dc.inFirst, dc.inSecond
	node := c.nodes[0]
	second := node.dirs.All()[1]

	// A replica moved into the second dir is assigned there anew, so it
	// too goes offline with that dir.
	moved := inFirst[0]
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	req.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{{Dir: second.Path(), Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "disk", Partitions: []int32{moved}}}}}
	resp, err := cl.Broker(1).Request(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.AlterReplicaLogDirsResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("AlterReplicaLogDirs: error %d", code)
	}
	c.waitFor("the moved replica assigned to the second dir", func() bool {
		return node.cluster.image().Topics["disk"].Partitions[moved].Directories[1] == second.DirectoryID()
	})
	inFirst, inSecond = inFirst[1:], append(inSecond, moved)
	acked := &ackedRecords{dc: dc, byP: map[int32][]string{}}
	acked.produce(t, 10)

	diskfault.Fail(t, second.Path())
	acked.produce(t, 40) // 24 KB per partition: every replica rolls a segment
	c.waitFor("the controller to know broker 1's second dir failed", func() bool {
		return slices.Contains(node.cluster.image().Brokers[1].OfflineLogDirs, second.DirectoryID())
	})
	dc.waitBroker1OutOf(inSecond)
	described := describeTopicPartitions(t, cl, 2000, nil, "disk")
	for _, p := range described.Topics[0].Partitions {
		if want := slices.Contains(inSecond, p.Partition); want != slices.Equal(p.OfflineReplicas, []int32{1}) {
			t.Fatalf("partition %d: offline replicas %v, broker 1's replica in the failed dir: %v", p.Partition, p.OfflineReplicas, want)
		}
	}
	notHalted(t, node, "although its first dir is fine")
	acked.produce(t, 10)
	acked.readAll(t)
}

// TestClusterStartsWithAFailedLogDir: broker 1 restarts with its second
// log dir failed. It starts, as Kafka's does, without registering that
// dir: its replicas there stay out of their ISRs and are not created in
// the first dir, while the others rejoin. With the disk back, a restart
// brings them back in sync, and nothing acknowledged is lost.
func TestClusterStartsWithAFailedLogDir(t *testing.T) {
	dc := startDiskCluster(t)
	acked := &ackedRecords{dc: dc, byP: map[int32][]string{}}
	acked.produce(t, 10)
	dirs := dc.nodes[0].dirs.All()
	first, second := dirs[0].Path(), dirs[1].Path()

	dc.stop(0)
	restore := diskfault.Fail(t, second)
	if err := dc.start(0); err != nil {
		t.Fatalf("broker 1 did not start with its second dir failed: %v", err)
	}
	dc.waitBroker1OutOf(dc.inSecond)
	for _, p := range dc.inSecond {
		if _, err := os.Stat(filepath.Join(first, fmt.Sprintf("disk-%d", p))); err == nil {
			t.Fatalf("partition %d, whose replica is in the failed dir, was created again in the first", p)
		}
	}
	rc := dialRaw(t, dc.nodes[0])
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(4)
	for _, d := range rc.request(req).(*kmsg.DescribeLogDirsResponse).Dirs {
		if (d.Dir == second) != (d.ErrorCode == errKafkaStorageError) {
			t.Fatalf("DescribeLogDirs: dir %s error %d", d.Dir, d.ErrorCode)
		}
	}
	acked.produce(t, 10)

	dc.stop(0)
	restore()
	if err := dc.start(0); err != nil {
		t.Fatal(err)
	}
	dc.waitBroker1OutOf(nil)
	acked.produce(t, 10)
	acked.readAll(t)
}

// A write of the metadata file that the operating system refuses takes
// the first log dir offline and halts the broker, as a failed metadata
// log write halts Kafka. The change is not applied: after a restart the
// topic has its old configs.
func TestMetadataWriteFailureHalts(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir}
	b := startBrokerWith(t, props)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "meta-fail", 1)
	// The file is replaced through a temporary file; a directory there
	// makes creating it fail with EISDIR.
	tmp := filepath.Join(dir, "gregor-metadata.json.tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	alter := func(rc *rawConn) int16 {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "meta-fail",
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}}}
		return rc.request(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
	}
	if code := alter(rc); code == 0 {
		t.Fatal("a config change whose metadata write failed succeeded")
	}
	awaitHalt(t, b, "metadata log dir", 10*time.Second)
	b.Close()
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	b = startBrokerWith(t, props)
	rc = dialRaw(t, b)
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "meta-fail",
		ConfigNames: []string{"retention.ms"}}}
	resp := rc.request(req).(*kmsg.DescribeConfigsResponse)
	if r := resp.Resources[0]; r.ErrorCode != 0 || len(r.Configs) != 1 || r.Configs[0].Source == kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("after the restart: %+v, want the topic without the failed override", r)
	}
}

// A broker that cannot tell the controller of a failed log dir within
// log.dir.failure.timeout.ms halts, as Kafka's does: here the other two
// nodes are stopped, so no quorum answers its heartbeats, and then its
// second dir fails (found at the next checkpoint write).
func TestClusterLogDirFailureTimeout(t *testing.T) {
	c := clusterProps(t, 3, 0, map[string]string{"log.dir.failure.timeout.ms": "1000", "replica.high.watermark.checkpoint.interval.ms": "200"})
	for i := range c.props {
		c.props[i]["log.dirs"] = t.TempDir() + "," + t.TempDir()
	}
	c.startAll()
	node := c.nodes[0]
	c.stop(1)
	c.stop(2)
	diskfault.Fail(t, node.dirs.All()[1].Path())
	awaitHalt(t, node, "log.dir.failure.timeout.ms (1000 ms)", 30*time.Second)
}

// awaitHalt waits up to within for b to halt, for a reason that names
// reason.
func awaitHalt(t *testing.T, b *Broker, reason string, within time.Duration) {
	t.Helper()
	select {
	case err := <-b.Fatal():
		if !strings.Contains(err.Error(), reason) {
			t.Fatalf("halted for %v, want %q", err, reason)
		}
	case <-time.After(within):
		t.Fatalf("the broker did not halt (%s) within %v", reason, within)
	}
}

// notHalted fails the test if b has halted.
func notHalted(t *testing.T, b *Broker, what string) {
	t.Helper()
	select {
	case err := <-b.Fatal():
		t.Fatalf("the broker halted %s: %v", what, err)
	default:
	}
}
