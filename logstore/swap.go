package logstore

// Swapping cleaned segments in, crash-safely, as Kafka's
// LocalLog.replaceSegments and LogLoader do.
//
// The cleaner writes the replacement of a group of segments as
// <base>.log.cleaned (+ .index.cleaned, .timeindex.cleaned), fsyncs it,
// and then, holding the log's lock:
//
//  1. renames the new files .cleaned -> .swap (the .log first);
//  2. puts the new segment in the segment list in place of the old ones;
//  3. renames the old segments' files to .deleted (removed after
//     file.delete.delay.ms);
//  4. renames the new files .swap -> their final names;
//  5. fsyncs the directory.
//
// Whatever step a crash interrupts, OpenDir (completeSwaps) finds one of
// these states and finishes or undoes the swap:
//
//   - *.deleted files are removed;
//   - a .swap file whose offset is at or above the lowest .cleaned file's
//     comes from an interrupted step 1 (the .log renamed before its
//     indexes): removed, and every .cleaned file too; the old segments are
//     all still there;
//   - a remaining <base>.log.swap replaced the segment files with offsets
//     in [base, next offset after its last batch): those still there
//     (step 3 unfinished) are removed, then every .swap file is renamed to
//     its final name (steps 3 and 4 finished).

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// errCleanAborted stops a clean that must not go on (Close, DeleteLog, a
// cleanup policy without compact, a truncation or move waiting).
var errCleanAborted = errors.New("log cleaning aborted")

// replaceSegments swaps the cleaned segment in for old (the steps above).
// step is called before every file operation (tests stop there). started
// reports whether the swap began: after that an error leaves the files
// as they are, for the loader.
func (l *Log) replaceSegments(cleaned *segment, old []*segment, step func(string) error) (started bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.cleanAbort.Load() {
		return false, errCleanAborted
	}
	if err := step("rename cleaned to swap"); err != nil {
		return true, err // a crash here leaves the .cleaned files to the loader
	}
	if err := cleaned.renameFiles(swapSuffix, step); err != nil {
		return true, err
	}

	replaced := map[*segment]bool{}
	for _, s := range old {
		replaced[s] = true
	}
	cur := l.segments()
	next := make([]*segment, 0, len(cur))
	var gone []*segment
	inserted := false
	for _, s := range cur {
		if replaced[s] {
			gone = append(gone, s)
			continue
		}
		if !inserted && s.base > cleaned.base {
			next, inserted = append(next, cleaned), true
		}
		next = append(next, s)
	}
	if !inserted { // cannot happen: the active segment is never cleaned
		next = append(next, cleaned)
	}
	l.segs.Store(&next)

	for _, s := range gone {
		if err := s.renameFiles(deletedSuffix, step); err != nil {
			return true, err
		}
		if owner := l.owner.Load(); owner != nil {
			owner.deleter.later(s, time.Duration(l.cfg.FileDeleteDelayMs)*time.Millisecond)
		}
	}
	if err := cleaned.renameFiles("", step); err != nil {
		return true, err
	}
	if err := step("sync dir"); err != nil {
		return true, err
	}
	return true, syncDir(l.dir)
}

// completeSwaps finishes or undoes, in a partition directory, a swap a
// crash interrupted (the rules at the top of this file).
func completeSwaps(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	minCleaned := int64(math.MaxInt64)
	var cleaned, swaps []string
	for _, de := range ents {
		name := de.Name()
		if !de.Type().IsRegular() {
			continue
		}
		switch {
		case strings.HasSuffix(name, deletedSuffix):
			if err := removeIfExists(filepath.Join(dir, name)); err != nil {
				return err
			}
		case strings.HasSuffix(name, cleanedSuffix):
			if off, ok := parseOffsetPrefix(name); ok {
				minCleaned = min(minCleaned, off)
			}
			cleaned = append(cleaned, name)
		case strings.HasSuffix(name, swapSuffix):
			swaps = append(swaps, name)
		}
	}
	var valid []string
	for _, name := range swaps {
		if off, ok := parseOffsetPrefix(name); !ok || off >= minCleaned {
			if err := removeIfExists(filepath.Join(dir, name)); err != nil {
				return err
			}
			continue
		}
		valid = append(valid, name)
	}
	for _, name := range cleaned {
		if err := removeIfExists(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	if len(swaps) == 0 && len(cleaned) == 0 {
		return nil
	}

	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, name := range valid {
		if !strings.HasSuffix(name, logSuffix+swapSuffix) {
			continue
		}
		base, _ := parseOffsetPrefix(name)
		next, err := nextOffsetOfFile(filepath.Join(dir, name), base)
		if err != nil {
			return err
		}
		lo, hi = min(lo, base), max(hi, next)
	}
	for _, de := range ents {
		for _, suffix := range segmentFileSuffixes {
			if off, ok := parseOffsetName(de.Name(), suffix); ok && off >= lo && off < hi {
				if err := removeIfExists(filepath.Join(dir, de.Name())); err != nil {
					return err
				}
			}
		}
	}
	for _, name := range valid {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, strings.TrimSuffix(name, swapSuffix))); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

// nextOffsetOfFile is the offset after the last whole batch of a .log file
// (base when it has none), Kafka's LogSegment.readNextOffset.
func nextOffsetOfFile(path string, base int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	next := base
	sc := newScanner(f, 0, st.Size(), 64<<10)
	for {
		h, _, err := sc.next()
		if err == io.EOF || errors.Is(err, errTorn) {
			return next, nil
		}
		if err != nil {
			return 0, err
		}
		next = h.LastOffset() + 1
	}
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
