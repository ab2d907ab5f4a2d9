package compat

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// javaShareSteps are the steps compat/java's ShareGroupMain reports as
// share-groups-<step>; the matrix shows them as one share-groups cell.
var javaShareSteps = []string{"config", "consume", "describe", "offsets", "alter", "delete"}

// javaShareBroker are the overrides of the broker the share-group check
// runs against: the check sets its group's share.heartbeat.interval.ms to
// 1 s (members learn of a new assignment on their next heartbeat; the
// default 5 s would make the check wait that long), which the broker's
// minimum, 5 s by default, would refuse.
var javaShareBroker = []string{"group.share.min.heartbeat.interval.ms=1000"}

// TestJavaShareGroups runs compat/java's ShareGroupMain (share groups of
// KIP-932 through KafkaShareConsumer and the Admin client,
// ShareGroupChecks.java) for every kafka-clients 4.x in
// compat/java/versions, each against its own broker, as the share-groups
// cell. 3.x is not run, as for the group-protocol cell: its
// KafkaShareConsumer is an unfinished class from before share groups'
// early access (Kafka 4.0), and its Admin client has no share-group calls
// (compat/java compiles ShareGroupChecks for 4.x only). When the last
// step (delete) passed, franz-go checks what the broker kept: the topic
// holds the 300 records the check wrote where the check expected them,
// and the deleted group is gone from ListGroups and ShareGroupDescribe.
func TestJavaShareGroups(t *testing.T) {
	forEachJava4(t, "ShareGroupMain", func(t *testing.T, version, classpath string) {
		p := harness.Start(t, t.TempDir(), javaShareBroker...)
		const prefix = "javashare"
		rep := runScript(t, 4*time.Minute, p.Addr, prefix, "java", "-cp", classpath, "gregor.compat.ShareGroupMain")
		if rep.client != "kafka-clients" || rep.version != version {
			t.Errorf("program reported %q %q, want kafka-clients %s", rep.client, rep.version, version)
		}
		deleted := passed(rep, "share-groups-delete")
		rep = foldJavaResults(rep, "share-groups", javaShareSteps)
		recordReport(t, rep, "share-groups")
		if !deleted {
			return
		}
		if !t.Run("broker-check", func(t *testing.T) { checkJavaShareGroups(t, p.Addr, prefix) }) {
			record(rep.client, rep.version, "share-groups", false, "broker check failed (see the test log)")
		}
	})
}

// checkJavaShareGroups checks with franz-go what ShareGroupChecks left:
// <prefix>-share holds records 0..299, record i (key "i", value
// "share value i") in partition i%3, in order; the deleted group
// <prefix>-share-g is neither listed as a share group nor described.
func checkJavaShareGroups(t *testing.T, addr, prefix string) {
	topic, group := prefix+"-share", prefix+"-share-g"
	adm := newAdmin(t, addr)
	ends := endOffsets(t, adm, topic)
	if len(ends) != 3 || ends[0] != 100 || ends[1] != 100 || ends[2] != 100 {
		t.Fatalf("%s end offsets %v, want 100 in each of 3 partitions", topic, ends)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	next := map[int32]int{0: 0, 1: 1, 2: 2} // the index of the next record of each partition
	for got := 0; got < 300; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 300 records of %s", got, topic)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch %s: %v", topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			i := next[r.Partition]
			if want := fmt.Sprint(i); string(r.Key) != want || string(r.Value) != "share value "+want {
				t.Fatalf("partition %d offset %d holds %s=%s, want %s=share value %s", r.Partition, r.Offset, r.Key, r.Value, want, want)
			}
			next[r.Partition] = i + 3
			got++
		})
	}

	listed, err := adm.ListGroupsByType(ctx, []string{"share"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed[group]; ok {
		t.Errorf("ListGroups (type share) still lists the deleted %s: %v", group, listed[group])
	}
	described, err := adm.DescribeShareGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if d := described[group]; !errors.Is(d.Err, kerr.GroupIDNotFound) {
		t.Errorf("ShareGroupDescribe of the deleted %s: state %q, %d members, error %v; want GROUP_ID_NOT_FOUND", group, d.GroupState, len(d.Members), d.Err)
	}
}
