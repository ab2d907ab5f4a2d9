package clustertest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestTransactionCoordinatorKilled runs transactions with franz-go (so
// transactions V2: an epoch bump at every end) while the node coordinating
// them is killed with SIGKILL, and afterwards: read_committed consumers see
// every transaction acknowledged as committed once, wholly; never one
// acknowledged as aborted; and one whose end failed either wholly or not
// at all. A producer that failed is replaced, as an application would,
// and its replacement fences it.
func TestTransactionCoordinatorKilled(t *testing.T) {
	c := Start(t, Options{})
	c.WaitBrokers(t, 3, 60*time.Second)
	const topic, id, size = "txn", "txn-killed", 5
	c.CreateTopic(t, topic, 3, 3, 60*time.Second)
	w := newTxnWorkload(c, topic, id, size)
	defer w.close()

	for w.committedSince(0) < 15 {
		if err := w.one(); err != nil {
			t.Logf("transaction %d before the kill: %v", w.tried()-1, err)
		}
	}
	adm := kadm.NewClient(c.Client(t))
	var coordinator int32
	Eventually(t, 30*time.Second, "the transaction coordinator", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		r := adm.FindTxnCoordinators(ctx, id)[id]
		coordinator = r.NodeID
		return r.Err
	})
	c.Node(coordinator).Kill()
	killedAt := w.tried()
	deadline := time.Now().Add(2 * time.Minute)
	for w.committedSince(killedAt) < 15 {
		if time.Now().After(deadline) {
			t.Fatalf("%d transactions committed of %d tried since node %d was killed", w.committedSince(killedAt), w.tried()-killedAt, coordinator)
		}
		if err := w.one(); err != nil {
			t.Logf("transaction %d after the kill: %v", w.tried()-1, err)
		}
	}
	t.Logf("%d committed after node %d was killed", w.committedSince(killedAt), coordinator)
	if err := c.Node(coordinator).Restart(); err != nil {
		t.Fatal(err)
	}
	c.WaitBrokers(t, 3, 60*time.Second)
	w.check(t)
}
