package broker

import (
	"crypto/rand"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topic is one topic and its partitions. The partitions slice only grows
// (CreatePartitions) and is replaced whole under the registry lock, so a
// reader holding an old slice sees consistent partitions.
type topic struct {
	name      string
	id        [16]byte
	node      int32                        // this node's id
	parts     atomic.Pointer[[]*partition] // replaced whole, never changed in place
	settings  atomic.Pointer[topicSettings]
	overrides map[string]string // in a cluster: the image's overrides last applied
}

// partition is a replica of a partition on this node: its log, its
// replication state, and the requests parked on it (fetches waiting for
// data, acks=all produces waiting for the high watermark). On a single
// node the high watermark is the log end offset; in a cluster the leader
// moves it as followers fetch (replica.go). In a cluster a topic's
// partitions slice has nil entries for partitions with no replica here.
type partition struct {
	topic *topic
	index int32
	log   *logstore.Log
	state atomic.Pointer[replicaState]
	// stateMu serialises state changes (installState), which take it
	// whole, and holds them off a leader's append (appendAsLeader), which
	// reads it; other readers load state.
	stateMu sync.RWMutex

	leader leaderState // used while this node leads the partition

	waitMu  sync.Mutex
	waiters map[*waiter]struct{}
}

// waiter is a parked fetch; a partition's append signals it.
type waiter struct{ ch chan struct{} }

func newWaiter() *waiter { return &waiter{ch: make(chan struct{}, 1)} }

func (p *partition) addWaiter(w *waiter) {
	p.waitMu.Lock()
	if p.waiters == nil {
		p.waiters = map[*waiter]struct{}{}
	}
	p.waiters[w] = struct{}{}
	p.waitMu.Unlock()
}

func (p *partition) removeWaiter(w *waiter) {
	p.waitMu.Lock()
	delete(p.waiters, w)
	p.waitMu.Unlock()
}

// wake signals every parked fetch; called after an append moves the high
// watermark, and when the partition goes away.
func (p *partition) wake() {
	p.waitMu.Lock()
	for w := range p.waiters {
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
	p.waitMu.Unlock()
}

// topicRegistry holds every topic by name and id.
// Lock order: registry mu, then a partition's waitMu.
type topicRegistry struct {
	b      *Broker
	mu     sync.RWMutex
	byName map[string]*topic
	byID   map[[16]byte]*topic
}

func newTopicRegistry(b *Broker) *topicRegistry {
	return &topicRegistry{b: b, byName: map[string]*topic{}, byID: map[[16]byte]*topic{}}
}

// load rebuilds the registry from the partition logs found in the log dir.
func (r *topicRegistry) load() error {
	if r.b.cluster != nil {
		return nil // the controller's image says which replicas are here
	}
	byTopic := map[string][]logstore.TopicPartition{}
	for tp := range r.b.dirs.Logs() {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp)
	}
	logs := r.b.dirs.Logs()
	for name, tps := range byTopic {
		sort.Slice(tps, func(i, j int) bool { return tps[i].Partition < tps[j].Partition })
		t := &topic{name: name, node: r.b.cfg.NodeID}
		overrides := r.b.meta.topicConfigs(name)
		settings := r.b.liveConfig().settingsFor(overrides)
		t.settings.Store(&settings)
		var parts []*partition
		for i, tp := range tps {
			if tp.Partition != int32(i) {
				return fmt.Errorf("topic %s: partition %d is missing from the log dir", name, i)
			}
			l := logs[tp]
			t.id = l.TopicID()
			p := newSingleNodePartition(t, tp.Partition, l)
			if err := l.AssignLeaderEpoch(0); err != nil {
				return err
			}
			// This node is the whole ISR: what survived recovery is
			// committed, whatever the last checkpoint said.
			p.advanceHighWatermark()
			parts = append(parts, p)
		}
		t.setPartitions(parts)
		r.applySettings(t, overrides)
		r.byName[name] = t
		r.byID[t.id] = t
	}
	return nil
}

func (r *topicRegistry) applySettings(t *topic, overrides map[string]string) {
	s := r.b.liveConfig().settingsFor(overrides)
	t.settings.Store(&s)
	for _, p := range t.partitions() {
		if p != nil {
			p.log.SetConfig(s.log)
		}
	}
}

func (r *topicRegistry) get(name string) *topic {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[name]
}

func (r *topicRegistry) getByID(id [16]byte) *topic {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byID[id]
}

// partitions is the topic's partitions, indexed by number.
func (t *topic) partitions() []*partition {
	if ps := t.parts.Load(); ps != nil {
		return *ps
	}
	return nil
}

func (t *topic) setPartitions(ps []*partition) { t.parts.Store(&ps) }

// partition returns the partition or nil.
func (t *topic) partition(i int32) *partition {
	if t == nil {
		return nil
	}
	ps := t.partitions()
	if i < 0 || int(i) >= len(ps) {
		return nil
	}
	return ps[i]
}

// all returns the topics sorted by name.
func (r *topicRegistry) all() []*topic {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*topic, 0, len(r.byName))
	for _, t := range r.byName {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// createError is a Kafka error code with its message.
type createError struct {
	code int16
	msg  string
}

func (e *createError) Error() string { return e.msg }

// create makes a topic with n partitions and the given overrides. With
// validateOnly it checks everything and creates nothing.
func (r *topicRegistry) create(name string, n int32, configs map[string]string, validateOnly bool) (*topic, error) {
	if err := controller.ValidateTopicName(name); err != nil {
		return nil, &createError{errInvalidTopic, err.Error()}
	}
	if err := validateTopicConfigs(configs, r.b.liveConfig()); err != nil {
		return nil, &createError{errInvalidConfig, err.Error()}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ce := r.nameTakenLocked(name); ce != nil {
		return nil, ce
	}
	t := &topic{name: name, node: r.b.cfg.NodeID}
	for {
		rand.Read(t.id[:])
		t.id[6] = t.id[6]&0x0f | 0x40 // version 4, as Kafka's Uuid.randomUuid
		t.id[8] = t.id[8]&0x3f | 0x80
		if _, taken := r.byID[t.id]; !taken && t.id != [16]byte{} {
			break
		}
	}
	if validateOnly { // Kafka answers with the id the topic would have had
		return t, nil
	}
	// Write the overrides, or clear any a crash left behind from an earlier
	// topic of the same name: the metadata change that makes the topic.
	err := r.b.meta.update(func(d *metaData) {
		if len(configs) > 0 {
			d.TopicConfigs[name] = configs
		} else {
			delete(d.TopicConfigs, name)
		}
	})
	if err != nil {
		return nil, err
	}
	s := r.b.liveConfig().settingsFor(configs)
	t.settings.Store(&s)
	if err := r.addPartitionsLocked(t, n); err != nil {
		return nil, err
	}
	r.byName[name] = t
	r.byID[t.id] = t
	r.b.logger.Info("created topic", "topic", name, "partitions", n)
	return t, nil
}

// nameTaken refuses a new topic's name that an existing topic has, or
// that collides with one's once '.' and '_' are taken alike.
func (r *topicRegistry) nameTaken(name string) *createError {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.nameTakenLocked(name)
}

func (r *topicRegistry) nameTakenLocked(name string) *createError {
	if _, ok := r.byName[name]; ok {
		return &createError{errTopicAlreadyExists, fmt.Sprintf("Topic '%s' already exists.", name)}
	}
	for other := range r.byName {
		if collides(name, other) {
			return &createError{errInvalidTopic, fmt.Sprintf("Topic '%s' collides with existing topic: %s", name, other)}
		}
	}
	return nil
}

// addPartitionsLocked grows t to n partitions; the caller holds r.mu.
func (r *topicRegistry) addPartitionsLocked(t *topic, n int32) error {
	parts := append([]*partition(nil), t.partitions()...)
	var tps []logstore.TopicPartition
	for i := int32(len(parts)); i < n; i++ {
		tps = append(tps, logstore.TopicPartition{Topic: t.name, Partition: i})
	}
	// A single node leads every partition at epoch 0.
	logs, err := r.b.dirs.CreateLogsAtEpoch(tps, t.id, t.settings.Load().log, 0)
	if err != nil {
		return err
	}
	for i, l := range logs {
		parts = append(parts, newSingleNodePartition(t, tps[i].Partition, l))
	}
	if err := r.b.dirs.SyncLogDirs(); err != nil {
		return err
	}
	t.setPartitions(parts)
	return nil
}

// addPartitions grows a topic to total partitions (CreatePartitions).
func (r *topicRegistry) addPartitions(name string, total int32, validateOnly bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.byName[name]
	if t == nil {
		return &createError{errUnknownTopicOrPartition, "This server does not host this topic-partition."}
	}
	if code, msg := controller.PartitionIncreaseRefusal(kmsg.CreatePartitionsRequestTopic{Topic: name, Count: total}, len(t.partitions())); code != 0 {
		return &createError{code, *msg}
	}
	if validateOnly {
		return nil
	}
	if err := r.addPartitionsLocked(t, total); err != nil {
		return err
	}
	return r.b.meta.committed()
}

// delete removes a topic and its data.
func (r *topicRegistry) delete(t *topic) error {
	r.mu.Lock()
	if r.byName[t.name] != t {
		r.mu.Unlock()
		return &createError{errUnknownTopicOrPartition, "This server does not host this topic-partition."}
	}
	delete(r.byName, t.name)
	delete(r.byID, t.id)
	r.mu.Unlock()
	var firstErr error
	for _, p := range t.partitions() {
		if p == nil {
			continue
		}
		if r.b.cluster != nil {
			r.b.cluster.fetchers.remove(p)
		}
		if err := r.b.dirs.DeleteLog(logstore.TopicPartition{Topic: t.name, Partition: p.index}); err != nil && firstErr == nil {
			firstErr = err
		}
		p.wake()
	}
	if r.b.cluster == nil { // a cluster's topic configs are the controller's
		if err := r.b.meta.update(func(d *metaData) { delete(d.TopicConfigs, t.name) }); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, ct := range r.b.coordinatorTopics() {
		ct.deleted(t)
	}
	r.b.logger.Info("deleted topic", "topic", t.name)
	return firstErr
}

// wakeAll releases every parked fetch, at shutdown.
func (r *topicRegistry) wakeAll() {
	for _, t := range r.all() {
		for _, p := range t.partitions() {
			if p != nil {
				p.wake()
			}
		}
	}
}

// collides reports whether two different names map to the same metric
// name, which Kafka forbids: '.' and '_' are the same there.
func collides(a, b string) bool {
	return a != b && strings.ReplaceAll(a, ".", "_") == strings.ReplaceAll(b, ".", "_")
}

// isInternal reports Kafka's internal topics.
func isInternal(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state" || name == shareStateTopic
}
