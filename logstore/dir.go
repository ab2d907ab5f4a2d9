package logstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Dir is one log dir (a log.dirs entry): meta.properties, the dir-level
// checkpoints, and the partition logs in it. Its methods are safe for
// concurrent use.
type Dir struct {
	path string
	meta metaProperties
	lock *os.File

	mu     sync.Mutex // guards logs, closed and threads; taken before any Log.mu
	logs   map[TopicPartition]*Log
	closed bool
	// threads is num.recovery.threads.per.data.dir: how many logs are
	// opened (and recovered) at once in OpenDir and closed at once in Close.
	threads int

	logger        *slog.Logger // the log manager's messages (OpenOptions)
	cleanerLogger *slog.Logger // the cleaner's

	// The background workers: the flusher, the retention checker and the
	// cleaner threads; stop ends them all.
	timing             sync.Mutex
	flushCheckInterval time.Duration // log.flush.scheduler.interval.ms
	checkpoints        CheckpointIntervals
	retentionInterval  time.Duration // log.retention.check.interval.ms
	stop               chan struct{}
	workers            sync.WaitGroup
	kickRetention      chan struct{} // a pass soon, after DeleteRecords
	kickFlusher        chan struct{} // new intervals: the flusher reschedules
	// producer.id.expiration.ms and its check interval (producer_expiry.go)
	producerExpiration    time.Duration
	producerCheckInterval time.Duration
	kickProducerExpiry    chan struct{}

	brokerEpoch atomic.Int64 // what Close records (SetBrokerEpoch)

	failure   atomic.Pointer[error]             // the I/O error that took the dir offline (failure.go)
	onFailure atomic.Pointer[func(*Dir, error)] // Dirs.OnFailure's handler

	deleter *fileDeleter // removes retired segment files after file.delete.delay.ms
	cleaner *cleaner     // the log cleaner (cleaner.go)

	recoveredSegments int // segments scanned by recovery in OpenDir (for tests)
}

// DefaultFlushCheckInterval is how often the background flusher looks for
// work. Kafka's own default for the flush check is "never", which also
// disables flush.ms; we check every second.
const DefaultFlushCheckInterval = time.Second

// CheckpointIntervals are how often the flusher writes each of the log
// dir's offset checkpoints, as Kafka's LogManager and ReplicaManager
// schedule them; every one is also written at Close.
type CheckpointIntervals struct {
	RecoveryPoint time.Duration // recovery-point-offset-checkpoint: log.flush.offset.checkpoint.interval.ms
	LogStart      time.Duration // log-start-offset-checkpoint: log.flush.start.offset.checkpoint.interval.ms
	HighWatermark time.Duration // replication-offset-checkpoint: replica.high.watermark.checkpoint.interval.ms
}

// DefaultCheckpointIntervals are Kafka's: 60 s, 60 s and 5 s.
func DefaultCheckpointIntervals() CheckpointIntervals {
	return CheckpointIntervals{RecoveryPoint: 60 * time.Second, LogStart: 60 * time.Second, HighWatermark: 5 * time.Second}
}

// cleanShutdown is the content of .kafka_cleanshutdown.
type cleanShutdown struct {
	Version     int   `json:"version"`
	BrokerEpoch int64 `json:"brokerEpoch"`
}

// readCleanShutdown reports whether the dir's last shutdown was clean and
// the broker epoch it recorded (-1 when none was, or it was not clean).
func readCleanShutdown(path string) (bool, int64) {
	data, err := os.ReadFile(filepath.Join(path, cleanShutdownFile))
	if err != nil {
		return false, -1
	}
	cs := cleanShutdown{BrokerEpoch: -1}
	if json.Unmarshal(data, &cs) != nil {
		return true, -1
	}
	return true, cs.BrokerEpoch
}

// OpenDir opens (creating if need be) a log dir owned by node nodeID. A new
// dir gets a meta.properties for clusterID (a random id when empty); an
// existing one keeps its cluster id (see ClusterID) and must belong to
// nodeID. Every partition directory in it is opened, and recovered when the
// last shutdown was not clean, opts.RecoveryThreads of them at a time.
func OpenDir(path string, clusterID string, nodeID int32, defaults Config, opts OpenOptions) (*Dir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, err
	}
	d := &Dir{
		path:                  path,
		logs:                  map[TopicPartition]*Log{},
		flushCheckInterval:    DefaultFlushCheckInterval,
		checkpoints:           DefaultCheckpointIntervals(),
		retentionInterval:     DefaultRetentionCheckInterval,
		stop:                  make(chan struct{}),
		kickRetention:         make(chan struct{}, 1),
		kickFlusher:           make(chan struct{}, 1),
		producerExpiration:    DefaultProducerIDExpiration,
		producerCheckInterval: DefaultProducerIDCheckInterval,
		kickProducerExpiry:    make(chan struct{}, 1),
		deleter:               newFileDeleter(),
		threads:               max(opts.RecoveryThreads, 1),
	}
	d.logger, d.cleanerLogger = opts.loggers()
	d.brokerEpoch.Store(-1)
	var err error
	if d.lock, err = lockDir(path); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			for _, l := range d.logs {
				l.crash()
			}
			d.unlock()
		}
	}()
	if d.meta, err = ensureMetaProperties(path, clusterID, nodeID); err != nil {
		return nil, err
	}
	if err := d.loadLogs(defaults); err != nil {
		return nil, err
	}
	if d.cleaner, err = newCleaner(d); err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(path, cleanShutdownFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := syncDir(path); err != nil {
		return nil, err
	}
	ok = true
	d.workers.Add(3)
	go d.flusher()
	go d.periodic(d.retentionEvery, d.kickRetention, d.retentionCheck)
	go d.periodic(d.producerCheckEvery, d.kickProducerExpiry, d.producerExpiryCheck)
	d.cleaner.start(DefaultCleanerThreads, DefaultCleanerBackoff)
	return d, nil
}

func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(path, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("log dir %s is in use by another process: %w", path, err)
	}
	return f, nil
}

func (d *Dir) unlock() {
	if d.lock != nil {
		syscall.Flock(int(d.lock.Fd()), syscall.LOCK_UN)
		d.lock.Close()
		d.lock = nil
	}
}

func ensureMetaProperties(path, clusterID string, nodeID int32) (metaProperties, error) {
	file := filepath.Join(path, metaPropertiesFile)
	m, err := readMetaProperties(file)
	if err == nil {
		if m.NodeID != nodeID {
			return m, fmt.Errorf("%s belongs to node.id %d, not %d", file, m.NodeID, nodeID)
		}
		if m.DirectoryID == ([16]byte{}) {
			// Formatted by a Kafka before 3.7: the dir gets its id now, as
			// Kafka's KafkaRaftServer.initializeLogDirs gives it one.
			m.DirectoryID = RandomUUID()
			return m, WriteFileAtomic(file, m.bytes(time.Now()))
		}
		return m, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return m, err
	}
	if clusterID == "" {
		clusterID = UUIDString(RandomUUID())
	}
	m = metaProperties{Version: 1, NodeID: nodeID, ClusterID: clusterID, DirectoryID: RandomUUID()}
	return m, WriteFileAtomic(file, m.bytes(time.Now()))
}

// loadLogs opens every partition directory, removing those marked for deletion.
func (d *Dir) loadLogs(defaults Config) error {
	clean, _ := readCleanShutdown(d.path)
	readCk := func(name string) map[TopicPartition]int64 {
		m, err := readOffsetCheckpoint(filepath.Join(d.path, name))
		if err != nil {
			d.logger.Warn("logstore: ignoring unreadable checkpoint, recovering all logs", "err", err)
			clean = false
			return nil
		}
		return m
	}
	rps, starts, hws := readCk(recoveryPointFile), readCk(logStartFile), readCk(replicationFile)
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return err
	}
	type found struct {
		name string
		tp   TopicPartition
		st   loadState
		log  *Log
		err  error
	}
	var logs []found
	for _, de := range ents {
		if !de.IsDir() {
			continue
		}
		name := de.Name()
		if strings.HasSuffix(name, deleteDirSuffix) {
			if err := os.RemoveAll(filepath.Join(d.path, name)); err != nil {
				return err
			}
			continue
		}
		tp, ok := parsePartitionDirName(name)
		if !ok || name == kraftMetadataDir {
			continue
		}
		st := loadState{clean: clean, recoveryPoint: -1, logStart: -1, highWatermark: -1, logger: d.logger}
		if v, ok := rps[tp]; ok {
			st.recoveryPoint = v
		}
		if v, ok := starts[tp]; ok {
			st.logStart = v
		}
		if v, ok := hws[tp]; ok {
			st.highWatermark = v
		}
		logs = append(logs, found{name: name, tp: tp, st: st})
	}
	inParallel(d.threads, len(logs), func(i int) {
		f := &logs[i]
		f.log, f.err = openLog(filepath.Join(d.path, f.name), f.tp, defaults, f.st)
	})
	var errs []error
	for _, f := range logs {
		if f.err != nil {
			errs = append(errs, fmt.Errorf("open %s: %w", f.name, f.err))
			continue
		}
		f.log.owner.Store(d)
		d.logs[f.tp] = f.log // closed by OpenDir if another failed
		d.recoveredSegments += f.log.recoveredSegments
	}
	return errors.Join(errs...)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Path is the log dir.
func (d *Dir) Path() string { return d.path }

// ClusterID is the cluster id in meta.properties.
func (d *Dir) ClusterID() string { return d.meta.ClusterID }

// DirectoryID is the dir's Uuid in meta.properties (KIP-858).
func (d *Dir) DirectoryID() [16]byte { return d.meta.DirectoryID }

// Logs returns the open logs (a copy of the map).
func (d *Dir) Logs() map[TopicPartition]*Log {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.logs)
}

// Log returns the log of tp, or nil.
func (d *Dir) Log(tp TopicPartition) *Log {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.logs[tp]
}

// CreateLog makes the directory of a new partition with its
// partition.metadata and an empty first segment. It fails if the partition
// already exists. The new directory is durable once SyncLogDir returns.
func (d *Dir) CreateLog(tp TopicPartition, topicID [16]byte, cfg Config) (*Log, error) {
	logs, err := d.CreateLogsAtEpoch([]TopicPartition{tp}, topicID, cfg, -1)
	if err != nil {
		return nil, err
	}
	return logs[0], nil
}

// createWorkers is how many logs CreateLogsAtEpoch creates at once. Each
// is a few fsyncs, which the file system's journal commits together when
// they come at the same time: 1,000 partitions took 0.66 s one at a time
// and 0.38-0.45 s eight at a time on ext4 here.
const createWorkers = 8

// CreateLogsAtEpoch is CreateLog for several partitions of a topic,
// created createWorkers at a time; the logs come back in the order of tps.
// With epoch >= 0 each new leader-epoch-checkpoint already says that epoch
// starts at offset 0 (one file write instead of an empty file and then
// AssignLeaderEpoch's).
// On an error the logs created meanwhile stay in the dir, as they would
// have one call at a time.
func (d *Dir) CreateLogsAtEpoch(tps []TopicPartition, topicID [16]byte, cfg Config, epoch int32) ([]*Log, error) {
	for _, tp := range tps {
		if tp.Topic == "" || tp.Topic == "." || tp.Topic == ".." || strings.ContainsAny(tp.Topic, "/\\\x00") || tp.Partition < 0 {
			return nil, fmt.Errorf("invalid partition %q %d", tp.Topic, tp.Partition)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("log dir is closed")
	}
	if err := d.Offline(); err != nil {
		return nil, errorf(CodeKafkaStorageError, "log dir %s is offline: %v", d.path, err)
	}
	for _, tp := range tps {
		if d.logs[tp] != nil {
			return nil, fmt.Errorf("log %s already exists", tp)
		}
	}
	logs := make([]*Log, len(tps))
	errs := make([]error, len(tps))
	inParallel(createWorkers, len(tps), func(i int) {
		logs[i], errs[i] = createLog(filepath.Join(d.path, partitionDirName(tps[i])), tps[i], topicID, cfg, epoch, d.logger)
		d.failIf(errs[i])
		if errs[i] != nil {
			errs[i] = fmt.Errorf("create log %s: %w", tps[i], errs[i])
		}
	})
	for i, l := range logs {
		if errs[i] == nil {
			l.owner.Store(d)
			d.logs[tps[i]] = l
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return logs, nil
}

// SyncLogDir fsyncs the log dir itself, which makes the partition
// directories created in it so far durable: one fsync for all the
// partitions of a topic rather than one each.
func (d *Dir) SyncLogDir() error {
	err := syncDir(d.path)
	d.failIf(err)
	return err
}

// DeleteLog closes a partition's log and removes its directory (renamed
// first to <topic>-<partition>.<uuid>-delete, so a crash midway leaves
// something OpenDir finishes deleting). A clean of the log in progress is
// aborted first.
func (d *Dir) DeleteLog(tp TopicPartition) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.logs[tp]
	if l == nil {
		return fmt.Errorf("no log %s", tp)
	}
	if d.Offline() != nil {
		delete(d.logs, tp)
		d.logger.Warn("logstore: the files of a deleted partition stay in an offline log dir", "partition", tp.String(), "dir", d.path)
		return nil
	}
	l.cleanAbort.Store(true)
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	delete(d.logs, tp)
	d.cleaner.forget(tp)
	l.crash() // nothing of it needs to reach the disk any more
	doomed := filepath.Join(d.path, deleteDirName(tp))
	err := os.Rename(l.dir, doomed)
	if err == nil {
		err = syncDir(d.path)
	}
	if err == nil {
		err = os.RemoveAll(doomed)
	}
	d.failIf(err)
	return err
}

// Checkpoint writes recovery-point-offset-checkpoint,
// log-start-offset-checkpoint and replication-offset-checkpoint.
func (d *Dir) Checkpoint() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.checkpointLocked()
}

func (d *Dir) checkpointLocked() error {
	return errors.Join(d.writeRecoveryPointsLocked(), d.writeLogStartsLocked(), d.writeHighWatermarksLocked())
}

// writeRecoveryPointsLocked writes recovery-point-offset-checkpoint: how
// far each log is flushed, where recovery after a crash starts.
func (d *Dir) writeRecoveryPointsLocked() error {
	rps := make(map[TopicPartition]int64, len(d.logs))
	for tp, l := range d.logs {
		rps[tp] = l.RecoveryPoint()
	}
	return d.writeCheckpoint(recoveryPointFile, rps)
}

// writeHighWatermarksLocked writes replication-offset-checkpoint, where a
// replica's high watermark starts after a restart.
func (d *Dir) writeHighWatermarksLocked() error {
	hws := make(map[TopicPartition]int64, len(d.logs))
	for tp, l := range d.logs {
		hws[tp] = l.HighWatermark()
	}
	return d.writeCheckpoint(replicationFile, hws)
}

// writeLogStartsLocked writes log-start-offset-checkpoint: the partitions
// whose log start offset is above their first segment's base, as Kafka.
func (d *Dir) writeLogStartsLocked() error {
	starts := map[TopicPartition]int64{}
	for tp, l := range d.logs {
		if start := l.LogStartOffset(); start > l.segments()[0].base {
			starts[tp] = start
		}
	}
	return d.writeCheckpoint(logStartFile, starts)
}

// logStartMoved is called by a log whose start offset DeleteRecords moved:
// the checkpoint is written at once, and a retention pass is asked for to
// delete the segments now wholly below the start (a compacted log's are
// left to the cleaner's next pass).
func (d *Dir) logStartMoved() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	kick(d.kickRetention)
	return d.writeLogStartsLocked()
}

// Close stops the flusher, closes every log (flush, last index entries,
// producer snapshots), writes the checkpoints and then the clean-shutdown
// marker, which lets the next OpenDir skip recovery.
func (d *Dir) Close() error {
	if !d.stopWorkers() {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	logs := slices.Collect(maps.Values(d.logs))
	errs := make([]error, len(logs))
	inParallel(d.threads, len(logs), func(i int) {
		if err := logs[i].Close(); err != nil {
			errs[i] = fmt.Errorf("close %s: %w", logs[i].tp, err)
		}
	})
	d.deleter.flush()
	errs = append(errs, d.checkpointLocked())
	if err := errors.Join(errs...); err != nil {
		d.unlock()
		return err // no clean marker: the next open recovers
	}
	marker, _ := json.Marshal(cleanShutdown{BrokerEpoch: d.brokerEpoch.Load()})
	err := WriteFileAtomic(filepath.Join(d.path, cleanShutdownFile), marker)
	d.unlock()
	return err
}

// PreviousBrokerEpoch is the broker epoch that the last clean shutdown of
// the log dir at path recorded, or -1 when it was not clean (or recorded
// none): what a cluster broker registers as its previous epoch (KIP-966).
// Read it before OpenDir, which removes the marker.
func PreviousBrokerEpoch(path string) int64 {
	_, epoch := readCleanShutdown(path)
	return epoch
}

// SetBrokerEpoch sets the broker epoch a clean Close records.
func (d *Dir) SetBrokerEpoch(epoch int64) { d.brokerEpoch.Store(epoch) }

// SetRecoveryThreads sets how many logs Close flushes and closes at once
// (num.recovery.threads.per.data.dir, changed at runtime; below 1 means 1).
func (d *Dir) SetRecoveryThreads(n int) {
	d.mu.Lock()
	d.threads = max(n, 1)
	d.mu.Unlock()
}

// RecoveryThreads is how many logs Close flushes and closes at once.
func (d *Dir) RecoveryThreads() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.threads
}

// inParallel calls fn(i) for every i below n on at most threads
// goroutines, as Kafka's recovery thread pool runs one log per thread.
func inParallel(threads, n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(threads, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// stopWorkers marks the dir closed and waits for the background workers
// to end; it reports false if the dir was already closed.
func (d *Dir) stopWorkers() bool {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return false
	}
	d.closed = true
	d.mu.Unlock()
	close(d.stop)
	d.cleaner.shutdown()
	d.workers.Wait()
	return true
}

// crash stops everything without writing anything, as if the process had
// died (for tests).
func (d *Dir) crash() {
	if !d.stopWorkers() {
		return
	}
	d.deleter.abandon()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.logs {
		l.crash()
	}
	d.unlock()
}

// SetFlushCheckInterval sets how often the flusher looks for logs whose
// flush.ms has passed (Kafka's log.flush.scheduler.interval.ms).
func (d *Dir) SetFlushCheckInterval(iv time.Duration) {
	d.timing.Lock()
	d.flushCheckInterval = iv
	d.timing.Unlock()
	kick(d.kickFlusher)
}

// SetCheckpointIntervals sets how often the flusher writes each
// checkpoint.
func (d *Dir) SetCheckpointIntervals(ci CheckpointIntervals) {
	d.timing.Lock()
	d.checkpoints = ci
	d.timing.Unlock()
	kick(d.kickFlusher)
}

func (d *Dir) intervals() (time.Duration, CheckpointIntervals) {
	d.timing.Lock()
	defer d.timing.Unlock()
	ci := d.checkpoints
	ci.RecoveryPoint, ci.LogStart, ci.HighWatermark = max(ci.RecoveryPoint, time.Millisecond), max(ci.LogStart, time.Millisecond), max(ci.HighWatermark, time.Millisecond)
	return max(d.flushCheckInterval, time.Millisecond), ci
}

// flusher flushes logs whose flush.ms has passed and writes each
// checkpoint at its interval, until Close.
func (d *Dir) flusher() {
	defer d.workers.Done()
	checkpoints := []struct {
		every func(CheckpointIntervals) time.Duration
		write func() error
		last  time.Time
	}{
		{func(ci CheckpointIntervals) time.Duration { return ci.RecoveryPoint }, d.writeRecoveryPointsLocked, time.Now()},
		{func(ci CheckpointIntervals) time.Duration { return ci.LogStart }, d.writeLogStartsLocked, time.Now()},
		{func(ci CheckpointIntervals) time.Duration { return ci.HighWatermark }, d.writeHighWatermarksLocked, time.Now()},
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		case <-d.kickFlusher:
		}
		check, ci := d.intervals()
		now := time.Now()
		for _, l := range d.Logs() {
			flushMs := l.Config().FlushMs
			if flushMs == math.MaxInt64 || l.LogEndOffset() <= l.RecoveryPoint() {
				continue
			}
			if now.UnixMilli()-l.lastFlush.Load() >= flushMs {
				if err := l.Flush(); err != nil {
					d.logger.Error("logstore: flush failed", "log", l.tp.String(), "err", err)
				}
			}
		}
		next := check
		for i := range checkpoints {
			c := &checkpoints[i]
			every := c.every(ci)
			if now.Sub(c.last) >= every {
				d.mu.Lock()
				err := c.write()
				d.mu.Unlock()
				if err != nil {
					d.logger.Error("logstore: checkpoint failed", "dir", d.path, "err", err)
				}
				c.last = now
			}
			next = min(next, c.last.Add(every).Sub(now))
		}
		t.Reset(max(next, time.Millisecond))
	}
}

// SetRetentionCheckInterval sets how often retention runs over every log
// (Kafka's log.retention.check.interval.ms, default 5 minutes); the next
// pass comes one new interval from now.
func (d *Dir) SetRetentionCheckInterval(iv time.Duration) {
	d.timing.Lock()
	d.retentionInterval = max(iv, time.Millisecond)
	d.timing.Unlock()
	kick(d.kickRetention)
}

func (d *Dir) retentionEvery() time.Duration {
	d.timing.Lock()
	defer d.timing.Unlock()
	return d.retentionInterval
}

// kick asks a periodic worker for a pass soon, unless one is already asked for.
func kick(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// periodic runs pass every interval (read anew each time) and soon after
// a kick, until Close: the retention check and producer id expiration.
func (d *Dir) periodic(interval func() time.Duration, kicked <-chan struct{}, pass func()) {
	defer d.workers.Done()
	t := time.NewTimer(interval())
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-kicked:
		case <-t.C:
		}
		pass()
		t.Reset(interval())
	}
}

// retentionCheck is the retention worker's pass (kicked after
// DeleteRecords moved a log start offset).
func (d *Dir) retentionCheck() {
	if err := d.retentionPass(false, notCompacted); err != nil {
		d.logger.Error("logstore: retention failed", "dir", d.path, "err", err)
	}
}

// RunRetentionNow runs one retention pass over every log (see
// retention.go) and, if any log start offset moved, writes
// log-start-offset-checkpoint. A log being cleaned is waited for (the
// background passes skip it until the next interval).
func (d *Dir) RunRetentionNow() error { return d.retentionPass(true, func(*Log) bool { return true }) }

// notCompacted picks the logs the retention check passes over: those
// without the compact policy, as Kafka's LogManager.cleanupLogs; the
// cleaner's threads run retention on the others (cleaner.go).
func notCompacted(l *Log) bool { return !l.Config().Compact }

// retentionPass runs retention on the logs which picks; wait: wait for a
// log being cleaned rather than skip it.
func (d *Dir) retentionPass(wait bool, which func(*Log) bool) error {
	now := time.Now().UnixMilli()
	var errs []error
	deleted := 0
	for _, l := range d.Logs() {
		if !which(l) {
			continue
		}
		if wait {
			l.cleanMu.Lock()
		} else if !l.cleanMu.TryLock() {
			continue
		}
		n, err := l.deleteOldSegments(now)
		l.cleanMu.Unlock()
		deleted += n
		errs = append(errs, err)
	}
	if deleted > 0 {
		d.mu.Lock()
		if !d.closed {
			errs = append(errs, d.writeLogStartsLocked())
		}
		d.mu.Unlock()
	}
	return errors.Join(errs...)
}
