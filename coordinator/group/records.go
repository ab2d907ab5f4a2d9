package group

import (
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The record versions written, as Kafka 4 writes them: OffsetCommitKey v1,
// OffsetCommitValue v3 (v1 when the commit carries an expire time),
// GroupMetadataKey v2, GroupMetadataValue v3.
const (
	offsetKeyVersion   = 1
	offsetValueVersion = 3
	groupKeyVersion    = 2
	groupValueVersion  = 3
)

type keyValue struct{ key, value []byte }

// write appends records to the group's partition as one batch and returns
// the offset of its first record.
func (c *Coordinator) write(g *classicGroup, kvs []keyValue) (int64, error) {
	return c.writeBatch(g, kvs, noProducer)
}

// producer identifies the transactional producer of a batch written for a
// TxnOffsetCommit; noProducer marks the coordinator's own batches.
type producer struct {
	id    int64
	epoch int16
}

var noProducer = producer{id: -1, epoch: -1}

// writeBatch appends records as one batch: a plain one, or, for a
// producer, a transactional one with its id and epoch and base sequence -1,
// as Kafka writes transactional offset commits (the log checks the epoch
// only).
func (c *Coordinator) writeBatch(g *classicGroup, kvs []keyValue, p producer) (int64, error) {
	now := c.clock.Now().UnixMilli()
	recs := make([]protocol.Record, len(kvs))
	for i, kv := range kvs {
		recs[i] = protocol.Record{Offset: int64(i), Timestamp: now, Key: kv.key, Value: kv.value}
	}
	h := protocol.BatchHeader{
		PartitionLeaderEpoch: -1, Attributes: int16(c.cfg.Compression),
		ProducerID: p.id, ProducerEpoch: p.epoch, BaseSequence: -1,
	}
	if p.id >= 0 {
		h.Attributes |= protocol.AttrTransactional
	}
	batch, err := protocol.AppendBatch(nil, h, recs)
	if err != nil {
		return 0, err
	}
	return c.log.Append(g.partition, batch)
}

func groupKey(id string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: id}
	return k.AppendTo(nil)
}

func offsetKey(group string, tp topicPartition) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: group, Topic: tp.topic, Partition: tp.partition}
	return k.AppendTo(nil)
}

// storeGroup writes the group's metadata: generation, protocol, leader and
// every member with its subscription and assignment.
func (c *Coordinator) storeGroup(g *classicGroup) error {
	v := kmsg.GroupMetadataValue{
		Version:               groupValueVersion,
		ProtocolType:          g.protocolType,
		Generation:            g.generation,
		CurrentStateTimestamp: -1,
	}
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" && len(g.members) > 0 {
		l := g.leader
		v.Leader = &l
	}
	if !g.stateSince.IsZero() {
		v.CurrentStateTimestamp = g.stateSince.UnixMilli()
	}
	for _, m := range g.sortedMembers() {
		v.Members = append(v.Members, kmsg.GroupMetadataValueMember{
			MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost,
			RebalanceTimeoutMillis: int32(m.rebalanceTimeout.Milliseconds()),
			SessionTimeoutMillis:   int32(m.sessionTimeout.Milliseconds()),
			Subscription:           orEmpty(m.metadataFor(g.protocol)),
			Assignment:             orEmpty(m.assignment),
		})
	}
	_, err := c.write(g, []keyValue{{groupKey(g.id), v.AppendTo(nil)}})
	return err
}

func orEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// storeOffsets writes the commits as one batch (transactional when p is a
// producer) and sets the log offset of each one's record.
func (c *Coordinator) storeOffsets(g *classicGroup, commits []offsetCommit, p producer) error {
	kvs := make([]keyValue, len(commits))
	for i, cm := range commits {
		v := kmsg.OffsetCommitValue{
			Version: offsetValueVersion, Offset: cm.entry.offset, LeaderEpoch: cm.entry.leaderEpoch,
			Metadata: cm.entry.metadata, CommitTimestamp: cm.entry.commitTime,
		}
		if cm.entry.expireTime >= 0 {
			v.Version, v.ExpireTimestamp = 1, cm.entry.expireTime
		}
		kvs[i] = keyValue{offsetKey(g.id, cm.tp), v.AppendTo(nil)}
	}
	base, err := c.writeBatch(g, kvs, p)
	if err != nil {
		return err
	}
	for i := range commits {
		commits[i].entry.recordOffset = base + int64(i)
	}
	return nil
}

// deleteOffsets writes tombstones for the partitions and forgets their
// committed and pending transactional offsets: in Kafka a tombstone also
// removes the pending offsets of open transactions for that partition.
func (c *Coordinator) deleteOffsets(g *classicGroup, tps []topicPartition) error {
	kvs := make([]keyValue, len(tps))
	for i, tp := range tps {
		kvs[i] = keyValue{key: offsetKey(g.id, tp)}
	}
	if _, err := c.write(g, kvs); err != nil {
		return err
	}
	for _, tp := range tps {
		delete(g.offsets, tp)
		g.dropPending(tp)
	}
	return nil
}

// deleteGroup writes tombstones for the group (a consumer or share group's
// records too) and all its offsets,
// committed or pending in an open transaction (as Kafka's deleteAllOffsets),
// and marks it Dead; the caller removes it from the map. A transaction's
// later commit marker then finds nothing of it to commit.
func (c *Coordinator) deleteGroup(g *classicGroup) error {
	tps := make(map[topicPartition]bool, len(g.offsets))
	for tp := range g.offsets {
		tps[tp] = true
	}
	for _, offs := range g.pendingTxn {
		for tp := range offs {
			tps[tp] = true
		}
	}
	kvs := make([]keyValue, 0, len(tps)+1)
	for tp := range tps {
		kvs = append(kvs, keyValue{key: offsetKey(g.id, tp)})
	}
	kvs = append(kvs, keyValue{key: groupKey(g.id)})
	for _, k := range tombstoneOrder(sortedKeys(g.storedRecords)) {
		kvs = append(kvs, keyValue{key: []byte(k)})
	}
	if _, err := c.write(g, kvs); err != nil {
		return err
	}
	g.consumer, g.share, g.streams, g.storedRecords = nil, nil, nil, nil
	clear(g.offsets)
	c.forgetPending(g)
	g.transition(Dead, c.clock.Now())
	return nil
}

// replayer rebuilds groups from a partition's records: the last record of
// each key wins and a tombstone removes it, as compaction would leave it.
// Offset records in a batch with a producer id are a transaction's: they
// wait in pending until the producer's end-transaction marker (a control
// batch) commits or drops them, as in Kafka's OffsetMetadataManager.
type replayer struct {
	partition int32
	metadata  map[string]*kmsg.GroupMetadataValue
	offsets   map[string]map[topicPartition]offsetEntry
	pending   map[int64]map[string]map[topicPartition]offsetEntry // producer -> group -> offsets
	err       error
	// Consumer and share groups (consumer_records.go, share_records.go),
	// their records as last written, and which kind of group each id was
	// last written as: "classic", "consumer" or "share".
	consumers     map[string]*replayedConsumer
	shares        map[string]*replayedShare
	streams       map[string]*replayedStreams
	storedRecords map[string]map[string][]byte
	kind          map[string]string
}

func newReplayer(partition int32) *replayer {
	return &replayer{
		partition: partition,
		metadata:  map[string]*kmsg.GroupMetadataValue{},
		offsets:   map[string]map[topicPartition]offsetEntry{},
		pending:   map[int64]map[string]map[topicPartition]offsetEntry{},

		consumers:     map[string]*replayedConsumer{},
		shares:        map[string]*replayedShare{},
		streams:       map[string]*replayedStreams{},
		storedRecords: map[string]map[string][]byte{},
		kind:          map[string]string{},
	}
}

func (r *replayer) batches(b []byte) error {
	return protocol.EachBatch(b, func(h protocol.BatchHeader, batch []byte) error {
		if h.Attributes&protocol.AttrControl != 0 {
			// Only end-transaction markers are written to this topic;
			// any other control record is skipped, as Kafka's loader does.
			if m, err := protocol.ParseEndTxnMarker(batch); err == nil {
				r.endTxn(h.ProducerID, m.Commit)
			}
			return nil
		}
		pid := int64(-1)
		if h.Attributes&protocol.AttrTransactional != 0 {
			pid = h.ProducerID
		}
		return protocol.Records(batch, func(rec *protocol.Record) error { return r.record(pid, rec) })
	})
}

// record applies one record of a batch written by producerID (-1 for the
// coordinator's own batches).
func (r *replayer) record(producerID int64, rec *protocol.Record) error {
	if len(rec.Key) < 2 {
		return nil
	}
	switch version := int16(rec.Key[0])<<8 | int16(rec.Key[1]); version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(rec.Key); err != nil {
			return err
		}
		tp := topicPartition{k.Topic, k.Partition}
		if rec.Value == nil {
			delete(r.offsets[k.Group], tp)
			for _, groups := range r.pending {
				delete(groups[k.Group], tp)
			}
			return nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(rec.Value); err != nil {
			return err
		}
		e := offsetEntry{offset: v.Offset, leaderEpoch: -1, metadata: v.Metadata, commitTime: v.CommitTimestamp, expireTime: -1, recordOffset: rec.Offset}
		if v.Version >= 3 {
			e.leaderEpoch = v.LeaderEpoch
		}
		if v.Version == 1 {
			e.expireTime = v.ExpireTimestamp
		}
		offsets := r.offsets
		if producerID >= 0 {
			if r.pending[producerID] == nil {
				r.pending[producerID] = map[string]map[topicPartition]offsetEntry{}
			}
			offsets = r.pending[producerID]
		}
		if offsets[k.Group] == nil {
			offsets[k.Group] = map[topicPartition]offsetEntry{}
		}
		offsets[k.Group][tp] = e
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(rec.Key); err != nil {
			return err
		}
		if rec.Value == nil {
			delete(r.metadata, k.Group)
			delete(r.offsets, k.Group)
			for _, groups := range r.pending {
				delete(groups, k.Group)
			}
			return nil
		}
		v := new(kmsg.GroupMetadataValue)
		if err := v.ReadFrom(rec.Value); err != nil {
			return err
		}
		// ReadFrom may alias the record's memory, which is reused.
		cp := *v
		cp.Members = nil
		for _, m := range v.Members {
			m.Subscription = append([]byte{}, m.Subscription...)
			m.Assignment = append([]byte{}, m.Assignment...)
			cp.Members = append(cp.Members, m)
		}
		r.metadata[k.Group] = &cp
		r.kind[k.Group] = "classic"
	case cgMetadataKeyVersion, 4, cgMemberKeyVersion, cgTargetMetadataKeyVersion, cgTargetMemberKeyVersion, cgCurrentKeyVersion:
		return r.consumerRecord(version, rec.Key, rec.Value)
	case shPartitionMetadataKeyVersion, shMemberKeyVersion, shMetadataKeyVersion, shTargetMetadataKeyVersion,
		shTargetMemberKeyVersion, shCurrentKeyVersion, shStateKeyVersion:
		return r.shareRecord(version, rec.Key, rec.Value)
	case stMetadataKeyVersion, 18, stMemberKeyVersion, stTargetMetadataKeyVersion, stTargetMemberKeyVersion,
		stCurrentKeyVersion, stTopologyKeyVersion:
		return r.streamsRecord(version, rec.Key, rec.Value)
	}
	return nil
}

// endTxn applies a producer's end-transaction marker: on commit its
// pending offsets become committed, except where the committed offset's
// record is later in the log than the pending one's (Kafka keeps the most
// recent of a transactional and a plain commit); on abort they are dropped.
func (r *replayer) endTxn(producerID int64, commit bool) {
	groups := r.pending[producerID]
	delete(r.pending, producerID)
	if !commit {
		return
	}
	for id, offs := range groups {
		if r.offsets[id] == nil {
			r.offsets[id] = map[topicPartition]offsetEntry{}
		}
		commitPending(r.offsets[id], offs)
	}
}

// commitPending moves a transaction's offsets into committed, the later
// record winning.
func commitPending(committed, pending map[topicPartition]offsetEntry) {
	for tp, e := range pending {
		if cur, ok := committed[tp]; !ok || e.recordOffset > cur.recordOffset {
			committed[tp] = e
		}
	}
}

// groups turns what was replayed into groups: with members, Stable; with
// only offsets, Empty.
func (r *replayer) groups(now time.Time) map[string]*classicGroup {
	out := map[string]*classicGroup{}
	get := func(id string) *classicGroup {
		g := out[id]
		if g == nil {
			g = newGroup(id, r.partition, time.Time{})
			out[id] = g
		}
		return g
	}
	for id, rc := range r.consumers {
		if r.kind[id] == "consumer" {
			g := get(id)
			g.consumer = rc.group()
			g.storedRecords = r.storedRecords[id]
		}
	}
	for id, rs := range r.shares {
		if r.kind[id] == "share" {
			g := get(id)
			g.share = rs.group()
			g.storedRecords = r.storedRecords[id]
		}
	}
	for id, rs := range r.streams {
		if r.kind[id] == "streams" {
			g := get(id)
			g.streams = rs.group()
			g.storedRecords = r.storedRecords[id]
		}
	}
	for id, v := range r.metadata {
		if r.kind[id] != "classic" {
			continue
		}
		g := get(id)
		g.generation = v.Generation
		g.protocolType = v.ProtocolType
		if v.Protocol != nil {
			g.protocol = *v.Protocol
		}
		if v.CurrentStateTimestamp >= 0 {
			g.stateSince = time.UnixMilli(v.CurrentStateTimestamp)
		}
		for _, vm := range v.Members {
			rebalance := vm.RebalanceTimeoutMillis
			if rebalance < 0 {
				rebalance = vm.SessionTimeoutMillis
			}
			m := &member{
				id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
				rebalanceTimeout: time.Duration(rebalance) * time.Millisecond,
				sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
				protocolType:     v.ProtocolType,
				protocols:        []kmsg.JoinGroupRequestProtocol{{Name: g.protocol, Metadata: vm.Subscription}},
				assignment:       vm.Assignment,
			}
			g.add(m)
		}
		// add() picked the first member; the record names the leader.
		if v.Leader != nil {
			if _, ok := g.members[*v.Leader]; ok {
				g.leader = *v.Leader
			}
		}
		g.protocolType = v.ProtocolType
		if len(g.members) > 0 {
			g.state = Stable
		}
		g.subscribed = g.computeSubscribed()
	}
	for id, offs := range r.offsets {
		if len(offs) == 0 {
			continue
		}
		g := get(id)
		for tp, e := range offs {
			g.offsets[tp] = e
		}
	}
	// Transactions still open at the end of the log: their markers come
	// later, through CompleteTxn.
	for pid, groups := range r.pending {
		for id, offs := range groups {
			if len(offs) == 0 {
				continue
			}
			g := get(id)
			if g.pendingTxn[pid] == nil {
				g.pendingTxn[pid] = map[topicPartition]offsetEntry{}
			}
			for tp, e := range offs {
				g.pendingTxn[pid][tp] = e
			}
		}
	}
	for _, g := range out {
		if g.stateSince.IsZero() && g.state != Empty {
			g.stateSince = now
		}
	}
	return out
}
