package controller

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// latestSnapshot is the raft index of node i's newest snapshot, 0 if none.
func (tc *testCluster) latestSnapshot(i int) uint64 {
	tc.t.Helper()
	store, err := raft.NewFileSnapshotStore(tc.nodes[i].dir, 2, io.Discard)
	if err != nil {
		tc.t.Fatal(err)
	}
	metas, err := store.List()
	if err != nil || len(metas) == 0 {
		return 0
	}
	return metas[0].Index
}

// Every node writes a snapshot once the records applied since its last
// reach metadata.log.max.record.bytes.between.snapshots; with Kafka's
// 20 MB the same writes make none.
func TestSnapshotAfterMaxBytes(t *testing.T) {
	for _, tc := range []struct {
		maxBytes int64
		want     bool
	}{{4096, true}, {0, false}} {
		c := startCluster(t, 3, func(cfg *Config) { cfg.SnapshotMaxBytes = tc.maxBytes })
		cl := c.client()
		registerUnfenced(t, cl, 3)
		for i := range 40 { // each topic's records are some hundreds of bytes
			createTopic(t, cl, fmt.Sprint("t", i), 3, 3, nil)
		}
		c.waitAll("every topic", func(img *Image) bool { return img.Topics["t39"] != nil })
		if !tc.want {
			time.Sleep(500 * time.Millisecond)
			for i := range c.nodes {
				if idx := c.latestSnapshot(i); idx != 0 {
					t.Fatalf("node %d wrote a snapshot at %d with the 20 MB default", i+1, idx)
				}
			}
			continue
		}
		eventually(t, "a snapshot on every node", func() bool {
			for i := range c.nodes {
				if c.latestSnapshot(i) == 0 {
					return false
				}
			}
			return true
		})
	}
}

// With metadata.log.max.snapshot.interval.ms, a node writes a snapshot
// that long after its last once records were applied meanwhile, and none
// while nothing is applied.
func TestSnapshotAfterMaxInterval(t *testing.T) {
	c := startCluster(t, 1, func(cfg *Config) { cfg.SnapshotMaxInterval = 300 * time.Millisecond })
	cl := c.client()
	registerUnfenced(t, cl, 1)
	createTopic(t, cl, "first", 1, 1, nil)
	var first uint64
	eventually(t, "a snapshot by time holding the topic", func() bool {
		first = c.latestSnapshot(0)
		return first != 0 && first >= c.ctl(0).Image().Offset
	})
	time.Sleep(time.Second)
	if idx := c.latestSnapshot(0); idx != first {
		t.Fatalf("a snapshot at %d after the one at %d with nothing applied between", idx, first)
	}
	createTopic(t, cl, "second", 1, 1, nil)
	eventually(t, "a snapshot holding the second topic", func() bool { return c.latestSnapshot(0) > first })
}
