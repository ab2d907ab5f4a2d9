package controller

import (
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gregor-broker/gregor/acl"
	"github.com/gregor-broker/gregor/delegation"
	"github.com/gregor-broker/gregor/quota"
	"github.com/gregor-broker/gregor/sasl"
	"github.com/hashicorp/raft"
)

// fsm is the raft state machine: it holds the current image and swaps in a
// new one on every applied entry, then wakes the Changed waiters. It also
// counts the record bytes applied since the last snapshot (snapshots.go).
type fsm struct {
	log   *slog.Logger
	image atomic.Pointer[Image]

	mu      sync.Mutex
	changed chan struct{}

	unsnapshotted atomic.Int64  // bytes of records applied since the last snapshot
	snapshotBytes int64         // how many make a snapshot due
	snapshotDue   chan struct{} // signalled when they are reached
}

func newFSM(log *slog.Logger, snapshotBytes int64) *fsm {
	f := &fsm{log: log, changed: make(chan struct{}), snapshotBytes: snapshotBytes, snapshotDue: make(chan struct{}, 1)}
	f.image.Store(emptyImage())
	return f
}

func (f *fsm) publish(img *Image) {
	f.image.Store(img)
	f.mu.Lock()
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

func (f *fsm) changedCh() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// Apply installs one committed batch. A batch that does not decode (never
// written by this code) is skipped with a log line, on every replica alike.
func (f *fsm) Apply(l *raft.Log) interface{} {
	if l.Type != raft.LogCommand {
		return nil
	}
	recs, err := decodeBatch(l.Data)
	if err != nil {
		f.log.Error("controller: skipping metadata entry", "index", l.Index, "err", err)
		return nil
	}
	f.publish(f.image.Load().apply(l.Index, recs))
	if f.unsnapshotted.Add(int64(len(l.Data))) >= f.snapshotBytes {
		select {
		case f.snapshotDue <- struct{}{}:
		default:
		}
	}
	return nil
}

// StoreConfiguration is raft's call for a committed voter change (a
// configuration entry, which carries no records): the image stays, but the
// Changed waiters wake, so that a broker learns a new voter's address
// (Controller.Voters) before it has to send that voter its heartbeats.
func (f *fsm) StoreConfiguration(uint64, raft.Configuration) { f.publish(f.image.Load()) }

// snapshotForm is the JSON written by snapshots: the image without its
// derived index and with configs as a list (struct keys are not JSON keys).
type snapshotForm struct {
	ClusterID         string
	Offset            uint64
	Brokers           []*Broker
	Topics            []*Topic
	Configs           []ConfigRecord
	NextProducerID    int64
	ClientQuotas      []quota.Entry
	ScramCredentials  []sasl.CredentialChange `json:",omitempty"`
	ACLs              []acl.Change            `json:",omitempty"`
	Features          map[string]int16        `json:",omitempty"`
	DelegationTokens  []delegation.Token      `json:",omitempty"`
	Controllers       []*RegisteredController `json:",omitempty"`
	AdoptedSingleNode *int32                  `json:",omitempty"`
}

type fsmSnapshot struct{ img *Image }

// Snapshot captures the image; raft calls it between applies, so the
// bytes counted so far are exactly those the snapshot holds.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.unsnapshotted.Store(0)
	return fsmSnapshot{f.image.Load()}, nil
}

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	img := s.img
	form := snapshotForm{ClusterID: img.ClusterID, Offset: img.Offset, NextProducerID: img.NextProducerID,
		ClientQuotas: quota.Sorted(img.ClientQuotas), ScramCredentials: sasl.Changes(img.ScramCredentials),
		ACLs: acl.Changes(img.ACLs), Features: img.Features, DelegationTokens: delegation.Sorted(img.DelegationTokens),
		AdoptedSingleNode: img.AdoptedSingleNode}
	for _, id := range img.SortedBrokerIDs() {
		form.Brokers = append(form.Brokers, img.Brokers[id])
	}
	for _, name := range img.SortedTopicNames() {
		form.Topics = append(form.Topics, img.Topics[name])
	}
	for _, id := range slices.Sorted(maps.Keys(img.Controllers)) {
		form.Controllers = append(form.Controllers, img.Controllers[id])
	}
	for res, values := range img.Configs {
		form.Configs = append(form.Configs, ConfigRecord{Resource: res, Values: values})
	}
	if err := json.NewEncoder(sink).Encode(&form); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (fsmSnapshot) Release() {}

// Restore replaces the image with a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var form snapshotForm
	if err := json.NewDecoder(rc).Decode(&form); err != nil {
		return err
	}
	img := emptyImage()
	img.ClusterID, img.Offset, img.NextProducerID = form.ClusterID, form.Offset, form.NextProducerID
	for _, b := range form.Brokers {
		img.Brokers[b.ID] = b
	}
	for _, t := range form.Topics {
		img.Topics[t.Name] = t
		img.TopicsByID[t.ID] = t
	}
	for _, c := range form.Configs {
		img.Configs[c.Resource] = c.Values
	}
	for _, e := range form.ClientQuotas {
		img.ClientQuotas[e.Entity.Key()] = e
	}
	if len(form.ACLs) > 0 {
		img.ACLs = map[string]acl.Binding{}
		for _, c := range form.ACLs {
			c.Apply(img.ACLs)
		}
	}
	if len(form.ScramCredentials) > 0 {
		img.ScramCredentials = map[string]sasl.Credential{}
		for _, c := range form.ScramCredentials {
			c.Apply(img.ScramCredentials)
		}
	}
	img.Features, img.AdoptedSingleNode = form.Features, form.AdoptedSingleNode
	for _, rc := range form.Controllers {
		if img.Controllers == nil {
			img.Controllers = map[int32]*RegisteredController{}
		}
		img.Controllers[rc.ID] = rc
	}
	for _, t := range form.DelegationTokens {
		img.DelegationTokens = delegation.Applied(img.DelegationTokens, delegation.Change{Set: &t})
	}
	f.publish(img)
	f.unsnapshotted.Store(0)
	return nil
}
