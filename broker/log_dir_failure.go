package broker

import (
	"fmt"
	"slices"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/logstore"
)

// A log dir whose disk fails goes offline (logstore's failure.go, Kafka's
// KIP-112): its partitions answer KAFKA_STORAGE_ERROR to produce, fetch,
// ListOffsets, DeleteRecords and OffsetForLeaderEpoch; DescribeLogDirs
// reports the dir with KAFKA_STORAGE_ERROR; new partitions go to the dirs
// still online, which keep serving.
//
// On a single node Metadata shows the failed dir's partitions without a
// leader, with this node as an offline replica. In a cluster the broker
// stops following them and its next heartbeat, sent at once, reports the
// dir offline (KIP-858): the controller takes this broker's replicas in it
// out of their ISRs and elects other leaders (dir_assignments.go,
// coordinator/controller's dirs.go); Metadata lists them as offline.
//
// The broker halts instead, as Kafka's does (ReplicaManager.
// handleLogDirFailure and LogManager), when the failed dir is the first
// one, which holds the metadata (Kafka's metadata.log.dir defaults to it),
// or when no log dir is left. Halting means Fatal delivers the reason;
// `gregor serve` then exits at once with status 1, without a clean
// shutdown (Kafka's Exit.halt(1)).

// In a cluster the broker also starts with a dir after the first that
// fails to open, keeping it offline (logstore.OpenDirsKeepingFailed), as
// Kafka's does: it registers only the dirs online, so the controller
// counts the replicas assigned to the failed one as offline, and the
// broker does not create those replicas' logs again elsewhere while a dir
// is offline (Kafka refuses to create a log that is not new then). Once
// started without that dir in log.dirs, the broker creates them anew, and
// they catch up from their leaders. A single node, which does not record
// which dir holds each partition, refuses to start instead.

// replicaInOfflineDir reports whether this broker's replica of ip may be
// in a dir that is not online here while some dir is offline: it is
// assigned to one, or it is assigned to none in an image that may be
// older than the assignment (caughtUp false: a restarted node applies its
// own, possibly stale, image before it has caught up, as Kafka's broker
// waits for its initial catch-up before it creates logs).
func (b *Broker) replicaInOfflineDir(ip controller.Partition, caughtUp bool) bool {
	if len(b.dirs.Online()) == len(b.dirs.All()) {
		return false
	}
	dir, ok := ip.Directories[b.cfg.NodeID]
	if !ok {
		return !caughtUp
	}
	return !slices.Contains(b.dirs.DirectoryIDs(), dir)
}

// Fatal delivers the reason the broker must stop at once, if it must.
func (b *Broker) Fatal() <-chan error { return b.fatal }

// logDirFailed is the log dirs' failure handler.
func (b *Broker) logDirFailed(d *logstore.Dir, err error) {
	select {
	case <-b.ready: // New has set everything up
	case <-time.After(time.Minute):
		return // New failed
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return
	}
	b.logger.Error("stopped serving the replicas in a failed log dir", "dir", d.Path(), "err", err)
	switch {
	case d == b.dirs.All()[0]:
		b.halt(fmt.Errorf("the metadata log dir %s has failed: %w", d.Path(), err))
	case len(b.dirs.Online()) == 0:
		b.halt(fmt.Errorf("all log dirs have failed: %w", err))
	case b.cluster != nil:
		b.cluster.stopFollowing(d)
	}
}

// halt delivers err on Fatal (the first reason only).
func (b *Broker) halt(err error) {
	b.logger.Error("the broker must halt", "err", err)
	select {
	case b.fatal <- err:
	default:
	}
}

// offline reports whether p's log is in an offline log dir.
func (p *partition) offline() bool { return p.log.Offline() != nil }
