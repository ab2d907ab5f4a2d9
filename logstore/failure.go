package logstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// A log dir fails at the first I/O error on its files, as Kafka's
// LogDirFailureChannel decides (KIP-112): a write, fsync, read, rename or
// file creation that the operating system refuses. After a failed fsync
// the kernel may have dropped the pages it could not write, so carrying on
// could acknowledge records that are already lost; the dir is therefore
// taken offline at once and for good, until the process restarts:
//
//  1. fail marks the dir offline: every log in it refuses appends,
//     truncations and retention from then on (KAFKA_STORAGE_ERROR).
//  2. In the background the dir's workers stop, its logs' files are
//     closed without writing anything more, and its lock is released.
//     The logs stay listed, closed, so the broker can tell an offline
//     partition from a missing one.
//  3. The handler set with Dirs.OnFailure is called, once per dir.
//
// A move between dirs that fails takes offline the dir of the file that
// failed (failWhere), which may be the destination's.
//
// Errors of a log being closed or deleted are not failures of the disk.

// ioFailure reports whether err is an I/O failure of a file: a
// KAFKA_STORAGE_ERROR wrapping an error the operating system returned. A
// file closed under a reader (a retired segment) or read short while a
// truncation cuts it is not one.
func ioFailure(err error) bool {
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeKafkaStorageError || errors.Is(err, os.ErrClosed) {
		return false
	}
	return osError(e.Cause)
}

// osError reports whether err came from a system call on a file.
func osError(err error) bool {
	var pe *os.PathError
	var le *os.LinkError
	var se *os.SyscallError
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se)
}

// ioErr wraps an I/O failure of the log's files as KAFKA_STORAGE_ERROR and
// takes the log's dir offline.
func (l *Log) ioErr(op string, err error) error {
	e := storageErr(op, err)
	l.checkIO(e)
	return e
}

// checkIO takes the log's dir offline if err is an I/O failure, unless the
// log was being closed or deleted (its files closed under a reader) or a
// test is simulating a crash (testStep).
func (l *Log) checkIO(err error) {
	if l.gone.Load() || l.testStep != nil || !ioFailure(err) {
		return
	}
	if d := l.owner.Load(); d != nil {
		d.fail(err)
	}
}

// unusable is the error of a log that is closed or whose dir is offline.
func (l *Log) unusable() error {
	if l.closed {
		return errorf(CodeKafkaStorageError, "log %s is closed", l.tp)
	}
	if d := l.owner.Load(); d != nil && d.Offline() != nil {
		return errorf(CodeKafkaStorageError, "log dir %s is offline", d.path)
	}
	return nil
}

// Offline is the I/O error that took the dir offline, or nil while it is
// online.
func (d *Dir) Offline() error {
	if p := d.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// fail takes the dir offline because of err; only the first call counts.
func (d *Dir) fail(err error) {
	if !d.failure.CompareAndSwap(nil, &err) {
		return
	}
	d.logger.Error("logstore: log dir failed: its partitions are offline", "dir", d.path, "err", err)
	go d.goOffline(err)
}

// Fail takes the dir offline for err, an I/O error on a file in it that
// logstore does not write itself (the broker's metadata), if err is an
// operating system error.
func (d *Dir) Fail(err error) { d.failIf(err) }

// failIf takes the dir offline if err is an operating system error (not
// one that a file already exists).
func (d *Dir) failIf(err error) {
	if osError(err) && !errors.Is(err, os.ErrExist) && !errors.Is(err, os.ErrClosed) {
		d.fail(storageErr("log dir "+d.path, err))
	}
}

// failWhere takes offline the dir holding the file an operating system
// error names: a move's failure may be the source's disk or the
// destination's.
func (ds *Dirs) failWhere(err error) {
	var pe *os.PathError
	var le *os.LinkError
	var path string
	switch {
	case errors.As(err, &pe):
		path = pe.Path
	case errors.As(err, &le):
		path = le.Old
	default:
		return
	}
	for _, d := range ds.dirs {
		if strings.HasPrefix(path, d.path+string(filepath.Separator)) {
			d.failIf(err)
			return
		}
	}
}

// failedDir is a log dir that failed to open (OpenDirsKeepingFailed):
// offline, with no logs and no workers, and the Uuid its meta.properties
// gives if it can still be read.
func failedDir(path string, err error, opts OpenOptions) *Dir {
	d := &Dir{path: path, logs: map[TopicPartition]*Log{}, closed: true, stop: make(chan struct{}), deleter: newFileDeleter()}
	d.logger, d.cleanerLogger = opts.loggers()
	if m, merr := readMetaProperties(filepath.Join(path, metaPropertiesFile)); merr == nil {
		d.meta = m
	}
	failure := storageErr("open log dir "+path, err)
	d.failure.Store(&failure)
	return d
}

// writeCheckpoint writes the offset checkpoint file name in the dir; a
// failure to write it takes the dir offline.
func (d *Dir) writeCheckpoint(name string, offsets map[TopicPartition]int64) error {
	err := writeOffsetCheckpoint(filepath.Join(d.path, name), offsets)
	d.failIf(err)
	return err
}

// goOffline stops the dir's workers, closes its logs' files and releases
// the dir, then tells the handler. A dir already closing is left to Close.
func (d *Dir) goOffline(err error) {
	if d.stopWorkers() {
		d.deleter.abandon()
		d.mu.Lock()
		for _, l := range d.logs {
			l.crash()
		}
		d.unlock()
		d.mu.Unlock()
	}
	if fn := d.onFailure.Load(); fn != nil {
		(*fn)(d, err)
	}
}

// OnFailure sets what is called, once and in its own goroutine, when a
// log dir goes offline. Moves to or from that dir are stopped first.
func (ds *Dirs) OnFailure(fn func(d *Dir, err error)) {
	handler := func(d *Dir, err error) {
		ds.stopMovesOf(d)
		fn(d, err)
	}
	for _, d := range ds.dirs {
		d.onFailure.Store(&handler)
	}
}

// Online is the log dirs that have not failed, in log.dirs order.
func (ds *Dirs) Online() []*Dir {
	var on []*Dir
	for _, d := range ds.dirs {
		if d.Offline() == nil {
			on = append(on, d)
		}
	}
	return on
}

// Offline is the error that took the log's dir offline, or nil.
func (l *Log) Offline() error {
	if d := l.owner.Load(); d != nil {
		return d.Offline()
	}
	return nil
}

// DirectoryID is the Uuid of the log dir holding the log (KIP-858).
func (l *Log) DirectoryID() [16]byte { return l.owner.Load().DirectoryID() }

// OfflineDirectoryIDs are the Uuids of the failed log dirs, as far as
// they are known (a dir that failed to open may not say).
func (ds *Dirs) OfflineDirectoryIDs() [][16]byte {
	var ids [][16]byte
	for _, d := range ds.dirs {
		if d.Offline() != nil && d.DirectoryID() != [16]byte{} {
			ids = append(ids, d.DirectoryID())
		}
	}
	return ids
}
