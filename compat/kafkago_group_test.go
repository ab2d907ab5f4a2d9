package compat

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
)

// kafkagoReader is a segmentio/kafka-go Reader in a group, fetching and
// committing each message synchronously in its own goroutine until closed.
type kafkagoReader struct {
	name string
	r    *kafka.Reader
	stop context.CancelFunc
	done chan struct{}
}

func startKafkagoReader(t *testing.T, addr, name, group, topic string, seen *consumed) *kafkagoReader {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           []string{addr},
		GroupID:           group,
		Topic:             topic,
		Dialer:            &kafka.Dialer{ClientID: name, Timeout: 10 * time.Second},
		MaxWait:           100 * time.Millisecond,
		HeartbeatInterval: 200 * time.Millisecond,
		SessionTimeout:    6 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		JoinGroupBackoff:  100 * time.Millisecond,
		StartOffset:       kafka.FirstOffset,
		ErrorLogger:       kafka.LoggerFunc(func(f string, args ...any) { t.Logf(name+": "+f, args...) }),
	})
	ctx, cancel := context.WithCancel(context.Background())
	kr := &kafkagoReader{name: name, r: r, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(kr.done)
		for ctx.Err() == nil {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				// As an application would: log and fetch again (the
				// reader rejoins on its own, e.g. after a broker restart).
				if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
					t.Logf("%s: fetch: %v", name, err)
					time.Sleep(100 * time.Millisecond)
				}
				continue
			}
			seen.add(name, string(m.Value))
			if err := r.CommitMessages(ctx, m); err != nil && ctx.Err() == nil {
				t.Errorf("%s: commit: %v", name, err)
			}
		}
	}()
	t.Cleanup(func() { kr.close(t) })
	return kr
}

// close stops fetching and closes the reader, which leaves the group.
func (kr *kafkagoReader) close(t *testing.T) {
	select {
	case <-kr.done:
		return
	default:
	}
	kr.stop()
	<-kr.done
	if err := kr.r.Close(); err != nil {
		t.Errorf("%s: close: %v", kr.name, err)
	}
}

// byClient maps the client ids of the group's members to their partitions.
func byClient(g kadm.DescribedGroup, topic string) map[string][]int32 {
	ids := assignments(g, topic)
	out := map[string][]int32{}
	for _, m := range g.Members {
		out[m.ClientID] = ids[m.MemberID]
	}
	return out
}

// TestKafkaGoReaderGroup runs kafka-go Readers with a GroupID (its old
// request versions: JoinGroup v2, SyncGroup, Heartbeat and LeaveGroup v0,
// OffsetFetch v1, OffsetCommit v2 with a retention time): two
// readers share the partitions and consume every record once; when one
// leaves the other takes every partition; and a new reader started after
// both closed resumes exactly where their commits say.
//
// The test is the group and commit columns of kafka-go's matrix row.
func TestKafkaGoReaderGroup(t *testing.T) {
	version := moduleVersion(t, "github.com/segmentio/kafka-go")
	defer func() {
		record(kafkagoClientName, version, "group", !t.Failed(), failedNote(t))
		record(kafkagoClientName, version, "commit", !t.Failed(), failedNote(t))
	}()
	p := harness.Start(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	const topic, group = "kafkago", "kafkago-group"
	adm := newAdmin(t, p.Addr)
	createTopic(t, adm, topic)

	seen := newConsumed()
	r1 := startKafkagoReader(t, p.Addr, "r1", group, topic, seen)
	r2 := startKafkagoReader(t, p.Addr, "r2", group, topic, seen)
	g := waitStableSplit(t, adm, group, topic, 2)
	if got := byClient(g, topic); len(got["r1"]) != 2 || len(got["r2"]) != 2 {
		t.Fatalf("assignment %v, want two partitions each for r1 and r2", got)
	}
	if g.ProtocolType != "consumer" || g.Protocol != "range" {
		t.Errorf("group protocol %s/%s, want consumer/range (kafka-go's first balancer)", g.ProtocolType, g.Protocol)
	}

	first := consumeFirstRound(t, adm, p.Addr, group, topic, seen)

	// r2 leaves: r1 gets every partition and goes on from r2's commits.
	r2.close(t)
	second := consumeAfterLeave(t, adm, p.Addr, group, topic, seen, first, "r1", heldByClient("r1", topic))
	r1.close(t)
	waitFor(t, "the group empty", 20*time.Second, func() bool { return describe(t, adm, group).State == "Empty" })
	checkEmptyConsumerGroup(t, adm, group)

	// Offsets survive the group going empty: a new reader reads only what
	// was produced since.
	if got := committed(t, adm, group, topic); len(got) != groupPartitions || got[0] != 50 || got[3] != 50 {
		t.Fatalf("committed offsets of the empty group %v, want 50 on each partition", got)
	}
	third := produceSpread(t, p.Addr, topic, "third", 10)
	startKafkagoReader(t, p.Addr, "r3", group, topic, seen)
	waitFor(t, "r3 consuming the new records", 25*time.Second, func() bool { return seen.has(third) })
	waitCommittedAtEnd(t, adm, group, topic)
	all := append(append(first, second...), third...)
	seen.checkExactlyOnce(t, all)
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if n := len(seen.by["r3"]); n != len(third) {
		t.Errorf("r3 consumed %d records, want only the %d produced after the others closed", n, len(third))
	}
	for _, v := range second {
		if !seen.by["r1"][v] {
			t.Errorf("%s, produced after r2 left, not consumed by r1", v)
		}
	}
}
