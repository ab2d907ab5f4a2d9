package logstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/protocol"
)

// A producer idle for producer.id.expiration.ms is forgotten unless it has
// a transaction open, as in Kafka's ProducerStateManager; setting the
// expiration on the Dir runs a check at once.
func TestProducerIDExpiration(t *testing.T) {
	d := openTestDir(t, t.TempDir())
	l, err := d.CreateLog(TopicPartition{"expiring", 0}, RandomUUID(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	idle, fresh, inTxn := idem(1, 0, 0, 2), idem(2, 0, 0, 2), idem(3, 0, 0, 1)
	idle.baseTs, fresh.baseTs, inTxn.baseTs = now.Add(-2*time.Hour).UnixMilli(), now.UnixMilli(), now.Add(-2*time.Hour).UnixMilli()
	inTxn.attrs = protocol.AttrTransactional
	for _, s := range []spec{idle, fresh, inTxn} {
		mustAppend(t, l, s.build(), noStamp)
	}
	ids := func() string {
		var out []int64
		for _, p := range l.ActiveProducers() {
			out = append(out, p.ID)
		}
		return fmt.Sprint(out)
	}
	if got := ids(); got != "[1 2 3]" {
		t.Fatalf("producers %s", got)
	}
	if n := d.RemoveExpiredProducers(now, 3*time.Hour); n != 0 || ids() != "[1 2 3]" {
		t.Fatalf("3 h expiration forgot %d: %s", n, ids())
	}
	if n := d.RemoveExpiredProducers(now, time.Hour); n != 1 || ids() != "[2 3]" {
		t.Fatalf("1 h expiration forgot %d: %s", n, ids())
	}

	// The worker: a long check interval, but setting the expiration runs
	// a check soon.
	other := idem(4, 0, 0, 1)
	other.baseTs = now.Add(-2 * time.Hour).UnixMilli()
	mustAppend(t, l, other.build(), noStamp)
	d.SetProducerIDExpiration(time.Hour, time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for ids() != "[2 3]" {
		if time.Now().After(deadline) {
			t.Fatalf("producers %s after the expiration was set", ids())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
