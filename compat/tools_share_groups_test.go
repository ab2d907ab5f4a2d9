package compat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Share groups (KIP-932) through Kafka's tools: kafka-console-share-consumer
// (ConsoleShareConsumer) as the members, kafka-share-groups
// (ShareGroupCommand) as the admin, kafka-configs for the group's
// share.auto.offset.reset, franz-go as the reference.

const (
	cliShareTopic = "cli-share"
	cliShareGroup = "cli-share-g"
)

// consumeShare runs kafka-console-share-consumer in cliShareGroup until it
// has n records and parses what it printed (partition, offset, delivery
// count, key, value). Its records are acknowledged (accepted) as it goes
// and when it closes.
func (e *cliEnv) consumeShare(t *testing.T, n int) ([]cliRecord, []int) {
	t.Helper()
	r := e.try(t, "", e.cls.shareConsumer, "--bootstrap-server", e.p.Addr, "--topic", cliShareTopic, "--group", cliShareGroup,
		"--max-messages", strconv.Itoa(n), "--timeout-ms", "60000",
		"--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
		"--formatter-property", "print.delivery=true", "--formatter-property", "print.key=true")
	if r.err != nil {
		t.Fatalf("console share consumer: %v\n%s\n%s", r.err, r.stdout, r.stderr)
	}
	if want := fmt.Sprintf("Processed a total of %d messages", n); !strings.Contains(r.stderr, want) {
		t.Fatalf("console share consumer did not say %q:\n%s", want, r.stderr)
	}
	var rs []cliRecord
	var deliveries []int
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 5 || !strings.HasPrefix(f[2], "Delivery:") {
			t.Fatalf("unexpected console share consumer line %q", l)
		}
		d, err := strconv.Atoi(strings.TrimPrefix(f[2], "Delivery:"))
		if err != nil {
			t.Fatalf("bad delivery count in %q", l)
		}
		rs = append(rs, cliParseConsole(t, strings.Join([]string{f[0], f[1], f[3], f[4]}, "\t"))...)
		deliveries = append(deliveries, d)
	}
	return rs, deliveries
}

// startShareMember starts a console share consumer of cliShareGroup in
// the background; it runs until stopped (cliMember.stop).
func (e *cliEnv) startShareMember(t *testing.T, name string) *cliMember {
	t.Helper()
	return e.startBackground(t, name, e.cls.shareConsumer, "--bootstrap-server", e.p.Addr, "--topic", cliShareTopic,
		"--group", cliShareGroup, "--formatter-property", "print.partition=true",
		"--formatter-property", "print.offset=true", "--formatter-property", "print.key=true")
}

// describeShareGroup is franz-go's ShareGroupDescribe of cliShareGroup.
func (e *cliEnv) describeShareGroup(t *testing.T) kadm.DescribedShareGroup {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	described, err := e.adm.DescribeShareGroups(ctx, cliShareGroup)
	if err != nil {
		t.Fatal(err)
	}
	return described[cliShareGroup]
}

// shareGroupsOut runs kafka-share-groups where it must exit without
// running into a problem of its own, and returns stdout and stderr.
func (e *cliEnv) shareGroupsOut(t *testing.T, args ...string) (string, string) {
	t.Helper()
	r := e.try(t, "", e.cls.shareGroups, append([]string{"--bootstrap-server", e.p.Addr}, args...)...)
	t.Logf("kafka-share-groups %s: err %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	return r.stdout, r.stderr
}

// shareState is the one row of kafka-share-groups --describe --state:
// GROUP, COORDINATOR (its address), (ID), STATE, #MEMBERS.
func (e *cliEnv) shareState(t *testing.T) map[string]string {
	t.Helper()
	rows := cliTable(t, e.admin(t, e.cls.shareGroups, "--describe", "--group", cliShareGroup, "--state"))
	if len(rows) != 1 {
		t.Fatalf("--describe --state printed %d rows", len(rows))
	}
	return rows[0]
}

// checkShareOffsets checks kafka-share-groups --describe --offsets
// --verbose: a row for each partition of cliShareTopic with the start
// offset and lag wanted, and (unless epoch is "") the leader epoch. A
// wrong leader epoch is reported without stopping the test.
func (e *cliEnv) checkShareOffsets(t *testing.T, what string, start, lag map[int32]int64, epoch string) {
	t.Helper()
	rows := cliTable(t, e.admin(t, e.cls.shareGroups, "--describe", "--group", cliShareGroup, "--offsets", "--verbose"))
	if len(rows) != len(start) {
		t.Fatalf("%s: %d rows for %d partitions: %v", what, len(rows), len(start), rows)
	}
	for _, r := range rows {
		p, err := strconv.Atoi(r["PARTITION"])
		if err != nil {
			t.Fatalf("%s: row %v", what, r)
		}
		want := map[string]string{
			"GROUP": cliShareGroup, "TOPIC": cliShareTopic,
			"START-OFFSET": strconv.FormatInt(start[int32(p)], 10), "LAG": strconv.FormatInt(lag[int32(p)], 10),
		}
		for col, v := range want {
			if r[col] != v {
				t.Fatalf("%s: partition %d: %s %q, want %q (rows %v)", what, p, col, r[col], v, rows)
			}
		}
		if epoch != "" && r["LEADER-EPOCH"] != epoch {
			t.Errorf("%s: partition %d: LEADER-EPOCH %q, want %q: Kafka's share coordinator keeps the epoch of the partition leader "+
				"that last read or wrote the state, which DescribeShareGroupOffsets returns", what, p, r["LEADER-EPOCH"], epoch)
		}
	}
}

// testShareGroups: kafka-configs sets a share group's
// share.auto.offset.reset=earliest; kafka-console-share-consumer reads the
// records kafka-console-producer wrote before the group existed, each
// once, at its first delivery; kafka-share-groups lists the group (with
// its state), describes its offsets (start offset and lag, as franz-go's
// end offsets say), members (as franz-go's ShareGroupDescribe sees them)
// and state; refuses to reset its offsets, delete its offsets or delete it
// while two console share consumers are members, which share new records
// between them, each once; after they leave it resets the offsets of the
// empty group to the earliest (a dry run first), after which a console
// share consumer reads everything again; it deletes the group's offsets
// and then the group.
func (e *cliEnv) testShareGroups(t *testing.T) {
	e.createTopic(t, cliShareTopic, 3)
	e.produceConsole(t, cliShareTopic, cliInput("share", 60))
	stored := e.cliStored(t, cliShareTopic)
	ends := e.endOffsetsOf(t, cliShareTopic)
	zero := map[int32]int64{0: 0, 1: 0, 2: 0}

	out := e.admin(t, e.cls.configs, "--entity-type", "groups", "--entity-name", cliShareGroup,
		"--alter", "--add-config", "share.auto.offset.reset=earliest")
	if strings.TrimSpace(out) != "Completed updating config for group "+cliShareGroup+"." {
		t.Fatalf("kafka-configs --alter of the share group said %q", out)
	}
	got, deliveries := e.consumeShare(t, len(stored))
	sameCLIRecords(t, "read by kafka-console-share-consumer", got, stored)
	for i, d := range deliveries {
		if d != 1 {
			t.Fatalf("record %v printed with Delivery:%d, want 1", got[i], d)
		}
	}

	if l := cliLines(e.admin(t, e.cls.shareGroups, "--list")); !slices.Contains(l, cliShareGroup) {
		t.Errorf("--list: %v", l)
	}
	listed := map[string]string{}
	for _, r := range cliTable(t, e.admin(t, e.cls.shareGroups, "--list", "--state")) {
		listed[r["GROUP"]] = r["STATE"]
	}
	if listed[cliShareGroup] != "Empty" {
		t.Errorf("--list --state: %v", listed)
	}
	plain := cliTable(t, e.admin(t, e.cls.shareGroups, "--describe", "--group", cliShareGroup))
	if len(plain) != 3 {
		t.Fatalf("--describe printed %d rows: %v", len(plain), plain)
	}
	for _, r := range plain {
		p, _ := strconv.Atoi(r["PARTITION"])
		if r["START-OFFSET"] != strconv.FormatInt(ends[int32(p)], 10) || r["LAG"] != "0" || r["LEADER-EPOCH"] != "" {
			t.Errorf("--describe: row %v, want START-OFFSET %d, LAG 0 and no LEADER-EPOCH column", r, ends[int32(p)])
		}
	}
	e.checkShareOffsets(t, "--describe --offsets --verbose after reading every record", ends, zero, "0")
	if s := e.shareState(t); s["STATE"] != "Empty" || s["#MEMBERS"] != "0" {
		t.Errorf("--state of the idle group: %v", s)
	}

	// Two members.
	a := e.startShareMember(t, "a")
	b := e.startShareMember(t, "b")
	var d kadm.DescribedShareGroup
	waitFor(t, "two members to own partitions, together all 3", 90*time.Second, func() bool {
		d = e.describeShareGroup(t)
		if d.Err != nil || d.GroupState != "Stable" || len(d.Members) != 2 {
			return false
		}
		all := map[int32]bool{}
		for _, m := range d.Members {
			if len(m.Assignment[cliShareTopic]) == 0 || m.MemberEpoch != d.AssignmentEpoch {
				return false
			}
			for p := range m.Assignment[cliShareTopic] {
				all[p] = true
			}
		}
		return len(all) == 3
	})
	members := map[string]map[string]string{}
	for _, r := range cliTable(t, e.admin(t, e.cls.shareGroups, "--describe", "--group", cliShareGroup, "--members", "--verbose")) {
		members[r["CONSUMER-ID"]] = r
	}
	if len(members) != 2 {
		t.Errorf("--members --verbose lists %d members: %v", len(members), members)
	}
	for _, m := range d.Members {
		var ps []int
		for p := range m.Assignment[cliShareTopic] {
			ps = append(ps, int(p))
		}
		sort.Ints(ps)
		assigned := make([]string, len(ps))
		for i, p := range ps {
			assigned[i] = strconv.Itoa(p)
		}
		want := map[string]string{
			"GROUP": cliShareGroup, "HOST": "/127.0.0.1", "CLIENT-ID": "console-share-consumer",
			"#PARTITIONS": strconv.Itoa(len(ps)), "MEMBER-EPOCH": strconv.Itoa(int(m.MemberEpoch)),
			"ASSIGNMENT": cliShareTopic + ":" + strings.Join(assigned, ","),
		}
		r := members[m.MemberID]
		for col, v := range want {
			if r[col] != v {
				t.Errorf("--members --verbose: member %s: %s %q, want %q (rows %v)", m.MemberID, col, r[col], v, members)
			}
		}
	}
	if s := e.shareState(t); s["STATE"] != "Stable" || s["#MEMBERS"] != "2" || s["COORDINATOR"] != e.p.Addr || s["(ID)"] != "(1)" {
		t.Errorf("--state with two members: %v", s)
	}

	stdout, stderr := e.shareGroupsOut(t, "--reset-offsets", "--group", cliShareGroup, "--topic", cliShareTopic, "--to-earliest", "--execute")
	if !strings.Contains(stderr, "Share group '"+cliShareGroup+"' is not empty.") || strings.Contains(stdout, "NEW-OFFSET") {
		t.Errorf("--reset-offsets with members: stdout %q, stderr %q", stdout, stderr)
	}
	stdout, _ = e.shareGroupsOut(t, "--delete", "--group", cliShareGroup)
	if !strings.Contains(stdout, "* Group '"+cliShareGroup+"' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: Share group '"+cliShareGroup+"' is not EMPTY.") {
		t.Errorf("--delete with members: %q", stdout)
	}
	// The refusal comes from the broker (DeleteShareGroupOffsets answers
	// NON_EMPTY_GROUP); Kafka's message for it is Errors.NON_EMPTY_GROUP's.
	stdout, _ = e.shareGroupsOut(t, "--delete-offsets", "--group", cliShareGroup, "--topic", cliShareTopic)
	if want := []string{"Error: The group is not empty.", "TOPIC STATUS", cliShareTopic + " Error: The group is not empty."}; !slices.Equal(cliFields(stdout), want) {
		t.Errorf("--delete-offsets with members printed %q, want the lines %q (the message is the ErrorMessage of the "+
			"DeleteShareGroupOffsets response; Kafka's is Errors.NON_EMPTY_GROUP's own, without the error's name)", cliFields(stdout), want)
	}
	e.checkShareOffsets(t, "after the refused reset and deletes", ends, zero, "")

	// 30 new records reach the two members, once.
	e.produceConsole(t, cliShareTopic, cliInput("more", 30))
	waitFor(t, "the members to read the 30 new records", time.Minute, func() bool {
		return len(a.records(t))+len(b.records(t)) >= 30
	})
	fromA, fromB := a.stop(t), b.stop(t)
	all := e.cliStored(t, cliShareTopic)
	newEnds := e.endOffsetsOf(t, cliShareTopic)
	var added []cliRecord
	for _, r := range all {
		if r.offset >= ends[r.partition] {
			added = append(added, r)
		}
	}
	sameCLIRecords(t, "read by the two members", append(fromA, fromB...), added)
	waitFor(t, "the group to be empty", 30*time.Second, func() bool {
		s := e.shareState(t)
		return s["STATE"] == "Empty" && s["#MEMBERS"] == "0"
	})
	e.checkShareOffsets(t, "after both members left", newEnds, zero, "")

	// The empty group's offsets are reset (a dry run changes nothing); a
	// console share consumer reads everything again.
	resetRows := func(args ...string) map[int32]int64 {
		t.Helper()
		rows := cliTable(t, e.admin(t, e.cls.shareGroups, append([]string{"--reset-offsets", "--group", cliShareGroup, "--topic", cliShareTopic}, args...)...))
		got := map[int32]int64{}
		for _, r := range rows {
			p, err1 := strconv.Atoi(r["PARTITION"])
			o, err2 := strconv.ParseInt(r["NEW-OFFSET"], 10, 64)
			if err1 != nil || err2 != nil || r["GROUP"] != cliShareGroup || r["TOPIC"] != cliShareTopic {
				t.Fatalf("reset row %v", r)
			}
			got[int32(p)] = o
		}
		return got
	}
	cliSameOffsets(t, "--reset-offsets --to-earliest --dry-run", resetRows("--to-earliest", "--dry-run"), zero)
	e.checkShareOffsets(t, "after the dry run", newEnds, zero, "")
	cliSameOffsets(t, "--reset-offsets --to-earliest --execute", resetRows("--to-earliest", "--execute"), zero)
	// A new start offset is new state, of no leader yet: no leader epoch.
	e.checkShareOffsets(t, "after --reset-offsets --to-earliest", zero, newEnds, "-")
	got, deliveries = e.consumeShare(t, len(all))
	sameCLIRecords(t, "read again after the reset", got, all)
	for i, d := range deliveries {
		if d != 1 {
			t.Fatalf("after the reset, record %v printed with Delivery:%d, want 1", got[i], d)
		}
	}
	e.checkShareOffsets(t, "after reading everything again", newEnds, zero, "")

	out = e.admin(t, e.cls.shareGroups, "--delete-offsets", "--group", cliShareGroup, "--topic", cliShareTopic)
	if want := []string{"TOPIC STATUS", cliShareTopic + " Successful"}; !slices.Equal(cliFields(out), want) {
		t.Errorf("--delete-offsets printed %q, want the lines %q", cliFields(out), want)
	}
	out = e.admin(t, e.cls.shareGroups, "--describe", "--group", cliShareGroup)
	if strings.TrimSpace(out) != "Share group '"+cliShareGroup+"' has no offset information." {
		t.Errorf("--describe after --delete-offsets: %q", out)
	}

	out = e.admin(t, e.cls.shareGroups, "--delete", "--group", cliShareGroup)
	if strings.TrimSpace(out) != "Deletion of requested share groups ('"+cliShareGroup+"') was successful." {
		t.Errorf("--delete of the empty group said %q", out)
	}
	if l := cliLines(e.admin(t, e.cls.shareGroups, "--list")); slices.Contains(l, cliShareGroup) {
		t.Errorf("--list after the delete: %v", l)
	}
	stdout, _ = e.shareGroupsOut(t, "--describe", "--group", cliShareGroup)
	if !strings.Contains(stdout, "Error: Executing share group command failed due to org.apache.kafka.common.errors.GroupIdNotFoundException: Group "+cliShareGroup+" not found.") {
		t.Errorf("--describe of the deleted group: %q", stdout)
	}
	if d := e.describeShareGroup(t); !errors.Is(d.Err, kerr.GroupIDNotFound) {
		t.Errorf("franz-go describes the deleted group: state %q, error %v", d.GroupState, d.Err)
	}
}

// cliFields is out's non-empty lines with their runs of spaces made one.
func cliFields(out string) []string {
	var ls []string
	for _, l := range cliLines(out) {
		ls = append(ls, strings.Join(strings.Fields(l), " "))
	}
	return ls
}
