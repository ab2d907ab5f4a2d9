package broker

import (
	"context"
	"slices"
	"time"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// In a cluster the controller learns which log dir holds each replica
// (KIP-858), so that a failed dir takes only its own replicas offline
// (log_dir_failure.go, coordinator/controller's dirs.go). assignLoop
// compares the dirs of the local logs with the image's
// Partition.Directories after every image applied here and every second,
// which also catches new logs and finished AlterReplicaLogDirs moves, and
// sends the differences in one AssignReplicasToDirs. A log in a failed
// dir is never reassigned: the heartbeat reports the dir instead. A
// broker with a single log dir sends none: that dir's failure halts it,
// and its replicas stay unassigned, which counts as online.

// assignInterval is how often assignLoop looks without being kicked.
const assignInterval = time.Second

func (cl *cluster) assignLoop() {
	t := time.NewTicker(assignInterval)
	defer t.Stop()
	for {
		select {
		case <-cl.stop:
			return
		case <-cl.kickAssign:
		case <-t.C:
		}
		if err := cl.assignDirs(); err != nil {
			cl.b.logger.Debug("assigning replicas to log dirs failed", "err", err)
		}
	}
}

// assignDirs sends the replicas whose dir the image does not know yet.
func (cl *cluster) assignDirs() error {
	img, epoch := cl.image(), cl.epoch.Load()
	if img == nil || epoch < 0 || len(cl.b.dirs.All()) < 2 {
		return nil // with one dir, its failure halts the broker: nothing to tell apart
	}
	self := cl.b.cfg.NodeID
	byDir := map[[16]byte]map[[16]byte][]int32{} // dir -> topic id -> partitions
	n := 0
	for tp, l := range cl.b.dirs.Logs() {
		it := img.Topics[tp.Topic]
		if l.Offline() != nil || it == nil || it.ID != l.TopicID() || int(tp.Partition) >= len(it.Partitions) {
			continue
		}
		ip := it.Partitions[tp.Partition]
		dir := l.DirectoryID()
		if have, ok := ip.Directories[self]; ok && have == dir {
			continue
		}
		if !slices.Contains(ip.Replicas, self) {
			continue
		}
		if byDir[dir] == nil {
			byDir[dir] = map[[16]byte][]int32{}
		}
		byDir[dir][it.ID] = append(byDir[dir][it.ID], tp.Partition)
		n++
	}
	if n == 0 {
		return nil
	}
	req := newest(kmsg.NewPtrAssignReplicasToDirsRequest())
	req.BrokerID, req.BrokerEpoch = self, epoch
	for dir, topics := range byDir {
		d := kmsg.AssignReplicasToDirsRequestDirectory{ID: dir}
		for id, parts := range topics {
			t := kmsg.AssignReplicasToDirsRequestDirectoryTopic{TopicID: id}
			for _, p := range parts {
				t.Partitions = append(t.Partitions, kmsg.AssignReplicasToDirsRequestDirectoryTopicPartition{Partition: p})
			}
			d.Topics = append(d.Topics, t)
		}
		req.Directories = append(req.Directories, d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.client.Send(ctx, req)
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.AssignReplicasToDirsResponse).ErrorCode; code != 0 {
		return kerr.ErrorForCode(code)
	}
	cl.b.logger.Debug("assigned replicas to log dirs", "replicas", n)
	return nil
}

// stopFollowing stops the replica fetchers of the partitions in a failed
// log dir; the controller moves their leadership and ISR membership away
// once the next heartbeat reports the dir.
func (cl *cluster) stopFollowing(d *logstore.Dir) {
	for _, t := range cl.b.topics.all() {
		for _, p := range t.partitions() {
			if p != nil && p.log.Offline() != nil && p.log.DirectoryID() == d.DirectoryID() {
				cl.fetchers.remove(p)
				p.wake()
			}
		}
	}
	kick(cl.kickHeartbeat)
}

// kick wakes the goroutine waiting on ch, unless it is already woken.
func kick(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
