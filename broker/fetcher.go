package broker

// The follower's side of replication: num.replica.fetchers replicaFetchers
// per leader, each copying the leader's batches for its share of the
// partitions this node follows there (Kafka's ReplicaFetcherThread). A
// partition that starts following (a new leader or leader epoch) is first
// truncated to where its log agrees with the leader's: OffsetForLeaderEpoch
// with its latest epoch gives the end of that epoch on the leader, and
// everything at or above it here goes. Then fetches at the log end offset,
// naming this node as the replica and giving its latest epoch (a leader
// that finds the log diverged answers with the epoch to cut at instead of
// records, which is done the same way), bring batches that are appended
// unchanged (offsets, epochs and CRCs are the leader's) and the leader's
// high watermark, which the follower adopts up to its own log end.

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gregor-broker/gregor/internal/keyhash"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetcherManager runs num.replica.fetchers fetchers per leader, each
// copying the partitions Kafka's fetcher id gives it (keyhash.Fetcher), so
// that one slow partition or a large batch does not hold up every other
// one this node follows from the same leader.
type fetcherManager struct {
	b      *Broker
	mu     sync.Mutex
	n      int32 // fetchers per leader
	byKey  map[fetcherKey]*replicaFetcher
	closed bool
}

// fetcherKey names a fetcher: the leader it copies from and its number
// among that leader's fetchers.
type fetcherKey struct{ leader, id int32 }

func newFetcherManager(b *Broker, fetchersPerLeader int) *fetcherManager {
	return &fetcherManager{b: b, n: int32(fetchersPerLeader), byKey: map[fetcherKey]*replicaFetcher{}}
}

// followed is a partition a fetcher copies, with where it stands.
type followed struct {
	epoch    int32 // the leader epoch it follows
	truncate bool  // not yet truncated to the leader's log
	// Put off until retryAt, meanwhile fetching the other partitions: the
	// leader refused to say where to truncate (it has not yet applied the
	// metadata that makes it leader, typically; retries counts those), or
	// a fetch of it failed (replica.fetch.backoff.ms, as Kafka's
	// AbstractFetcherThread delays a partition with an error).
	retryAt time.Time
	retries int
}

// How soon a refused truncation is asked again: doubling from the first
// to the last value. The leader usually applies the metadata within
// milliseconds, and an acks=all produce to the partition waits meanwhile.
const (
	truncateRetryFirst = 10 * time.Millisecond
	truncateRetryLast  = time.Second
)

// ready reports whether s has anything to do now.
func (s followed) ready(now time.Time) bool {
	return !now.Before(s.retryAt)
}

type replicaFetcher struct {
	m     *fetcherManager
	key   fetcherKey
	mu    sync.Mutex
	parts map[*partition]*followed
	kick  chan struct{} // wakes a fetcher that follows nothing
	// restart abandons the request in flight (a fetch may be waiting up
	// to replica.fetch.wait.max.ms for partitions that have nothing new)
	// so that a partition just followed is truncated and fetched at once:
	// until then an acks=all produce to it waits for this follower.
	restart chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// follow makes p copy from leader in leaderEpoch, moving it off any other
// fetcher.
func (m *fetcherManager) follow(p *partition, leader, epoch int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.add(p, leader, &followed{epoch: epoch, truncate: true})
}

// add puts p on its fetcher for leader in state s, off every other one;
// m.mu is held.
func (m *fetcherManager) add(p *partition, leader int32, s *followed) {
	key := fetcherKey{leader, keyhash.Fetcher(p.topic.name, p.index, m.n)}
	for k, f := range m.byKey {
		if k != key {
			f.drop(p)
		}
	}
	f := m.byKey[key]
	if f == nil {
		f = &replicaFetcher{m: m, key: key, parts: map[*partition]*followed{},
			kick: make(chan struct{}, 1), restart: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
		m.byKey[key] = f
		go f.run()
	}
	f.mu.Lock()
	f.parts[p] = s
	f.mu.Unlock()
	f.wake()
	f.interrupt()
}

// resize changes the number of fetchers per leader (num.replica.fetchers
// altered at runtime), as Kafka's resizeThreadPool does: every fetcher
// stops, and each partition goes on to its fetcher under the new count
// where it stood, truncated or not.
func (m *fetcherManager) resize(fetchersPerLeader int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || int32(fetchersPerLeader) == m.n {
		return
	}
	old := m.byKey
	m.byKey, m.n = map[fetcherKey]*replicaFetcher{}, int32(fetchersPerLeader)
	stopFetchers(old)
	for k, f := range old {
		for p, s := range f.parts { // f has stopped: nothing else touches parts
			m.add(p, k.leader, s)
		}
	}
}

// remove stops copying p.
func (m *fetcherManager) remove(p *partition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.byKey {
		f.drop(p)
	}
}

func (m *fetcherManager) close() {
	m.mu.Lock()
	m.closed = true
	fetchers := m.byKey
	m.byKey = map[fetcherKey]*replicaFetcher{}
	m.mu.Unlock()
	stopFetchers(fetchers)
}

// stopFetchers stops every fetcher and waits until each has.
func stopFetchers(fetchers map[fetcherKey]*replicaFetcher) {
	for _, f := range fetchers {
		close(f.stop)
	}
	for _, f := range fetchers {
		<-f.done
	}
}

func (f *replicaFetcher) drop(p *partition) {
	f.mu.Lock()
	delete(f.parts, p)
	f.mu.Unlock()
}

func (f *replicaFetcher) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// interrupt abandons the request in flight, if any (see restart).
func (f *replicaFetcher) interrupt() {
	select {
	case f.restart <- struct{}{}:
	default:
	}
}

func (f *replicaFetcher) snapshot() map[*partition]followed {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[*partition]followed, len(f.parts))
	for p, s := range f.parts {
		out[p] = *s
	}
	return out
}

// still reports whether p is still followed in the same epoch, so a
// response that raced with a leadership change is dropped.
func (f *replicaFetcher) still(p *partition, epoch int32) *followed {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.parts[p]; s != nil && s.epoch == epoch {
		return s
	}
	return nil
}

func (f *replicaFetcher) run() {
	defer close(f.done)
	b := f.m.b
	var client *kgo.Client
	var clientAddr string
	defer func() {
		if client != nil {
			client.Close()
		}
	}()
	backoff := func() bool {
		select {
		case <-f.stop:
			return false
		case <-time.After(b.cfg.Cluster.ReplicaFetchBackoff):
			return true
		}
	}
	for {
		select {
		case <-f.stop:
			return
		case <-f.restart: // whatever it announced is in the snapshot below
		default:
		}
		parts := f.snapshot()
		if wait := untilReady(parts); wait > 0 { // nothing followed, or only partitions put off
			select {
			case <-f.stop:
				return
			case <-f.kick:
			case <-f.restart:
			case <-time.After(wait):
			}
			continue
		}
		addr := b.cluster.brokerAddr(f.key.leader)
		if addr == "" {
			if !backoff() {
				return
			}
			continue
		}
		if client == nil || clientAddr != addr {
			if client != nil {
				client.Close()
			}
			var err error
			// replica.socket.timeout.ms bounds each request (f.request),
			// so franz-go's own timeout must not come first.
			opts := append(b.interBrokerClientOpts(addr, f.clientID(), b.cfg.Cluster.ReplicaSocketReceiveBuffer),
				kgo.RequestTimeoutOverhead(b.cfg.Cluster.ReplicaSocketTimeout))
			client, err = kgo.NewClient(opts...)
			if err != nil {
				b.logger.Warn("replica fetcher client", "err", err)
				if !backoff() {
					return
				}
				continue
			}
			clientAddr = addr
		}
		broker := client.SeedBrokers()[0]
		ctx, cancel := context.WithCancel(context.Background())
		var restarted atomic.Bool
		go func() {
			select {
			case <-f.stop:
			case <-f.restart:
				// franz-go gives up on the connection of a request whose
				// context ends mid-read; the next request dials afresh.
				restarted.Store(true)
			case <-ctx.Done():
			}
			cancel()
		}()
		ok := f.truncate(ctx, broker, parts)
		if ok { // fetch what truncate just cleared in the same round
			ok = f.fetch(ctx, broker, f.snapshot())
		}
		cancel()
		if !ok && !restarted.Load() && !backoff() {
			return
		}
	}
}

// clientID names the fetcher in its requests as Kafka's does:
// broker-<this node>-fetcher-<fetcher id>.
func (f *replicaFetcher) clientID() string {
	return "broker-" + strconv.Itoa(int(f.m.b.cfg.NodeID)) + "-fetcher-" + strconv.Itoa(int(f.key.id))
}

// request sends one request to the leader and waits for its response at
// most replica.socket.timeout.ms, as Kafka's fetcher's socket does.
func (f *replicaFetcher) request(ctx context.Context, broker *kgo.Broker, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, f.m.b.cfg.Cluster.ReplicaSocketTimeout)
	defer cancel()
	return broker.Request(ctx, req)
}

// untilReady is how long until a partition of parts is ready: 0 if one
// is, at most a second (a fetcher with nothing to do looks again then).
func untilReady(parts map[*partition]followed) time.Duration {
	now := time.Now()
	wait := time.Second
	for _, s := range parts {
		if s.ready(now) {
			return 0
		}
		wait = min(wait, s.retryAt.Sub(now))
	}
	return wait
}

// truncate cuts every partition that just started following to where its
// log agrees with the leader's. A partition the leader answers with an
// error is asked again later (retryLater); only a failed request makes
// truncate return false.
func (f *replicaFetcher) truncate(ctx context.Context, broker *kgo.Broker, parts map[*partition]followed) bool {
	b := f.m.b
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = b.cfg.NodeID
	byTopic := map[string]int{}
	var asked []*partition
	now := time.Now()
	for p, s := range parts {
		if !s.truncate || !s.ready(now) {
			continue
		}
		i, ok := byTopic[p.topic.name]
		if !ok {
			i = len(req.Topics)
			byTopic[p.topic.name] = i
			req.Topics = append(req.Topics, kmsg.OffsetForLeaderEpochRequestTopic{Topic: p.topic.name})
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, kmsg.OffsetForLeaderEpochRequestTopicPartition{
			Partition: p.index, CurrentLeaderEpoch: s.epoch, LeaderEpoch: p.log.LatestEpoch(),
		})
		asked = append(asked, p)
	}
	if len(asked) == 0 {
		return true
	}
	resp, err := f.request(ctx, broker, req)
	if err != nil {
		return false
	}
	byKey := map[string]*partition{}
	for _, p := range asked {
		byKey[p.topic.name+"/"+strconv.Itoa(int(p.index))] = p
	}
	for _, rt := range resp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
		for _, rp := range rt.Partitions {
			p := byKey[rt.Topic+"/"+strconv.Itoa(int(rp.Partition))]
			if p == nil {
				continue
			}
			s := f.still(p, parts[p].epoch)
			if s == nil {
				continue
			}
			if rp.ErrorCode != 0 {
				f.retryLater(s)
				continue
			}
			if err := f.cutDiverged(p, rp.LeaderEpoch, rp.EndOffset); err != nil {
				f.retryLater(s)
				continue
			}
			f.mu.Lock()
			s.truncate = false
			f.mu.Unlock()
		}
	}
	return true
}

// cutDiverged truncates p to where its log agrees with the leader's, given
// the leader's largest epoch at or below p's latest and where that epoch
// ends on the leader (OffsetForLeaderEpoch's answer, or a fetch's
// diverging epoch). When the leader does not know p's latest epoch they
// agree at most up to where the epoch it names ends here, as Kafka's
// follower truncation rule says. As Kafka's UnifiedLog.truncateTo, a cut
// at or above the log end still drops the epochs starting there (this
// node led them without appending).
func (f *replicaFetcher) cutDiverged(p *partition, leaderEpoch int32, end int64) error {
	b := f.m.b
	if asked := p.log.LatestEpoch(); leaderEpoch >= 0 && leaderEpoch != asked {
		if _, ours := p.log.EndOffsetForEpoch(leaderEpoch); ours >= 0 {
			end = min(end, ours)
		}
	}
	if end < 0 {
		return nil
	}
	if leo := p.log.LogEndOffset(); end < leo {
		b.logger.Info("truncating diverged replica", "topic", p.topic.name, "partition", p.index,
			"from", leo, "to", end, "leader.epoch", leaderEpoch)
	}
	if err := p.log.TruncateTo(end); err != nil {
		b.logger.Error("truncation failed", "topic", p.topic.name, "partition", p.index, "err", err)
		return err
	}
	return nil
}

// retryLater puts off asking again where s should be truncated, and wakes
// the fetcher when the time comes (it may be waiting on a fetch).
func (f *replicaFetcher) retryLater(s *followed) {
	f.mu.Lock()
	delay := min(truncateRetryFirst<<min(s.retries, 16), truncateRetryLast)
	s.retries++
	s.retryAt = time.Now().Add(delay)
	f.mu.Unlock()
	time.AfterFunc(delay, f.interrupt)
}

// fetch copies one round of batches from the leader.
func (f *replicaFetcher) fetch(ctx context.Context, broker *kgo.Broker, parts map[*partition]followed) bool {
	b := f.m.b
	cc := b.cfg.Cluster
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = b.cfg.NodeID
	req.ReplicaState.ID = b.cfg.NodeID
	req.ReplicaState.Epoch = b.cluster.brokerEpoch()
	req.MaxWaitMillis = int32(cc.ReplicaFetchWaitMax / time.Millisecond)
	req.MinBytes = cc.ReplicaFetchMinBytes
	req.MaxBytes = cc.ReplicaFetchResponseMax
	req.SessionEpoch = -1
	byTopic := map[string]int{}
	n := 0
	throttled := map[*partition]bool{}
	held := false // a partition left out: the follower-side throttle is over its rate
	now := time.Now()
	for p, s := range parts {
		if s.truncate || !s.ready(now) {
			continue
		}
		if p.topic.settings.Load().followerThrottled.has(p.index) && !slices.Contains(p.state.Load().isr, b.cfg.NodeID) {
			if b.throttles.follower.Exceeded(time.Now()) {
				held = true
				continue
			}
			throttled[p] = true
		}
		i, ok := byTopic[p.topic.name]
		if !ok {
			i = len(req.Topics)
			byTopic[p.topic.name] = i
			req.Topics = append(req.Topics, kmsg.FetchRequestTopic{Topic: p.topic.name, TopicID: p.topic.id})
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = p.index, s.epoch
		rp.FetchOffset, rp.LogStartOffset = p.log.LogEndOffset(), p.log.LogStartOffset()
		rp.LastFetchedEpoch = p.log.LatestEpoch()
		rp.PartitionMaxBytes = cc.ReplicaFetchMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		n++
	}
	if n == 0 {
		if held { // as Kafka's fetcher backs off an empty fetch
			select {
			case <-ctx.Done():
			case <-time.After(throttledFetchBackoff):
			}
		}
		return true
	}
	resp, err := f.request(ctx, broker, req)
	if err != nil {
		return false
	}
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 {
		return false
	}
	byID := map[[16]byte]string{}
	for _, rt := range req.Topics {
		byID[rt.TopicID] = rt.Topic
	}
	for _, rt := range fr.Topics {
		name := rt.Topic
		if name == "" {
			name = byID[rt.TopicID]
		}
		t := b.topics.get(name)
		for _, rp := range rt.Partitions {
			p := t.partition(rp.Partition)
			if p == nil || f.still(p, parts[p].epoch) == nil {
				continue
			}
			if throttled[p] {
				b.throttles.follower.Record(int64(len(rp.RecordBatches)), time.Now())
			}
			if !f.applyFetched(p, &rp) {
				f.delay(p)
			}
		}
	}
	return true
}

// throttledFetchBackoff is how long a follower waits when the throttle
// held back every partition it follows from one leader.
const throttledFetchBackoff = 100 * time.Millisecond

// applyFetched appends what the leader sent for p and adopts its high
// watermark and log start offset; false means p is to be put off.
func (f *replicaFetcher) applyFetched(p *partition, rp *kmsg.FetchResponseTopicPartition) bool {
	b := f.m.b
	switch rp.ErrorCode {
	case 0:
		if rp.DivergingEpoch.EndOffset >= 0 { // no records: cut, then fetch again
			return f.cutDiverged(p, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset) == nil
		}
	case errOffsetOutOfRange:
		// Behind the leader's log start (retention moved it): start over
		// there, as Kafka's truncateFullyAndStartAt.
		if start := rp.LogStartOffset; start > p.log.LogEndOffset() {
			if err := p.log.TruncateFullyAndStartAt(start); err != nil {
				b.logger.Error("resetting replica failed", "topic", p.topic.name, "partition", p.index, "err", err)
			}
			return true
		}
		f.markTruncate(p)
		return false
	default:
		return false
	}
	if len(rp.RecordBatches) > 0 {
		if _, err := p.log.AppendReplicated(rp.RecordBatches); err != nil {
			if logstore.ErrorCode(err) != 0 {
				b.logger.Warn("replica append failed", "topic", p.topic.name, "partition", p.index, "err", err)
			}
			f.markTruncate(p)
			return false
		}
	}
	if hw := min(rp.HighWatermark, p.log.LogEndOffset()); hw > p.log.HighWatermark() {
		p.log.SetHighWatermark(hw)
		p.wake() // consumers reading this follower (read_replica.go)
	}
	if start := min(rp.LogStartOffset, p.log.HighWatermark()); start > p.log.LogStartOffset() {
		if _, err := p.log.DeleteRecordsBefore(start); err != nil {
			b.logger.Warn("moving replica log start failed", "topic", p.topic.name, "partition", p.index, "err", err)
		}
	}
	return true
}

// delay puts off fetching p for replica.fetch.backoff.ms.
func (f *replicaFetcher) delay(p *partition) {
	f.mu.Lock()
	if s := f.parts[p]; s != nil {
		s.retryAt = time.Now().Add(f.m.b.cfg.Cluster.ReplicaFetchBackoff)
	}
	f.mu.Unlock()
}

func (f *replicaFetcher) markTruncate(p *partition) {
	f.mu.Lock()
	if s := f.parts[p]; s != nil {
		s.truncate = true
	}
	f.mu.Unlock()
}

// brokerAddr is the address of a broker's inter-broker listener (the
// endpoint it registered under this node's inter-broker listener name).
func (cl *cluster) brokerAddr(id int32) string {
	img := cl.image()
	if img == nil {
		return ""
	}
	br := img.Brokers[id]
	if br == nil {
		return ""
	}
	ib, _, _ := cl.b.cfg.interBrokerListener()
	for _, e := range br.Endpoints {
		if e.Listener == ib.Name {
			return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
		}
	}
	return ""
}

// interBrokerClientOpts are the options of a client to another broker's
// address on the inter-broker listener, logging in as that listener asks
// and connecting through an interBrokerDialer; rcvBuf above 0 is its
// connections' SO_RCVBUF (the replica fetcher's
// replica.socket.receive.buffer.bytes), else the kernel's.
func (b *Broker) interBrokerClientOpts(addr, clientID string, rcvBuf int) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.Dialer(b.newInterBrokerDialer(rcvBuf).dial)}
	if m := b.cfg.InterBrokerSASL; m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	return opts
}
