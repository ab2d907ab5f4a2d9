package group

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// blockingLog is a real log dir whose Replay waits for a signal, so a
// test can look at a partition while it loads.
type blockingLog struct {
	*logDir
	release chan struct{}
}

func (b *blockingLog) Replay(p int32, fn func([]byte) error) error {
	<-b.release
	return b.logDir.Replay(p, fn)
}

func TestPartitionOwnershipAndLoading(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NumPartitions = 1
	log := &blockingLog{logDir: openLogDir(t, t.TempDir(), 1), release: make(chan struct{})}
	defer log.dir.Close()
	c := New(cfg, log, newManualClock(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer c.Close()

	hb := func() int16 {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID = "g", "m"
		return c.Heartbeat(req).ErrorCode
	}
	sync := func() int16 {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID = "g", "m"
		var code int16
		c.SyncGroup(req, func(r *kmsg.SyncGroupResponse) { code = r.ErrorCode })
		return code
	}
	if code := sync(); code != errNotCoordinator {
		t.Fatalf("before Load: %d, want NOT_COORDINATOR", code)
	}
	loaded := make(chan error)
	go func() { loaded <- c.Load(0) }()
	waitCode := func(want int16) {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if sync() == want {
				return
			}
			select {
			case err := <-loaded:
				t.Fatalf("load finished early: %v", err)
			default:
			}
		}
		t.Fatalf("never answered %d", want)
	}
	waitCode(errLoadInProgress)
	if code := hb(); code != 0 {
		t.Fatalf("Heartbeat while loading: %d, want NONE as Kafka answers blindly", code)
	}
	list := c.ListGroups(kmsg.NewPtrListGroupsRequest())
	if list.ErrorCode != errLoadInProgress {
		t.Fatalf("ListGroups while loading: %d", list.ErrorCode)
	}
	close(log.release)
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	if code := hb(); code != errUnknownMemberID {
		t.Fatalf("after Load: %d, want UNKNOWN_MEMBER_ID", code)
	}
	if code := sync(); code != errUnknownMemberID {
		t.Fatalf("SyncGroup after Load: %d, want UNKNOWN_MEMBER_ID", code)
	}
}

// PartitionFor must agree with Kafka's Utils.abs(groupId.hashCode()) %
// partitions. The hashes were computed with Java 17's String.hashCode.
func TestPartitionForMatchesJava(t *testing.T) {
	for _, c := range []struct {
		group    string
		javaHash int64
	}{
		{"", 0},
		{"my-group", -1906497762},
		{"console-consumer-12345", 158455506},
		{"polygenelubricants", -2147483648},    // Utils.abs(MIN_VALUE) is 0
		{"Gruppe-\u00e4\U0001F600", 710681045}, // UTF-16 code units, a surrogate pair
	} {
		abs := c.javaHash
		if abs == -2147483648 {
			abs = 0
		} else if abs < 0 {
			abs = -abs
		}
		if got, want := PartitionFor(c.group, 50), int32(abs%50); got != want {
			t.Errorf("%q: partition %d, want %d", c.group, got, want)
		}
	}
}

// A coordinator configured with another partition count than its topic has
// takes the topic's (SetPartitionCount) and finds the groups where they
// were committed; the count cannot change under loaded partitions.
func TestPartitionCountOfTheTopic(t *testing.T) {
	const group = "g1"
	if PartitionFor(group, 3) == PartitionFor(group, 7) {
		t.Fatalf("%s maps to one partition with 3 and 7 partitions: the test checks nothing", group)
	}
	log := openLogDir(t, t.TempDir(), 3)
	defer log.dir.Close()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func(configured, topic int32) *Coordinator {
		cfg := DefaultConfig()
		cfg.NumPartitions = configured
		c := New(cfg, log, newManualClock(), logger)
		if configured != topic {
			if err := c.SetPartitionCount(topic); err != nil {
				t.Fatal(err)
			}
		}
		if got := c.PartitionCount(); got != topic {
			t.Fatalf("partition count %d, want %d", got, topic)
		}
		for p := range topic {
			if err := c.Load(p); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	c := start(3, 3)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 8, group, -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7}}}}
	if code := c.OffsetCommit(commit, func(string, int32) bool { return true }).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit: error %d", code)
	}
	if err := c.SetPartitionCount(7); err == nil {
		t.Fatal("the partition count changed under loaded partitions")
	}
	for p := range int32(3) {
		c.Unload(p)
	}
	if err := c.SetPartitionCount(7); err != nil {
		t.Fatalf("with every partition unloaded (its topic deleted): %v", err)
	}
	c.Close()

	c = start(7, 3)
	defer c.Close()
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 8
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group}}
	g := c.OffsetFetch(fetch).Groups[0]
	if g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != 7 {
		t.Fatalf("fetch after the configured count changed: %+v", g)
	}
}
