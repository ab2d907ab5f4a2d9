package clustertest

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersions asks node n for its ApiVersions, the one request every
// broker answers whatever its cluster state.
func apiVersions(n *Node) error {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "clustertest", "1"
	resp, err := n.Request(req)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.ApiVersionsResponse).ErrorCode); err != nil {
		return err
	}
	return nil
}

// TestHarnessLifecycle drives the harness itself: three processes on the
// ports picked up front, a paused node that answers nothing until it is
// continued, a killed node restarted on the same port and dir, a clean
// SIGTERM, and the per-node logs.
func TestHarnessLifecycle(t *testing.T) {
	c := Start(t, Options{})
	if len(c.Nodes) != 3 {
		t.Fatalf("%d nodes", len(c.Nodes))
	}
	seen := map[int]bool{}
	for _, n := range c.Nodes {
		for _, p := range []int{n.Port, n.ControllerPort} {
			if seen[p] {
				t.Fatalf("port %d used twice", p)
			}
			seen[p] = true
		}
		if n.State() != StateRunning || n.Pid() == 0 {
			t.Fatalf("node %d: %s, pid %d", n.ID, n.State(), n.Pid())
		}
		if err := apiVersions(n); err != nil {
			t.Fatalf("node %d: %v", n.ID, err)
		}
	}
	if got := strings.Join(c.Seeds(), ","); !strings.Contains(got, c.Nodes[2].Addr()) {
		t.Fatalf("seeds %s", got)
	}

	n2 := c.Node(2)
	if err := n2.Pause(); err != nil {
		t.Fatal(err)
	}
	if n2.State() != StatePaused {
		t.Fatalf("after Pause: %s", n2.State())
	}
	if err := apiVersions(n2); err == nil {
		t.Fatal("a paused node answered")
	}
	if err := n2.Resume(); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 30*time.Second, "node 2 answers after SIGCONT", func() error { return apiVersions(n2) })

	n3 := c.Node(3)
	pid := n3.Pid()
	n3.Kill()
	if n3.State() != StateDown || n3.Pid() != 0 {
		t.Fatalf("after Kill: %s", n3.State())
	}
	if conn, err := net.Dial("tcp", n3.Addr()); err == nil {
		conn.Close()
		t.Fatal("a killed node still accepts connections")
	}
	if err := n3.Restart(); err != nil {
		t.Fatal(err)
	}
	if n3.Pid() == pid || n3.State() != StateRunning {
		t.Fatalf("restart: pid %d (was %d), %s", n3.Pid(), pid, n3.State())
	}
	if err := apiVersions(n3); err != nil {
		t.Fatalf("restarted node: %v", err)
	}
	if _, err := os.Stat(filepath.Join(n3.Dir, "meta.properties")); err != nil {
		t.Fatalf("restarted node's log dir: %v", err)
	}
	logs, err := os.ReadFile(n3.LogPath)
	if err != nil || strings.Count(string(logs), "=== clustertest: start") != 2 {
		t.Fatalf("node 3's log should hold both starts (%v):\n%s", err, Tail(n3.LogPath, 20))
	}

	if err := c.Node(1).Stop(60 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, Tail(c.Node(1).LogPath, 20))
	}
	if got := len(c.Running()); got != 2 {
		t.Fatalf("%d nodes running after a stop, want 2", got)
	}
}

// TestHarnessProxyAdvertised checks that with Options.Proxy every node is
// reached through its proxy, and that cutting the proxy silences it.
func TestHarnessProxyAdvertised(t *testing.T) {
	c := Start(t, Options{Proxy: true})
	for _, n := range c.Nodes {
		if n.Proxy == nil || n.Addr() != n.Proxy.Addr() {
			t.Fatalf("node %d: addr %s, proxy %v", n.ID, n.Addr(), n.Proxy)
		}
		if err := apiVersions(n); err != nil {
			t.Fatalf("node %d through its proxy: %v", n.ID, err)
		}
	}
	n1 := c.Node(1)
	n1.Proxy.Cut()
	if err := apiVersions(n1); err == nil {
		t.Fatal("node 1 answered through a cut proxy")
	}
	n1.Proxy.Resume()
	Eventually(t, 30*time.Second, "node 1 answers after Resume", func() error { return apiVersions(n1) })
}
