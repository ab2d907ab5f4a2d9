package logstore

// The log cleaner of a Dir (Kafka's LogCleaner and LogCleanerManager):
// log.cleaner.threads goroutines that each, over and over, pick the
// compacted log with the highest dirty ratio (dirty bytes over all bytes)
// above its min.cleanable.dirty.ratio, or any compacted log whose
// max.compaction.lag.ms has passed, and clean it (clean.go); when there is
// none they wait log.cleaner.backoff.ms. After each clean the new first
// dirty offset goes to cleaner-offset-checkpoint in the log dir (the same
// CheckpointFile format as the other offset checkpoints). After each
// attempt that did not fail a thread also runs retention (retention.go) on
// the compacted logs, which the Dir's retention check leaves to the
// cleaner as Kafka's does: with no thread (log.cleaner.enable=false) their
// segments stay. A log whose clean fails with an error other than an
// abort is left alone until the Dir is reopened, as Kafka marks it
// uncleanable; when what failed was a record above
// max.decompressed.message.bytes, only until that limit changes. A clean
// in progress is aborted when the log's policy drops compact.
//
// Retention and cleaning of one log exclude each other through the log's
// cleanMu; threads skip a log another thread holds.

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/protocol"
)

// Kafka's defaults for the cleaner.
const (
	DefaultCleanerThreads = 1
	DefaultCleanerBackoff = 15 * time.Second
	// DefaultCleanerDedupeBufferSize is log.cleaner.dedupe.buffer.size.
	DefaultCleanerDedupeBufferSize = 128 << 20
)

// Bytes per offset map entry and the map's load factor, as Kafka sizes its
// map from log.cleaner.dedupe.buffer.size (16-byte MD5 + 8-byte offset, 0.9).
const (
	offsetMapEntryBytes = 24
	offsetMapLoad       = 0.9
)

type cleaner struct {
	d *Dir

	run     sync.Mutex // serialises SetCleaner and shutdown
	stopCh  chan struct{}
	threads sync.WaitGroup
	closed  bool

	mu          sync.Mutex // guards the fields below and the checkpoint file
	checkpoints map[TopicPartition]int64
	uncleanable map[TopicPartition]int // the failed clean's record limit, or untilReopened
	dedupeBytes int64                  // log.cleaner.dedupe.buffer.size, shared by the threads
	throttle    *IOThrottle            // log.cleaner.io.max.bytes.per.second; nil: none
	nThreads    int                    // threads running
	mapEntries  int                    // offset map capacity of each thread
	step        func(string) error     // before each swap step (tests)
}

func newCleaner(d *Dir) (*cleaner, error) {
	c := &cleaner{d: d, uncleanable: map[TopicPartition]int{}}
	c.setDedupeBuffer(DefaultCleanerDedupeBufferSize, DefaultCleanerThreads)
	ck, err := readOffsetCheckpoint(filepath.Join(d.path, cleanerFile))
	if err != nil {
		// The logs are then cleaned from their start: slower, not wrong.
		d.cleanerLogger.Warn("logstore: ignoring unreadable cleaner checkpoint", "err", err)
		ck = map[TopicPartition]int64{}
	}
	for tp := range ck {
		if d.logs[tp] == nil {
			delete(ck, tp) // a deleted partition: a new one of the name starts dirty
		}
	}
	c.checkpoints = ck
	return c, nil
}

// setDedupeBuffer sizes each thread's offset map from the shared buffer:
// its share, but no more than 2 GiB, as Kafka ignores the excess.
func (c *cleaner) setDedupeBuffer(bytes int64, threads int) {
	c.mu.Lock()
	c.dedupeBytes, c.nThreads = bytes, max(threads, 1)
	perThread := min(bytes/int64(c.nThreads), math.MaxInt32)
	c.mapEntries = int(float64(perThread/offsetMapEntryBytes) * offsetMapLoad)
	c.mu.Unlock()
}

// SetCleanerThrottle makes the dir's cleaner charge its reads and writes
// to t (log.cleaner.io.max.bytes.per.second), which the broker shares
// among its dirs; nil: none.
func (d *Dir) SetCleanerThrottle(t *IOThrottle) {
	d.cleaner.mu.Lock()
	d.cleaner.throttle = t
	d.cleaner.mu.Unlock()
}

// SetCleaner sets the number of cleaner goroutines (log.cleaner.threads;
// 0: no cleaning) and how long an idle one waits before looking again
// (log.cleaner.backoff.ms). Cleans in progress are aborted and restarted.
func (d *Dir) SetCleaner(threads int, backoff time.Duration) {
	d.cleaner.start(threads, backoff)
}

// SetCleanerDedupeBufferSize sets the memory for the cleaners' offset maps
// (log.cleaner.dedupe.buffer.size, default 128 MiB), shared by threads
// cleaner threads: 24 bytes per key at a 0.9 load, as Kafka counts, and
// at most 2 GiB per thread.
// SetCleaner later divides the size by its own thread count.
func (d *Dir) SetCleanerDedupeBufferSize(bytes int64, threads int) {
	d.cleaner.setDedupeBuffer(bytes, threads)
}

func (c *cleaner) start(threads int, backoff time.Duration) {
	c.run.Lock()
	defer c.run.Unlock()
	c.stopLocked()
	c.mu.Lock()
	bytes := c.dedupeBytes
	c.mu.Unlock()
	c.setDedupeBuffer(bytes, threads)
	if c.closed || threads <= 0 {
		return
	}
	stop := make(chan struct{})
	c.stopCh = stop
	for i := 0; i < threads; i++ {
		c.threads.Add(1)
		go c.loop(stop, max(backoff, time.Millisecond))
	}
}

func (c *cleaner) stopLocked() {
	if c.stopCh != nil {
		close(c.stopCh)
		c.stopCh = nil
	}
	c.threads.Wait()
}

// shutdown stops the threads for good (Close).
func (c *cleaner) shutdown() {
	c.run.Lock()
	defer c.run.Unlock()
	c.closed = true
	c.stopLocked()
}

func (c *cleaner) loop(stop chan struct{}, backoff time.Duration) {
	defer c.threads.Done()
	aborted := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(backoff)
	defer t.Stop()
	for {
		cleaned, err := c.cleanFilthiest(aborted)
		if err != nil && !errors.Is(err, errCleanAborted) {
			c.d.cleanerLogger.Error("logstore: log cleaning failed", "dir", c.d.path, "err", err)
		}
		if aborted() {
			return
		}
		if err == nil || errors.Is(err, errCleanAborted) {
			if err := c.d.retentionPass(false, c.retainable); err != nil {
				c.d.logger.Error("logstore: retention failed", "dir", c.d.path, "err", err)
			}
		}
		if cleaned {
			continue
		}
		t.Reset(backoff)
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// retainable picks the logs whose retention the cleaner's threads run
// after each attempt to clean (Kafka's LogCleanerManager.deletableLogs):
// the compacted logs, but those whose clean failed.
func (c *cleaner) retainable(l *Log) bool {
	cfg := l.Config()
	return cfg.Compact && !c.isUncleanable(l.tp, cfg)
}

// cleanFilthiest cleans the compacted log most in need (see the top of
// this file); it reports whether it cleaned one.
func (c *cleaner) cleanFilthiest(aborted func() bool) (bool, error) {
	now := time.Now().UnixMilli()
	type candidate struct {
		l     *Log
		ratio float64
	}
	var cands []candidate
	for tp, l := range c.d.Logs() {
		cfg := l.Config()
		if !cfg.Compact || c.isUncleanable(tp, cfg) {
			continue
		}
		ltc := l.cleanableRange(c.checkpoint(tp), now)
		if ltc.totalBytes() == 0 {
			continue
		}
		if (ltc.needNow && ltc.cleanableBytes > 0) || ltc.ratio() > cfg.MinCleanableDirtyRatio {
			cands = append(cands, candidate{l, ltc.ratio()})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].ratio > cands[j].ratio })
	for _, cand := range cands {
		if !cand.l.cleanMu.TryLock() {
			continue // another thread, or retention, has it
		}
		_, err := c.cleanLog(cand.l, aborted)
		cand.l.cleanMu.Unlock()
		return true, err
	}
	return false, nil
}

// cleanLog cleans l (whose cleanMu the caller holds) and checkpoints the
// new first dirty offset, which it returns.
func (c *cleaner) cleanLog(l *Log, aborted func() bool) (int64, error) {
	now := time.Now().UnixMilli()
	ltc := l.cleanableRange(c.checkpoint(l.tp), now)
	if ltc.firstUncleanable <= ltc.firstDirty {
		return ltc.firstDirty, nil
	}
	c.mu.Lock()
	o := cleanOptions{now: now, mapEntries: c.mapEntries, step: c.step, throttle: c.throttle}
	c.mu.Unlock()
	simulated := o.step != nil // a test stopping the clean as a crash would
	if o.step == nil {
		o.step = noStep
	}
	o.aborted = func() bool {
		return aborted() || l.cleanAbort.Load() || l.cleanPause.Load() > 0 || l.notCompact.Load()
	}
	before, start := l.Size(), time.Now()
	end, err := l.clean(ltc, o)
	if errors.Is(err, errCleanAborted) {
		return 0, err
	}
	if err != nil {
		if !simulated {
			l.checkIO(err)
		}
		mark := untilReopened
		if errors.Is(err, protocol.ErrRecordTooLarge) {
			mark = l.Config().recordLimit()
		}
		c.mu.Lock()
		c.uncleanable[l.tp] = mark
		c.mu.Unlock()
		return 0, fmt.Errorf("clean %s: %w", l.tp, err)
	}
	c.d.cleanerLogger.Info("logstore: cleaned log", "partition", l.tp.String(), "dirty.from", ltc.firstDirty, "dirty.to", end,
		"bytes.before", before, "bytes.after", l.Size(), "took", time.Since(start).Round(time.Millisecond))
	return end, c.setCheckpoint(l.tp, end)
}

// CleanNow cleans the compacted log of tp at once, whatever its dirty
// ratio (the lag settings still apply), and returns the new first dirty
// offset (cleaner-offset-checkpoint). It waits for a clean or retention
// pass in progress on that log. For tests and tools.
func (d *Dir) CleanNow(tp TopicPartition) (int64, error) {
	l := d.Log(tp)
	if l == nil {
		return 0, fmt.Errorf("no log %s", tp)
	}
	if !l.Config().Compact {
		return 0, fmt.Errorf("log %s is not compacted", tp)
	}
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	stop := d.stop
	return d.cleaner.cleanLog(l, func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	})
}

// CleanerCheckpoint returns the first dirty offset recorded for tp in
// cleaner-offset-checkpoint.
func (d *Dir) CleanerCheckpoint(tp TopicPartition) (int64, bool) {
	d.cleaner.mu.Lock()
	defer d.cleaner.mu.Unlock()
	off, ok := d.cleaner.checkpoints[tp]
	return off, ok
}

func (c *cleaner) checkpoint(tp TopicPartition) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if off, ok := c.checkpoints[tp]; ok {
		return off
	}
	return -1
}

// untilReopened marks a log uncleanable whatever its config.
const untilReopened = -1

// isUncleanable reports whether tp's last clean failed and should not be
// tried again with the config cfg.
func (c *cleaner) isUncleanable(tp TopicPartition, cfg Config) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	mark, ok := c.uncleanable[tp]
	return ok && (mark == untilReopened || mark == cfg.recordLimit())
}

func (c *cleaner) setCheckpoint(tp TopicPartition, off int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checkpoints[tp] = off
	return c.d.writeCheckpoint(cleanerFile, c.checkpoints)
}

// truncateCheckpoint lowers tp's first dirty offset to end when its log
// was truncated below it (Kafka's maybeTruncateCheckpoint): what is
// appended there next has not been cleaned.
func (c *cleaner) truncateCheckpoint(tp TopicPartition, end int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if off, ok := c.checkpoints[tp]; !ok || off <= end {
		return nil
	}
	c.checkpoints[tp] = end
	return c.d.writeCheckpoint(cleanerFile, c.checkpoints)
}

// handOver passes tp's first dirty offset and uncleanable mark to the
// cleaner of the dir the log moved to, as Kafka's alterCheckpointDir.
func (c *cleaner) handOver(tp TopicPartition, to *cleaner) {
	c.mu.Lock()
	off, dirtyFrom := c.checkpoints[tp]
	mark, uncleanable := c.uncleanable[tp]
	c.mu.Unlock()
	c.forget(tp)
	to.mu.Lock()
	defer to.mu.Unlock()
	if uncleanable {
		to.uncleanable[tp] = mark
	}
	if !dirtyFrom {
		return
	}
	to.checkpoints[tp] = off
	if err := to.d.writeCheckpoint(cleanerFile, to.checkpoints); err != nil {
		to.d.cleanerLogger.Error("logstore: writing the cleaner checkpoint failed", "dir", to.d.path, "err", err)
	}
}

// forget drops a deleted (or moved) log from the checkpoint.
func (c *cleaner) forget(tp TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.uncleanable, tp)
	if _, ok := c.checkpoints[tp]; !ok {
		return
	}
	delete(c.checkpoints, tp)
	if err := c.d.writeCheckpoint(cleanerFile, c.checkpoints); err != nil {
		c.d.cleanerLogger.Error("logstore: writing the cleaner checkpoint failed", "dir", c.d.path, "err", err)
	}
}
