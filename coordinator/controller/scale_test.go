package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// 10,000 partitions: creating them (5,000 with the topic, 5,000 more with
// CreatePartitions: a request makes at most 10,000 records), fencing a
// broker that leads a third of them and unfencing it again go through the
// quorum in single batches; the times are logged, not asserted.
//
// The voters run with Kafka's default election timeout (1 s, a 500 ms
// leader lease). With the other tests' 300 ms, a loaded machine under the
// race detector let the leader go 180-230 ms without its followers'
// answers while it replicated the 30,000-replica batch: it stepped down,
// the batch was committed by its successor all the same, and the client's
// retry was answered TOPIC_ALREADY_EXISTS. That answer is Kafka's to a
// retried CreateTopics too, and is accepted here when the topic exists
// whole.
func TestTenThousandPartitions(t *testing.T) {
	tc := startCluster(t, 3, func(cfg *Config) { cfg.ElectionTimeout = time.Second })
	cl := tc.client()
	brokers := registerUnfenced(t, cl, 3)
	start := time.Now()
	// In two requests: one request makes at most 10,000 records
	// (MaxRecordsPerUserOp), as in Kafka.
	if r := createTopic(t, cl, "big", 5000, 3, nil); r.ErrorCode == kerr.TopicAlreadyExists.Code {
		t.Logf("create answered TOPIC_ALREADY_EXISTS: a leader change during the create, retried")
	} else if r.ErrorCode != 0 {
		t.Fatalf("create: %d", r.ErrorCode)
	}
	grow := kmsg.NewPtrCreatePartitionsRequest()
	grow.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "big", Count: 10000}}
	if r := send[*kmsg.CreatePartitionsResponse](t, cl, grow); r.Topics[0].ErrorCode != 0 {
		if r.Topics[0].ErrorCode != kerr.InvalidPartitions.Code || len(tc.ctl(tc.active()).Image().Topics["big"].Partitions) != 10000 {
			t.Fatalf("growing to 10,000: %d", r.Topics[0].ErrorCode)
		}
		t.Logf("growing answered INVALID_PARTITIONS: a leader change during the request, retried")
	}
	if big := tc.ctl(tc.active()).Image().Topics["big"]; big == nil || len(big.Partitions) != 10000 {
		t.Fatalf("topic big after the create: %+v", big)
	}
	created := time.Since(start)
	start = time.Now()
	fenceByRequest(t, cl, brokers[0])
	fenced := time.Since(start)
	img := tc.ctl(tc.active()).Image()
	for i, p := range img.Topics["big"].Partitions {
		if p.Leader == 1 || slices.Contains(p.ISR, 1) || p.Leader == -1 {
			t.Fatalf("partition %d after fencing broker 1: %+v", i, p)
		}
	}
	start = time.Now()
	heartbeat(t, cl, brokers[0], brokers[0].epoch, false, false)
	unfenced := time.Since(start)
	tc.waitAll("every voter at the same offset", func(i *Image) bool { return i.Offset == tc.ctl(tc.active()).Image().Offset })
	t.Logf("10,000 partitions x RF 3 on 3 voters: create %v, fence a broker (moves ~3,333 leaders) %v, unfence %v",
		created.Round(time.Millisecond), fenced.Round(time.Millisecond), unfenced.Round(time.Millisecond))
}
