package controller

import (
	"crypto/rand"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newDirID() [16]byte {
	var id [16]byte
	rand.Read(id[:])
	return id
}

// registerWithDirs registers broker id as a new incarnation with log dirs
// and unfences it.
func registerWithDirs(t *testing.T, cl *Client, id int32, dirs ...[16]byte) *testBroker {
	t.Helper()
	b := &testBroker{id: id}
	rand.Read(b.inc[:])
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.IncarnationID, req.LogDirs = id, b.inc, dirs
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(19000 + id)}}
	resp := send[*kmsg.BrokerRegistrationResponse](t, cl, req)
	if resp.ErrorCode != 0 {
		t.Fatalf("registering broker %d: error %d", id, resp.ErrorCode)
	}
	b.epoch = resp.BrokerEpoch
	if r := heartbeat(t, cl, b, b.epoch, false, false); r.ErrorCode != 0 || r.IsFenced {
		t.Fatalf("unfencing broker %d: %+v", id, r)
	}
	return b
}

// assign sends AssignReplicasToDirs for partitions of one topic into dir
// and returns the top-level and per-partition error codes.
func assign(t *testing.T, cl *Client, b *testBroker, dir, topicID [16]byte, partitions ...int32) (int16, map[int32]int16) {
	t.Helper()
	req := kmsg.NewPtrAssignReplicasToDirsRequest()
	req.BrokerID, req.BrokerEpoch = b.id, b.epoch
	rt := kmsg.AssignReplicasToDirsRequestDirectoryTopic{TopicID: topicID}
	for _, p := range partitions {
		rt.Partitions = append(rt.Partitions, kmsg.AssignReplicasToDirsRequestDirectoryTopicPartition{Partition: p})
	}
	req.Directories = []kmsg.AssignReplicasToDirsRequestDirectory{{ID: dir, Topics: []kmsg.AssignReplicasToDirsRequestDirectoryTopic{rt}}}
	resp := send[*kmsg.AssignReplicasToDirsResponse](t, cl, req)
	codes := map[int32]int16{}
	for _, d := range resp.Directories {
		for _, rt := range d.Topics {
			for _, p := range rt.Partitions {
				codes[p.Partition] = p.ErrorCode
			}
		}
	}
	return resp.ErrorCode, codes
}

func heartbeatOffline(t *testing.T, cl *Client, b *testBroker, offline ...[16]byte) {
	t.Helper()
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset, req.OfflineLogDirs = b.id, b.epoch, b.epoch, offline
	if r := send[*kmsg.BrokerHeartbeatResponse](t, cl, req); r.ErrorCode != 0 {
		t.Fatalf("heartbeat of broker %d: error %d", b.id, r.ErrorCode)
	}
}

// TestReplicaDirectories: brokers assign their replicas to log dirs; a
// dir reported offline takes only the replicas in it out of their ISRs
// and leadership; such a replica may neither lead nor rejoin an ISR until
// the broker, registered again without the dir, assigns it to another.
func TestReplicaDirectories(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	a1, b1 := newDirID(), newDirID()
	brokers := []*testBroker{registerWithDirs(t, cl, 1, a1, b1), registerWithDirs(t, cl, 2, newDirID()), registerWithDirs(t, cl, 3, newDirID())}
	// Unclean election on: only the offline dir keeps broker 1 from leading.
	if r := createTopic(t, cl, "t", 4, 3, map[string]string{"unclean.leader.election.enable": "true"}); r.ErrorCode != 0 {
		t.Fatalf("create: %d", r.ErrorCode)
	}
	img := tc.ctl(0).Image()
	topic := img.Topics["t"]

	// Errors are per partition; the rest is recorded.
	req := kmsg.NewPtrAssignReplicasToDirsRequest()
	req.BrokerID, req.BrokerEpoch = 1, brokers[0].epoch+100
	if r := send[*kmsg.AssignReplicasToDirsResponse](t, cl, req); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale epoch: error %d", r.ErrorCode)
	}
	if _, codes := assign(t, cl, brokers[0], a1, newDirID(), 0); codes[0] != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic: %v", codes)
	}
	if _, codes := assign(t, cl, brokers[0], a1, topic.ID, 0, 1, 7); codes[0] != 0 || codes[1] != 0 || codes[7] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("assigning partitions 0, 1 and 7: %v", codes)
	}
	if _, codes := assign(t, cl, brokers[0], b1, topic.ID, 2, 3); codes[2] != 0 || codes[3] != 0 {
		t.Fatalf("assigning partitions 2 and 3: %v", codes)
	}
	img = tc.ctl(0).Image()
	for i, want := range [][16]byte{a1, a1, b1, b1} {
		if got := img.Topics["t"].Partitions[i].Directories[1]; got != want {
			t.Fatalf("partition %d: broker 1's replica in %x, want %x", i, got, want)
		}
	}
	before := img.Topics["t"]

	// b1 fails: partitions 2 and 3 lose broker 1, 0 and 1 keep it.
	heartbeatOffline(t, cl, brokers[0], b1)
	img = tc.ctl(0).Image()
	if !slices.Equal(img.Brokers[1].OfflineLogDirs, [][16]byte{b1}) || img.Brokers[1].Fenced {
		t.Fatalf("broker 1 after reporting b1 offline: %+v", img.Brokers[1])
	}
	for i, p := range img.Topics["t"].Partitions {
		old := before.Partitions[i]
		if i >= 2 {
			if p.Leader == 1 || slices.Contains(p.ISR, 1) || slices.Contains(p.ELR, 1) || img.ReplicaOnline(p, 1) {
				t.Fatalf("partition %d with broker 1's dir offline: %+v", i, p)
			}
			if old.Leader == 1 && p.LeaderEpoch != old.LeaderEpoch+1 {
				t.Fatalf("partition %d: leader epoch %d after leader 1 left, was %d", i, p.LeaderEpoch, old.LeaderEpoch)
			}
		} else if p.Leader != old.Leader || !slices.Equal(p.ISR, old.ISR) || !img.ReplicaOnline(p, 1) {
			t.Fatalf("partition %d, in broker 1's healthy dir, changed: %+v from %+v", i, p, old)
		}
	}
	heartbeatOffline(t, cl, brokers[0], b1, newDirID()) // again, and a dir never registered: nothing changes
	if again := tc.ctl(0).Image(); again.Offset != img.Offset {
		t.Fatal("a repeated offline report wrote records")
	}

	// The replica may not rejoin the ISR, nor lead.
	p2 := img.Topics["t"].Partitions[2]
	leader := brokers[p2.Leader-1]
	if r := alterISR(t, cl, leader, img.Topics["t"], 2, p2.LeaderEpoch, p2.PartitionEpoch, append(slices.Clone(p2.ISR), 1)); r.ErrorCode != kerr.IneligibleReplica.Code {
		t.Fatalf("adding the offline replica to the ISR: error %d", r.ErrorCode)
	}
	fenceByRequest(t, cl, brokers[1])
	fenceByRequest(t, cl, brokers[2])
	img = tc.ctl(0).Image()
	for i, p := range img.Topics["t"].Partitions {
		if i >= 2 && p.Leader != -1 {
			t.Fatalf("partition %d led by %d with only broker 1 unfenced and its dir offline", i, p.Leader)
		}
		if i < 2 && p.Leader != 1 {
			t.Fatalf("partition %d led by %d, want broker 1 (its dir is online)", i, p.Leader)
		}
	}

	// Broker 1 restarts with b1 replaced by c1: the replica stays offline
	// until assigned to c1, and stays out of the ISR and ELR (its log is
	// new).
	c1 := newDirID()
	brokers[0] = registerWithDirs(t, cl, 1, a1, c1)
	img = tc.ctl(0).Image()
	if len(img.Brokers[1].OfflineLogDirs) != 0 || img.ReplicaOnline(img.Topics["t"].Partitions[2], 1) {
		t.Fatalf("after registering without b1: %+v, replica online %v", img.Brokers[1], img.ReplicaOnline(img.Topics["t"].Partitions[2], 1))
	}
	if _, codes := assign(t, cl, brokers[0], c1, topic.ID, 2); codes[2] != 0 {
		t.Fatalf("assigning partition 2 to c1: %v", codes)
	}
	p := tc.ctl(0).Image().Topics["t"].Partitions[2]
	if p.Directories[1] != c1 || !tc.ctl(0).Image().ReplicaOnline(p, 1) || slices.Contains(p.ISR, 1) || slices.Contains(p.ELR, 1) {
		t.Fatalf("partition 2 after assigning to c1: %+v", p)
	}
}
