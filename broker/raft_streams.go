package broker

import (
	"net"
	"sync"

	"github.com/gregor-broker/gregor/acl"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// raftStreams are the raft streams this node's listeners handed to the
// controller while an authorizer is configured, each with the connection
// that opened it. Kafka authorizes every raft request (CLUSTER_ACTION on
// the cluster); a stream is authorized when it opens (mayStreamRaft) and
// again at every change of the ACLs, which closes the streams whose
// principal lost it, so that the peer's next dial is refused.
type raftStreams struct {
	mu   sync.Mutex
	open map[*raftStream]struct{}
}

// raftStream is a connection raft owns; its Close forgets it.
type raftStream struct {
	net.Conn
	opener *conn
	owner  *raftStreams
}

func (s *raftStream) Close() error {
	s.owner.mu.Lock()
	delete(s.owner.open, s)
	s.owner.mu.Unlock()
	return s.Conn.Close()
}

// handOffRaft gives stream, opened on c, to the controller.
func (b *Broker) handOffRaft(c *conn, stream net.Conn) {
	if b.cfg.Authorizer {
		s := &raftStream{Conn: stream, opener: c, owner: &b.raftStreams}
		b.raftStreams.mu.Lock()
		if b.raftStreams.open == nil {
			b.raftStreams.open = map[*raftStream]struct{}{}
		}
		b.raftStreams.open[s] = struct{}{}
		b.raftStreams.mu.Unlock()
		stream = s
	}
	b.cluster.ctl.HandOff(stream)
}

// recheckRaftStreams closes the raft streams whose principal the current
// ACLs no longer allow CLUSTER_ACTION, writing the denial to the audit log
// as Kafka writes a denied raft request.
func (b *Broker) recheckRaftStreams() {
	var denied []*raftStream
	b.raftStreams.mu.Lock()
	for s := range b.raftStreams.open {
		if !s.opener.checkLater(raftStreamKey, kmsg.ACLOperationClusterAction, kmsg.ACLResourceTypeCluster, acl.ClusterName, auditDenied) {
			denied = append(denied, s)
		}
	}
	b.raftStreams.mu.Unlock()
	for _, s := range denied {
		b.logger.Info("closing a raft stream whose principal lost CLUSTER_ACTION", "remote", s.RemoteAddr().String(), "principal", s.opener.principal())
		s.Close()
	}
}
