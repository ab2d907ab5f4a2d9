package clustertest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// chaosSettings reads GREGOR_CHAOS_DURATION (default 20s),
// GREGOR_CHAOS_SEED (default: from the clock, logged so that a run can be
// repeated) and GREGOR_CHAOS_MAX_FAULTY (how many nodes may be faulty at
// once, default 1; 2 also takes the quorum away at times).
func chaosSettings(t *testing.T) (duration time.Duration, seed uint64, maxFaulty int) {
	duration, seed, maxFaulty = 20*time.Second, uint64(time.Now().UnixNano()), 1
	var err error
	if v := os.Getenv("GREGOR_CHAOS_DURATION"); v != "" {
		if duration, err = time.ParseDuration(v); err != nil {
			t.Fatalf("GREGOR_CHAOS_DURATION: %v", err)
		}
	}
	if v := os.Getenv("GREGOR_CHAOS_SEED"); v != "" {
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("GREGOR_CHAOS_SEED: %v", err)
		}
	}
	if v := os.Getenv("GREGOR_CHAOS_MAX_FAULTY"); v != "" {
		if maxFaulty, err = strconv.Atoi(v); err != nil || maxFaulty < 1 || maxFaulty > 2 {
			t.Fatalf("GREGOR_CHAOS_MAX_FAULTY: %q, want 1 or 2", v)
		}
	}
	return duration, seed, maxFaulty
}

// A fault is one node broken one way until a moment.
type fault struct {
	kind  int // one of the fault* constants
	until time.Time
}

const (
	faultKill  = iota // SIGKILL, restarted when healed
	faultPause        // SIGSTOP, SIGCONT when healed
	faultTerm         // SIGTERM (controlled shutdown), restarted when healed
	faultCut          // PLAINTEXT proxy cut, resumed when healed
	faultKinds
)

var faultNames = [faultKinds]string{"kill -9", "SIGSTOP", "SIGTERM", "cut off"}

// TestChaos runs the chaos schedule (runChaos) on the two layouts of
// Kafka clusters: three combined broker+controller nodes, and three
// controller-only voters beside three broker-only nodes (Kafka's
// production layout). GREGOR_CHAOS_LAYOUT=combined or dedicated runs one.
func TestChaos(t *testing.T) {
	layouts := []struct {
		name string
		opts Options
	}{
		{"combined", Options{Proxy: true}},
		{"dedicated", Options{Proxy: true, DedicatedControllers: true, Brokers: 3}},
	}
	only := os.Getenv("GREGOR_CHAOS_LAYOUT")
	ran := false
	for _, l := range layouts {
		if only == "" || only == l.name {
			ran = true
			t.Run(l.name, func(t *testing.T) { runChaos(t, l.opts) })
		}
	}
	if !ran {
		t.Fatalf("GREGOR_CHAOS_LAYOUT=%q: want combined or dedicated", only)
	}
}

// runChaos writes to a cluster with three brokers while a random schedule
// breaks nodes: SIGKILL then restart, SIGSTOP then SIGCONT, SIGTERM (controlled
// shutdown) then restart, or the node's PLAINTEXT proxy cut then resumed
// (clients and followers see silence; its controller traffic goes on; a
// controller-only node, with no such listener, is never cut).
// Each fault lasts a random 1-4 seconds; every half to two seconds a
// healthy node is broken if fewer than GREGOR_CHAOS_MAX_FAULTY are. After
// the schedule every node is healed, the ISR of every partition must
// return to three, writes must go on, and the checker must find nothing
// lost, duplicated, reordered, misplaced or unexpected. Beside the
// writers, a transactional producer runs transactions on another topic
// throughout, and must commit again once the nodes are healed; read
// with read_committed, no aborted record may show, every committed
// transaction must show wholly and once, one whose end failed wholly or
// not at all, and each partition's transactions in the order they ran.
func runChaos(t *testing.T, opts Options) {
	duration, seed, maxFaulty := chaosSettings(t)
	t.Logf("chaos for %v, GREGOR_CHAOS_SEED=%d, GREGOR_CHAOS_MAX_FAULTY=%d", duration, seed, maxFaulty)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }

	c := Start(t, opts)
	c.WaitBrokers(t, 3, 60*time.Second)
	const topic, partitions = "chaos", 3
	c.CreateTopic(t, topic, partitions, 3, 60*time.Second)
	chk := NewChecker()
	w := StartWriters(t, c, chk, topic, 3)
	w.WaitAcked(t, 100, 60*time.Second)
	const txnTopic = "chaos-txn"
	c.CreateTopic(t, txnTopic, partitions, 3, 60*time.Second)
	txns := newTxnWorkload(c, txnTopic, "chaos-txn", 4)
	stopTxns, txnsDone := make(chan struct{}), make(chan struct{})
	go txns.runUntil(stopTxns, txnsDone)
	defer func() {
		select {
		case <-stopTxns:
		default:
			close(stopTxns)
		}
		<-txnsDone
	}()

	active := map[*Node]fault{}
	heal := func(n *Node) {
		switch active[n].kind {
		case faultKill, faultTerm:
			if err := n.Restart(); err != nil {
				t.Fatal(err)
			}
		case faultPause:
			if err := n.Resume(); err != nil {
				t.Fatal(err)
			}
		case faultCut:
			n.Proxy.Resume()
		}
		delete(active, n)
	}
	end := time.Now().Add(duration)
	faults := 0
	for time.Now().Before(end) {
		for n, f := range active {
			if time.Now().After(f.until) {
				heal(n)
			}
		}
		if len(active) < maxFaulty {
			var healthy []*Node
			for _, n := range c.Nodes {
				if _, broken := active[n]; !broken {
					healthy = append(healthy, n)
				}
			}
			n := healthy[rng.IntN(len(healthy))]
			kinds := faultKinds
			if !n.broker() {
				kinds = faultCut // nothing to cut
			}
			f := fault{kind: rng.IntN(kinds), until: time.Now().Add(between(time.Second, 4*time.Second))}
			t.Logf("%s node %d until +%v", faultNames[f.kind], n.ID, time.Until(f.until).Round(time.Millisecond))
			switch f.kind {
			case faultKill:
				n.Kill()
			case faultPause:
				if err := n.Pause(); err != nil {
					t.Fatal(err)
				}
			case faultTerm:
				if err := n.Stop(60 * time.Second); err != nil {
					t.Errorf("node %d after SIGTERM: %v", n.ID, err)
				}
			case faultCut:
				n.Proxy.Cut()
			}
			active[n] = f
			faults++
		}
		time.Sleep(between(500*time.Millisecond, 2*time.Second)) // the schedule itself, not a wait for a condition
	}
	for n := range active {
		heal(n)
	}
	t.Logf("%d faults; %d writes acknowledged, %d failed", faults, w.Acked(), w.Failed())

	c.WaitBrokers(t, 3, 60*time.Second)
	for p := int32(0); p < partitions; p++ {
		c.WaitISR(t, topic, p, 3, 60*time.Second)
	}
	w.WaitAcked(t, 100, 60*time.Second)
	healedAt := txns.tried()
	Eventually(t, 2*time.Minute, "transactions committing after the faults", func() error {
		if n := txns.committedSince(healedAt); n < 5 {
			txns.mu.Lock()
			defer txns.mu.Unlock()
			return fmt.Errorf("%d committed of %d tried since the nodes were healed; last failure: %v", n, len(txns.outcomes)-healedAt, txns.lastErr)
		}
		return nil
	})
	close(stopTxns)
	<-txnsDone
	w.Stop()
	ReadAll(t, c, chk, topic, 120*time.Second)
	r := chk.Check()
	t.Log(r)
	if !r.OK() {
		t.Fatalf("anomalies under chaos (GREGOR_CHAOS_SEED=%d):\n%s", seed, r)
	}
	t.Logf("transactions: %d tried, %d failed", txns.tried(), txns.failures)
	txns.check(t)
	if t.Failed() {
		t.Logf("transaction anomalies under chaos: GREGOR_CHAOS_SEED=%d", seed)
	}
}
