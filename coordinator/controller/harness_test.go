package controller

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// testNode is one voter: a real TCP listener that plays the broker's
// CONTROLLER listener (RaftMagic -> HandOff, anything else -> ServeKafka)
// and the controller currently running behind it (nil while "down": then
// connections are closed at once, as by a dead process).
type testNode struct {
	id   int32
	addr string
	dir  string
	ln   net.Listener
	ctl  atomic.Pointer[Controller]
	wg   sync.WaitGroup
	// observer nodes are not voters: they follow the log as raft non-voters.
	observer bool
}

type testCluster struct {
	t      *testing.T
	nodes  []*testNode
	voters map[int32]string
	mod    func(*Config)
}

func testLogger() *slog.Logger {
	if os.Getenv("CONTROLLER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startCluster starts n voters on loopback ports with temp dirs; mod may
// adjust each node's Config.
func startCluster(t *testing.T, n int, mod func(*Config)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, voters: map[int32]string{}, mod: mod}
	root := t.TempDir()
	for i := 1; i <= n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		node := &testNode{id: int32(i), addr: ln.Addr().String(), ln: ln,
			dir: filepath.Join(root, "node"+strconv.Itoa(i), "__cluster_metadata-raft")}
		tc.voters[node.id] = node.addr
		tc.nodes = append(tc.nodes, node)
		node.wg.Add(1)
		go node.serve()
	}
	for i := range tc.nodes {
		tc.start(i)
	}
	t.Cleanup(tc.shutdown)
	return tc
}

func (n *testNode) serve() {
	defer n.wg.Done()
	for {
		conn, err := n.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			var first [4]byte
			if _, err := io.ReadFull(conn, first[:]); err != nil {
				conn.Close()
				return
			}
			ctl := n.ctl.Load()
			if ctl == nil {
				conn.Close()
				return
			}
			if first == RaftMagic {
				ctl.HandOff(conn)
				return
			}
			ctl.ServeKafka(context.Background(), conn, first)
		}()
	}
}

func (tc *testCluster) config(i int) Config {
	cfg := Config{NodeID: tc.nodes[i].id, Voters: tc.voters, Dir: tc.nodes[i].dir,
		SessionTimeout: 9 * time.Second, HeartbeatInterval: 2 * time.Second,
		ElectionTimeout: 300 * time.Millisecond, Logger: testLogger().With("node", tc.nodes[i].id)}
	if tc.nodes[i].observer {
		cfg.ObserverAddr = tc.nodes[i].addr
	}
	if tc.mod != nil {
		tc.mod(&cfg)
	}
	return cfg
}

// addObserver starts a non-voter node with the given id and returns its
// index and address.
func (tc *testCluster) addObserver(id int32) (int, string) {
	tc.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tc.t.Fatal(err)
	}
	node := &testNode{id: id, addr: ln.Addr().String(), ln: ln, observer: true,
		dir: filepath.Join(tc.t.TempDir(), "__cluster_metadata-raft")}
	tc.nodes = append(tc.nodes, node)
	node.wg.Add(1)
	go node.serve()
	tc.start(len(tc.nodes) - 1)
	return len(tc.nodes) - 1, node.addr
}

// start starts (or restarts, from its directory) node i.
func (tc *testCluster) start(i int) *Controller {
	tc.t.Helper()
	c, err := Start(tc.config(i))
	if err != nil {
		tc.t.Fatalf("starting node %d: %v", i+1, err)
	}
	tc.nodes[i].ctl.Store(c)
	return c
}

// stop closes node i's controller, leaving its directory.
func (tc *testCluster) stop(i int) { tc.halt(i, true) }

// crash stops node i without handing leadership over, as a killed process.
func (tc *testCluster) crash(i int) { tc.halt(i, false) }

func (tc *testCluster) halt(i int, resign bool) {
	tc.t.Helper()
	c := tc.nodes[i].ctl.Swap(nil)
	if c == nil {
		return
	}
	if err := c.close(resign); err != nil {
		tc.t.Logf("closing node %d: %v", i+1, err)
	}
}

func (tc *testCluster) shutdown() {
	for i, n := range tc.nodes {
		tc.stop(i)
		n.ln.Close()
		n.wg.Wait()
	}
}

func (tc *testCluster) ctl(i int) *Controller { return tc.nodes[i].ctl.Load() }

// active waits for an active controller and returns its index.
func (tc *testCluster) active() int {
	tc.t.Helper()
	idx := -1
	eventually(tc.t, "an active controller", func() bool {
		for i := range tc.nodes {
			if c := tc.ctl(i); c != nil && c.Active() {
				idx = i
				return true
			}
		}
		return false
	})
	return idx
}

// waitAll waits until every running node's image satisfies cond.
func (tc *testCluster) waitAll(what string, cond func(*Image) bool) {
	tc.t.Helper()
	eventually(tc.t, what, func() bool {
		for i := range tc.nodes {
			if c := tc.ctl(i); c != nil && !cond(c.Image()) {
				return false
			}
		}
		return true
	})
}

func (tc *testCluster) client() *Client {
	cl := NewClient(tc.voters, "controller-test", Security{})
	tc.t.Cleanup(func() { cl.Close() })
	return cl
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// send sends req at its highest version (unless one is set) through cl.
func send[R kmsg.Response](t *testing.T, cl *Client, req kmsg.Request) R {
	t.Helper()
	if req.GetVersion() == 0 {
		req.SetVersion(req.MaxVersion())
	}
	return sendAsIs[R](t, cl, req)
}

// sendAsIs sends req at the version set on it.
func sendAsIs[R kmsg.Response](t *testing.T, cl *Client, req kmsg.Request) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.Send(ctx, req)
	if err != nil {
		t.Fatalf("sending api key %d: %v", req.Key(), err)
	}
	return resp.(R)
}

type testBroker struct {
	id    int32
	epoch int64
	inc   [16]byte
}

func registerBroker(t *testing.T, cl *Client, id int32, rack string) *testBroker {
	t.Helper()
	b := &testBroker{id: id}
	rand.Read(b.inc[:])
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.IncarnationID = id, b.inc
	if rack != "" {
		req.Rack = kmsg.StringPtr(rack)
	}
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(19000 + id)}}
	resp := send[*kmsg.BrokerRegistrationResponse](t, cl, req)
	if resp.ErrorCode != 0 {
		t.Fatalf("registering broker %d: error %d", id, resp.ErrorCode)
	}
	b.epoch = resp.BrokerEpoch
	return b
}

func heartbeat(t *testing.T, cl *Client, b *testBroker, offset int64, wantFence, wantShutdown bool) *kmsg.BrokerHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = b.id, b.epoch, offset
	req.WantFence, req.WantShutdown = wantFence, wantShutdown
	return send[*kmsg.BrokerHeartbeatResponse](t, cl, req)
}

// registerUnfenced registers brokers 1..n (racks as given, if any) and
// unfences them.
func registerUnfenced(t *testing.T, cl *Client, n int, racks ...string) []*testBroker {
	t.Helper()
	var out []*testBroker
	for i := 1; i <= n; i++ {
		rack := ""
		if len(racks) >= i {
			rack = racks[i-1]
		}
		b := registerBroker(t, cl, int32(i), rack)
		if r := heartbeat(t, cl, b, b.epoch, false, false); r.ErrorCode != 0 || r.IsFenced {
			t.Fatalf("unfencing broker %d: error %d fenced %v", i, r.ErrorCode, r.IsFenced)
		}
		out = append(out, b)
	}
	return out
}

func createTopic(t *testing.T, cl *Client, name string, partitions int32, rf int16, configs map[string]string) *kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for k, v := range configs {
		rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: kmsg.StringPtr(v)})
	}
	req.Topics = append(req.Topics, rt)
	resp := send[*kmsg.CreateTopicsResponse](t, cl, req)
	return &resp.Topics[0]
}
