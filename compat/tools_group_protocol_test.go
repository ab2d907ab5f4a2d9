package compat

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The consumer group protocol of KIP-848 through Kafka's tools:
// kafka-console-consumer with group.protocol=consumer as the members,
// kafka-consumer-groups (which describes such a group with
// ConsumerGroupDescribe) as the admin, franz-go as the reference.

const (
	cliGPTopic   = "cli-gp"
	cliGPGroup   = "cli-gp-group"
	cliGPClassic = "cli-gp-classic"
)

// cliMember is a console consumer of the consumer protocol running in the
// background, its output going to a file.
type cliMember struct {
	cmd    *exec.Cmd
	out    string
	stderr *bytes.Buffer
	done   chan error
}

// startMember starts a console consumer in group on topic with
// group.protocol=consumer; it runs until stopped.
func (e *cliEnv) startMember(t *testing.T, name, topic, group string) *cliMember {
	t.Helper()
	return e.startBackground(t, name, e.cls.consumer, "--bootstrap-server", e.p.Addr, "--topic", topic,
		"--group", group, "--command-property", "group.protocol=consumer",
		"--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
		"--formatter-property", "print.key=true")
}

// startBackground starts a console consumer tool (class cls) in the
// background, its output going to a file; it runs until stopped
// (cliMember.stop) or for five minutes at most.
func (e *cliEnv) startBackground(t *testing.T, name, cls string, args ...string) *cliMember {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd, saveArchive := e.command(ctx, cls, args...)
	m := &cliMember{cmd: cmd, out: filepath.Join(t.TempDir(), name+".out"), stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	f, err := os.Create(m.out)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, m.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		f.Close()
		saveArchive()
		m.done <- err
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-m.done:
			m.done <- err
		case <-time.After(30 * time.Second):
		}
	})
	return m
}

// records parses the complete lines the member printed so far.
func (m *cliMember) records(t *testing.T) []cliRecord {
	t.Helper()
	b, err := os.ReadFile(m.out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		return cliParseConsole(t, text[:i+1])
	}
	return nil
}

// stop ends the member as Ctrl-C does (SIGTERM: the console consumer
// closes its consumer, which commits and leaves the group) and checks
// that it says it processed as many records as it printed.
func (m *cliMember) stop(t *testing.T) []cliRecord {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-m.done:
		m.done <- err
		if err != nil && !strings.Contains(err.Error(), "143") && !strings.Contains(err.Error(), "terminated") {
			t.Fatalf("console consumer: %v\n%s", err, m.stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("console consumer did not stop on SIGTERM:\n%s", m.stderr.String())
	}
	rs := m.records(t)
	if want := fmt.Sprintf("Processed a total of %d messages", len(rs)); !strings.Contains(m.stderr.String(), want) {
		t.Errorf("console consumer printed %d records but did not say %q:\n%s", len(rs), want, m.stderr.String())
	}
	return rs
}

// describeConsumerGroup is franz-go's ConsumerGroupDescribe of group.
func (e *cliEnv) describeConsumerGroup(t *testing.T, group string) kadm.DescribedConsumerGroup {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	described, err := e.adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	d := described[group]
	if d.Err != nil {
		t.Fatalf("ConsumerGroupDescribe %s: %v", group, d.Err)
	}
	return d
}

// cliAssignment is a member's partitions of topic as kafka-consumer-groups
// --members --verbose prints them ("topic:0,2"), and how many.
func cliAssignment(set kadm.TopicsSet, topic string) (string, int) {
	var ps []int32
	for p := range set[topic] {
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return "-", 0
	}
	slices.Sort(ps)
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return topic + ":" + strings.Join(s, ","), len(ps)
}

// committedIn returns group's committed offsets on topic as franz-go
// fetches them.
func (e *cliEnv) committedIn(t *testing.T, group, topic string) map[int32]int64 {
	t.Helper()
	return committed(t, e.adm, group, topic)
}

// listedTypes runs kafka-consumer-groups --list --type typ and returns
// each listed group's TYPE.
func (e *cliEnv) listedTypes(t *testing.T, typ string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range cliTable(t, e.admin(t, e.cls.groups, "--list", "--type", typ)) {
		out[r["GROUP"]] = r["TYPE"]
	}
	return out
}

// testGroupProtocol: console consumers with group.protocol=consumer read
// a topic exactly once and commit; kafka-consumer-groups lists the group
// by type (and a classic group only as classic), describes its offsets,
// members (with epochs and assignments, as franz-go's ConsumerGroupDescribe
// sees them) and state, refuses to delete it or reset its offsets while
// members are active; one of two members leaves and the other takes its
// partitions over from its commits; the empty group's offsets are reset
// and read again, and the group is deleted.
func (e *cliEnv) testGroupProtocol(t *testing.T) {
	e.createTopic(t, cliGPTopic, 3)
	e.produceConsole(t, cliGPTopic, cliInput("gp", 60))
	stored := e.cliStored(t, cliGPTopic)
	ends := e.endOffsetsOf(t, cliGPTopic)

	// A classic group, for the type filter.
	e.consumeConsole(t, cliGPTopic, len(stored), "--group", cliGPClassic, "--from-beginning")
	got := e.consumeConsole(t, cliGPTopic, len(stored), "--group", cliGPGroup, "--from-beginning",
		"--command-property", "group.protocol=consumer")
	sameCLIRecords(t, "read by a member of the consumer protocol", got, stored)
	cliSameOffsets(t, "committed by the member", e.committedIn(t, cliGPGroup, cliGPTopic), ends)

	if l := e.listedTypes(t, "consumer"); l[cliGPGroup] != "Consumer" || l[cliGPClassic] != "" {
		t.Errorf("--list --type consumer: %v", l)
	}
	if l := e.listedTypes(t, "classic"); l[cliGPClassic] != "Classic" || l[cliGPGroup] != "" {
		t.Errorf("--list --type classic: %v", l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	listed, err := e.adm.ListGroupsByType(ctx, []string{"consumer"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed[cliGPGroup]; !ok || listed[cliGPClassic].Group != "" {
		t.Errorf("franz-go lists the consumer groups %v, want %s and not %s", listed.Groups(), cliGPGroup, cliGPClassic)
	}

	describeRows := func() []map[string]string {
		return cliTable(t, e.admin(t, e.cls.groups, "--describe", "--group", cliGPGroup))
	}
	state := func() map[string]string {
		rows := cliTable(t, e.admin(t, e.cls.groups, "--describe", "--group", cliGPGroup, "--state"))
		if len(rows) != 1 {
			t.Fatalf("--state printed %d rows", len(rows))
		}
		return rows[0]
	}
	checkOffsets := func(what string, committed, ends map[int32]int64, owner map[int32]string) {
		t.Helper()
		rows := describeRows()
		if len(rows) != len(ends) {
			t.Fatalf("%s: %d rows for %d partitions: %v", what, len(rows), len(ends), rows)
		}
		for _, r := range rows {
			p, _ := strconv.Atoi(r["PARTITION"])
			want := map[string]string{
				"GROUP": cliGPGroup, "TOPIC": cliGPTopic,
				"CURRENT-OFFSET": strconv.FormatInt(committed[int32(p)], 10),
				"LOG-END-OFFSET": strconv.FormatInt(ends[int32(p)], 10),
				"LAG":            strconv.FormatInt(ends[int32(p)]-committed[int32(p)], 10),
				"CONSUMER-ID":    "-",
			}
			if id, ok := owner[int32(p)]; ok {
				want["CONSUMER-ID"] = id
			}
			for col, v := range want {
				if r[col] != v {
					t.Errorf("%s: partition %d: %s %q, want %q (row %v)", what, p, col, r[col], v, r)
				}
			}
		}
	}
	checkOffsets("--describe of the idle group", ends, ends, nil)
	if s := state(); s["STATE"] != "Empty" || s["#MEMBERS"] != "0" || s["ASSIGNMENT-STRATEGY"] != "uniform" {
		t.Errorf("--state of the idle group: %v", s)
	}
	classic := cliTable(t, e.admin(t, e.cls.groups, "--describe", "--group", cliGPClassic, "--state"))
	if len(classic) != 1 || classic[0]["STATE"] != "Empty" || classic[0]["#MEMBERS"] != "0" {
		t.Errorf("--state of the classic group: %v", classic)
	}

	// Two members split the partitions.
	a := e.startMember(t, "a", cliGPTopic, cliGPGroup)
	b := e.startMember(t, "b", cliGPTopic, cliGPGroup)
	var d kadm.DescribedConsumerGroup
	waitFor(t, "two members to split the 3 partitions", 90*time.Second, func() bool {
		d = e.describeConsumerGroup(t, cliGPGroup)
		if d.State != "Stable" || len(d.Members) != 2 {
			return false
		}
		_, n0 := cliAssignment(d.Members[0].Assignment, cliGPTopic)
		_, n1 := cliAssignment(d.Members[1].Assignment, cliGPTopic)
		return n0 > 0 && n1 > 0 && n0+n1 == 3
	})
	members := map[string]map[string]string{}
	for _, r := range cliTable(t, e.admin(t, e.cls.groups, "--describe", "--group", cliGPGroup, "--members", "--verbose")) {
		members[r["CONSUMER-ID"]] = r
	}
	owner := map[int32]string{}
	for _, m := range d.Members {
		assigned, n := cliAssignment(m.Assignment, cliGPTopic)
		target, _ := cliAssignment(m.TargetAssignment, cliGPTopic)
		for p := range m.Assignment[cliGPTopic] {
			owner[p] = m.MemberID
		}
		want := map[string]string{
			"GROUP": cliGPGroup, "HOST": "/127.0.0.1", "CLIENT-ID": "console-consumer", "#PARTITIONS": strconv.Itoa(n),
			"CURRENT-EPOCH": strconv.Itoa(int(m.MemberEpoch)), "CURRENT-ASSIGNMENT": assigned,
			"TARGET-EPOCH": strconv.Itoa(int(d.AssignmentEpoch)), "TARGET-ASSIGNMENT": target,
		}
		r := members[m.MemberID]
		for col, v := range want {
			if r[col] != v {
				t.Errorf("--members --verbose: member %s: %s %q, want %q (rows %v)", m.MemberID, col, r[col], v, members)
			}
		}
	}
	if len(members) != 2 {
		t.Errorf("--members --verbose lists %d members: %v", len(members), members)
	}
	checkOffsets("--describe with two members", ends, ends, owner)
	if s := state(); s["STATE"] != "Stable" || s["#MEMBERS"] != "2" || s["ASSIGNMENT-STRATEGY"] != "uniform" || s["COORDINATOR"] != e.p.Addr {
		t.Errorf("--state with two members: %v", s)
	}

	out := e.admin(t, e.cls.groups, "--delete", "--group", cliGPGroup)
	if !strings.Contains(out, "GroupNotEmptyException: The group is not empty.") {
		t.Errorf("deleting the group with members:\n%s", out)
	}
	out = e.admin(t, e.cls.groups, "--reset-offsets", "--group", cliGPGroup, "--topic", cliGPTopic, "--to-earliest", "--execute")
	if !strings.Contains(out, "Assignments can only be reset if the group '"+cliGPGroup+"' is inactive, but the current state is Stable.") {
		t.Errorf("resetting the offsets of the group with members:\n%s", out)
	}
	if d := e.describeConsumerGroup(t, cliGPGroup); len(d.Members) != 2 {
		t.Errorf("after the refused delete the group has %d members", len(d.Members))
	}
	cliSameOffsets(t, "committed after the refused reset", e.committedIn(t, cliGPGroup, cliGPTopic), ends)

	// 30 new records reach the two members, once; then a leaves and b
	// takes its partitions over and reads 30 more.
	e.produceConsole(t, cliGPTopic, cliInput("more", 30))
	waitFor(t, "the members to read the 30 new records", time.Minute, func() bool {
		return len(a.records(t))+len(b.records(t)) >= 30
	})
	fromA := a.stop(t)
	waitFor(t, "b to own all 3 partitions", time.Minute, func() bool {
		d := e.describeConsumerGroup(t, cliGPGroup)
		if len(d.Members) != 1 {
			return false
		}
		_, n := cliAssignment(d.Members[0].Assignment, cliGPTopic)
		return n == 3 && d.State == "Stable"
	})
	e.produceConsole(t, cliGPTopic, cliInput("last", 30))
	waitFor(t, "b to read the last 30 records", time.Minute, func() bool {
		return len(fromA)+len(b.records(t)) >= 60
	})
	fromB := b.stop(t)
	all := e.cliStored(t, cliGPTopic)
	newEnds := e.endOffsetsOf(t, cliGPTopic)
	var added []cliRecord
	for _, r := range all {
		if r.offset >= ends[r.partition] {
			added = append(added, r)
		}
	}
	sameCLIRecords(t, "read by the two members", append(fromA, fromB...), added)
	if len(fromA) == 0 {
		t.Errorf("a read none of the new records")
	}
	waitFor(t, "the group to be empty", 30*time.Second, func() bool {
		s := state()
		return s["STATE"] == "Empty" && s["#MEMBERS"] == "0"
	})
	cliSameOffsets(t, "committed after both members left", e.committedIn(t, cliGPGroup, cliGPTopic), newEnds)
	checkOffsets("--describe after both members left", newEnds, newEnds, nil)

	// The empty group's offsets are reset; a member reads from there.
	zero := map[int32]int64{0: 0, 1: 0, 2: 0}
	reset := map[int32]int64{}
	for _, r := range cliTable(t, e.admin(t, e.cls.groups, "--reset-offsets", "--group", cliGPGroup, "--topic", cliGPTopic, "--to-earliest", "--execute")) {
		p, _ := strconv.Atoi(r["PARTITION"])
		o, err := strconv.ParseInt(r["NEW-OFFSET"], 10, 64)
		if err != nil || r["TOPIC"] != cliGPTopic {
			t.Fatalf("reset row %v", r)
		}
		reset[int32(p)] = o
	}
	cliSameOffsets(t, "--reset-offsets --to-earliest", reset, zero)
	cliSameOffsets(t, "committed after the reset", e.committedIn(t, cliGPGroup, cliGPTopic), zero)
	got = e.consumeConsole(t, cliGPTopic, len(all), "--group", cliGPGroup, "--command-property", "group.protocol=consumer")
	sameCLIRecords(t, "read again after the reset", got, all)
	cliSameOffsets(t, "committed after reading again", e.committedIn(t, cliGPGroup, cliGPTopic), newEnds)

	out = e.admin(t, e.cls.groups, "--delete", "--group", cliGPGroup)
	if strings.TrimSpace(out) != "Deletion of requested consumer groups ('"+cliGPGroup+"') was successful." {
		t.Errorf("--delete of the empty group said %q", out)
	}
	if l := e.listedTypes(t, "consumer"); l[cliGPGroup] != "" {
		t.Errorf("--list --type consumer after the delete: %v", l)
	}
	if c := e.committedIn(t, cliGPGroup, cliGPTopic); len(c) != 0 {
		t.Errorf("the deleted group still has offsets %v", c)
	}
}
