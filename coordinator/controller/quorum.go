package controller

import (
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MetadataTopic is the name Kafka gives the metadata log's one partition,
// which DescribeQuorum asks about.
const MetadataTopic = "__cluster_metadata"

// MetadataTopicRefusal is Kafka's answer to creating MetadataTopic, which
// CreateTopics gives with INVALID_REQUEST.
const MetadataTopicRefusal = "Creation of internal topic " + MetadataTopic + " is prohibited."

// observerSessionTimeout is how long the leader keeps listing an observer
// it has not heard from (Kafka's LeaderState.OBSERVER_SESSION_TIMEOUT_MS).
const observerSessionTimeout = 5 * time.Minute

// describeQuorum answers DescribeQuorum as KRaft's leader does: its id and
// epoch (the raft term), the high watermark (the commit index), and each
// voter's and observer's log end offset with the last times it fetched
// and was caught up. The caller holds c.mu on the active controller, which
// is the raft leader.
func (c *Controller) describeQuorum(req *kmsg.DescribeQuorumRequest) kmsg.Response {
	if resp := UnknownQuorumPartitions(req); resp != nil {
		return resp
	}
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	if c.raft.State() != raft.Leader {
		return notController(req)
	}
	conf := c.raft.GetConfiguration()
	if conf.Error() != nil {
		return notController(req)
	}
	term := c.raft.CurrentTerm()
	now := time.Now()
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.LeaderEpoch = c.cfg.NodeID, int32(term)
	p.HighWatermark = int64(c.raft.CommitIndex())
	servers := slices.Clone(conf.Configuration().Servers)
	slices.SortFunc(servers, func(a, b raft.Server) int { return nodeID(a.ID) - nodeID(b.ID) })
	for _, s := range servers {
		id := int32(nodeID(s.ID))
		state := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		state.ReplicaID = id
		if rc := c.Image().Controllers[id]; rc != nil {
			state.ReplicaDirectoryID = rc.DirectoryID
		}
		state.LogEndOffset = -1
		if id == c.cfg.NodeID {
			state.LogEndOffset = int64(c.raft.LastIndex())
			state.LastFetchTimestamp, state.LastCaughtUpTimestamp = now.UnixMilli(), now.UnixMilli()
		} else if pr, ok := c.progress.progress(s.ID, term); ok {
			state.LogEndOffset, state.LastFetchTimestamp = pr.endOffset, pr.lastFetch.UnixMilli()
			if !pr.lastCaughtUp.IsZero() {
				state.LastCaughtUpTimestamp = pr.lastCaughtUp.UnixMilli()
			}
		} else if s.Suffrage != raft.Voter {
			continue // an observer not heard from in this term
		}
		if s.Suffrage == raft.Voter {
			p.CurrentVoters = append(p.CurrentVoters, state)
			resp.Nodes = append(resp.Nodes, c.quorumNode(id, string(s.Address)))
		} else if now.Sub(time.UnixMilli(state.LastFetchTimestamp)) < observerSessionTimeout {
			p.Observers = append(p.Observers, state)
		}
	}
	resp.Topics = []kmsg.DescribeQuorumResponseTopic{{Topic: MetadataTopic, Partitions: []kmsg.DescribeQuorumResponseTopicPartition{p}}}
	return resp
}

// UnknownQuorumPartitions answers a DescribeQuorum that asks for anything
// but the metadata log's one partition, each partition it names with
// UNKNOWN_TOPIC_OR_PARTITION and its message, as KRaft does
// (DescribeQuorumRequest.getPartitionLevelErrorResponse); it returns nil for a request
// that asks for exactly that partition.
func UnknownQuorumPartitions(req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	if len(req.Topics) == 1 && req.Topics[0].Topic == MetadataTopic &&
		len(req.Topics[0].Partitions) == 1 && req.Topics[0].Partitions[0].Partition == 0 {
		return nil
	}
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	for _, t := range req.Topics {
		rt := kmsg.DescribeQuorumResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeQuorumResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicOrPartition.Code
			rp.ErrorMessage = kmsg.StringPtr(kerr.UnknownTopicOrPartition.Description)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// quorumNode is a voter's entry of DescribeQuorum's nodes (v2): its
// CONTROLLER listener.
func (c *Controller) quorumNode(id int32, addr string) kmsg.DescribeQuorumResponseNode {
	n := kmsg.DescribeQuorumResponseNode{NodeID: id}
	host, portText, err := net.SplitHostPort(addr)
	port, perr := strconv.ParseUint(portText, 10, 16)
	if err == nil && perr == nil && c.cfg.ListenerName != "" {
		n.Listeners = []kmsg.DescribeQuorumResponseNodeListener{{Name: c.cfg.ListenerName, Host: host, Port: uint16(port)}}
	}
	return n
}

// nodeID reads a raft server id, the node id in decimal.
func nodeID(id raft.ServerID) int {
	n, err := strconv.Atoi(string(id))
	if err != nil {
		return -1
	}
	return n
}
