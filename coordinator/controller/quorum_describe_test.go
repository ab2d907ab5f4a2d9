package controller

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeQuorumReq(topic string, partitions ...int32) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.SetVersion(2)
	rt := kmsg.DescribeQuorumRequestTopic{Topic: topic}
	for _, p := range partitions {
		rt.Partitions = append(rt.Partitions, kmsg.DescribeQuorumRequestTopicPartition{Partition: p})
	}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	return req
}

// quorumState describes the metadata quorum and returns its one partition.
func quorumState(t *testing.T, cl *Client) (*kmsg.DescribeQuorumResponse, kmsg.DescribeQuorumResponseTopicPartition) {
	t.Helper()
	resp := send[*kmsg.DescribeQuorumResponse](t, cl, describeQuorumReq(MetadataTopic, 0))
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("describe quorum: %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("describe quorum: partition error %d", p.ErrorCode)
	}
	return resp, p
}

func replicaState(states []kmsg.DescribeQuorumResponseTopicPartitionReplicaState, id int32) (kmsg.DescribeQuorumResponseTopicPartitionReplicaState, bool) {
	for _, s := range states {
		if s.ReplicaID == id {
			return s, true
		}
	}
	return kmsg.DescribeQuorumResponseTopicPartitionReplicaState{}, false
}

// DescribeQuorum reports the raft leader as KRaft's does: leader, epoch,
// high watermark, and every voter's log end offset and last fetch and
// caught-up times, learned from the followers' answers to the leader. A
// stopped follower falls behind and stops fetching; back, it catches up.
func TestDescribeQuorum(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.ListenerName = "CONTROLLER" })
	cl := tc.client()
	registerUnfenced(t, cl, 3)
	leader := tc.active()
	leaderID := tc.nodes[leader].id

	var resp *kmsg.DescribeQuorumResponse
	var p kmsg.DescribeQuorumResponseTopicPartition
	eventually(t, "every voter caught up", func() bool {
		resp, p = quorumState(t, cl)
		if len(p.CurrentVoters) != 3 {
			return false
		}
		for _, v := range p.CurrentVoters {
			if v.LogEndOffset != p.HighWatermark || v.LastCaughtUpTimestamp < 0 {
				return false
			}
		}
		return true
	})
	if p.LeaderID != leaderID || p.LeaderEpoch < 1 || p.HighWatermark < int64(tc.ctl(leader).Image().Offset) {
		t.Fatalf("leader %d epoch %d hw %d; want leader %d and hw at least the applied offset %d",
			p.LeaderID, p.LeaderEpoch, p.HighWatermark, leaderID, tc.ctl(leader).Image().Offset)
	}
	if len(p.Observers) != 0 {
		t.Fatalf("observers %+v in a quorum of voters only", p.Observers)
	}
	if len(resp.Nodes) != 3 {
		t.Fatalf("nodes %+v, want the three voters", resp.Nodes)
	}
	for _, n := range resp.Nodes {
		host, port, _ := net.SplitHostPort(tc.voters[n.NodeID])
		want := kmsg.DescribeQuorumResponseNodeListener{Name: "CONTROLLER", Host: host, Port: uint16(mustAtoi(t, port))}
		if len(n.Listeners) != 1 || n.Listeners[0].Name != want.Name || n.Listeners[0].Host != want.Host || n.Listeners[0].Port != want.Port {
			t.Fatalf("node %d listeners %+v, want %+v", n.NodeID, n.Listeners, want)
		}
	}

	follower := (leader + 1) % 3
	followerID := tc.nodes[follower].id
	tc.crash(follower)
	createTopic(t, cl, "while-down", 1, 1, nil)
	time.Sleep(300 * time.Millisecond)
	_, p = quorumState(t, cl)
	down, _ := replicaState(p.CurrentVoters, followerID)
	lead, _ := replicaState(p.CurrentVoters, leaderID)
	now := time.Now().UnixMilli()
	if down.LogEndOffset >= lead.LogEndOffset {
		t.Fatalf("the stopped follower's end offset %d is not behind the leader's %d", down.LogEndOffset, lead.LogEndOffset)
	}
	if now-down.LastFetchTimestamp < 250 || down.LastCaughtUpTimestamp > down.LastFetchTimestamp {
		t.Fatalf("the stopped follower last fetched %d ms ago, caught up at %d (last fetch %d)",
			now-down.LastFetchTimestamp, down.LastCaughtUpTimestamp, down.LastFetchTimestamp)
	}
	if lead.LogEndOffset < p.HighWatermark || lead.LastFetchTimestamp < now-5000 {
		t.Fatalf("leader state %+v, high watermark %d", lead, p.HighWatermark)
	}

	tc.start(follower)
	eventually(t, "the restarted follower caught up", func() bool {
		_, p = quorumState(t, cl)
		back, _ := replicaState(p.CurrentVoters, followerID)
		lead, _ := replicaState(p.CurrentVoters, p.LeaderID)
		return back.LogEndOffset == lead.LogEndOffset && back.LastCaughtUpTimestamp > down.LastFetchTimestamp
	})
}

// A broker-only node, a raft non-voter, is listed among the observers
// once the leader replicates to it.
func TestDescribeQuorumObservers(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.ObserverListener = "INTERNAL" })
	cl := tc.client()
	registerUnfenced(t, cl, 3)
	_, addr := tc.addObserver(4)
	registerObserver(t, cl, 4, addr)
	eventually(t, "the observer listed", func() bool {
		_, p := quorumState(t, cl)
		obs, ok := replicaState(p.Observers, 4)
		return ok && obs.LogEndOffset == p.HighWatermark && len(p.CurrentVoters) == 3
	})
}

// DescribeQuorum asks about __cluster_metadata partition 0 only; anything
// else gets UNKNOWN_TOPIC_OR_PARTITION per partition, as in Kafka.
func TestDescribeQuorumUnknownPartition(t *testing.T) {
	tc := startCluster(t, 1, nil)
	tc.active()
	cl := tc.client()
	for _, req := range []*kmsg.DescribeQuorumRequest{
		describeQuorumReq("other", 0), describeQuorumReq(MetadataTopic, 1), describeQuorumReq(MetadataTopic, 0, 1),
	} {
		resp := send[*kmsg.DescribeQuorumResponse](t, cl, req)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != len(req.Topics[0].Partitions) {
			t.Fatalf("%+v: answer %+v", req.Topics, resp.Topics)
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("%+v: partition %d error %d", req.Topics, p.Partition, p.ErrorCode)
			}
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
