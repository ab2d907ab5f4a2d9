package logstore

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
)

// epochEntry says leader epoch Epoch started at offset StartOffset.
type epochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochEntries are a partition's leader epochs, oldest first.
type epochEntries []epochEntry

// epochCache is the leader-epoch-checkpoint of one partition, kept in memory
// and rewritten (atomically, fsynced) whenever it changes. entries is
// guarded by Log.mu; view is a copy of it, published after every change,
// for readers that must not wait for an append (a leader checks every
// follower fetch's last fetched epoch against it).
type epochCache struct {
	path    string
	entries epochEntries
	view    atomic.Pointer[epochEntries]
}

// set replaces the entries and publishes a copy to view's readers.
func (c *epochCache) set(entries epochEntries) {
	c.entries = entries
	v := slices.Clone(entries)
	c.view.Store(&v)
}

// read is the entries as last published, without Log.mu.
func (c *epochCache) read() epochEntries {
	if v := c.view.Load(); v != nil {
		return *v
	}
	return nil
}

func loadEpochCache(dir string) (*epochCache, error) {
	c := &epochCache{path: filepath.Join(dir, leaderEpochFile)}
	rows, err := readCheckpoint(c.path, 2)
	if err != nil {
		return nil, err
	}
	var entries epochEntries
	for _, r := range rows {
		e, err1 := strconv.ParseInt(r[0], 10, 32)
		off, err2 := strconv.ParseInt(r[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: malformed entry %v", c.path, r)
		}
		entries = append(entries, epochEntry{int32(e), off})
	}
	c.set(entries)
	return c, nil
}

func (c *epochCache) latest() int32 { return c.entries.latest() }

func (es epochEntries) latest() int32 {
	if len(es) == 0 {
		return -1
	}
	return es[len(es)-1].Epoch
}

// assign records that epoch starts at offset, if epoch is newer than every
// epoch seen, dropping the epochs that start at or after offset (they
// wrote nothing), as Kafka's LeaderEpochFileCache.assign; it reports
// whether anything changed.
func (c *epochCache) assign(epoch int32, offset int64) bool {
	if epoch < 0 || epoch <= c.latest() {
		return false
	}
	return c.assignReplicated(epoch, offset)
}

// assignReplicated is Kafka's LeaderEpochFileCache.assign, for epochs
// read from a leader's batches: unless epoch already is the latest and
// starts at or before offset, the entries it contradicts (an epoch at or
// above it, or one starting at or after offset) are dropped and epoch is
// recorded as starting at offset. It reports whether anything changed.
func (c *epochCache) assignReplicated(epoch int32, offset int64) bool {
	if epoch < 0 || offset < 0 {
		return false
	}
	if n := len(c.entries); n > 0 && c.entries[n-1].Epoch == epoch && c.entries[n-1].StartOffset <= offset {
		return false
	}
	n := len(c.entries)
	for n > 0 && (c.entries[n-1].Epoch >= epoch || c.entries[n-1].StartOffset >= offset) {
		n--
	}
	c.set(append(c.entries[:n], epochEntry{epoch, offset}))
	return true
}

// endOffsetFor is Kafka's LeaderEpochFileCache.endOffsetFor: the largest
// epoch at or below the requested one and the offset where the next higher
// epoch starts; logEnd when the requested epoch is the latest; (-1, -1)
// when the epoch is undefined (-1), above every known epoch, or the cache
// is empty. A requested epoch below every known one gives itself and the
// first known epoch's start offset (the data before it is gone).
func (es epochEntries) endOffsetFor(epoch int32, logEnd int64) (int32, int64) {
	if epoch == -1 || len(es) == 0 {
		return -1, -1
	}
	if epoch == es.latest() {
		return epoch, logEnd
	}
	// The first entry with a higher epoch.
	i := sort.Search(len(es), func(i int) bool { return es[i].Epoch > epoch })
	switch {
	case i == len(es):
		return -1, -1
	case i == 0:
		return epoch, es[0].StartOffset
	default:
		return es[i-1].Epoch, es[i].StartOffset
	}
}

// epochFor is Kafka's LeaderEpochFileCache.epochForOffset: the epoch of
// the entry starting at offset, else of the last one starting before it;
// -1 when none does.
func (es epochEntries) epochFor(offset int64) int32 {
	epoch := int32(-1)
	for _, e := range es {
		if e.StartOffset > offset {
			break
		}
		epoch = e.Epoch
		if e.StartOffset == offset {
			break
		}
	}
	return epoch
}

// truncateFromEnd drops the epochs starting at or after endOffset (the log
// was cut there).
func (c *epochCache) truncateFromEnd(endOffset int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	if n == len(c.entries) {
		return false
	}
	c.set(c.entries[:n])
	return true
}

func (c *epochCache) bytes() []byte {
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	return formatCheckpoint(lines)
}

func (c *epochCache) write() error { return WriteFileAtomic(c.path, c.bytes()) }

// truncateFromStart forgets the epochs that start at or below startOffset
// (the log start moved there), keeping the last of them as starting at
// startOffset, as Kafka's LeaderEpochFileCache.truncateFromStart. It
// reports whether anything changed.
func (c *epochCache) truncateFromStart(startOffset int64) bool {
	n := 0
	for n < len(c.entries) && c.entries[n].StartOffset <= startOffset {
		n++
	}
	if n == 0 || (n == 1 && c.entries[0].StartOffset == startOffset) {
		return false
	}
	kept := epochEntry{c.entries[n-1].Epoch, startOffset}
	c.set(append(epochEntries{kept}, c.entries[n:]...))
	return true
}
