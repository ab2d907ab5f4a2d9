package compat

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/cmd/gregor/clustertest"
)

// quorumReplica is one row of kafka-metadata-quorum describe --replication.
type quorumReplica struct {
	id, endOffset, lag, lastFetch, lastCaughtUp int64
	status                                      string
}

// describeReplication runs kafka-metadata-quorum describe --replication
// against node and returns its rows by node id.
func (e *cliEnv) describeReplication(t *testing.T, node *clustertest.Node) map[int64]quorumReplica {
	t.Helper()
	return e.replicationRows(t, "--bootstrap-server", node.Addr())
}

// replicationRows runs kafka-metadata-quorum describe --replication with
// the bootstrap arguments given and returns its rows by node id.
func (e *cliEnv) replicationRows(t *testing.T, bootstrap ...string) map[int64]quorumReplica {
	t.Helper()
	out := e.run(t, "", e.cls.quorum, append(bootstrap, "describe", "--replication")...)
	lines := cliLines(out)
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "NodeId") {
		t.Fatalf("describe --replication:\n%s", out)
	}
	rows := map[int64]quorumReplica{}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if len(f) < 7 {
			t.Fatalf("describe --replication row %q", l)
		}
		var n [6]int64
		for i, j := range []int{0, 2, 3, 4, 5} {
			v, err := strconv.ParseInt(f[j], 10, 64)
			if err != nil {
				t.Fatalf("describe --replication row %q: column %d: %v", l, j, err)
			}
			n[i] = v
		}
		rows[n[0]] = quorumReplica{id: n[0], endOffset: n[1], lag: n[2], lastFetch: n[3], lastCaughtUp: n[4], status: f[6]}
	}
	return rows
}

// listEndpoints runs kafka-cluster list-endpoints and returns by node id
// its STATE and ENDPOINT_TYPE columns (controllers have no STATE).
func (e *cliEnv) listEndpoints(t *testing.T, args ...string) map[string]string {
	t.Helper()
	out := e.run(t, "", e.cls.cluster, append([]string{"list-endpoints"}, args...)...)
	lines := cliLines(out)
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "ID ") {
		t.Fatalf("list-endpoints:\n%s", out)
	}
	header := strings.Fields(lines[0])
	nodes := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != len(header) {
			t.Fatalf("list-endpoints line %q under %q", l, lines[0])
		}
		var state []string
		for i, col := range header {
			if col == "STATE" || col == "ENDPOINT_TYPE" {
				state = append(state, f[i])
			}
		}
		nodes[f[0]] = strings.Join(state, " ")
	}
	return nodes
}

var quorumStatusLine = regexp.MustCompile(`^(\w+):\s+(.*)$`)

// describeStatus runs kafka-metadata-quorum describe --status with the
// bootstrap arguments given and returns its output and its fields.
func (e *cliEnv) describeStatus(t *testing.T, bootstrap ...string) (string, map[string]string) {
	t.Helper()
	out := e.run(t, "", e.cls.quorum, append(bootstrap, "describe", "--status")...)
	status := map[string]string{}
	for _, l := range cliLines(out) {
		if m := quorumStatusLine.FindStringSubmatch(l); m != nil {
			status[m[1]] = m[2]
		}
	}
	return out, status
}

// checkQuorum runs kafka-metadata-quorum and kafka-cluster against a
// three-node cluster: --status names the active controller as leader, the
// three voters with their CONTROLLER endpoints and the cluster id of
// meta.properties; --replication shows every voter caught up, then a
// killed follower falling behind while the quorum fences its broker, then
// caught up again after its restart. Meanwhile kafka-cluster
// list-endpoints shows the killed broker fenced, unregister removes it,
// and it registers again when restarted. Last, kafka-features upgrades
// the static quorum to a dynamic one (kraft.version 1), and --status
// lists the voters with their directory ids.
func (e *cliEnv) checkQuorum(t *testing.T, c *clustertest.Cluster) {
	// A topic with a replica on every node, under-replicated whichever dies.
	e.run(t, "", e.cls.topics, "--bootstrap-server", c.Nodes[0].Addr(), "--create", "--topic", "cli-everywhere",
		"--partitions", "1", "--replication-factor", "3")
	c.WaitAgreed(t, "cli-everywhere", 1, 3, time.Minute)
	leader := c.Controller(t, time.Minute)
	_, clusterID := readMetaProperties(t, c.Nodes[0].Dir)

	var voters []string
	var follower *clustertest.Node
	for _, n := range c.Nodes {
		voters = append(voters, fmt.Sprintf(`{"id": %d, "endpoints": ["CONTROLLER://127.0.0.1:%d"]}`, n.ID, n.ControllerPort))
		if n.ID != leader && follower == nil {
			follower = n
		}
	}
	// Through a broker, which forwards to the active controller, and
	// straight to a controller that is not the leader (--bootstrap-controller:
	// DescribeCluster on the CONTROLLER listener names the leader).
	for _, bootstrap := range [][]string{
		{"--bootstrap-server", c.Nodes[0].Addr()},
		{"--bootstrap-controller", fmt.Sprintf("127.0.0.1:%d", follower.ControllerPort)},
	} {
		out, status := e.describeStatus(t, bootstrap...)
		epoch, _ := strconv.Atoi(status["LeaderEpoch"])
		hw, _ := strconv.Atoi(status["HighWatermark"])
		if status["ClusterId"] != clusterID || status["LeaderId"] != strconv.Itoa(int(leader)) || epoch < 1 || hw < 1 ||
			status["CurrentVoters"] != "["+strings.Join(voters, ", ")+"]" || status["CurrentObservers"] != "[]" {
			t.Fatalf("%v describe --status said\n%s\nwant cluster id %s, leader %d, an epoch and high watermark, voters %s and no observers",
				bootstrap, out, clusterID, leader, strings.Join(voters, ", "))
		}
	}

	// The CONTROLLER listener answers for the controllers.
	controllers := e.listEndpoints(t, "--bootstrap-controller", fmt.Sprintf("127.0.0.1:%d", follower.ControllerPort))
	if len(controllers) != 3 || controllers[strconv.Itoa(int(leader))] != "controller" {
		t.Fatalf("list-endpoints --bootstrap-controller: %v, want the three voters", controllers)
	}
	// kafka-configs describes the controller's own node there.
	fid := strconv.Itoa(int(follower.ID))
	out := e.run(t, "", e.cls.configs, "--bootstrap-controller", fmt.Sprintf("127.0.0.1:%d", follower.ControllerPort),
		"--describe", "--all", "--entity-type", "brokers", "--entity-name", fid)
	if !strings.Contains(out, "All configs for broker "+fid+" are:") || !strings.Contains(out, "node.id="+fid+" ") {
		t.Fatalf("kafka-configs --bootstrap-controller --describe --all of node %s:\n%s", fid, out)
	}

	caughtUp := func(rows map[int64]quorumReplica) error {
		if len(rows) != 3 {
			return fmt.Errorf("%d rows", len(rows))
		}
		for id, r := range rows {
			want := "Follower"
			if id == int64(leader) {
				want = "Leader"
			}
			if r.status != want || r.lag != 0 || r.lastCaughtUp < 0 || r.endOffset != rows[int64(leader)].endOffset {
				return fmt.Errorf("node %d: %+v, want a caught-up %s", id, r, want)
			}
		}
		return nil
	}
	clustertest.Eventually(t, time.Minute, "every voter caught up", func() error {
		return caughtUp(e.describeReplication(t, c.Node(leader)))
	})

	follower.Kill()
	c.WaitBrokers(t, 2, time.Minute) // fencing its broker is a metadata record it does not get
	rows := e.describeReplication(t, c.Node(leader))
	down, lead := rows[int64(follower.ID)], rows[int64(leader)]
	if down.status != "Follower" || down.endOffset >= lead.endOffset || down.lag != lead.endOffset-down.endOffset ||
		down.lastFetch >= lead.lastFetch || down.lastCaughtUp > down.lastFetch {
		t.Fatalf("after killing node %d: %+v, leader %+v; want it behind, with its last fetch and catch-up before the kill", follower.ID, down, lead)
	}

	// kafka-cluster lists the killed broker as fenced, then unregisters it,
	// as an operator removes a decommissioned broker; back, it registers again.
	brokers := []string{"--bootstrap-server", c.Node(leader).Addr(), "--include-fenced-brokers"}
	if got := e.listEndpoints(t, brokers...); got[fid] != "fenced broker" || len(got) != 3 {
		t.Fatalf("list-endpoints after the kill: %v, want node %s fenced", got, fid)
	}
	e.checkUnderReplicated(t, c, c.Node(leader).Addr(), follower.ID)
	if out := e.run(t, "", e.cls.cluster, "unregister", "--bootstrap-server", c.Node(leader).Addr(), "--id", fid); strings.TrimSpace(out) != "Broker "+fid+" is no longer registered." {
		t.Fatalf("kafka-cluster unregister said %q", out)
	}
	if got := e.listEndpoints(t, brokers...); len(got) != 2 || got[fid] != "" {
		t.Fatalf("list-endpoints after unregistering node %s: %v", fid, got)
	}
	if err := follower.Restart(); err != nil {
		t.Fatal(err)
	}
	c.WaitBrokers(t, 3, time.Minute)
	if got := e.listEndpoints(t, brokers...); got[fid] != "unfenced broker" || len(got) != 3 {
		t.Fatalf("list-endpoints after node %s came back: %v", fid, got)
	}
	clustertest.Eventually(t, time.Minute, "the restarted voter caught up", func() error {
		rows := e.describeReplication(t, c.Node(leader))
		if err := caughtUp(rows); err != nil {
			return err
		}
		if rows[int64(follower.ID)].lastCaughtUp <= down.lastFetch {
			return fmt.Errorf("node %d last caught up at %d, before it was killed", follower.ID, rows[int64(follower.ID)].lastCaughtUp)
		}
		return nil
	})

	// Kafka 4.1's upgrade of a static quorum: --release-version 4.1 or
	// later (4.2, the release a new cluster is at) takes kraft.version to 1
	// once every voter has told the leader its directory id, which
	// describe --status then lists.
	clustertest.Eventually(t, time.Minute, "kafka-features upgrade --release-version 4.2 to take kraft.version to 1", func() error {
		r := e.try(t, "", e.cls.features, "--bootstrap-server", c.Nodes[0].Addr(), "upgrade", "--release-version", "4.2")
		if r.err != nil {
			return fmt.Errorf("%v\n%s%s", r.err, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "kraft.version was upgraded to 1.") {
			t.Fatalf("kafka-features upgrade --release-version 4.2 on a static quorum:\n%s", r.stdout)
		}
		return nil
	})
	voters = voters[:0]
	for _, n := range c.Nodes {
		voters = append(voters, fmt.Sprintf(`{"id": %d, "directoryId": "%s", "endpoints": ["CONTROLLER://127.0.0.1:%d"]}`,
			n.ID, metaPropertiesValue(t, n.Dir, "directory.id"), n.ControllerPort))
	}
	if out, status := e.describeStatus(t, "--bootstrap-server", c.Nodes[0].Addr()); status["CurrentVoters"] != "["+strings.Join(voters, ", ")+"]" {
		t.Fatalf("describe --status after the upgrade:\n%s\nwant voters %s", out, strings.Join(voters, ", "))
	}
}

// checkUnderReplicated runs kafka-topics --describe
// --under-replicated-partitions (through DescribeTopicPartitions) while
// node down is dead: it lists exactly the partitions with a replica there,
// each without it in its ISR.
func (e *cliEnv) checkUnderReplicated(t *testing.T, c *clustertest.Cluster, addr string, down int32) {
	t.Helper()
	meta, err := c.Metadata()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, mt := range meta.Topics {
		for _, p := range mt.Partitions {
			if slices.Contains(p.Replicas, down) {
				want = append(want, fmt.Sprintf("%s/%d", *mt.Topic, p.Partition))
			}
		}
	}
	out := e.run(t, "", e.cls.topics, "--bootstrap-server", addr, "--describe", "--under-replicated-partitions")
	var got []string
	for _, l := range cliLines(out) {
		m := cliPartitionLine.FindStringSubmatch(l)
		if m == nil || slices.Contains(strings.Split(m[5], ","), strconv.Itoa(int(down))) {
			t.Fatalf("kafka-topics --under-replicated-partitions line %q, node %d down", l, down)
		}
		got = append(got, m[1]+"/"+m[2])
	}
	slices.Sort(got)
	slices.Sort(want)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("under-replicated partitions %v, want those with a replica on node %d: %v", got, down, want)
	}
}
