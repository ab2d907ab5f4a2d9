package clustertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ProducerOpts are the settings of every writer: acks=all (franz-go's
// default, with idempotence) and a delivery timeout that turns a write
// the cluster cannot take into an error within seconds.
func ProducerOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProduceRequestTimeout(5 * time.Second),
		kgo.RecordDeliveryTimeout(15 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}
}

// Writers are producers writing unique values to one topic until
// stopped, each recording its attempts and acknowledgements in a Checker.
type Writers struct {
	chk    *Checker
	cancel context.CancelFunc
	wg     sync.WaitGroup
	acked  atomic.Int64
	failed atomic.Int64

	mu      sync.Mutex
	lastErr error
}

// writerIDs numbers writers across the test binary, so that every value
// written is unique even when a test starts writers more than once.
var writerIDs atomic.Int64

// StartWriters runs n writers named w<k> (k unique in the test binary),
// each with its own client (its own producer id) and one write in flight
// at a time, so that the order of its acknowledgements is the order it
// sent.
func StartWriters(t testing.TB, c *Cluster, chk *Checker, topic string, n int) *Writers {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writers{chk: chk, cancel: cancel}
	for i := 0; i < n; i++ {
		opts := append(ProducerOpts(), kgo.DefaultProduceTopic(topic))
		cl := c.Client(t, opts...)
		name := fmt.Sprintf("w%d", writerIDs.Add(1)-1)
		w.wg.Add(1)
		go w.run(ctx, cl, name)
	}
	t.Cleanup(w.Stop)
	return w
}

func (w *Writers) run(ctx context.Context, cl *kgo.Client, name string) {
	defer w.wg.Done()
	for seq := 0; ctx.Err() == nil; seq++ {
		v := fmt.Sprintf("%s-%d", name, seq)
		r := &kgo.Record{Key: []byte(v), Value: []byte(v)}
		w.chk.Attempt(v)
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			if ctx.Err() == nil {
				w.failed.Add(1)
				w.mu.Lock()
				w.lastErr = err
				w.mu.Unlock()
				// Pacing, so that a broker failing writes at once is not
				// hammered by a loop; not a wait for a condition.
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		w.chk.Ack(name, v, Position{r.Topic, r.Partition, r.Offset})
		w.acked.Add(1)
	}
}

// Stop ends every writer and waits for them.
func (w *Writers) Stop() {
	w.cancel()
	w.wg.Wait()
}

// Acked and Failed count acknowledged and failed writes.
func (w *Writers) Acked() int64  { return w.acked.Load() }
func (w *Writers) Failed() int64 { return w.failed.Load() }

// LastErr is the error of the latest failed write.
func (w *Writers) LastErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// WaitAcked waits until at least n more writes than now are acknowledged.
func (w *Writers) WaitAcked(t testing.TB, n int64, timeout time.Duration) {
	t.Helper()
	target := w.Acked() + n
	Eventually(t, timeout, fmt.Sprintf("%d more acknowledged writes", n), func() error {
		if got := w.Acked(); got < target {
			return fmt.Errorf("%d of %d acknowledged; %d failed, last error %v", got, target, w.Failed(), w.LastErr())
		}
		return nil
	})
}

// ReadAll reads every partition of topic from the beginning up to the end
// offsets (the high watermarks) listed when it starts, and records each
// record in chk.
func ReadAll(t testing.TB, c *Cluster, chk *Checker, topic string, timeout time.Duration) {
	t.Helper()
	adm := kadm.NewClient(c.Client(t))
	var ends kadm.ListedOffsets
	Eventually(t, timeout, "end offsets of "+topic, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		var err error
		if ends, err = adm.ListEndOffsets(ctx, topic); err == nil {
			err = ends.Error()
		}
		return err
	})
	next := map[int32]int64{} // partition -> next offset to read
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		next[o.Partition] = 0
		want[o.Partition] = o.Offset
	})
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := func() bool {
		for p, end := range want {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("full read of %s: not done within %v: read to %v, ends %v", topic, timeout, next, want)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			chk.Consume(Position{r.Topic, r.Partition, r.Offset}, string(r.Value))
			if r.Offset+1 > next[r.Partition] {
				next[r.Partition] = r.Offset + 1
			}
		})
	}
}

// ReadAllAndCheck reads topic in full (ReadAll, within a minute) and fails
// the test with the checker's report if it found anomalies; what says
// when they happened ("after a leader kill").
func ReadAllAndCheck(t testing.TB, c *Cluster, chk *Checker, topic, what string) {
	t.Helper()
	ReadAll(t, c, chk, topic, time.Minute)
	r := chk.Check()
	t.Log(r)
	if !r.OK() {
		t.Fatalf("anomalies %s:\n%s", what, r)
	}
}
