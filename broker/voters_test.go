package broker

import (
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/internal/freeport"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A dynamic quorum (dirs formatted with --initial-controllers) changes its
// voters: a controller-only node that is not one of them starts,
// registers its CONTROLLER listener and writes its meta.properties; an
// AddRaftVoter sent to a broker (forwarded to the active controller) with
// that file's directory id makes it a voter, and a RemoveRaftVoter takes
// node 1's vote away. Then, with node 2 stopped too, the quorum is nodes
// 3 and 4 of voters 2, 3 and 4, and it still creates topics, also after
// node 4 restarts. Last, the stopped node 2 is removed and comes back as
// an observer.
func TestClusterAddAndRemoveControllers(t *testing.T) {
	c := clusterProps(t, 3, 0, nil)
	dirIDs := formatInitialControllers(t, c)
	c.startAll()
	port, dirID := startFourthController(t, c)
	if c.nodes[3].cluster.ctl.Image().ClusterID != c.nodes[0].ClusterID() {
		t.Fatal("the new controller follows another cluster")
	}

	cl := c.client()
	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID, add.VoterDirectoryID, add.TimeoutMillis = 4, dirID, 10000
	add.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(port)}}
	if resp, err := add.RequestWith(ctxT(t), cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("AddRaftVoter through a broker: %v %+v", err, resp)
	}
	remove := kmsg.NewPtrRemoveRaftVoterRequest()
	remove.VoterID, remove.VoterDirectoryID = 1, dirIDs[1]
	if resp, err := remove.RequestWith(ctxT(t), cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("RemoveRaftVoter through a broker: %v %+v", err, resp)
	}
	for i, b := range c.nodes {
		voters := slices.Sorted(maps.Keys(b.cluster.ctl.Voters()))
		if !slices.Equal(voters, []int32{2, 3, 4}) {
			c.waitFor(fmt.Sprintf("node %d to see voters 2, 3 and 4", i+1), func() bool {
				return slices.Equal(slices.Sorted(maps.Keys(b.cluster.ctl.Voters())), []int32{2, 3, 4})
			})
		}
	}

	c.stop(1)
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctxT(t), 1, 2, nil, "after-the-change")
	if err != nil || resp.Err != nil {
		t.Fatalf("creating a topic with controllers 3 and 4: %v %v", err, resp.Err)
	}
	if !c.nodes[3].cluster.ctl.Active() && !c.nodes[2].cluster.ctl.Active() {
		t.Fatal("neither node 3 nor node 4 is the active controller")
	}
	// Restarted, the added controller votes again: with node 2 still
	// down, nothing commits without it.
	c.stop(3)
	if err := c.start(3); err != nil {
		t.Fatal(err)
	}
	resp, err = adm.CreateTopic(ctxT(t), 1, 2, nil, "after-the-restart")
	if err != nil || resp.Err != nil {
		t.Fatalf("creating a topic after node 4 restarted: %v %v", err, resp.Err)
	}

	// The dead voter is removed as an operator replaces a lost
	// controller; back, it follows the log without a vote.
	remove.VoterID, remove.VoterDirectoryID = 2, dirIDs[2]
	if resp, err := remove.RequestWith(ctxT(t), cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("removing the dead voter 2: %v %+v", err, resp)
	}
	if err := c.start(1); err != nil {
		t.Fatal(err)
	}
	if resp, err := adm.CreateTopic(ctxT(t), 1, 2, nil, "voters-3-and-4"); err != nil || resp.Err != nil {
		t.Fatalf("creating a topic with voters 3 and 4: %v %v", err, resp.Err)
	}
	c.waitFor("node 2 to follow the log as an observer", func() bool {
		ctl := c.nodes[1].cluster.ctl
		_, voter := ctl.Voters()[2]
		return ctl.Image().Topics["voters-3-and-4"] != nil && !voter && len(ctl.Voters()) == 2
	})
}

// With controller.quorum.auto.join.enable a controller that is not a voter
// of a dynamic quorum asks to become one as soon as it has its directory
// id, without an operator's add-controller; removed, it asks again; back
// with a new disk, it replaces the vote its id held with the old one.
func TestClusterControllerAutoJoin(t *testing.T) {
	c := clusterProps(t, 3, 0, map[string]string{"controller.quorum.auto.join.enable": "true"})
	formatInitialControllers(t, c)
	c.startAll()
	_, dirID := startFourthController(t, c)
	voter4 := func() bool {
		for _, b := range c.nodes {
			if _, ok := b.cluster.ctl.Voters()[4]; !ok {
				return false
			}
		}
		return true
	}
	c.waitFor("node 4 a voter everywhere", voter4)
	remove := kmsg.NewPtrRemoveRaftVoterRequest()
	remove.VoterID, remove.VoterDirectoryID = 4, dirID
	if resp, err := remove.RequestWith(ctxT(t), c.client()); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("removing node 4: %v %+v", err, resp)
	}
	joins := func() int { return strings.Count(c.log.String(), `msg="joined the controller quorum as a voter`) }
	c.waitFor("node 4 to join a second time", func() bool { return joins() == 2 })
	c.waitFor("node 4 a voter again", voter4)

	// Back with a new disk (an empty log dir, so another directory id),
	// node 4 removes the vote its id holds with the old one and joins
	// with its own, as a KRaft observer with auto-join does.
	c.stop(3)
	c.props[3]["log.dirs"] = t.TempDir()
	if err := c.start(3); err != nil {
		t.Fatal(err)
	}
	var newDir [16]byte
	waitUntil(t, "node 4's new meta.properties", 30*time.Second, func() bool {
		newDir, _ = logstore.DirectoryID(c.props[3]["log.dirs"])
		return newDir != [16]byte{}
	})
	if newDir == dirID {
		t.Fatal("the new log dir has the old directory id")
	}
	c.waitFor("node 4 a voter with its new directory id everywhere", func() bool {
		for _, b := range c.nodes {
			rc := b.cluster.ctl.Image().Controllers[4]
			if rc == nil || rc.DirectoryID != newDir {
				return false
			}
		}
		return voter4() && joins() == 3
	})
	if !strings.Contains(c.log.String(), `msg="removed this controller's vote with its former directory id`) {
		t.Fatal("node 4 joined without removing its former vote")
	}
}

// A voter back with a new disk (an empty log dir, another directory id)
// takes no part in elections while its id votes with the old directory
// id, as KRaft's observer: asked for its vote (a candidate with a longer
// log and a later term, taking over the leadership, which raft grants),
// it refuses, and it grants no pre-vote. Once its old vote is removed and
// it is added with its new directory id, it grants the same request.
func TestClusterControllerWithNewDiskDoesNotVote(t *testing.T) {
	c := clusterProps(t, 3, 0, nil)
	formatInitialControllers(t, c)
	c.startAll()
	port, oldDir := startFourthController(t, c)
	cl := c.client()
	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID, add.VoterDirectoryID, add.TimeoutMillis = 4, oldDir, 10000
	add.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(port)}}
	if resp, err := add.RequestWith(ctxT(t), cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("adding node 4: %v %+v", err, resp)
	}

	c.stop(3)
	c.props[3]["log.dirs"] = t.TempDir()
	if err := c.start(3); err != nil {
		t.Fatal(err)
	}
	node4 := c.nodes[3].cluster
	c.waitFor("node 4 to learn that its id votes with the old directory id", func() bool {
		_, stale := node4.ctl.StaleVote(node4.metadataDirectoryID())
		return stale
	})
	newDir := node4.metadataDirectoryID()
	candidate := newRaftCandidate(t)
	node4Addr := raft.ServerAddress(fmt.Sprintf("127.0.0.1:%d", port))
	if granted, err := candidate.vote(node4Addr); err != nil || granted {
		t.Fatalf("node 4 with a new disk asked for its vote: granted %v, err %v", granted, err)
	}
	if granted, err := candidate.preVote(node4Addr); err != nil || granted {
		t.Fatalf("node 4 with a new disk asked for a pre-vote: granted %v, err %v", granted, err)
	}

	// Restarted after catching up, node 4 finds raft state in its dir, and
	// with the other controllers down no leader gives it the records that
	// say whose vote its id is: the mark left by its empty start keeps it
	// from voting all the same.
	for i := range c.nodes {
		c.stop(i)
	}
	if err := c.start(3); err != nil {
		t.Fatal(err)
	}
	if _, known := c.nodes[3].cluster.ctl.StaleVote(newDir); known {
		t.Fatal("node 4 learnt whose vote its id is with no leader up: the restart checks nothing")
	}
	candidate = newRaftCandidate(t) // the old one's connection went with node 4's last process
	if granted, err := candidate.vote(node4Addr); err != nil || granted {
		t.Fatalf("node 4 restarted with a new disk asked for its vote: granted %v, err %v", granted, err)
	}
	errs := make(chan error, 3)
	for i := range 3 { // together: each waits for a quorum to register with
		go func() { errs <- c.start(i) }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	remove := kmsg.NewPtrRemoveRaftVoterRequest()
	remove.VoterID, remove.VoterDirectoryID = 4, oldDir
	if resp, err := remove.RequestWith(ctxT(t), cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("removing node 4's old vote: %v %+v", err, resp)
	}
	add.VoterDirectoryID = newDir
	if resp, err := add.RequestWith(ctxT(t), cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("adding node 4 with its new directory id: %v %+v", err, resp)
	}
	c.waitFor("node 4 to grant its vote with its new directory id", func() bool {
		granted, err := candidate.vote(node4Addr)
		return err == nil && granted
	})
	mark := filepath.Join(c.props[3]["log.dirs"], raftDirName, "awaiting-vote")
	c.waitFor("node 4's awaiting-vote mark removed", func() bool {
		_, err := os.Stat(mark)
		return os.IsNotExist(err)
	})
}

// raftCandidate asks controllers for votes over raft's own transport, as
// node 2 standing for election with a longer log and a later term than
// anyone's would.
type raftCandidate struct {
	trans *raft.NetworkTransport
	term  uint64
}

func newRaftCandidate(t *testing.T) *raftCandidate {
	stream := &raftDialer{closed: make(chan struct{})}
	trans := raft.NewNetworkTransport(stream, 1, 5*time.Second, io.Discard)
	t.Cleanup(func() { trans.Close() })
	return &raftCandidate{trans: trans, term: 1 << 40}
}

func (rc *raftCandidate) header() raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("2"), Addr: []byte("127.0.0.1:1")}
}

func (rc *raftCandidate) vote(target raft.ServerAddress) (bool, error) {
	rc.term++
	req := &raft.RequestVoteRequest{RPCHeader: rc.header(), Term: rc.term, LastLogIndex: 1 << 40, LastLogTerm: rc.term, LeadershipTransfer: true}
	var resp raft.RequestVoteResponse
	err := rc.trans.RequestVote("4", target, req, &resp)
	return resp.Granted, err
}

func (rc *raftCandidate) preVote(target raft.ServerAddress) (bool, error) {
	req := &raft.RequestPreVoteRequest{RPCHeader: rc.header(), Term: rc.term + 1, LastLogIndex: 1 << 40, LastLogTerm: rc.term}
	var resp raft.RequestPreVoteResponse
	err := rc.trans.RequestPreVote("4", target, req, &resp)
	return resp.Granted, err
}

// raftDialer is a raft stream layer that only dials: a connection to a
// CONTROLLER listener opened with controller.RaftMagic.
type raftDialer struct{ closed chan struct{} }

func (d *raftDialer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(controller.RaftMagic[:]); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func (d *raftDialer) Accept() (net.Conn, error) {
	<-d.closed
	return nil, net.ErrClosed
}

func (d *raftDialer) Close() error {
	select {
	case <-d.closed:
	default:
		close(d.closed)
	}
	return nil
}

func (d *raftDialer) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// A static quorum (controller.quorum.voters) is kraft.version 0: its
// brokers list the feature as supported but not finalized, and it refuses
// voter changes with UNSUPPORTED_VERSION, as Kafka's does. A formatted
// one lists kraft.version 1.
func TestClusterKRaftVersion(t *testing.T) {
	finalized := func(c *testCluster) int16 {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(4) // v3 omits ranges from 0, as Kafka's
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		resp := dialAddr(t, c.addrs()[0]).request(req).(*kmsg.ApiVersionsResponse)
		if !slices.ContainsFunc(resp.SupportedFeatures, func(f kmsg.ApiVersionsResponseSupportedFeature) bool {
			return f.Name == "kraft.version" && f.MinVersion == 0 && f.MaxVersion == 1
		}) {
			t.Fatalf("kraft.version is not supported 0-1: %+v", resp.SupportedFeatures)
		}
		for _, f := range resp.FinalizedFeatures {
			if f.Name == "kraft.version" {
				return f.MaxVersionLevel
			}
		}
		return 0
	}
	static := startCluster(t, 3, nil)
	if level := finalized(static); level != 0 {
		t.Fatalf("a static quorum finalizes kraft.version %d", level)
	}
	remove := kmsg.NewPtrRemoveRaftVoterRequest()
	remove.VoterID, remove.VoterDirectoryID = 1, [16]byte{1}
	resp, err := remove.RequestWith(ctxT(t), static.client())
	if err != nil || resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("RemoveRaftVoter on a static quorum: %v %+v", err, resp)
	}

	dynamic := clusterProps(t, 3, 0, nil)
	formatInitialControllers(t, dynamic)
	dynamic.startAll()
	if level := finalized(dynamic); level != 1 {
		t.Fatalf("a formatted quorum finalizes kraft.version %d", level)
	}
}

// In a static quorum every controller is a voter: one that is not, or a
// voter without the controller role, is a configuration error, as in
// Kafka (a static quorum's voters never change).
func TestStaticQuorumConfig(t *testing.T) {
	props := func() map[string]string {
		return map[string]string{"node.id": "1", "process.roles": "broker,controller",
			"controller.listener.names": "CONTROLLER", "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
			"controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9193"}
	}
	if _, _, err := ParseConfig(props()); err != nil {
		t.Fatalf("a voter: %v", err)
	}
	checkConfigRefusals(t, props, map[string]configRefusal{
		"a controller that is not a voter": {map[string]string{"node.id": "4"},
			"the node id 4 must be included in the set of voters controller.quorum.voters=[1 2]"},
		"a voter without the controller role": {map[string]string{"process.roles": "broker", "listeners": "PLAINTEXT://127.0.0.1:9092"},
			"node.id 1 is in controller.quorum.voters but lacks the controller role"},
		// Kafka's rules for the listeners of a node with one role.
		"a broker without controller.listener.names": {map[string]string{"node.id": "3", "process.roles": "broker",
			"listeners": "PLAINTEXT://127.0.0.1:9092", "controller.listener.names": ""},
			"controller.listener.names must contain at least one value when running KRaft with just the broker role"},
		"a broker binding a controller listener": {map[string]string{"node.id": "3", "process.roles": "broker"},
			"controller.listener.names must not contain a value appearing in the 'listeners' configuration when running KRaft with just the broker role"},
		"a controller without a controller listener": {map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092"},
			"controller.listener.names must contain at least one value appearing in the 'listeners' configuration when running the KRaft controller role"},
		"a controller with a client listener": {map[string]string{"process.roles": "controller"},
			"The listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller"},
		// A node of one role has no quorum of its own to run: without
		// voters or bootstrap servers it would be a single node of its own.
		"a broker without a quorum": {map[string]string{"node.id": "3", "process.roles": "broker",
			"listeners": "PLAINTEXT://127.0.0.1:9092", "controller.quorum.voters": ""}, quorumMissing},
		"a controller without a quorum": {map[string]string{"process.roles": "controller",
			"listeners": "CONTROLLER://127.0.0.1:9093", "controller.quorum.voters": ""}, quorumMissing},
		"a controller serving clients without a quorum": {map[string]string{"process.roles": "controller",
			"controller.quorum.voters": ""}, quorumMissing},
		"a controller naming a controller listener it does not bind": {map[string]string{"controller.listener.names": "CONTROLLER,OTHER"},
			"controller.listener.names must only contain values appearing in the 'listeners' configuration when running the KRaft controller role"},
		// A cluster node must say which node it is: defaulting to 1, it
		// would take voter 1's identity.
		"a cluster node without node.id": {map[string]string{"node.id": ""}, nodeIDMissing},
		"a broker without node.id": {map[string]string{"node.id": "", "process.roles": "broker",
			"listeners": "PLAINTEXT://127.0.0.1:9092", "controller.quorum.voters": "", "controller.quorum.bootstrap.servers": "127.0.0.1:9093"}, nodeIDMissing},
		// An explicit protocol map must map the controller listener; only
		// Kafka's default map takes it as PLAINTEXT.
		"a broker whose protocol map lacks the controller listener": {map[string]string{"node.id": "3", "process.roles": "broker",
			"listeners": "PLAINTEXT://127.0.0.1:9092", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"},
			"Controller listener with name CONTROLLER defined in controller.listener.names not found in listener.security.protocol.map"},
		"a controller whose protocol map lacks its listener": {map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"},
			"no security protocol defined for listener CONTROLLER"},
	})
	for name, extra := range map[string]map[string]string{
		"a broker":     {"node.id": "3", "process.roles": "broker", "listeners": "PLAINTEXT://127.0.0.1:9092"},
		"a controller": {"process.roles": "controller", "listeners": "CONTROLLER://127.0.0.1:9093"},
	} {
		p := props()
		maps.Copy(p, extra)
		if _, _, err := ParseConfig(p); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// quorumMissing is Kafka's refusal of a node with process.roles set that
// names no controllers (KafkaConfig.validateValues).
const quorumMissing = "If using process.roles, either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers " +
	"or controller.quorum.voters must contain a parseable set of controllers."

// nodeIDMissing is Kafka's refusal of a node of a quorum without node.id.
const nodeIDMissing = "Missing configuration `node.id` which is required when `process.roles` is defined (i.e. when running in KRaft mode)."

// startFourthController starts node 4, a controller-only node that no
// quorum names as a voter: it registers and follows the log as an
// observer. It returns the node's CONTROLLER port and, once the node has
// written its meta.properties, the directory id there.
func startFourthController(t *testing.T, c *testCluster) (int, [16]byte) {
	t.Helper()
	props, port := c.addNode(4, "controller", "CONTROLLER")
	if err := c.start(3); err != nil {
		t.Fatal(err)
	}
	var dirID [16]byte
	waitUntil(t, "the new controller's meta.properties", 30*time.Second, func() bool {
		var err error
		dirID, err = logstore.DirectoryID(props["log.dirs"])
		return err == nil && dirID != [16]byte{}
	})
	return port, dirID
}

// formatInitialControllers prepares the voters' log dirs as kafka-storage
// format --initial-controllers does (the voters, with directory ids, in
// the metadata log's bootstrap snapshot; each voter's meta.properties with
// its directory id; the other nodes' dirs with the snapshot alone, as
// --no-initial-controllers leaves a dir but for the voters) and configures every node with
// controller.quorum.bootstrap.servers instead of controller.quorum.voters.
// It returns the directory ids by node id.
func formatInitialControllers(t *testing.T, c *testCluster) map[int32][16]byte {
	t.Helper()
	voters := strings.Split(c.props[0]["controller.quorum.voters"], ",")
	dirIDs := map[int32][16]byte{}
	var addrs []string
	var value []byte // a KRaftVoters record, version 0
	value = kbin.AppendInt16(value, 0)
	value = kbin.AppendCompactArrayLen(value, len(voters))
	for _, v := range voters {
		idText, addr, _ := strings.Cut(v, "@")
		host, portText, _ := net.SplitHostPort(addr)
		id, _ := strconv.Atoi(idText)
		port, _ := strconv.Atoi(portText)
		dirIDs[int32(id)] = logstore.RandomUUID()
		addrs = append(addrs, addr)
		value = kbin.AppendInt32(value, int32(id))
		value = kbin.AppendUuid(value, dirIDs[int32(id)])
		value = kbin.AppendCompactArrayLen(value, 1)
		value = kbin.AppendCompactString(value, "CONTROLLER")
		value = kbin.AppendCompactString(value, host)
		value = kbin.AppendUint16(value, uint16(port))
		value = kbin.AppendUvarint(value, 0) // the endpoint's tags
		value = kbin.AppendInt16(value, 0)   // the kraft.version range it supports
		value = kbin.AppendInt16(value, 1)   //
		value = kbin.AppendUvarint(value, 0) // the version range's tags
		value = kbin.AppendUvarint(value, 0) // the voter's tags
	}
	value = kbin.AppendUvarint(value, 0)
	rec := kmsg.Record{Key: []byte{0, 0, 0, 6}, Value: value} // control record type 6: KRaftVoters
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)            // what follows the length
	batch := kmsg.RecordBatch{Magic: 2, Attributes: 0x20, NumRecords: 1, ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, Records: rec.AppendTo(nil)}
	batch.Length = int32(len(batch.AppendTo(nil)) - 12) // after the base offset and the length
	snapshot := batch.AppendTo(nil)
	clusterID := logstore.UUIDString(logstore.RandomUUID())
	for _, p := range c.props {
		dir := filepath.Join(p["log.dirs"], "__cluster_metadata-0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000000-0000000000.checkpoint"), snapshot, 0o644); err != nil {
			t.Fatal(err)
		}
		id, _ := strconv.Atoi(p["node.id"])
		if dirID, voter := dirIDs[int32(id)]; voter {
			meta := fmt.Sprintf("node.id=%d\ndirectory.id=%s\nversion=1\ncluster.id=%s\n", id, logstore.UUIDString(dirID), clusterID)
			if err := os.WriteFile(filepath.Join(p["log.dirs"], "meta.properties"), []byte(meta), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		delete(p, "controller.quorum.voters")
		p["controller.quorum.bootstrap.servers"] = strings.Join(addrs, ",")
	}
	return dirIDs
}

// A node asking to join a single node (a broker started with Kafka's
// shipped server.properties as its controller) is refused as a request
// Kafka's broker does not serve, a closed connection, and the single
// node's log says why and what to do instead.
func TestSingleNodeSaysWhyNoNodeCanJoin(t *testing.T) {
	b, log := startBrokerLogged(t, map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()})
	for _, req := range []kmsg.Request{kmsg.NewPtrBrokerRegistrationRequest(), kmsg.NewPtrControllerRegistrationRequest()} {
		rc := dialRaw(t, b)
		if _, err := rc.tryRequest(req); err == nil {
			t.Fatalf("a single node answered %s", kmsg.NameForKey(req.Key()))
		}
		rc.expectClosed()
		want := kmsg.NameForKey(req.Key()) + " from another node, which a single node does not serve"
		waitUntil(t, "the reason in the log", 10*time.Second, func() bool { return strings.Contains(log.String(), want) })
	}
	if !strings.Contains(log.String(), "restart it with controller.quorum.voters naming only itself") {
		t.Fatal("the reason does not say how to grow into a cluster")
	}
}

// controller.quorum.bootstrap.servers naming only this node (Kafka's own
// server.properties) runs the single node; naming other controllers
// joins their quorum; controller.quorum.voters wins over them.
func TestBootstrapServersChooseTheMode(t *testing.T) {
	base := map[string]string{
		"node.id": "4", "process.roles": "broker,controller", "controller.listener.names": "CONTROLLER",
		"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
	}
	for _, c := range []struct {
		name, bootstrap, voters string
		clustered               bool
		bootstrapAddrs          int
		listeners               string
	}{
		{"itself, as Kafka's server.properties", "localhost:9093", "", false, 0, ""},
		{"itself, without the CONTROLLER listener", "localhost:9093", "", false, 0, "PLAINTEXT://:9092"},
		{"itself on loopback", "127.0.0.1:9093", "", false, 0, ""},
		{"other controllers", "127.0.0.1:9193,127.0.0.1:9293", "", true, 2, ""},
		{"itself and others", "localhost:9093,127.0.0.1:9193", "", true, 2, ""},
		{"voters set too", "127.0.0.1:9193", "1@127.0.0.1:9193,4@127.0.0.1:9093", true, 0, ""},
	} {
		props := maps.Clone(base)
		props["controller.quorum.bootstrap.servers"] = c.bootstrap
		if c.voters != "" {
			props["controller.quorum.voters"] = c.voters
		}
		if c.listeners != "" {
			props["listeners"] = c.listeners
		}
		cfg, warnings, err := ParseConfig(props)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "bootstrap.servers") }) {
			t.Errorf("%s: warnings %v", c.name, warnings)
		}
		if cfg.clustered() != c.clustered || len(cfg.Cluster.Bootstrap) != c.bootstrapAddrs {
			t.Errorf("%s: clustered %v with bootstrap %v, want %v with %d", c.name, cfg.clustered(), cfg.Cluster.Bootstrap, c.clustered, c.bootstrapAddrs)
		}
	}
	if _, _, err := ParseConfig(map[string]string{"controller.quorum.bootstrap.servers": "no-port"}); err == nil {
		t.Error("a bootstrap server without a port was accepted")
	}
}

// Dirs formatted for a static quorum (kafka-storage format with
// controller.quorum.voters: a meta.properties naming the cluster id) start
// that cluster: the first active controller takes the formatted id
// instead of picking one that the dirs would then refuse.
func TestClusterTakesTheFormattedClusterID(t *testing.T) {
	c := clusterProps(t, 3, 0, nil)
	id := logstore.UUIDString(logstore.RandomUUID())
	for i, p := range c.props {
		meta := fmt.Sprintf("#\n#Wed Dec 02 21:56:31 UTC 2026\nnode.id=%d\ndirectory.id=%s\nversion=1\ncluster.id=%s\n",
			i+1, logstore.UUIDString(logstore.RandomUUID()), id)
		if err := os.WriteFile(filepath.Join(p["log.dirs"], "meta.properties"), []byte(meta), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.startAll()
	for i, b := range c.nodes {
		if got := b.ClusterID(); got != id {
			t.Fatalf("node %d serves cluster %s, formatted %s", i+1, got, id)
		}
	}
}

// Broker-only nodes configured as Kafka 4's docs configure them, with
// controller.quorum.bootstrap.servers naming the controllers instead of
// controller.quorum.voters, join the quorum as observers: they register,
// follow the metadata and serve a replicated topic.
func TestClusterBrokersFindControllersThroughBootstrapServers(t *testing.T) {
	c := clusterProps(t, 3, 2, nil)
	var controllers []string
	for _, p := range c.props[:3] {
		controllers = append(controllers, strings.TrimPrefix(p["listeners"], "CONTROLLER://"))
	}
	for _, p := range c.props[3:] {
		delete(p, "controller.quorum.voters")
		p["controller.quorum.bootstrap.servers"] = strings.Join(controllers, ",")
	}
	c.startAll()
	for _, i := range []int{3, 4} {
		if len(c.nodes[i].cfg.Cluster.Voters) != 0 || len(c.nodes[i].cfg.Cluster.Bootstrap) != 3 {
			t.Fatalf("node %d: voters %v, bootstrap %v", i+1, c.nodes[i].cfg.Cluster.Voters, c.nodes[i].cfg.Cluster.Bootstrap)
		}
	}
	cl := c.client()
	if resp, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 2, 2, nil, "through-bootstrap"); err != nil || resp.Err != nil {
		t.Fatalf("creating a topic: %v %v", err, resp.Err)
	}
	c.waitFor("both brokers to serve the topic", func() bool {
		for _, b := range c.nodes[3:] {
			img := b.cluster.image()
			if img == nil || img.Topics["through-bootstrap"] == nil || b.topics.get("through-bootstrap") == nil {
				return false
			}
		}
		return true
	})
}

// Brokers send their heartbeats to whichever voter leads, also to a voter
// added after they started: with controller 4 added and voters 1, 2 and 3
// removed, node 4 alone leads, and brokers 1-3, which were configured with
// the first three only, keep their sessions. No broker is fenced, so no
// partition loses its leader or an ISR member (their epochs stay).
func TestClusterBrokersFollowTheVotersAsTheyChange(t *testing.T) {
	c := clusterProps(t, 3, 0, nil)
	dirIDs := formatInitialControllers(t, c)
	c.startAll()
	port, dirID := startFourthController(t, c)
	cl := c.client()
	if resp, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 3, 3, nil, "steady"); err != nil || resp.Err != nil {
		t.Fatalf("creating a topic: %v %v", err, resp.Err)
	}
	c.waitFor("every partition of the topic with three in sync", func() bool {
		for p := range int32(3) {
			if _, isr := c.leaderOf("steady", p); len(isr) != 3 {
				return false
			}
		}
		return true
	})
	epochs := func() map[int32][2]int32 {
		out := map[int32][2]int32{}
		for id, p := range c.nodes[3].cluster.ctl.Image().Topics["steady"].Partitions {
			out[int32(id)] = [2]int32{p.LeaderEpoch, p.PartitionEpoch}
		}
		return out
	}
	c.waitFor("node 4 to follow the topic", func() bool { return c.nodes[3].cluster.ctl.Image().Topics["steady"] != nil })
	before := epochs()

	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID, add.VoterDirectoryID, add.TimeoutMillis = 4, dirID, 10000
	add.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: uint16(port)}}
	if resp, err := add.RequestWith(ctxT(t), cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("AddRaftVoter: %v %+v", err, resp)
	}
	for id := int32(1); id <= 3; id++ {
		remove := kmsg.NewPtrRemoveRaftVoterRequest()
		remove.VoterID, remove.VoterDirectoryID = id, dirIDs[id]
		waitUntil(t, fmt.Sprintf("voter %d removed", id), 30*time.Second, func() bool {
			resp, err := remove.RequestWith(ctxT(t), cl)
			return err == nil && resp.ErrorCode == 0
		})
	}
	c.waitFor("node 4 active", func() bool { return c.nodes[3].cluster.ctl.Active() })

	// More than a session (broker.session.timeout.ms=2000) with node 4
	// the only controller.
	time.Sleep(5 * time.Second)
	img := c.nodes[3].cluster.ctl.Image()
	for id := int32(1); id <= 3; id++ {
		if b := img.Brokers[id]; b == nil || b.Fenced {
			t.Errorf("broker %d fenced or unregistered: %+v", id, b)
		}
	}
	if after := epochs(); !maps.Equal(after, before) {
		t.Errorf("leader and partition epochs went from %v to %v", before, after)
	}
	if resp, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 1, 3, nil, "after-the-change"); err != nil || resp.Err != nil {
		t.Fatalf("creating a topic with node 4 the only controller: %v %v", err, resp.Err)
	}
}

// A static quorum (controller.quorum.voters) is upgraded to a dynamic one
// as in Kafka 4.1: each voter tells the leader its metadata dir's
// directory id (UpdateRaftVoter), UpdateFeatures kraft.version=1 then
// succeeds, DescribeQuorum lists the voters with those ids, and the
// voters can be changed, also after nodes restart configured with
// controller.quorum.bootstrap.servers instead.
func TestClusterUpgradeToDynamicQuorum(t *testing.T) {
	c := clusterProps(t, 3, 1, nil)
	c.startAll()
	cl := c.client()
	waitUntil(t, "kraft.version upgraded to 1", 30*time.Second, func() bool {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "kraft.version", MaxVersionLevel: 1, UpgradeType: 1}}
		resp, err := req.RequestWith(ctxT(t), cl)
		return err == nil && resp.ErrorCode == 0
	})
	dirs := map[int32][16]byte{}
	for i := range 3 {
		id, err := logstore.DirectoryID(c.props[i]["log.dirs"])
		if err != nil || id == [16]byte{} {
			t.Fatalf("node %d's directory id: %v", i+1, err)
		}
		dirs[int32(i+1)] = id
	}
	describe := kmsg.NewPtrDescribeQuorumRequest()
	describe.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	resp, err := describe.RequestWith(ctxT(t), cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeQuorum: %v %+v", err, resp)
	}
	got := map[int32][16]byte{}
	for _, v := range resp.Topics[0].Partitions[0].CurrentVoters {
		got[v.ReplicaID] = v.ReplicaDirectoryID
	}
	if !maps.Equal(got, dirs) {
		t.Fatalf("DescribeQuorum's voters after the upgrade: %v, want the meta.properties directory ids %v", got, dirs)
	}
	// As KIP-853 tells operators once kraft.version is 1, node 1 and the
	// broker restart with controller.quorum.bootstrap.servers in place of
	// controller.quorum.voters.
	var controllers []string
	for _, p := range c.props[:3] {
		controllers = append(controllers, strings.TrimPrefix(p["listeners"], "CONTROLLER://"))
	}
	for _, i := range []int{0, 3} {
		c.stop(i)
		delete(c.props[i], "controller.quorum.voters")
		c.props[i]["controller.quorum.bootstrap.servers"] = strings.Join(controllers, ",")
		if err := c.start(i); err != nil {
			t.Fatalf("restarting node %d with bootstrap servers: %v", i+1, err)
		}
	}
	c.waitFor("node 1 voting again and the broker unfenced", func() bool {
		_, voter := c.nodes[0].cluster.ctl.Voters()[1]
		b := c.nodes[3].cluster.image().Brokers[4]
		return voter && b != nil && !b.Fenced
	})
	remove := kmsg.NewPtrRemoveRaftVoterRequest()
	remove.VoterID, remove.VoterDirectoryID = 3, dirs[3]
	if resp, err := remove.RequestWith(ctxT(t), cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("RemoveRaftVoter after the upgrade: %v %+v", err, resp)
	}
	if resp, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 1, 1, nil, "after-the-upgrade"); err != nil || resp.Err != nil {
		t.Fatalf("creating a topic with voters 1 and 2: %v %v", err, resp.Err)
	}
}

// A voter that comes back on another CONTROLLER port is reached there:
// its ControllerRegistration moves it in raft's configuration. In a dynamic
// quorum KRaft's voter set takes the new endpoint; in a static one the
// moved voter's own controller.quorum.voters names it (the others' still
// name the old port, as before a rolling restart), and a KRaft follower
// fetches from the leader from wherever it is. With another voter stopped,
// the quorum commits only with the moved one.
func TestClusterVoterMovesToAnotherPort(t *testing.T) {
	for _, dynamic := range []bool{false, true} {
		name := "static"
		if dynamic {
			name = "dynamic"
		}
		t.Run(name, func(t *testing.T) {
			c := clusterProps(t, 3, 0, nil)
			old := strings.SplitN(strings.Split(c.props[0]["controller.quorum.voters"], ",")[2], "@", 2)[1]
			if dynamic {
				formatInitialControllers(t, c)
			}
			c.startAll()
			ports, err := freeport.Ports(1)
			if err != nil {
				t.Fatal(err)
			}
			moved := fmt.Sprintf("127.0.0.1:%d", ports[0])
			c.stop(2)
			c.props[2]["listeners"] = strings.Replace(c.props[2]["listeners"], "CONTROLLER://"+old, "CONTROLLER://"+moved, 1)
			if !dynamic {
				c.props[2]["controller.quorum.voters"] = strings.Replace(c.props[2]["controller.quorum.voters"], "3@"+old, "3@"+moved, 1)
			}
			if err := c.start(2); err != nil {
				t.Fatal(err)
			}
			c.waitFor("every node to reach voter 3 at its new port, and every broker unfenced", func() bool {
				for id, b := range c.nodes {
					if b.cluster.ctl.Voters()[3] != moved {
						return false
					}
					if br := c.nodes[0].cluster.image().Brokers[int32(id+1)]; br == nil || br.Fenced {
						return false
					}
				}
				return true
			})
			c.stop(1)
			adm := kadm.NewClient(c.client())
			if resp, err := adm.CreateTopic(ctxT(t), 1, 2, nil, "after-the-move"); err != nil || resp.Err != nil {
				t.Fatalf("creating a topic with voters 1 and the moved 3: %v %v", err, resp.Err)
			}
			waitUntil(t, "the moved voter to have the topic", 30*time.Second, func() bool {
				return c.nodes[2].cluster.ctl.Image().Topics["after-the-move"] != nil
			})
		})
	}
}

// Every voter of a static quorum restarted at once on another CONTROLLER
// port, with every node's controller.quorum.voters updated as an operator
// moving a Kafka quorum does, elects a leader again: raft's configuration
// still holds the old ports, and a voter not found there is dialled at
// the address controller.quorum.voters gives it.
func TestClusterStaticQuorumMovesEveryVoter(t *testing.T) {
	c := clusterProps(t, 3, 0, nil)
	c.startAll()
	if resp, err := kadm.NewClient(c.client()).CreateTopic(ctxT(t), 1, 3, nil, "before-the-move"); err != nil || resp.Err != nil {
		t.Fatalf("creating a topic: %v %v", err, resp.Err)
	}
	for i := range c.nodes {
		c.stop(i)
	}
	ports, err := freeport.Ports(3)
	if err != nil {
		t.Fatal(err)
	}
	voters := c.props[0]["controller.quorum.voters"]
	moved := map[int32]string{}
	for i, v := range strings.Split(voters, ",") {
		old := strings.SplitN(v, "@", 2)[1]
		moved[int32(i+1)] = fmt.Sprintf("127.0.0.1:%d", ports[i])
		voters = strings.Replace(voters, old, moved[int32(i+1)], 1)
		c.props[i]["listeners"] = strings.Replace(c.props[i]["listeners"], "CONTROLLER://"+old, "CONTROLLER://"+moved[int32(i+1)], 1)
	}
	for i := range c.props {
		c.props[i]["controller.quorum.voters"] = voters
	}
	c.startAll()
	c.waitFor("every node to know every voter at its new port, and every broker unfenced", func() bool {
		for id, b := range c.nodes {
			if !maps.Equal(b.cluster.ctl.Voters(), moved) {
				return false
			}
			if br := c.nodes[0].cluster.image().Brokers[int32(id+1)]; br == nil || br.Fenced {
				return false
			}
		}
		return true
	})
	if resp, err := kadm.NewClient(c.client()).CreateTopic(ctxT(t), 1, 3, nil, "after-the-move"); err != nil || resp.Err != nil {
		t.Fatalf("creating a topic after the move: %v %v", err, resp.Err)
	}
}

// add-controller given a broker-only node's id (an operator's slip) is
// refused without touching that broker: KRaft's leader only reaches out
// to the endpoint named and answers REQUEST_TIMED_OUT, while the broker
// goes on fetching the metadata log. Here the broker keeps following the
// metadata (it sees a topic created afterwards) and stays unfenced.
func TestAddRaftVoterNamingABrokerLeavesItAlone(t *testing.T) {
	c := clusterProps(t, 3, 1, nil)
	c.startAll()
	cl := c.client()
	waitUntil(t, "kraft.version upgraded to 1", 30*time.Second, func() bool {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "kraft.version", MaxVersionLevel: 1, UpgradeType: 1}}
		resp, err := req.RequestWith(ctxT(t), cl)
		return err == nil && resp.ErrorCode == 0
	})
	add := kmsg.NewPtrAddRaftVoterRequest()
	add.VoterID, add.VoterDirectoryID, add.TimeoutMillis = 4, logstore.RandomUUID(), 12000
	add.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 1}}
	resp, err := add.RequestWith(ctxT(t), cl)
	if err != nil || resp.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("AddRaftVoter naming broker 4: %v %+v, want REQUEST_TIMED_OUT", err, resp)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 1, 1, nil, "after-the-slip"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("broker 4 following the metadata log, unfenced", func() bool {
		img := c.nodes[3].cluster.image()
		b := img.Brokers[4]
		return img.Topics["after-the-slip"] != nil && b != nil && !b.Fenced
	})
}

// add-controller naming a wrong endpoint for a controller that follows
// the log as an observer is refused once it does not answer there, as
// KRaft's leader refuses a voter-to-be it cannot reach: its progress at
// its old address does not count. The controller keeps following the log
// where it is, and is added once the right endpoint is given.
func TestAddRaftVoterAtAWrongEndpointIsRefused(t *testing.T) {
	c := clusterProps(t, 3, 0, nil)
	formatInitialControllers(t, c)
	c.startAll()
	port, dirID := startFourthController(t, c)
	cl := c.client()
	add := func(port uint16) *kmsg.AddRaftVoterResponse {
		t.Helper()
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.VoterID, req.VoterDirectoryID, req.TimeoutMillis = 4, dirID, 3000
		req.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: port}}
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := add(1); resp.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("AddRaftVoter at port 1: %+v, want REQUEST_TIMED_OUT", resp)
	}
	if _, voter := c.nodes[0].cluster.ctl.Voters()[4]; voter {
		t.Fatal("node 4 is a voter at an endpoint where nobody answers")
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 1, 1, nil, "after-the-slip"); err != nil {
		t.Fatal(err)
	}
	c.waitFor("node 4 following the log at its own endpoint", func() bool {
		return c.nodes[3].cluster.ctl.Image().Topics["after-the-slip"] != nil
	})
	if resp := add(uint16(port)); resp.ErrorCode != 0 {
		t.Fatalf("AddRaftVoter at node 4's endpoint: %+v", resp)
	}
}
