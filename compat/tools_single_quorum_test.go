package compat

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/compat/harness"
)

var directoryIDLine = regexp.MustCompile(`(?m)^directory\.id=(\S+)$`)

// testSingleNodeQuorum runs Kafka's tools against a single node started
// with the listeners of Kafka's shipped server.properties (PLAINTEXT and
// CONTROLLER): kafka-metadata-quorum describe, through the broker and
// through --bootstrap-controller, shows the node as leader and only voter
// of its quorum of one, with its directory id and CONTROLLER endpoint and
// no lag; the high watermark grows with a metadata change and the epoch
// with a restart. kafka-cluster and kafka-features answer through
// --bootstrap-controller too.
func (e *cliEnv) testSingleNodeQuorum(t *testing.T) {
	dir := t.TempDir()
	overrides := []string{"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "controller.listener.names=CONTROLLER"}
	p := harness.Start(t, dir, overrides...)
	ctl := p.ListenerAddr(t, "CONTROLLER")
	// Answered once the log dir is open and its meta.properties written.
	e.run(t, "", e.cls.cluster, "cluster-id", "--bootstrap-server", p.Addr)
	props, clusterID := readMetaProperties(t, dir)
	m := directoryIDLine.FindSubmatch(props)
	if m == nil {
		t.Fatalf("meta.properties has no directory.id:\n%s", props)
	}
	voters := fmt.Sprintf(`[{"id": 1, "directoryId": "%s", "endpoints": ["CONTROLLER://%s"]}]`, m[1], ctl)

	status := func(epoch int, bootstrap ...string) int {
		t.Helper()
		out, status := e.describeStatus(t, bootstrap...)
		hw, err := strconv.Atoi(status["HighWatermark"])
		if status["ClusterId"] != clusterID || status["LeaderId"] != "1" || status["LeaderEpoch"] != strconv.Itoa(epoch) ||
			err != nil || hw < 1 || status["MaxFollowerLag"] != "0" || status["MaxFollowerLagTimeMs"] != "0" ||
			status["CurrentVoters"] != voters || status["CurrentObservers"] != "[]" {
			t.Fatalf("%v describe --status said\n%s\nwant cluster id %s, leader 1 at epoch %d, voters %s and no observers",
				bootstrap, out, clusterID, epoch, voters)
		}
		return hw
	}
	server, controller := []string{"--bootstrap-server", p.Addr}, []string{"--bootstrap-controller", ctl}
	hw := status(1, server...)
	if other := status(1, controller...); other != hw {
		t.Fatalf("high watermark %d through the broker, %d through the controller", hw, other)
	}
	rows := e.replicationRows(t, controller...)
	if r := rows[1]; len(rows) != 1 || r.status != "Leader" || r.lag != 0 || r.endOffset != int64(hw) || r.lastCaughtUp != r.lastFetch {
		t.Fatalf("describe --replication: %+v, want node 1 alone, the leader, at offset %d", rows, hw)
	}

	if got := e.listEndpoints(t, controller...); len(got) != 1 || got["1"] != "controller" {
		t.Fatalf("kafka-cluster list-endpoints --bootstrap-controller: %v, want node 1, a controller", got)
	}
	if out := strings.TrimSpace(e.run(t, "", e.cls.cluster, append([]string{"cluster-id"}, controller...)...)); out != "Cluster ID: "+clusterID {
		t.Fatalf("kafka-cluster cluster-id --bootstrap-controller said %q", out)
	}
	if out := e.run(t, "", e.cls.features, append(controller, "describe")...); !strings.Contains(out, "Feature: metadata.version") {
		t.Fatalf("kafka-features --bootstrap-controller describe:\n%s", out)
	}

	e.run(t, "", e.cls.configs, append(controller, "--alter", "--entity-type", "brokers", "--entity-name", "1",
		"--add-config", "log.cleaner.threads=2")...)
	if after := status(1, controller...); after != hw+1 {
		t.Fatalf("high watermark %d after a config change, was %d", after, hw)
	}

	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	p = harness.Start(t, dir, overrides...)
	ctl = p.ListenerAddr(t, "CONTROLLER")
	voters = fmt.Sprintf(`[{"id": 1, "directoryId": "%s", "endpoints": ["CONTROLLER://%s"]}]`, m[1], ctl)
	status(2, "--bootstrap-controller", ctl)
}
