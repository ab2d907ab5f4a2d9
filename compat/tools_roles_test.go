package compat

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/cmd/gregor/clustertest"
)

// checkDedicatedLayout runs Kafka's tools against Kafka's production
// layout, three controller-only voters beside three broker-only nodes.
// Through a controller, kafka-metadata-quorum describe --replication lists
// the voters (one leader) and the brokers as observers, all caught up, and
// kafka-cluster list-endpoints the controllers; through a broker, the
// brokers. kafka-topics creates a topic whose replicas are all on brokers;
// once the broker leading it is killed, --under-replicated-partitions
// lists the partitions that had a replica there.
func (e *cliEnv) checkDedicatedLayout(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{DedicatedControllers: true, Brokers: 3})
	c.WaitBrokers(t, 3, time.Minute)
	controllers, brokers := c.Nodes[:3], c.Nodes[3:]
	viaController := []string{"--bootstrap-controller", fmt.Sprintf("127.0.0.1:%d", controllers[0].ControllerPort)}
	viaBroker := []string{"--bootstrap-server", brokers[0].Addr()}

	leader := c.QuorumLeader(t, time.Minute)
	clustertest.Eventually(t, time.Minute, "voters and observers caught up", func() error {
		rows := e.replicationRows(t, viaController...)
		if len(rows) != 6 {
			return fmt.Errorf("%d rows: %v", len(rows), rows)
		}
		for _, n := range c.Nodes {
			want := "Observer"
			switch {
			case n.ID == leader:
				want = "Leader"
			case n.ID <= 3:
				want = "Follower"
			}
			if r := rows[int64(n.ID)]; r.status != want || r.lag != 0 {
				return fmt.Errorf("node %d: %+v, want a caught-up %s", n.ID, r, want)
			}
		}
		return nil
	})
	if got := e.listEndpoints(t, viaController...); len(got) != 3 || got["1"] != "controller" || got["2"] != "controller" || got["3"] != "controller" {
		t.Fatalf("list-endpoints %v: %v, want the three controllers", viaController, got)
	}
	if got := e.listEndpoints(t, viaBroker...); len(got) != 3 || got["4"] != "unfenced broker" || got["5"] != "unfenced broker" || got["6"] != "unfenced broker" {
		t.Fatalf("list-endpoints %v: %v, want the three brokers", viaBroker, got)
	}

	e.run(t, "", e.cls.topics, append(viaBroker, "--create", "--topic", "cli-roles", "--partitions", "3", "--replication-factor", "3")...)
	c.WaitAgreed(t, "cli-roles", 3, 3, time.Minute)
	state, err := c.Partition("cli-roles", 0)
	if err != nil {
		t.Fatal(err)
	}
	if state.Leader <= 3 {
		t.Fatalf("cli-roles/0 led by node %d, a controller", state.Leader)
	}
	down := c.Node(state.Leader)
	down.Kill()
	c.WaitBrokers(t, 2, time.Minute)
	c.WaitPartition(t, "cli-roles", 0, time.Minute, "a new leader", func(s clustertest.PartitionState) bool {
		return s.Leader > 3 && s.Leader != down.ID
	})
	alive := brokers[0]
	if alive == down {
		alive = brokers[1]
	}
	e.checkUnderReplicated(t, c, alive.Addr(), down.ID)
	if got := e.listEndpoints(t, "--bootstrap-server", alive.Addr(), "--include-fenced-brokers"); got[strconv.Itoa(int(down.ID))] != "fenced broker" {
		t.Fatalf("list-endpoints after killing node %d: %v, want it fenced", down.ID, got)
	}
}
