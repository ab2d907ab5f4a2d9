package compat

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
)

// javaGroupProtocolBroker are the overrides of the broker the
// group-protocol check runs against: members learn of a new target
// assignment on their next heartbeat, and the default interval of 5 s
// would make each of the check's membership changes take several seconds.
var javaGroupProtocolBroker = []string{
	"group.consumer.heartbeat.interval.ms=1000",
	"group.consumer.min.heartbeat.interval.ms=1000",
}

// TestJavaGroupProtocol runs compat/java's GroupProtocolMain (the consumer
// group protocol of KIP-848, GroupProtocolChecks.java) for every
// kafka-clients 4.x in compat/java/versions, each against its own broker,
// as the group-protocol cell; 3.x has the protocol as a preview only.
// Afterwards franz-go checks what the broker kept: the group's committed
// offsets are the end of every partition, ListGroups lists the check's
// groups as consumer groups, and ConsumerGroupDescribe shows each Empty
// (every member left when it closed).
func TestJavaGroupProtocol(t *testing.T) {
	forEachJava4(t, "GroupProtocolMain", func(t *testing.T, version, classpath string) {
		p := harness.Start(t, t.TempDir(), javaGroupProtocolBroker...)
		const prefix = "javagp"
		rep := runScript(t, 4*time.Minute, p.Addr, prefix, "java", "-cp", classpath, "gregor.compat.GroupProtocolMain")
		if rep.client != "kafka-clients" || rep.version != version {
			t.Errorf("program reported %q %q, want kafka-clients %s", rep.client, rep.version, version)
		}
		recordReport(t, rep, "group-protocol")
		if !passed(rep, "group-protocol") {
			return
		}
		if !t.Run("broker-check", func(t *testing.T) { checkJavaGroupProtocol(t, p.Addr, prefix) }) {
			record(rep.client, rep.version, "group-protocol", false, "broker check failed (see the test log)")
		}
	})
}

// forEachJava4 runs a compat/java main class of every kafka-clients 4.x in
// compat/java/versions as a subtest named by the version, with the
// classpath of its build; 3.x is skipped, having neither the consumer
// group protocol nor share groups but as previews.
func forEachJava4(t *testing.T, mainClass string, run func(t *testing.T, version, classpath string)) {
	ran := false
	for _, version := range javaVersions(t) {
		if major, err := strconv.Atoi(strings.Split(version, ".")[0]); err != nil || major < 4 {
			continue
		}
		ran = true
		t.Run(version, func(t *testing.T) {
			dir := filepath.Join("java", "target", "kafka-"+version)
			requireFile(t, filepath.Join(dir, "classes", "gregor", "compat", mainClass+".class"))
			requireFresh(t, filepath.Join(dir, ".built"), filepath.Join("java", "src"))
			run(t, version, filepath.Join(dir, "classes")+string(os.PathListSeparator)+filepath.Join(dir, "dependency", "*"))
		})
	}
	if !ran {
		t.Fatal("compat/java/versions lists no kafka-clients 4.x")
	}
}

// checkJavaGroupProtocol checks with franz-go what GroupProtocolChecks
// left: <prefix>-gp-g committed the end offsets of the 6 partitions of
// <prefix>-gp (none empty), the pattern groups the end offsets of
// the topic each picked up, and all three are consumer groups, listed as
// such, with no members left.
func checkJavaGroupProtocol(t *testing.T, addr, prefix string) {
	adm := newAdmin(t, addr)
	topic, group := prefix+"-gp", prefix+"-gp-g"
	ends := endOffsets(t, adm, topic)
	if len(ends) != 6 {
		t.Fatalf("%s has %d partitions, want 6", topic, len(ends))
	}
	got := committed(t, adm, group, topic)
	for p, end := range ends {
		if end == 0 || got[p] != end {
			t.Errorf("%s committed %d on partition %d, want the end offset %d", group, got[p], p, end)
		}
	}
	for g, topic := range map[string]string{prefix + "-gp-pat-g": prefix + "-gp-pat-b", prefix + "-gp-re2-g": prefix + "-gp-re2-a"} {
		if got := committed(t, adm, g, topic); len(got) != 2 || got[0] != 10 || got[1] != 10 {
			t.Errorf("%s committed %v on %s, want 10 on each of its 2 partitions", g, got, topic)
		}
	}

	groups := []string{group, prefix + "-gp-pat-g", prefix + "-gp-re2-g"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	listed, err := adm.ListGroupsByType(ctx, []string{"consumer"})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if l, ok := listed[g]; !ok || l.GroupType != "consumer" || l.ProtocolType != "consumer" || l.State != "Empty" {
			t.Errorf("ListGroups (type consumer) shows %s as %+v (listed: %v)", g, l, ok)
		}
	}
	described, err := adm.DescribeConsumerGroups(ctx, groups...)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		d := described[g]
		if d.Err != nil || d.State != "Empty" || len(d.Members) != 0 {
			t.Errorf("ConsumerGroupDescribe %s: state %q, %d members, err %v", g, d.State, len(d.Members), d.Err)
		}
	}
}
