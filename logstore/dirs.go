package logstore

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
)

// Dirs is every log dir of a node (log.dirs, Kafka's JBOD): each is a Dir
// with its own meta.properties, checkpoints, workers and partitions. A new
// partition goes to the dir with the fewest partitions, as Kafka's
// LogManager places it, unless a move asked for another (MoveLog before
// the partition existed). A partition lives in one dir at a time;
// MoveLog copies it to another while it keeps serving (move.go). Its
// methods are safe for concurrent use.
type Dirs struct {
	dirs []*Dir // opened at their absolute paths, as Kafka names them

	mu        sync.Mutex // guards preferred, moves and a log changing dirs; taken before Dir.mu
	preferred map[TopicPartition]*Dir
	moves     map[TopicPartition]*move
	moveSlots chan struct{} // one per move copying at once (OpenOptions.MoveThreads)
	throttle  atomic.Pointer[MoveThrottle]
	// cordoned tells which dirs (by absolute path) take no new partition
	// (KIP-1066); nil: none.
	cordoned atomic.Pointer[func() []string]
	logger   *slog.Logger // OpenOptions.Logger
}

// SetCordoned gives the dirs the function that lists, by absolute path,
// the dirs that take no new partition; it is asked at each placement,
// never with a lock of the dirs held.
func (ds *Dirs) SetCordoned(cordoned func() []string) {
	ds.cordoned.Store(&cordoned)
}

// Cordoned reports whether d takes no new partition.
func (ds *Dirs) Cordoned(d *Dir) bool {
	return slices.Contains(ds.cordonedPaths(), d.Path())
}

func (ds *Dirs) cordonedPaths() []string {
	if f := ds.cordoned.Load(); f != nil {
		return (*f)()
	}
	return nil
}

// placeable are the dirs a new partition may go to: the online ones not
// cordoned, or every online one if all are (a replica the controller
// assigned here must still be created).
func (ds *Dirs) placeable(cordoned []string) []*Dir {
	online := ds.Online()
	open := slices.DeleteFunc(slices.Clone(online), func(d *Dir) bool { return slices.Contains(cordoned, d.Path()) })
	if len(open) == 0 {
		return online
	}
	return open
}

// CordonedDirectoryIDs are the directory ids of the cordoned dirs: an
// empty list, not nil, when none is.
func (ds *Dirs) CordonedDirectoryIDs() [][16]byte {
	ids := [][16]byte{}
	for _, d := range ds.dirs {
		if ds.Cordoned(d) && d.DirectoryID() != [16]byte{} {
			ids = append(ids, d.DirectoryID())
		}
	}
	return ids
}

// AllCordoned reports whether every online dir is cordoned: a single
// node then takes no new partition at all.
func (ds *Dirs) AllCordoned() bool {
	cordoned := ds.cordonedPaths()
	for _, d := range ds.Online() {
		if !slices.Contains(cordoned, d.Path()) {
			return false
		}
	}
	return true
}

// OpenDirs opens every log dir of paths (duplicates once) with OpenDir. A
// new dir takes the cluster id of clusterID, or of the dirs that already
// have one; dirs of different clusters, or holding the same partition, are
// refused. Moves that a crash interrupted are finished or started again.
func OpenDirs(paths []string, clusterID string, nodeID int32, defaults Config, opts OpenOptions) (*Dirs, error) {
	return openDirs(paths, clusterID, nodeID, defaults, opts, false)
}

// OpenDirsKeepingFailed is OpenDirs, except that a dir after the first
// that fails to open with an I/O error is kept, offline (failure.go),
// instead of failing the whole open, as Kafka's LogManager starts. Only a
// cluster may start so: its controller knows which replicas were in that
// dir, so they are not created again elsewhere while it is offline.
func OpenDirsKeepingFailed(paths []string, clusterID string, nodeID int32, defaults Config, opts OpenOptions) (*Dirs, error) {
	return openDirs(paths, clusterID, nodeID, defaults, opts, true)
}

func openDirs(paths []string, clusterID string, nodeID int32, defaults Config, opts OpenOptions, keepFailed bool) (*Dirs, error) {
	ds := &Dirs{preferred: map[TopicPartition]*Dir{}, moves: map[TopicPartition]*move{}}
	ds.logger, _ = opts.loggers()
	var absPaths []string
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(absPaths, abs) {
			absPaths = append(absPaths, abs)
		}
	}
	if len(absPaths) == 0 {
		return nil, errors.New("no log dir configured")
	}
	moveThreads := opts.MoveThreads
	if moveThreads < 1 {
		moveThreads = len(absPaths)
	}
	ds.moveSlots = make(chan struct{}, moveThreads)
	if clusterID == "" {
		for _, p := range absPaths {
			if m, err := readMetaProperties(filepath.Join(p, metaPropertiesFile)); err == nil {
				clusterID = m.ClusterID
				break
			}
		}
	}
	if clusterID == "" {
		clusterID = UUIDString(RandomUUID())
	}
	ok := false
	defer func() {
		if !ok {
			ds.crash()
		}
	}()
	owner := map[TopicPartition]*Dir{}
	for i, p := range absPaths {
		d, err := OpenDir(p, clusterID, nodeID, defaults, opts)
		if err != nil && keepFailed && i > 0 && osError(err) {
			ds.logger.Error("logstore: log dir failed to open: it stays offline", "dir", p, "err", err)
			ds.dirs = append(ds.dirs, failedDir(p, err, opts))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("log dir %s: %w", p, err)
		}
		ds.dirs = append(ds.dirs, d)
		if d.ClusterID() != ds.dirs[0].ClusterID() {
			return nil, fmt.Errorf("log dir %s belongs to cluster %s, but %s to cluster %s", p, d.ClusterID(), absPaths[0], ds.dirs[0].ClusterID())
		}
		if other := ds.withDirectoryID(d); other != nil {
			return nil, fmt.Errorf("log dirs %s and %s have the same directory id %s (meta.properties): give the copy a new one", other.path, p, UUIDString(d.DirectoryID()))
		}
		for tp := range d.Logs() {
			if o := owner[tp]; o != nil {
				return nil, fmt.Errorf("partition %s is in two log dirs, %s and %s", tp, o.path, p)
			}
			owner[tp] = d
		}
	}
	ds.OnFailure(func(*Dir, error) {})
	restart, err := ds.recoverMoves(owner, defaults)
	if err != nil {
		return nil, err
	}
	ok = true
	for tp, to := range restart {
		if err := ds.MoveLog(tp, to.path); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

// withDirectoryID is the dir opened before d that has d's directory id,
// which Kafka's MetaPropertiesEnsemble.verify refuses (a copied dir).
func (ds *Dirs) withDirectoryID(d *Dir) *Dir {
	for _, o := range ds.dirs {
		if o != d && o.meta.DirectoryID == d.meta.DirectoryID {
			return o
		}
	}
	return nil
}

// All is every log dir, in log.dirs order.
func (ds *Dirs) All() []*Dir { return ds.dirs }

// byPath returns the log dir whose absolute path is path, or nil.
func (ds *Dirs) byPath(path string) *Dir {
	for _, d := range ds.dirs {
		if d.path == path {
			return d
		}
	}
	return nil
}

// ClusterID is the cluster id every dir's meta.properties holds.
func (ds *Dirs) ClusterID() string { return ds.dirs[0].ClusterID() }

// DirectoryIDs are the Uuids (KIP-858) of the dirs online, in log.dirs
// order.
func (ds *Dirs) DirectoryIDs() [][16]byte {
	var ids [][16]byte
	for _, d := range ds.Online() {
		ids = append(ids, d.DirectoryID())
	}
	return ids
}

// Log returns the log of tp, or nil.
func (ds *Dirs) Log(tp TopicPartition) *Log {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return ds.logLocked(tp)
}

func (ds *Dirs) logLocked(tp TopicPartition) *Log {
	for _, d := range ds.dirs {
		if l := d.Log(tp); l != nil {
			return l
		}
	}
	return nil
}

// Logs returns every open log.
func (ds *Dirs) Logs() map[TopicPartition]*Log {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	all := map[TopicPartition]*Log{}
	for _, d := range ds.dirs {
		maps.Copy(all, d.Logs())
	}
	return all
}

// CreateLogsAtEpoch is Dir.CreateLogsAtEpoch over the dirs: each partition
// goes to the dir a move asked for, or else to the one with the fewest
// partitions among those not cordoned (counting those placed before it in
// the same call and those being moved in).
func (ds *Dirs) CreateLogsAtEpoch(tps []TopicPartition, topicID [16]byte, cfg Config, epoch int32) ([]*Log, error) {
	cordoned := ds.cordonedPaths() // asked before ds.mu: the asker may take its own locks
	ds.mu.Lock()
	defer ds.mu.Unlock()
	for _, tp := range tps {
		if ds.logLocked(tp) != nil {
			return nil, fmt.Errorf("log %s already exists", tp)
		}
	}
	counts := map[*Dir]int{}
	for _, d := range ds.dirs {
		counts[d] = len(d.Logs())
	}
	for _, m := range ds.moves {
		counts[m.to]++
	}
	placeable := ds.placeable(cordoned)
	if len(placeable) == 0 {
		return nil, errorf(CodeKafkaStorageError, "every log dir is offline")
	}
	placed := map[*Dir][]int{}
	for i, tp := range tps {
		d := ds.preferred[tp]
		if d == nil || d.Offline() != nil {
			d = placeable[0]
			for _, x := range placeable[1:] {
				if counts[x] < counts[d] {
					d = x
				}
			}
		}
		delete(ds.preferred, tp)
		counts[d]++
		placed[d] = append(placed[d], i)
	}
	logs := make([]*Log, len(tps))
	var errs []error
	for _, d := range ds.dirs {
		idx := placed[d]
		if len(idx) == 0 {
			continue
		}
		some := make([]TopicPartition, len(idx))
		for j, i := range idx {
			some[j] = tps[i]
		}
		made, err := d.CreateLogsAtEpoch(some, topicID, cfg, epoch)
		errs = append(errs, err)
		for j, l := range made {
			logs[idx[j]] = l
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return logs, nil
}

// SyncLogDirs fsyncs every log dir (Dir.SyncLogDir).
func (ds *Dirs) SyncLogDirs() error {
	var errs []error
	for _, d := range ds.Online() {
		errs = append(errs, d.SyncLogDir())
	}
	return errors.Join(errs...)
}

// DeleteLog stops a move of the partition, then deletes its log from the
// dir that holds it.
func (ds *Dirs) DeleteLog(tp TopicPartition) error {
	for {
		ds.stopMove(tp)
		ds.mu.Lock()
		if ds.moves[tp] == nil { // and none starts while mu is held
			break
		}
		ds.mu.Unlock()
	}
	defer ds.mu.Unlock()
	delete(ds.preferred, tp)
	l := ds.logLocked(tp)
	if l == nil {
		return fmt.Errorf("no log %s", tp)
	}
	return l.owner.Load().DeleteLog(tp)
}

// Close stops the moves in progress and closes every dir.
func (ds *Dirs) Close() error {
	ds.stopMoves()
	var errs []error
	for _, d := range ds.dirs {
		errs = append(errs, d.Close())
	}
	return errors.Join(errs...)
}

// crash closes every dir as a killed process would (for tests).
func (ds *Dirs) crash() {
	ds.stopMoves()
	for _, d := range ds.dirs {
		d.crash()
	}
}

// The settings below apply to every dir.

// SetBrokerEpoch is Dir.SetBrokerEpoch on every dir.
func (ds *Dirs) SetBrokerEpoch(epoch int64) {
	for _, d := range ds.dirs {
		d.SetBrokerEpoch(epoch)
	}
}

// SetCheckpointIntervals is Dir.SetCheckpointIntervals on every dir.
func (ds *Dirs) SetCheckpointIntervals(ci CheckpointIntervals) {
	for _, d := range ds.dirs {
		d.SetCheckpointIntervals(ci)
	}
}

// PreviousBrokerEpochs is the broker epoch the last clean shutdown of every
// one of paths recorded, or -1 if any was not clean (PreviousBrokerEpoch).
func PreviousBrokerEpochs(paths []string) int64 {
	epoch := int64(-1)
	for i, p := range paths {
		e := PreviousBrokerEpoch(p)
		if e < 0 || (i > 0 && e != epoch) {
			return -1
		}
		epoch = e
	}
	return epoch
}

// dirEntries lists a directory, nothing when it does not exist yet.
func dirEntries(path string) ([]os.DirEntry, error) {
	ents, err := os.ReadDir(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return ents, err
}
