package controller

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/gregor-broker/gregor/internal/features"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/hashicorp/raft"
)

// Votes and directory ids (KIP-853). KRaft asks a voter for its vote by
// node id and directory id, and a replica whose own directory id is not
// the one it is asked by refuses: it is an observer. So a controller back
// with a new disk (its meta.properties has another directory id) cannot
// vote with the log and the memory of past votes it lost, until
// RemoveRaftVoter has taken the old vote away and AddRaftVoter has given
// it one with its own directory id. Raft knows its servers by node id
// alone, so the transport applies the rule (voteGate): while mayVote says
// no, this node grants no vote or pre-vote, asks for none and takes no
// leadership handed to it; it neither elects a leader nor becomes one.
// It still follows the log and acknowledges what it stored, which raft's
// leader counts towards the commit, where KRaft would not count an
// observer's fetches.

// votingDirectory is the directory id this node's id votes with, when a
// dynamic quorum (kraft.version 1) has recorded one.
func (c *Controller) votingDirectory() ([16]byte, bool) {
	img := c.Image()
	if features.Level(img.Features, features.KRaftVersion) < 1 {
		return [16]byte{}, false
	}
	rc := img.Controllers[c.cfg.NodeID]
	if rc == nil || rc.DirectoryID == [16]byte{} {
		return [16]byte{}, false
	}
	return rc.DirectoryID, true
}

// mayVote reports whether this node takes part in elections: not when its
// id votes with another directory id than its own, nor when it started on
// an empty raft dir as an observer (a controller to be added, or back with
// a new disk) until its own directory id has been given the vote.
func (c *Controller) mayVote() bool {
	if c.cfg.DirectoryID == nil {
		return true
	}
	own := c.cfg.DirectoryID()
	recorded, known := c.votingDirectory()
	if known && own != [16]byte{} && recorded != own {
		return false
	}
	return !c.awaitingVote.Load() || known && recorded == own
}

// awaitingVoteFile, in the raft dir, says that this node has been waiting
// for its directory id's vote since it started on an empty raft dir. A
// restart after the node has caught up on the log would otherwise find a
// raft dir with state and vote again before applying the records that say
// whose vote its id is.
const awaitingVoteFile = "awaiting-vote"

// markAwaitingVote sets awaitingVote when this node starts empty, writing
// the file before raft stores anything, or when the file is there from an
// earlier start.
func (c *Controller) markAwaitingVote(startedEmpty bool) error {
	path := filepath.Join(c.cfg.Dir, awaitingVoteFile)
	if !startedEmpty {
		_, err := os.Stat(path)
		c.awaitingVote.Store(err == nil)
		return nil
	}
	c.awaitingVote.Store(true)
	note := "This controller started on an empty metadata dir: it votes once its directory id has been given its node id's vote (kafka-metadata-quorum add-controller).\n"
	if err := logstore.WriteFileAtomic(path, []byte(note)); err != nil {
		return fmt.Errorf("controller: recording that this node awaits its vote: %w", err)
	}
	return nil
}

// watchForVote clears awaitingVote, and removes its file, once the image
// gives this node's directory id its node id's vote.
func (c *Controller) watchForVote() {
	for c.awaitingVote.Load() && c.cfg.DirectoryID != nil {
		changed := c.fsm.changedCh()
		if recorded, known := c.votingDirectory(); known && recorded == c.cfg.DirectoryID() {
			if err := os.Remove(filepath.Join(c.cfg.Dir, awaitingVoteFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
				c.log.Warn("controller: removing the awaiting-vote mark", "err", err)
			}
			c.awaitingVote.Store(false)
			return
		}
		select {
		case <-changed:
		case <-c.closed:
			return
		}
	}
}

var errNoVote = errors.New("controller: this node does not vote: its directory id does not hold its node id's vote")

// voteGate is the raft transport that keeps a node mayVote refuses out of
// elections; everything else passes through to the progress transport.
type voteGate struct {
	*progressTransport
	mayVote func() bool
	self    raft.ServerID
	rpcs    chan raft.RPC
	stop    chan struct{}
	once    sync.Once
}

func newVoteGate(inner *progressTransport, self raft.ServerID, mayVote func() bool) *voteGate {
	g := &voteGate{progressTransport: inner, mayVote: mayVote, self: self, rpcs: make(chan raft.RPC), stop: make(chan struct{})}
	go g.forward()
	return g
}

// Consumer gives raft the RPCs it receives, but for the vote requests and
// leadership hand-overs the gate has answered itself.
func (g *voteGate) Consumer() <-chan raft.RPC { return g.rpcs }

func (g *voteGate) forward() {
	in := g.progressTransport.Consumer()
	for {
		select {
		case rpc := <-in:
			if g.refuse(rpc) {
				continue
			}
			select {
			case g.rpcs <- rpc:
			case <-g.stop:
				return
			}
		case <-g.stop:
			return
		}
	}
}

// refuse answers rpc itself when it asks this node for a vote or to take
// over the leadership and mayVote says no.
func (g *voteGate) refuse(rpc raft.RPC) bool {
	switch rpc.Command.(type) {
	case *raft.RequestVoteRequest, *raft.RequestPreVoteRequest, *raft.TimeoutNowRequest:
	default:
		return false
	}
	if g.mayVote() {
		return false
	}
	switch rpc.Command.(type) {
	case *raft.RequestVoteRequest:
		rpc.Respond(&raft.RequestVoteResponse{RPCHeader: g.header(), Term: g.term()}, nil)
	case *raft.RequestPreVoteRequest:
		rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: g.header(), Term: g.term()}, nil)
	default:
		rpc.Respond(&raft.TimeoutNowResponse{RPCHeader: g.header()}, errNoVote)
	}
	return true
}

func (g *voteGate) header() raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(g.self),
		Addr: g.EncodePeer(g.self, g.LocalAddr())}
}

func (g *voteGate) term() uint64 {
	if r := g.raft.Load(); r != nil {
		return r.CurrentTerm()
	}
	return 0
}

func (g *voteGate) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if !g.mayVote() {
		return errNoVote
	}
	return g.progressTransport.RequestVote(id, target, args, resp)
}

func (g *voteGate) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if !g.mayVote() {
		return errNoVote
	}
	return g.progressTransport.RequestPreVote(id, target, args, resp)
}

func (g *voteGate) Close() error {
	g.once.Do(func() { close(g.stop) })
	return g.progressTransport.Close()
}
