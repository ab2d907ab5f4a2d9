package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// An offset commit waits for every in-sync replica of its
// __consumer_offsets partition at most offsets.commit.timeout.ms, then is
// answered COORDINATOR_NOT_AVAILABLE (Kafka's REQUEST_TIMED_OUT of the
// write, mapped for the client), as Kafka's group coordinator does. A
// follower that stopped without a controlled shutdown stays in the ISR
// for a while (here the whole test), so the commit cannot complete.
func TestClusterOffsetsCommitTimeout(t *testing.T) {
	const commitTimeout = 400 * time.Millisecond
	c := startCluster(t, 3, map[string]string{
		"offsets.commit.timeout.ms":        "400",
		"offsets.topic.replication.factor": "3",
		"controlled.shutdown.enable":       "false",
		"replica.lag.time.max.ms":          "120000",
		"broker.session.timeout.ms":        "120000",
	})
	cl := c.client()
	adm := kadm.NewClient(cl)
	created, err := adm.CreateTopic(ctxT(t), 1, 3, nil, "committed")
	if err != nil {
		t.Fatal(err)
	}
	var coord int32
	c.waitFor("the group's coordinator", func() bool {
		r := adm.FindGroupCoordinators(ctxT(t), "slow-commits")["slow-commits"]
		coord = r.NodeID
		return r.Err == nil
	})
	commit := func(offset int64) (int16, time.Duration) {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "slow-commits", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = "committed", created.ID
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		began := time.Now()
		r, err := cl.Broker(int(coord)).Request(ctxT(t), req)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, time.Since(began)
	}
	var first int16
	c.waitFor("the coordinator loaded", func() bool { // as clients retry, COORDINATOR_LOAD_IN_PROGRESS
		first, _ = commit(1)
		return first != kerr.CoordinatorLoadInProgress.Code
	})
	if first != 0 {
		t.Fatalf("commit with every replica up: %v", kerr.ErrorForCode(first))
	}
	stopped := int(coord % 3) // another node: index coord is node coord+1
	c.stop(stopped)
	code, took := commit(2)
	if code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("commit while node %d is in the ISR but stopped: %v after %v, want COORDINATOR_NOT_AVAILABLE", stopped+1, kerr.ErrorForCode(code), took)
	}
	if took < commitTimeout || took > 4*time.Second {
		t.Fatalf("the commit was answered after %v, want about offsets.commit.timeout.ms (%v)", took, commitTimeout)
	}
}
