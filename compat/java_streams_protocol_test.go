package compat

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// javaStreamsSteps are the steps compat/java's StreamsProtocolMain
// reports as streams-protocol-<step>; the matrix shows them as one
// streams-protocol cell.
var javaStreamsSteps = []string{"count", "internal-topics", "share", "describe", "failover", "delete"}

// streamsBroker are the overrides of a broker that serves streams groups
// (KIP-1071's StreamsGroupHeartbeat and StreamsGroupDescribe), which
// Kafka, as Gregor, serves only when group.coordinator.rebalance.protocols
// lists "streams".
var streamsBroker = []string{
	"group.coordinator.rebalance.protocols=classic,consumer,streams",
	"group.initial.rebalance.delay.ms=0",
}

// TestJavaStreamsProtocol runs compat/java's StreamsProtocolMain (Kafka
// Streams with group.protocol=streams, StreamsProtocolChecks.java) for
// every kafka-clients 4.x in compat/java/versions, each against its own
// broker, as the streams-protocol cell: a word count through a repartition
// topic into a state store, whose internal topics the broker creates,
// counted right by one instance, then by two sharing the tasks, then by
// the one left after the other closed; the Admin client lists, describes
// and deletes the group. 3.x has no streams protocol. When the last step
// (delete) passed, franz-go checks what the broker kept: the input holds
// the 600 lines, both internal topics are there with the input's 4
// partitions, and the deleted group is neither listed nor described.
func TestJavaStreamsProtocol(t *testing.T) {
	forEachJava4(t, "StreamsProtocolMain", func(t *testing.T, version, classpath string) {
		p := harness.Start(t, t.TempDir(), streamsBroker...)
		const prefix = "javastreams"
		rep := runScript(t, 6*time.Minute, p.Addr, prefix, "java", "-cp", classpath, "gregor.compat.StreamsProtocolMain")
		if rep.client != "kafka-clients" || rep.version != version {
			t.Errorf("program reported %q %q, want kafka-clients %s", rep.client, rep.version, version)
		}
		deleted := passed(rep, "streams-protocol-delete")
		rep = foldJavaResults(rep, "streams-protocol", javaStreamsSteps)
		recordReport(t, rep, "streams-protocol")
		if deleted && !t.Run("broker-check", func(t *testing.T) { checkJavaStreamsProtocol(t, p.Addr, prefix) }) {
			record(rep.client, rep.version, "streams-protocol", false, "broker check failed (see the test log)")
		}
		logBrokerOnFailure(t, p)
	})
}

// checkJavaStreamsProtocol checks with franz-go what StreamsProtocolChecks
// left: <prefix>-sp-in holds 600 records over its 4 partitions, the
// application's repartition and changelog topics have 4 partitions each,
// and the deleted group <prefix>-sp-app is neither listed as a streams
// group nor described (GROUP_ID_NOT_FOUND).
func checkJavaStreamsProtocol(t *testing.T, addr, prefix string) {
	app := prefix + "-sp-app"
	adm := newAdmin(t, addr)
	total := int64(0)
	for _, end := range endOffsets(t, adm, prefix+"-sp-in") {
		total += end
	}
	if total != 600 {
		t.Errorf("%s-sp-in holds %d records, want 600", prefix, total)
	}
	for _, topic := range []string{app + "-counts-repartition", app + "-counts-changelog"} {
		if ends := endOffsets(t, adm, topic); len(ends) != 4 {
			t.Errorf("%s has %d partitions, want 4", topic, len(ends))
		}
	}
	checkStreamsGroupGone(t, addr, adm, app)
}

// checkStreamsGroupGone checks that a deleted streams group is neither
// listed (ListGroups of type streams) nor described (StreamsGroupDescribe:
// GROUP_ID_NOT_FOUND).
func checkStreamsGroupGone(t *testing.T, addr string, adm *kadm.Client, group string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	listed, err := adm.ListGroupsByType(ctx, []string{"streams"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := listed[group]; ok {
		t.Errorf("ListGroups (type streams) still lists the deleted %s: %+v", group, l)
	}
	d := describeStreamsGroup(t, addr, group)
	if err := kerr.ErrorForCode(d.ErrorCode); err != kerr.GroupIDNotFound {
		t.Errorf("StreamsGroupDescribe of the deleted %s: state %q, %d members, error %v; want GROUP_ID_NOT_FOUND", group, d.State, len(d.Members), err)
	}
}

// describeStreamsGroup is franz-go's StreamsGroupDescribe of group on the
// single broker at addr (its coordinator: franz-go does not route this
// request to coordinators itself).
func describeStreamsGroup(t *testing.T, addr, group string) kmsg.StreamsGroupDescribeResponseGroup {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("StreamsGroupDescribe %s: %v", group, err)
	}
	for _, g := range resp.Groups {
		if g.Group == group {
			return g
		}
	}
	t.Fatalf("StreamsGroupDescribe answered nothing for %s: %+v", group, resp.Groups)
	return kmsg.StreamsGroupDescribeResponseGroup{}
}

// logBrokerOnFailure logs the end of the broker's log when the test
// failed: the broker's side of a refused heartbeat or a failed topic
// creation.
func logBrokerOnFailure(t *testing.T, p *harness.Process) {
	t.Helper()
	if !t.Failed() {
		return
	}
	if b, err := os.ReadFile(p.Logs); err == nil {
		t.Logf("broker log (last 100 lines):\n%s", lastLines(string(b), 100))
	}
}
