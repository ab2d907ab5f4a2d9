package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKill9KeepsGroupsAndOffsets: a group's committed offsets and its
// membership, and a standalone consumer's offsets, survive a SIGKILL of
// the broker; the member that died with the old broker's connections is
// then dropped after its session timeout.
func TestKill9KeepsGroupsAndOffsets(t *testing.T) {
	dir := t.TempDir()
	p := harness.Start(t, dir, "group.initial.rebalance.delay.ms=0")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := 0; i < 300; i++ {
		recs = append(recs, &kgo.Record{Topic: "t", Partition: int32(i % 3), Value: []byte(strconv.Itoa(i))})
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	producer.Close()

	consumer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for consumed := 0; consumed < 300; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		consumed += fs.NumRecords()
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	memberID, generation := consumer.GroupMetadata()
	standalone := kadm.Offsets{}
	standalone.Add(kadm.Offset{Topic: "t", Partition: 1, At: 42, LeaderEpoch: -1, Metadata: "by hand"})
	if resp, err := adm.CommitOffsets(ctx, "standalone", standalone); err != nil || resp.Error() != nil {
		t.Fatalf("standalone commit: %v %v", err, resp.Error())
	}
	admCl.Close()

	p.Kill()
	p2 := harness.Start(t, dir, "group.initial.rebalance.delay.ms=0")
	admCl2, err := kgo.NewClient(kgo.SeedBrokers(p2.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl2.Close()
	adm2 := kadm.NewClient(admCl2)

	var offsets kadm.OffsetResponses
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		offsets, err = adm2.FetchOffsets(ctx, "g")
		if err == nil && offsets.Error() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("offsets after restart: %v %v", err, offsets.Error())
		}
	}
	for part := int32(0); part < 3; part++ {
		if o, ok := offsets.Lookup("t", part); !ok || o.At != 100 {
			t.Errorf("partition %d: committed %d (found %v), want 100", part, o.At, ok)
		}
	}
	alone, err := adm2.FetchOffsets(ctx, "standalone")
	if o, ok := alone.Lookup("t", 1); err != nil || !ok || o.At != 42 || o.Metadata != "by hand" {
		t.Errorf("standalone offset after restart: %+v %v %v", o, ok, err)
	}

	described, err := adm2.DescribeGroups(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	dg := described["g"]
	if dg.State != "Stable" || len(dg.Members) != 1 || dg.Members[0].MemberID != memberID {
		t.Fatalf("group after restart: state %s, members %+v; want Stable with %s (generation %d)", dg.State, dg.Members, memberID, generation)
	}
	// The member's client is gone with the old process's connections:
	// the group empties once its 6 s session passes.
	consumer.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		described, err = adm2.DescribeGroups(ctx, "g")
		if err == nil && described["g"].State == "Empty" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group never emptied: %+v %v", described["g"], err)
		}
	}
}
