package compat

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFranzGoGroupProtocol is franz-go's cell of the group-protocol column
// (see group_protocol_test.go): kgo.ServerSideBalancer members, three
// with the cooperative-sticky balancer (the broker's "uniform" assignor),
// and a regex subscription with the range balancer (its "range").
func TestFranzGoGroupProtocol(t *testing.T) {
	version := moduleVersion(t, "github.com/twmb/franz-go")
	p := harness.Start(t, t.TempDir(), kip848Overrides...)
	adm := newAdmin(t, p.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	feature(t, "franz-go", version, "group-protocol", func(t *testing.T) {
		t.Run("members", func(t *testing.T) { testFranzGroupProtocolMembers(t, ctx, p.Addr, adm) })
		t.Run("regex", func(t *testing.T) { testFranzGroupProtocolRegex(t, ctx, p.Addr, adm) })
	})
}

// startFranzConsumerMember starts a kgo consumer-protocol member named
// name (its client id) that polls in a goroutine, recording what it
// consumes in seen, and auto-commits every 100 ms. stop closes it, which
// commits and leaves the group.
func startFranzConsumerMember(t *testing.T, ctx context.Context, addr, name, group string, seen *consumed, opts ...kgo.Opt) (stop func()) {
	t.Helper()
	cl := franzClient(t, addr, append([]kgo.Opt{kgo.ClientID(name), kgo.ConsumerGroup(group), kgo.ServerSideBalancer(),
		kgo.AutoCommitInterval(100 * time.Millisecond)}, opts...)...)
	mctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for mctx.Err() == nil {
			fs := cl.PollFetches(mctx)
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("%s: fetch %s/%d: %v", name, topic, p, err)
				}
			})
			fs.EachRecord(func(r *kgo.Record) { seen.add(name, string(r.Value)) })
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait(); cl.Close() }) }
	t.Cleanup(stop)
	return stop
}

// testFranzGroupProtocolMembers: three members a, b, c consume a first
// round; c leaves and d joins while a second round is written; a third
// round is consumed by a, b and d. Every record exactly once, every round
// committed.
func testFranzGroupProtocolMembers(t *testing.T, ctx context.Context, addr string, adm *kadm.Client) {
	const topic, group = "fgp", "fgp-g"
	createTopic(t, adm, topic)
	seen := newConsumed()
	balancer := kgo.Balancers(kgo.CooperativeStickyBalancer())
	member := func(name string) func() {
		return startFranzConsumerMember(t, ctx, addr, name, group, seen, kgo.ConsumeTopics(topic), balancer)
	}
	stopA, stopB, stopC := member("a"), member("b"), member("c")
	g := kip848WaitStable(t, adm, group, []string{topic}, "a", "b", "c")
	if g.AssignorName != "uniform" {
		t.Errorf("assignor %q, want uniform (what kgo asks for with a sticky balancer)", g.AssignorName)
	}
	for _, m := range g.Members {
		if !slices.Equal(m.SubscribedTopics, []string{topic}) || m.SubscribedTopicRegex != nil {
			t.Errorf("member %s subscribes to %v / %v, want [%s]", m.ClientID, m.SubscribedTopics, m.SubscribedTopicRegex, topic)
		}
	}
	kip848CheckListed(t, adm, group, "Stable")

	first := produceSpread(t, addr, topic, "first", 25)
	waitFor(t, "the first round consumed", 30*time.Second, func() bool { return seen.has(first) })
	waitCommittedAtEnd(t, adm, group, topic)
	seen.checkExactlyOnce(t, first)
	kip848CheckConsumedAsAssigned(t, seen, g, topic, "first")
	ends := endOffsets(t, adm, topic)

	// The second round is written while c leaves and d joins.
	stopProducing := kip848ProduceWhile(t, addr, topic, "second")
	time.Sleep(300 * time.Millisecond)
	stopC() // commits and leaves
	stopD := member("d")
	g2 := kip848WaitStable(t, adm, group, []string{topic}, "a", "b", "d")
	time.Sleep(300 * time.Millisecond)
	second := stopProducing()
	if g2.Epoch <= g.Epoch {
		t.Errorf("group epoch %d after a member left and one joined, was %d", g2.Epoch, g.Epoch)
	}
	kip848CheckCommitsNotBehind(t, adm, group, topic, ends)
	waitFor(t, "the second round consumed", 30*time.Second, func() bool { return seen.has(second) })
	waitCommittedAtEnd(t, adm, group, topic)
	all := append(slices.Clone(first), second...)
	seen.checkExactlyOnce(t, all)

	third := produceSpread(t, addr, topic, "third", 25)
	waitFor(t, "the third round consumed", 30*time.Second, func() bool { return seen.has(third) })
	waitCommittedAtEnd(t, adm, group, topic)
	seen.checkExactlyOnce(t, append(all, third...))
	kip848CheckConsumedAsAssigned(t, seen, g2, topic, "third")

	stopA()
	stopB()
	stopD()
	kip848WaitEmpty(t, adm, group, topic)
}

// testFranzGroupProtocolRegex: two members subscribe to the pattern
// fgp-re-.*, consume fgp-re-1, then fgp-re-2 created later.
func testFranzGroupProtocolRegex(t *testing.T, ctx context.Context, addr string, adm *kadm.Client) {
	const group, topic1, topic2 = "fgp-re-g", "fgp-re-1", "fgp-re-2"
	createTopic(t, adm, topic1)
	seen := newConsumed()
	for _, name := range []string{"r1", "r2"} {
		startFranzConsumerMember(t, ctx, addr, name, group, seen,
			kgo.ConsumeRegex(), kgo.ConsumeTopics("fgp-re-.*"), kgo.Balancers(kgo.RangeBalancer()))
	}
	kip848CheckRegexGroup(t, addr, adm, group, topic1, topic2, seen)
}
