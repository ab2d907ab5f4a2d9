package main

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareTimings shorten share group sessions, so that a member that died
// with the broker is fenced in seconds, not the default 45.
var shareTimings = []string{"group.share.min.session.timeout.ms=1000", "group.share.session.timeout.ms=3000",
	"group.share.min.heartbeat.interval.ms=500", "group.share.heartbeat.interval.ms=500"}

// TestKill9KeepsShareGroupState: records a share group member accepted,
// once the broker has answered the acknowledgement, are never delivered
// again after a SIGKILL of the broker, and every other record is: those
// the member held when the broker died come back, nothing is lost. The
// dead member, restored with the group, keeps its partitions until its
// session times out, then the new member gets them.
func TestKill9KeepsShareGroupState(t *testing.T) {
	dir := t.TempDir()
	p := harness.Start(t, dir, shareTimings...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	if _, err := kadm.NewClient(admCl).CreateTopic(ctx, 3, 1, nil, "q"); err != nil {
		t.Fatal(err)
	}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alter.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "sq",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("earliest")}}}}
	if resp, err := alter.RequestWith(ctx, admCl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.auto.offset.reset: %v %+v", err, resp)
	}
	const total = 300
	var recs []*kgo.Record
	for i := range total {
		recs = append(recs, &kgo.Record{Topic: "q", Partition: int32(i % 3), Value: []byte(strconv.Itoa(i))})
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	// Several batches per partition, so the member holds some unaccepted.
	for i := 0; i < total; i += 30 {
		if err := producer.ProduceSync(ctx, recs[i:i+30]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	producer.Close()

	var ackMu sync.Mutex
	var ackErrs []error
	member, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.ShareGroup("sq"), kgo.ConsumeTopics("q"),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			ackMu.Lock()
			defer ackMu.Unlock()
			if err := rs.Error(); err != nil {
				ackErrs = append(ackErrs, err)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	accepted := map[string]bool{}
	for len(accepted) < total/2 {
		member.PollRecords(ctx, 20).EachRecord(func(r *kgo.Record) {
			if len(accepted) < total/2 {
				r.Ack(kgo.AckAccept)
				accepted[string(r.Value)] = true
			}
		})
		if ctx.Err() != nil {
			t.Fatalf("%d records accepted before the deadline", len(accepted))
		}
	}
	if err := member.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	ackMu.Lock()
	if len(ackErrs) > 0 {
		t.Fatalf("acknowledgements failed: %v", ackErrs)
	}
	ackMu.Unlock()

	p.Kill()
	go member.Close() // its broker is gone
	p2 := harness.Start(t, dir, shareTimings...)
	again, err := kgo.NewClient(kgo.SeedBrokers(p2.Addr), kgo.ShareGroup("sq"), kgo.ConsumeTopics("q"))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	got := map[string]bool{}
	quiet := time.Time{} // when the last record was due
	for quiet.IsZero() || time.Now().Before(quiet) {
		pollCtx, pollCancel := context.WithTimeout(ctx, 500*time.Millisecond)
		again.PollRecords(pollCtx, 100).EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if accepted[v] {
				t.Errorf("record %s, accepted before the kill, delivered again (delivery %d)", v, r.DeliveryCount())
			}
			got[v] = true
		})
		pollCancel()
		if ctx.Err() != nil {
			t.Fatalf("after the restart %d of %d records delivered", len(got), total-len(accepted))
		}
		if quiet.IsZero() && len(got)+len(accepted) >= total {
			quiet = time.Now().Add(2 * time.Second) // anything more would be a redelivery
		}
	}
	for i := range total {
		v := strconv.Itoa(i)
		if !accepted[v] && !got[v] {
			t.Errorf("record %s lost", v)
		}
	}
}
