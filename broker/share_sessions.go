package broker

import (
	"math"
	"sync"
)

// shareSessions is Kafka's share session cache: one session per share
// group member on this broker, holding the partitions it fetches, so that
// each ShareFetch names only what changed. ShareSessionEpoch 0 opens a
// session (replacing the member's previous one), each later request
// carries the next epoch, and -1 closes it. A closed session, or the
// connection it was opened on closing, releases the records the member
// holds in its partitions, as Kafka does; a replaced one does not. At most
// group.share.max.share.sessions are open: a new member's first fetch
// beyond them is answered SHARE_SESSION_LIMIT_REACHED, after the fetch's
// MaxWaitMillis as in Kafka.
type shareSessions struct {
	b  *Broker
	mu sync.Mutex
	m  map[shareSessionKey]*shareSession
}

type shareSessionKey struct{ group, member string }

// shareSession is one member's session; its mutex is held for a whole
// request.
type shareSession struct {
	mu         sync.Mutex
	key        shareSessionKey
	epoch      int32 // the epoch the next request must carry
	conn       *conn
	partitions []shareSessionPartition
	next       int  // where the next fetch starts, so all partitions get their turn
	closed     bool // removed from the cache; a request that raced the removal fails
}

type shareSessionPartition struct {
	topicID   [16]byte
	partition int32
}

func newShareSessions(b *Broker) *shareSessions {
	return &shareSessions{b: b, m: map[shareSessionKey]*shareSession{}}
}

// open starts a new session for the member, replacing its previous one;
// nil when the cache is full. The records the member holds stay its own,
// as in Kafka (newContext only removes the previous session from the
// cache).
func (ss *shareSessions) open(k shareSessionKey, c *conn) *shareSession {
	s := &shareSession{key: k, epoch: 1, conn: c}
	ss.mu.Lock()
	old := ss.m[k]
	if old == nil && len(ss.m) >= ss.b.cfg.ShareMaxSessions {
		ss.mu.Unlock()
		return nil
	}
	ss.m[k] = s
	ss.mu.Unlock()
	if old != nil {
		old.mu.Lock()
		old.closed = true
		old.mu.Unlock()
	}
	return s
}

// get returns the member's session, locked, or a Kafka error code:
// SHARE_SESSION_NOT_FOUND, or INVALID_SHARE_SESSION_EPOCH when epoch is
// not the one expected.
func (ss *shareSessions) get(k shareSessionKey, epoch int32) (*shareSession, int16) {
	ss.mu.Lock()
	s := ss.m[k]
	ss.mu.Unlock()
	if s == nil {
		return nil, errShareSessionNotFound
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, errShareSessionNotFound
	case epoch != -1 && epoch != s.epoch:
		s.mu.Unlock()
		return nil, errInvalidShareSessionEpoch
	}
	return s, 0
}

// advance moves a session to its next epoch (wrapping to 1, as Kafka).
func (s *shareSession) advance() {
	if s.epoch == math.MaxInt32 {
		s.epoch = 1
	} else {
		s.epoch++
	}
}

// add puts a partition in the session; it reports whether it is new.
func (s *shareSession) add(sp shareSessionPartition) bool {
	for _, have := range s.partitions {
		if have == sp {
			return false
		}
	}
	s.partitions = append(s.partitions, sp)
	return true
}

func (s *shareSession) forget(sp shareSessionPartition) {
	for i, have := range s.partitions {
		if have == sp {
			s.partitions = append(s.partitions[:i], s.partitions[i+1:]...)
			return
		}
	}
}

// close removes a session the caller holds locked and releases what its
// member holds.
func (ss *shareSessions) close(s *shareSession) {
	ss.mu.Lock()
	if ss.m[s.key] == s {
		delete(ss.m, s.key)
	}
	ss.mu.Unlock()
	s.closed = true
	ss.releaseHeld(s)
}

// end closes a session the caller does not hold.
func (ss *shareSessions) end(s *shareSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		ss.close(s)
	}
}

// connClosed ends the sessions opened on c.
func (ss *shareSessions) connClosed(c *conn) {
	var ended []*shareSession
	ss.mu.Lock()
	for k, s := range ss.m {
		if s.conn == c {
			ended = append(ended, s)
			delete(ss.m, k)
		}
	}
	ss.mu.Unlock()
	for _, s := range ended {
		ss.end(s)
	}
}

// releaseHeld gives back the records the session's member holds in the
// session's partitions led here.
func (ss *shareSessions) releaseHeld(s *shareSession) {
	b := ss.b
	for _, sp := range s.partitions {
		t := b.topics.getByID(sp.topicID)
		p := t.partition(sp.partition)
		if p == nil || !p.isLeader() {
			continue
		}
		b.shares.release(b.shares.get(shareKey{s.key.group, sp.topicID, sp.partition}, p), s.key.member)
	}
}
