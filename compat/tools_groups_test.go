package compat

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kafka-consumer-groups against the console consumer's group: list,
// describe (offsets, lag, members, state), delete, and every way of
// resetting committed offsets, each checked against franz-go's view.

// groupRows runs kafka-consumer-groups --describe for cliConsoleGroup
// with extra flags and returns its table rows.
func (e *cliEnv) groupRows(t *testing.T, extra ...string) []map[string]string {
	t.Helper()
	return cliTable(t, e.admin(t, e.cls.groups, append([]string{"--describe", "--group", cliConsoleGroup}, extra...)...))
}

// groupState is the one row of --describe --state.
func (e *cliEnv) groupState(t *testing.T) map[string]string {
	t.Helper()
	rows := e.groupRows(t, "--state")
	if len(rows) != 1 {
		t.Fatalf("--state printed %d rows", len(rows))
	}
	return rows[0]
}

// endOffsetsOf returns the log end offset of each partition of topic.
func (e *cliEnv) endOffsetsOf(t *testing.T, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := e.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	m := map[int32]int64{}
	for p, o := range ends[topic] {
		m[p] = o.Offset
	}
	return m
}

// committedOf returns the group's committed offsets on cliConsoleTopic as
// franz-go fetches them.
func (e *cliEnv) committedOf(t *testing.T) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.adm.FetchOffsets(ctx, cliConsoleGroup)
	if err != nil {
		t.Fatal(err)
	}
	m := map[int32]int64{}
	for p, o := range res[cliConsoleTopic] {
		if o.Err != nil {
			t.Fatalf("partition %d: %v", p, o.Err)
		}
		m[p] = o.At
	}
	return m
}

// cliCheckOffsetRows checks the --describe offset table: one row per
// partition with the committed and log end offsets and their difference,
// and a consumer id only when a member is expected.
func cliCheckOffsetRows(t *testing.T, rows []map[string]string, committed, ends map[int32]int64, member bool) {
	t.Helper()
	if len(rows) != len(ends) {
		t.Fatalf("%d rows for %d partitions: %v", len(rows), len(ends), rows)
	}
	for _, r := range rows {
		p, _ := strconv.Atoi(r["PARTITION"])
		want := map[string]string{
			"GROUP": cliConsoleGroup, "TOPIC": cliConsoleTopic,
			"CURRENT-OFFSET": strconv.FormatInt(committed[int32(p)], 10),
			"LOG-END-OFFSET": strconv.FormatInt(ends[int32(p)], 10),
			"LAG":            strconv.FormatInt(ends[int32(p)]-committed[int32(p)], 10),
		}
		for col, v := range want {
			if r[col] != v {
				t.Errorf("partition %d: %s %q, want %q (row %v)", p, col, r[col], v, r)
			}
		}
		if hasMember := r["CONSUMER-ID"] != "-"; hasMember != member {
			t.Errorf("partition %d: consumer id %q, member expected: %v", p, r["CONSUMER-ID"], member)
		}
	}
}

// testGroups: the group the console consumer committed in is listed and
// described with lag 0, then with the lag of 30 new records; a console
// consumer that joins shows as a member with all partitions while the
// group is Stable, cannot be deleted then, and leaves the lag at 0.
func (e *cliEnv) testGroups(t *testing.T) {
	if !slices.Contains(cliLines(e.admin(t, e.cls.groups, "--list")), cliConsoleGroup) {
		t.Fatalf("--list lacks %s", cliConsoleGroup)
	}
	ends := e.endOffsetsOf(t, cliConsoleTopic)
	cliCheckOffsetRows(t, e.groupRows(t), ends, ends, false)
	if s := e.groupState(t); s["STATE"] != "Empty" || s["#MEMBERS"] != "0" {
		t.Errorf("--state of the idle group: %v", s)
	}

	const more = 30
	e.produceConsole(t, cliConsoleTopic, cliInput("more", more))
	newEnds := e.endOffsetsOf(t, cliConsoleTopic)
	cliCheckOffsetRows(t, e.groupRows(t), ends, newEnds, false)
	lag := int64(0)
	for p := range newEnds {
		lag += newEnds[p] - ends[p]
	}
	if lag != more {
		t.Fatalf("log end offsets moved by %d, want %d", lag, more)
	}

	// A member that stays until one more record arrives.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, saveArchive := e.command(ctx, e.cls.consumer, "--bootstrap-server", e.p.Addr, "--topic", cliConsoleTopic,
		"--group", cliConsoleGroup, "--max-messages", strconv.Itoa(more+1),
		"--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
		"--formatter-property", "print.key=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() { cancel(); <-done; saveArchive() }()

	var members []map[string]string
	waitFor(t, "the console consumer to be a member with 3 partitions", time.Minute, func() bool {
		members = e.groupRows(t, "--members")
		return len(members) == 1 && members[0]["#PARTITIONS"] == "3"
	})
	if m := members[0]; m["CLIENT-ID"] != "console-consumer" || m["HOST"] != "/127.0.0.1" || !strings.HasPrefix(m["CONSUMER-ID"], "console-consumer-") {
		t.Errorf("member row %v", m)
	}
	s := e.groupState(t)
	if s["STATE"] != "Stable" || s["#MEMBERS"] != "1" || s["ASSIGNMENT-STRATEGY"] != "range" || s["COORDINATOR"] != e.p.Addr {
		t.Errorf("--state with a member: %v", s)
	}
	for _, r := range e.groupRows(t) {
		if r["CONSUMER-ID"] != members[0]["CONSUMER-ID"] {
			t.Errorf("partition %s owned by %q, want %s", r["PARTITION"], r["CONSUMER-ID"], members[0]["CONSUMER-ID"])
		}
	}
	out := e.admin(t, e.cls.groups, "--delete", "--group", cliConsoleGroup)
	if !strings.Contains(out, "GroupNotEmptyException") {
		t.Errorf("deleting a group with a member:\n%s", out)
	}

	e.produceConsole(t, cliConsoleTopic, "last-key\tlast value\n")
	select {
	case err := <-done:
		done <- err
		if err != nil {
			t.Fatalf("console consumer: %v\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("console consumer did not finish; it printed:\n%s", stdout.String())
	}
	stored := e.cliStored(t, cliConsoleTopic)
	var want []cliRecord
	for _, r := range stored {
		if r.offset >= ends[r.partition] {
			want = append(want, r)
		}
	}
	sameCLIRecords(t, "member's records", cliParseConsole(t, stdout.String()), want)
	e.console = stored

	final := e.endOffsetsOf(t, cliConsoleTopic)
	cliCheckOffsetRows(t, e.groupRows(t), final, final, false)
	if s := e.groupState(t); s["STATE"] != "Empty" || s["#MEMBERS"] != "0" {
		t.Errorf("--state after the member left: %v", s)
	}
}

// resetRows runs --reset-offsets with args and returns NEW-OFFSET by
// partition of cliConsoleTopic.
func (e *cliEnv) resetRows(t *testing.T, args ...string) map[int32]int64 {
	t.Helper()
	out := e.admin(t, e.cls.groups, append([]string{"--reset-offsets", "--group", cliConsoleGroup}, args...)...)
	got := map[int32]int64{}
	for _, r := range cliTable(t, out) {
		p, err1 := strconv.Atoi(r["PARTITION"])
		o, err2 := strconv.ParseInt(r["NEW-OFFSET"], 10, 64)
		if err1 != nil || err2 != nil || r["TOPIC"] != cliConsoleTopic || r["GROUP"] != cliConsoleGroup {
			t.Fatalf("reset row %v", r)
		}
		got[int32(p)] = o
	}
	return got
}

// cliSameOffsets compares offsets by partition.
func cliSameOffsets(t *testing.T, what string, got, want map[int32]int64) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: %v, want %v", what, got, want)
	}
}

// testResetOffsets: --reset-offsets to the earliest offset, to an offset,
// shifted, and (dry run) to the latest, each checked through franz-go;
// a console consumer then reads everything again from the reset offsets;
// --delete-offsets and --delete remove the group's offsets and the group.
func (e *cliEnv) testResetOffsets(t *testing.T) {
	ends := e.endOffsetsOf(t, cliConsoleTopic)
	zero := map[int32]int64{0: 0, 1: 0, 2: 0}
	cliSameOffsets(t, "--to-earliest", e.resetRows(t, "--topic", cliConsoleTopic, "--to-earliest", "--execute"), zero)
	cliSameOffsets(t, "committed after --to-earliest", e.committedOf(t), zero)

	cliSameOffsets(t, "--to-offset", e.resetRows(t, "--topic", cliConsoleTopic+":0", "--to-offset", "5", "--execute"), map[int32]int64{0: 5})
	cliSameOffsets(t, "--shift-by", e.resetRows(t, "--topic", cliConsoleTopic+":0", "--shift-by", "2", "--execute"), map[int32]int64{0: 7})
	shifted := map[int32]int64{0: 7, 1: 0, 2: 0}
	cliSameOffsets(t, "committed after --shift-by", e.committedOf(t), shifted)
	cliSameOffsets(t, "--to-latest --dry-run", e.resetRows(t, "--topic", cliConsoleTopic, "--to-latest", "--dry-run"), ends)
	cliSameOffsets(t, "committed after a dry run", e.committedOf(t), shifted)
	cliCheckOffsetRows(t, e.groupRows(t), shifted, ends, false)

	cliSameOffsets(t, "--all-topics --to-earliest", e.resetRows(t, "--all-topics", "--to-earliest", "--execute"), zero)
	got := e.consumeConsole(t, cliConsoleTopic, len(e.console), "--group", cliConsoleGroup)
	sameCLIRecords(t, "consumed after the reset", got, e.console)
	cliSameOffsets(t, "committed after consuming", e.committedOf(t), ends)
	cliCheckOffsetRows(t, e.groupRows(t), ends, ends, false)

	out := e.admin(t, e.cls.groups, "--delete-offsets", "--group", cliConsoleGroup, "--topic", cliConsoleTopic+":0")
	if !strings.Contains(out, "Request succeed for deleting offsets") && !strings.Contains(out, "Successful") {
		t.Errorf("--delete-offsets said:\n%s", out)
	}
	if c := e.committedOf(t); len(c) != 2 || c[1] != ends[1] || c[2] != ends[2] {
		t.Errorf("committed after deleting partition 0's offset: %v", c)
	}
	out = e.admin(t, e.cls.groups, "--delete", "--group", cliConsoleGroup)
	if strings.TrimSpace(out) != "Deletion of requested consumer groups ('"+cliConsoleGroup+"') was successful." {
		t.Errorf("--delete said %q", out)
	}
	if slices.Contains(cliLines(e.admin(t, e.cls.groups, "--list")), cliConsoleGroup) {
		t.Errorf("the deleted group is still listed")
	}
	if c := e.committedOf(t); len(c) != 0 {
		t.Errorf("the deleted group still has offsets %v", c)
	}
}
