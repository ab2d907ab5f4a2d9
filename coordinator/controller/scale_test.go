package controller

import (
	"slices"
	"testing"
	"time"
)

// 10,000 partitions: creating them, fencing a broker that leads a third of
// them and unfencing it again go through the quorum in single batches; the
// times are logged, not asserted.
func TestTenThousandPartitions(t *testing.T) {
	tc := startCluster(t, 3, nil)
	cl := tc.client()
	brokers := registerUnfenced(t, cl, 3)
	start := time.Now()
	if r := createTopic(t, cl, "big", 10000, 3, nil); r.ErrorCode != 0 {
		t.Fatalf("create: %d", r.ErrorCode)
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
