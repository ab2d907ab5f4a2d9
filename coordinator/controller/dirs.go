package controller

import (
	"bytes"
	"cmp"
	"maps"
	"slices"

	"github.com/gregor-broker/gregor/internal/features"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Replica directories (KIP-858). A broker registers the Uuids of its log
// dirs, and tells the active controller which dir holds each of its
// replicas (AssignReplicasToDirs) once it has created or moved the log;
// Partition.Directories records it. When a log dir fails, the broker's
// heartbeats list it in OfflineLogDirs: the controller records it
// (Broker.OfflineLogDirs) and takes the broker's replicas in that dir out
// of their ISRs and ELRs, moving leadership away, as fencing the broker
// would for those partitions alone (Kafka's handleDirectoriesOffline).
//
// A replica is online (ReplicaOnline) while its dir is one the broker
// registered and has not reported failed; an unassigned replica counts as
// online, as Kafka's UNASSIGNED does. An offline replica may not lead or
// join an ISR (the rules of elect.go, alterpartition.go), and Metadata
// lists it as offline. A new registration (a restart) brings the broker's
// dirs back online; a replica assigned to a dir the broker no longer has
// stays offline until the broker assigns it again. Its log was lost with
// the dir, so that assignment also takes it out of the ISR and ELR, to
// catch up as a new replica would.

// ReplicaOnline reports whether broker id's replica of p is in a log dir
// that broker has and has not reported failed.
func (img *Image) ReplicaOnline(p Partition, id int32) bool {
	dir, ok := p.Directories[id]
	if !ok {
		return true
	}
	return img.Brokers[id].dirOnline(dir)
}

// dirOnline reports whether dir is a registered log dir of b that has not
// failed. A broker that registered no dirs has every dir online.
func (b *Broker) dirOnline(dir [16]byte) bool {
	if b == nil {
		return false
	}
	return (len(b.LogDirs) == 0 || slices.Contains(b.LogDirs, dir)) && !slices.Contains(b.OfflineLogDirs, dir)
}

// offlineDirRecords handles the OfflineLogDirs of broker b's heartbeat:
// the registered dirs not yet known to have failed are recorded (others
// are ignored, as Kafka intersects them with the registration), and b's
// replicas in them leave their ISRs and ELRs, with new leaders where b
// led.
func (c *Controller) offlineDirRecords(img *Image, b *Broker, offline [][16]byte) []Record {
	var failed [][16]byte
	for _, d := range offline {
		registered := len(b.LogDirs) == 0 || slices.Contains(b.LogDirs, d)
		if registered && !slices.Contains(b.OfflineLogDirs, d) && !slices.Contains(failed, d) {
			failed = append(failed, d)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	c.log.Warn("controller: log dirs of a broker failed; its replicas in them go offline", "broker", b.ID, "dirs", len(failed))
	recs := []Record{{BrokerOfflineDirs: &BrokerDirs{ID: b.ID, Dirs: append(slices.Clone(b.OfflineLogDirs), failed...)}}}
	return append(recs, partitionRecords(img, func(t *Topic, p Partition) Partition {
		if dir, ok := p.Directories[b.ID]; !ok || !slices.Contains(failed, dir) {
			return p
		}
		return c.dropReplica(img, t, p, p.clone(), b.ID)
	})...)
}

// dropReplica takes broker id's replica out of next's ISR and ELR (its
// log is gone or unreachable) and elects a leader among the others.
func (c *Controller) dropReplica(img *Image, t *Topic, p, next Partition, id int32) Partition {
	next.ISR, next.ELR = without(next.ISR, id), without(next.ELR, id)
	r := c.rules(img, t.Name, p, usableExcept(img, id))
	r.dropped = id
	return settle(p, next, r)
}

// assignReplicasToDirs handles AssignReplicasToDirs: each listed replica
// of the sending broker is recorded in its dir. Errors are per partition,
// as in Kafka: UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, and
// NOT_LEADER_OR_FOLLOWER for a partition the broker has no replica of.
// A replica assigned to a failed dir, or moved out of a dir the broker
// lost, leaves the ISR and ELR (see above).
func (c *Controller) assignReplicasToDirs(req *kmsg.AssignReplicasToDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AssignReplicasToDirsResponse)
	img := c.Image()
	b := img.Brokers[req.BrokerID]
	switch {
	case b == nil:
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		return resp
	case b.Epoch != req.BrokerEpoch:
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	type replica struct {
		topic *Topic
		index int32
	}
	assigned := map[replica][16]byte{}
	for _, d := range req.Directories {
		rd := kmsg.AssignReplicasToDirsResponseDirectory{ID: d.ID}
		for _, rt := range d.Topics {
			t := img.TopicsByID[rt.TopicID]
			out := kmsg.AssignReplicasToDirsResponseDirectoryTopic{TopicID: rt.TopicID}
			for _, rp := range rt.Partitions {
				var code int16
				switch {
				case t == nil:
					code = kerr.UnknownTopicID.Code
				case rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions):
					code = kerr.UnknownTopicOrPartition.Code
				case !slices.Contains(t.Partitions[rp.Partition].Replicas, b.ID):
					code = kerr.NotLeaderForPartition.Code
				default:
					assigned[replica{t, rp.Partition}] = d.ID
				}
				out.Partitions = append(out.Partitions, kmsg.AssignReplicasToDirsResponseDirectoryTopicPartition{Partition: rp.Partition, ErrorCode: code})
			}
			rd.Topics = append(rd.Topics, out)
		}
		resp.Directories = append(resp.Directories, rd)
	}
	order := slices.SortedFunc(maps.Keys(assigned), func(x, y replica) int {
		return cmp.Or(cmp.Compare(x.topic.Name, y.topic.Name), cmp.Compare(x.index, y.index))
	})
	var recs []Record
	for _, r := range order {
		dir := assigned[r]
		p := r.topic.Partitions[r.index]
		next := p.clone()
		if next.Directories == nil {
			next.Directories = map[int32][16]byte{}
		}
		next.Directories[b.ID] = dir
		if old, had := p.Directories[b.ID]; !b.dirOnline(dir) || (had && old != dir && !b.dirOnline(old)) {
			next = c.dropReplica(img, r.topic, p, next, b.ID)
		} else { // a replica coming online may lead a leaderless partition
			next = settle(p, next, c.rules(img, r.topic.Name, next, img.usable))
		}
		if bumpEpochs(p, &next) {
			recs = append(recs, Record{Partition: &PartitionRecord{TopicID: r.topic.ID, Index: r.index, Partition: next}})
		}
	}
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	return resp
}

// cordonedDirRecords records the cordoned log dirs a heartbeat reports
// when they changed (KIP-1066). A heartbeat without the list (nil: the
// broker has not caught up with the metadata, which holds its dynamic
// configs) changes nothing, nor does one before metadata.version 4.3-IV0.
func cordonedDirRecords(img *Image, b *Broker, cordoned [][16]byte) []Record {
	if cordoned == nil || features.Level(img.Features, features.MetadataVersion) < features.CordonedLogDirs {
		return nil
	}
	sorted := slices.SortedFunc(slices.Values(cordoned), func(x, y [16]byte) int { return bytes.Compare(x[:], y[:]) })
	sorted = slices.Compact(sorted)
	if slices.Equal(sorted, b.CordonedLogDirs) {
		return nil
	}
	return []Record{{BrokerCordonedDirs: &BrokerDirs{ID: b.ID, Dirs: sorted}}}
}
