package clustertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTwoOfThreeDown kills both followers of a partition: with
// min.insync.replicas=2 (and no controller quorum) no write may be
// acknowledged. Once they are back, every earlier record is readable and
// writes are taken again.
func TestTwoOfThreeDown(t *testing.T) {
	c := Start(t, Options{})
	c.WaitBrokers(t, 3, 60*time.Second)
	const topic = "quorum"
	c.CreateTopic(t, topic, 1, 3, 60*time.Second)
	chk := NewChecker()
	w := StartWriters(t, c, chk, topic, 2)
	w.WaitAcked(t, 200, 60*time.Second)
	w.Stop()

	leader := c.WaitISR(t, topic, 0, 3, 30*time.Second).Leader
	// This client gets its producer id now, while there is a controller
	// quorum to allocate one. An idempotent producer keeps retrying a
	// write answered REQUEST_TIMED_OUT (it may be stored) unless told it
	// may give up, which it is here so that refusals surface as errors.
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProduceRequestTimeout(3*time.Second), kgo.RecordDeliveryTimeout(8*time.Second),
		kgo.AllowIdempotentProduceCancellation())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chk.Attempt("first")
	first := kgo.StringRecord("first")
	if err := cl.ProduceSync(ctx, first).FirstErr(); err != nil {
		t.Fatal(err)
	}
	chk.Ack("first", "first", Position{first.Topic, first.Partition, first.Offset})
	var down []*Node
	for _, n := range c.Nodes {
		if n.ID != leader {
			n.Kill()
			down = append(down, n)
		}
	}

	// The leader answers a write it cannot commit with an error, within
	// the request's timeout.
	chk.Attempt("raw")
	code, offset, err := c.Node(leader).Produce(topic, 0, -1, 2*time.Second, "raw")
	if err != nil {
		t.Fatalf("acks=all produce to the leader with both followers down: no answer: %v", err)
	}
	if code == 0 {
		t.Fatalf("acks=all produce acknowledged at offset %d with both followers down", offset)
	}
	t.Logf("acks=all produce to the leader alone: %v", kerr.ErrorForCode(code))

	// Every client write now fails within its delivery timeout.
	results := make(chan error, 10)
	for i := 0; i < cap(results); i++ {
		v := fmt.Sprintf("refused-%d", i)
		chk.Attempt(v)
		cl.Produce(context.Background(), kgo.StringRecord(v), func(r *kgo.Record, err error) {
			if err == nil {
				chk.Ack("refused", v, Position{r.Topic, r.Partition, r.Offset})
			}
			results <- err
		})
	}
	for i := 0; i < cap(results); i++ {
		select {
		case err := <-results:
			if err == nil {
				t.Fatal("a write was acknowledged with two of three nodes down")
			}
			if i == 0 {
				t.Logf("write refused: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("a write neither acknowledged nor failed within a minute")
		}
	}

	for _, n := range down {
		if err := n.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitBrokers(t, 3, 60*time.Second)
	c.WaitISR(t, topic, 0, 3, 60*time.Second)
	w = StartWriters(t, c, chk, topic, 1)
	w.WaitAcked(t, 50, 60*time.Second)
	w.Stop()

	ReadAllAndCheck(t, c, chk, topic, "after two nodes came back")
}
