package clustertest

import (
	"testing"
	"time"
)

// TestDedicatedControllersAndBrokersKill9 runs Kafka's production layout,
// three controller-only voters and three broker-only nodes, under acks=all
// idempotent writes. The broker leading partition 0 is killed with
// SIGKILL, then the quorum's leader: a new partition leader comes from the
// ISR, another controller is elected, writes go on throughout, both come
// back, the ISRs heal to three, and the full read finds nothing lost,
// duplicated or reordered.
func TestDedicatedControllersAndBrokersKill9(t *testing.T) {
	const topic = "roles"
	c, chk, w := startWriting(t, Options{DedicatedControllers: true, Brokers: 3}, topic)
	broker := killLeader(t, c, topic, 0)
	if broker.hasRole(rolesController) {
		t.Fatalf("partition 0 was led by node %d, a controller", broker.ID)
	}
	w.WaitAcked(t, 300, 60*time.Second)

	controller := c.Node(c.QuorumLeader(t, 30*time.Second))
	if controller.broker() {
		t.Fatalf("the quorum is led by node %d, a broker", controller.ID)
	}
	controller.Kill()
	if next := c.QuorumLeader(t, 60*time.Second); next == controller.ID {
		t.Fatalf("node %d, killed, still leads the quorum", next)
	}
	w.WaitAcked(t, 300, 60*time.Second)
	c.CreateTopic(t, "after-failover", 1, 2, 60*time.Second) // the new controller takes changes

	for _, n := range []*Node{broker, controller} {
		if err := n.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitBrokers(t, 3, 60*time.Second)
	for p := int32(0); p < 3; p++ {
		c.WaitISR(t, topic, p, 3, 60*time.Second)
	}
	w.WaitAcked(t, 300, 60*time.Second)
	w.Stop()

	ReadAllAndCheck(t, c, chk, topic, "after a broker and a controller were killed")
}
