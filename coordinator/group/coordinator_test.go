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
