package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// As Kafka's Partition.effectiveMinIsr: min.insync.replicas above the
// replication factor is capped at it, so acks=all to a fully in-sync
// partition is accepted.
func TestMinInsyncAboveReplicationFactorIsCapped(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, "capped"); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, b)
	if p := produceRaw(t, rc, 9, "capped", [16]byte{}, 0, testBatch(1, "x", -1, -1, -1, 0)); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("acks=all with min.insync.replicas 2 on one replica: %+v", p)
	}
}
