package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// describeDirs answers DescribeLogDirs for every partition: for each dir,
// its partitions ("topic-p", with "+future" for a copy being moved in).
func describeDirs(t *testing.T, rc *rawConn, v int16) map[string]map[string]kmsg.DescribeLogDirsResponseDirTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(v)
	resp := rc.request(req).(*kmsg.DescribeLogDirsResponse)
	out := map[string]map[string]kmsg.DescribeLogDirsResponseDirTopicPartition{}
	for _, d := range resp.Dirs {
		if d.ErrorCode != 0 {
			t.Fatalf("dir %s: error %d", d.Dir, d.ErrorCode)
		}
		ps := map[string]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		for _, tp := range d.Topics {
			for _, p := range tp.Partitions {
				name := fmt.Sprintf("%s-%d", tp.Topic, p.Partition)
				if p.IsFuture {
					name += "+future"
				}
				ps[name] = p
			}
		}
		out[d.Dir] = ps
	}
	return out
}

func alterLogDirsRaw(t *testing.T, rc *rawConn, v int16, dir, topic string, partitions ...int32) map[int32]int16 {
	t.Helper()
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	req.SetVersion(v)
	req.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{{Dir: dir, Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: topic, Partitions: partitions}}}}
	resp := rc.request(req).(*kmsg.AlterReplicaLogDirsResponse)
	codes := map[int32]int16{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if rt.Topic != topic {
				t.Fatalf("answer for topic %s", rt.Topic)
			}
			codes[p.Partition] = p.ErrorCode
		}
	}
	return codes
}

// TestLogDirsSpreadAndMove runs a broker on two log dirs (JBOD): a topic's
// partitions are spread over both, and AlterReplicaLogDirs moves one while
// a producer keeps writing to it, losing nothing, across a restart.
func TestLogDirsSpreadAndMove(t *testing.T) {
	a, b2 := t.TempDir(), t.TempDir()
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": a + "," + b2, "log.segment.bytes": "65536"}
	b := startBrokerWith(t, props)
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "jbod", 4)
	dirs := describeDirs(t, rc, 4)
	if len(dirs) != 2 || len(dirs[a]) != 2 || len(dirs[b2]) != 2 {
		t.Fatalf("partitions by dir: %v", dirs)
	}
	from, to := a, b2
	if _, ok := dirs[b2]["jbod-0"]; ok {
		from, to = b2, a
	}

	cl := newClient(t, b, kgo.DefaultProduceTopic("jbod"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(16<<10))
	produced := 0
	produce := func(n int) {
		for range n {
			r := &kgo.Record{Partition: 0, Value: []byte(strconv.Itoa(produced))}
			produced++
			cl.Produce(ctxT(t), r, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		if err := cl.Flush(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	produce(20000) // a few MB over many segments

	// A producer keeps writing while the partition moves.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var during atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			produce(100)
			during.Add(100)
		}
	}()
	for _, v := range []int16{1, 2} {
		if codes := alterLogDirsRaw(t, rc, v, to, "jbod", 0); codes[0] != 0 {
			t.Fatalf("v%d: move: %v", v, codes)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		d := describeDirs(t, rc, 4)
		if _, ok := d[to]["jbod-0"]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the move did not finish: %v", d)
		}
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	if during.Load() == 0 {
		t.Fatal("nothing was produced during the move")
	}
	produce(10)

	consumeAll := func(b *Broker) {
		t.Helper()
		c := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"jbod": {0: kgo.NewOffset().AtStart()}}))
		for got := 0; got < produced; {
			fs := c.PollFetches(ctxT(t))
			if err := fs.Err(); err != nil {
				t.Fatal(err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if string(r.Value) != strconv.Itoa(got) || r.Offset != int64(got) {
					t.Fatalf("record %d at offset %d is %q", got, r.Offset, r.Value)
				}
				got++
			})
		}
	}
	consumeAll(b)
	d := describeDirs(t, rc, 4)
	if _, ok := d[from]["jbod-0"]; ok || len(d[to]) != 3 || len(d[from]) != 1 {
		t.Fatalf("after the move: %v", d)
	}
	if got, want := d[to]["jbod-0"].Size, b.topics.get("jbod").partitions()[0].log.Size(); got != want {
		t.Errorf("moved partition's size %d, its log's %d", got, want)
	}

	// The same partitions in the same dirs after a restart, and every record.
	b.Close()
	props["listeners"] = "PLAINTEXT://" + b.Addr()
	b = startBrokerWith(t, props)
	rc = dialRaw(t, b)
	if after := describeDirs(t, rc, 4); len(after[to]) != 3 || len(after[from]) != 1 {
		t.Fatalf("after a restart: %v", after)
	}
	consumeAll(b)

	// Kafka's errors.
	if codes := alterLogDirsRaw(t, rc, 2, filepath.Join(to, "nope"), "jbod", 1); codes[1] != kerr.LogDirNotFound.Code {
		t.Errorf("unknown dir: %v", codes)
	}
	// Partitions that do not exist yet: UNKNOWN_TOPIC_OR_PARTITION, as from
	// Kafka's ReplicaManager, which still records where they should go.
	if codes := alterLogDirsRaw(t, rc, 2, from, "later", 0, 1); codes[0] != kerr.UnknownTopicOrPartition.Code || codes[1] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("partitions that do not exist: %v", codes)
	}
	createTopicRaw(t, rc, "later", 2) // created where they were asked to go
	if after := describeDirs(t, rc, 4); len(after[from]) != 3 {
		t.Errorf("the partitions asked for before they existed went elsewhere: %v", after)
	}
	// kadm reads the same dirs.
	described, err := newAdmin(t, b).DescribeAllLogDirs(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	described.Each(func(kadm.DescribedLogDir) { n++ })
	if n != 2 {
		t.Errorf("kadm describes %d dirs", n)
	}
}

// TestAlterReplicaLogDirsNeedsClusterAlter: without ALTER on the cluster
// every partition is refused and nothing moves.
func TestAlterReplicaLogDirsNeedsClusterAlter(t *testing.T) {
	a, b2 := t.TempDir(), t.TempDir()
	props := aclProps(a)
	props["log.dirs"] = a + "," + b2
	b := startBrokerWith(t, props)
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string) *kgo.Client {
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())
	}
	admin := login("admin")
	if _, err := kadm.NewClient(admin).CreateTopic(ctxT(t), 2, 1, nil, "guarded"); err != nil {
		t.Fatal(err)
	}
	before := b.dirs.Log(logstoreTP("guarded", 0)).Dir()
	other := a
	if filepath.Dir(before) == a {
		other = b2
	}
	alter := func(cl *kgo.Client) int16 {
		req := kmsg.NewPtrAlterReplicaLogDirsRequest()
		req.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{{Dir: other, Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "guarded", Partitions: []int32{0}}}}}
		resp, err := cl.Broker(int(b.cfg.NodeID)).Request(ctxT(t), req) // kgo would look the topic up first
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.AlterReplicaLogDirsResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := alter(login("alice")); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice: error %d", code)
	}
	if len(b.dirs.Moves()) != 0 || b.dirs.Log(logstoreTP("guarded", 0)).Dir() != before {
		t.Fatal("alice's request moved the partition")
	}
	if code := alter(admin); code != 0 {
		t.Fatalf("admin: error %d", code)
	}
	for deadline := time.Now().Add(20 * time.Second); filepath.Dir(b.dirs.Log(logstoreTP("guarded", 0)).Dir()) != other; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(errors.New("admin's move did not happen"))
		}
	}
}

// A topic too long to name a future replica's dir is refused before the
// destination is looked at, as Kafka's ReplicaManager checks it first:
// INVALID_TOPIC_EXCEPTION even toward a dir that is not a log dir.
func TestAlterReplicaLogDirsTopicTooLongFirst(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	long := strings.Repeat("x", 230)
	if codes := alterLogDirsRaw(t, rc, 2, filepath.Join(t.TempDir(), "nope"), long, 0); codes[0] != kerr.InvalidTopicException.Code {
		t.Errorf("too long a topic toward an unknown dir: %v, want INVALID_TOPIC_EXCEPTION", codes)
	}
}

// While any log dir is offline no move starts, even between two online
// dirs: KAFKA_STORAGE_ERROR, as Kafka's LogManager refuses to create a
// future log then (so that one is never made in two dirs).
func TestAlterReplicaLogDirsRefusedWhileADirIsOffline(t *testing.T) {
	a, b2, c := t.TempDir(), t.TempDir(), t.TempDir()
	b := startBrokerWith(t, map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": a + "," + b2 + "," + c})
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "stuck", 3)
	var moved int32 = -1
	var to string
	for _, p := range b.topics.get("stuck").partitions() {
		switch filepath.Dir(p.log.Dir()) {
		case a:
			moved, to = p.index, b2
		case b2:
			moved, to = p.index, a
		}
	}
	if moved < 0 {
		t.Fatal("no partition in the first two dirs")
	}
	for _, d := range b.dirs.All() {
		if d.Path() == c {
			d.Fail(&os.PathError{Op: "write", Path: filepath.Join(c, "x"), Err: syscall.EIO})
		}
	}
	waitFor(t, func() bool {
		for _, d := range b.dirs.All() {
			if d.Path() == c {
				return d.Offline() != nil
			}
		}
		return false
	})
	if codes := alterLogDirsRaw(t, rc, 2, to, "stuck", moved); codes[moved] != kerr.KafkaStorageError.Code {
		t.Fatalf("a move with a dir offline: %v, want KAFKA_STORAGE_ERROR", codes)
	}
	if len(b.dirs.Moves()) != 0 {
		t.Fatal("a move started")
	}
}
