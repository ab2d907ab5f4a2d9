package broker

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Incremental fetch sessions (KIP-227). A client opens a session with a
// full fetch (epoch 0); the broker remembers the partitions and, for each,
// what it last told the client. Later fetches (epoch 1, 2, ...) list only
// partitions whose fetch position changed plus the ones to forget, and the
// response carries only partitions with news: records, an error, or a
// moved high watermark or log start offset, a preferred read replica, a
// diverging epoch. A
// partition that answered an error is sent again once it recovers, and one
// that returned records goes to the end of the session, so that the
// partitions take turns at the response's byte limit, as Kafka's
// IncrementalFetchContext. An incremental fetch that leaves the session
// without partitions closes it and is answered sessionless. A session
// names topics as the fetch that opened it did (names up to v12, ids
// from v13); a fetch naming them the other way is refused with
// FETCH_SESSION_TOPIC_ID_ERROR.
//
// A session is used by one client at a time: its mutex is held for the
// whole fetch, long poll included. When max.incremental.fetch.session.cache.slots
// are taken, a new session evicts another as Kafka's FetchSessionCache does
// (fetchSessionCache.evict), or is not created and the fetch is answered
// sessionless.

// sessionKey names a partition in a session: by topic name up to Fetch v12,
// by topic id from v13.
type sessionKey struct {
	topic     string
	topicID   [16]byte
	partition int32
}

type sessionPartition struct {
	key                sessionKey
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32 // the epoch of the fetcher's last record (v12+), or -1
	logStartOffset     int64 // a follower's own (its fetch says), -1 for consumers
	// what the last response said; -1 before the first response
	sentHighWatermark, sentLogStart int64
}

type fetchSession struct {
	mu         sync.Mutex
	id         int32
	epoch      int32 // the epoch the next request must carry
	partitions []*sessionPartition
	index      map[sessionKey]*sessionPartition
	lastUsed   time.Time
	created    time.Time
	privileged bool                // opened by a follower
	size       atomic.Int32        // partitions at its last use, for eviction
	byTopicID  bool                // opened by a Fetch of v13 or later
	moved      []*sessionPartition // rotate's scratch
}

func (s *fetchSession) upsert(sp sessionPartition) {
	if cur, ok := s.index[sp.key]; ok {
		cur.fetchOffset, cur.maxBytes, cur.currentLeaderEpoch, cur.logStartOffset = sp.fetchOffset, sp.maxBytes, sp.currentLeaderEpoch, sp.logStartOffset
		cur.lastFetchedEpoch = sp.lastFetchedEpoch
		return
	}
	sp.sentHighWatermark, sp.sentLogStart = -1, -1
	p := &sp
	s.partitions = append(s.partitions, p)
	s.index[sp.key] = p
}

func (s *fetchSession) forget(key sessionKey) {
	if _, ok := s.index[key]; !ok {
		return
	}
	delete(s.index, key)
	s.partitions = slices.DeleteFunc(s.partitions, func(p *sessionPartition) bool { return p.key == key })
}

// rotate moves the partitions for which returned(i) is true (they
// returned records) after the others, each group keeping its order.
func (s *fetchSession) rotate(returned func(i int) bool) {
	s.moved = s.moved[:0]
	kept := 0
	for i, p := range s.partitions {
		if returned(i) {
			s.moved = append(s.moved, p)
		} else {
			s.partitions[kept] = p
			kept++
		}
	}
	copy(s.partitions[kept:], s.moved)
	clear(s.moved)
}

// sessionEvictionAge is Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
// (not configurable there either).
const sessionEvictionAge = 2 * time.Minute

type fetchSessionCache struct {
	mu       sync.Mutex
	slots    int
	nextID   int32
	sessions map[int32]*fetchSession
	now      func() time.Time
}

func newFetchSessionCache(slots int) *fetchSessionCache {
	return &fetchSessionCache{slots: slots, sessions: map[int32]*fetchSession{}, now: time.Now}
}

// create opens a new session for a fetch of size partitions (privileged:
// a follower's), or returns nil when the cache is full and evicts none.
func (c *fetchSessionCache) create(byTopicID, privileged bool, size int) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.slots <= 0 || len(c.sessions) >= c.slots && !c.evict(privileged, size, now) {
		return nil
	}
	for {
		c.nextID++
		if c.nextID <= 0 {
			c.nextID = 1
		}
		if _, taken := c.sessions[c.nextID]; !taken {
			break
		}
	}
	s := &fetchSession{id: c.nextID, epoch: 1, index: map[sessionKey]*sessionPartition{}, lastUsed: now, created: now,
		privileged: privileged, byTopicID: byTopicID}
	s.size.Store(int32(size))
	c.sessions[s.id] = s
	return s
}

// evict makes room for a new session, as Kafka's
// FetchSessionCacheShard.tryEvict: the least recently used session goes if
// unused for longer than sessionEvictionAge; otherwise the least valuable
// evictable session (a consumer's before a follower's, then the fewest
// partitions, then the oldest id) goes if the new one is worth more. A
// session is evictable by a follower's if it is a consumer's, and by any
// if it had been open for longer than sessionEvictionAge at its last use.
// c.mu is held.
func (c *fetchSessionCache) evict(privileged bool, size int, now time.Time) bool {
	var lru, least *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) {
			lru = s
		}
		if !(privileged && !s.privileged) && s.lastUsed.Sub(s.created) <= sessionEvictionAge {
			continue
		}
		if least == nil || lessValuable(s, least) {
			least = s
		}
	}
	switch {
	case lru != nil && now.Sub(lru.lastUsed) > sessionEvictionAge:
		delete(c.sessions, lru.id)
	case least != nil && (privileged && !least.privileged || privileged == least.privileged && int32(size) > least.size.Load()):
		delete(c.sessions, least.id)
	default:
		return false
	}
	return true
}

// lessValuable orders sessions as Kafka's EvictableKey: privileged, then
// size, then id.
func lessValuable(a, b *fetchSession) bool {
	if a.privileged != b.privileged {
		return !a.privileged
	}
	if as, bs := a.size.Load(), b.size.Load(); as != bs {
		return as < bs
	}
	return a.id < b.id
}

func (c *fetchSessionCache) get(id int32) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	if s != nil {
		s.lastUsed = c.now()
	}
	return s
}

func (c *fetchSessionCache) remove(id int32) {
	c.mu.Lock()
	delete(c.sessions, id)
	c.mu.Unlock()
}

// check is the error an incremental fetch in the session gets, or 0: its
// epoch must be the session's next, and it must name topics as the fetch
// that opened the session did. mu must be held.
func (s *fetchSession) check(epoch int32, byTopicID bool) int16 {
	switch {
	case epoch != s.epoch:
		return errInvalidFetchSessionEpoch
	case byTopicID != s.byTopicID:
		return errFetchSessionTopicID
	}
	return 0
}

// nextEpoch moves the session to the epoch its next incremental fetch
// must carry (1 after the largest int32); mu must be held.
func (s *fetchSession) nextEpoch() {
	s.epoch++
	if s.epoch == math.MaxInt32 {
		s.epoch = 1
	}
}
