package compat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Streams groups (KIP-1071) through Kafka's tools: kafka-streams-groups
// (StreamsGroupCommand) against the group of a Kafka Streams application
// with group.protocol=streams, compat/java's StreamsGroupApp (a word count
// through a repartition topic into a state store, StreamsWordCount.java,
// run from the compat/java build of the tools' Kafka version), with
// franz-go's StreamsGroupDescribe, OffsetFetch and ListOffsets as the
// reference. It has a broker of its own, which serves streams groups.

const (
	cliStreamsIn  = "cli-streams-in"
	cliStreamsOut = "cli-streams-out"
	// cliStreamsApp is the application id, so the group; short enough
	// for the tool's 15-character GROUP column.
	cliStreamsApp = "cli-streams"
)

// cliStreamsTasks is every task of the word count over 3 input partitions.
var cliStreamsTasks = []string{"0_0", "0_1", "0_2", "1_0", "1_1", "1_2"}

// streamsApp is one running StreamsGroupApp.
type streamsApp struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error

	mu    sync.Mutex
	lines []string // stdout, line by line
	err   strings.Builder
}

// startStreamsApp starts an instance of the word count (application
// cliStreamsApp) against the broker at addr; it runs until stopped.
func startStreamsApp(t *testing.T, version, addr, name string) *streamsApp {
	t.Helper()
	dir := filepath.Join("java", "target", "kafka-"+version)
	requireFile(t, filepath.Join(dir, "classes", "gregor", "compat", "StreamsGroupApp.class"))
	requireFresh(t, filepath.Join(dir, ".built"), filepath.Join("java", "src"))
	classpath := filepath.Join(dir, "classes") + string(os.PathListSeparator) + filepath.Join(dir, "dependency", "*")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	a := &streamsApp{name: name, done: make(chan error, 1)}
	a.cmd = exec.CommandContext(ctx, "java", "-Xmx256M", "-XX:+UseSerialGC", "-cp", classpath, "gregor.compat.StreamsGroupApp",
		addr, cliStreamsApp, cliStreamsIn, cliStreamsOut)
	var err error
	if a.stdin, err = a.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := a.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.cmd.Stderr = writerFunc(func(b []byte) (int, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.err.Write(b)
	})
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			a.mu.Lock()
			a.lines = append(a.lines, sc.Text())
			a.mu.Unlock()
		}
		a.done <- a.cmd.Wait()
	}()
	t.Cleanup(func() {
		a.stdin.Close()
		select {
		case err := <-a.done:
			a.done <- err
		case <-time.After(90 * time.Second):
		}
		cancel()
		if t.Failed() {
			t.Logf("streams app %s printed %q; stderr:\n%s", a.name, a.output(), lastLines(a.stderr(), 60))
		}
	})
	return a
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func (a *streamsApp) output() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.lines)
}

func (a *streamsApp) stderr() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err.String()
}

// tasks is the active task set the instance last printed (TASKS line),
// sorted, and whether it is RUNNING.
func (a *streamsApp) tasks() ([]string, bool) {
	var tasks []string
	running := false
	for _, l := range a.output() {
		if s, ok := strings.CutPrefix(l, "TASKS"); ok {
			tasks = strings.Fields(s)
		} else if s, ok := strings.CutPrefix(l, "STATE "); ok {
			running = s == "RUNNING"
		}
	}
	sort.Strings(tasks)
	return tasks, running
}

// stop ends the instance's input, on which it closes, leaving the group,
// and exits; it must exit 0 having printed CLOSED.
func (a *streamsApp) stop(t *testing.T) {
	t.Helper()
	a.stdin.Close()
	select {
	case err := <-a.done:
		a.done <- err
		if err != nil {
			t.Fatalf("streams app %s: %v\n%s", a.name, err, lastLines(a.stderr(), 60))
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("streams app %s did not close within 90 s: %q", a.name, a.output())
	}
	if out := a.output(); !slices.Contains(out, "CLOSED") {
		t.Fatalf("streams app %s ended without CLOSED: %q", a.name, out)
	}
}

// cliStreamsTable parses a kafka-streams-groups table by the columns of its
// header line (the line starting with GROUP): a value is what lies under
// its column name, up to the next column's start, the last column taking
// the rest of the line. The tool pads its columns, and leaves a column
// without a value blank (ASSIGNOR), which splitting on spaces would not
// see. "COORDINATOR (ID)" is one column.
func cliStreamsTable(t *testing.T, out string) []map[string]string {
	t.Helper()
	type column struct {
		name  string
		start int
	}
	var cols []column
	var rows []map[string]string
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if cols == nil {
			if !strings.HasPrefix(l, "GROUP ") {
				continue
			}
			for _, m := range regexp.MustCompile(`\S+`).FindAllStringIndex(l, -1) {
				name := l[m[0]:m[1]]
				if strings.HasPrefix(name, "(") && len(cols) > 0 {
					cols[len(cols)-1].name += " " + name
					continue
				}
				cols = append(cols, column{name, m[0]})
			}
			continue
		}
		row := map[string]string{}
		for i, c := range cols {
			end := len(l)
			if i+1 < len(cols) {
				end = min(cols[i+1].start, len(l))
			}
			if c.start < end {
				row[c.name] = strings.TrimSpace(l[c.start:end])
			} else {
				row[c.name] = ""
			}
		}
		rows = append(rows, row)
	}
	if cols == nil {
		t.Fatalf("no GROUP table in:\n%s", out)
	}
	return rows
}

// cliStreamsAssignments parses the ASSIGNMENTS column of
// kafka-streams-groups --describe --members ("ACTIVE: 0:[0,1]; 1:[2];
// TARGET-ACTIVE: ...") into tasks ("0_0", sorted) by section name.
func cliStreamsAssignments(t *testing.T, s string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	section := ""
	entry := regexp.MustCompile(`^(\S+):\[([0-9,]*)\];$`)
	for _, f := range strings.Fields(s) {
		if name, ok := strings.CutSuffix(f, ":"); ok && !strings.Contains(f, "[") {
			section = name
			out[section] = []string{}
			continue
		}
		m := entry.FindStringSubmatch(f)
		if m == nil || section == "" {
			t.Fatalf("unexpected ASSIGNMENTS %q (at %q)", s, f)
		}
		for _, p := range strings.Split(m[2], ",") {
			if p != "" {
				out[section] = append(out[section], m[1]+"_"+p)
			}
		}
	}
	for _, ts := range out {
		sort.Strings(ts)
	}
	return out
}

// describedTasks lists an assignment's tasks as "subtopology_partition", sorted.
func describedTasks(ids []kmsg.TaskIDs) []string {
	out := []string{}
	for _, id := range ids {
		for _, p := range id.Partitions {
			out = append(out, fmt.Sprintf("%s_%d", id.SubtopologyID, p))
		}
	}
	sort.Strings(out)
	return out
}

// testStreamsGroups: on a broker of its own that serves streams groups,
// two instances of a Kafka Streams word count (group.protocol=streams)
// share the tasks of its two subtopologies, the broker having created the
// repartition and changelog topics. kafka-streams-groups lists the group
// (also by state); describes its offsets (the committed offsets of the
// input and repartition topics, as franz-go fetches them, at the end of
// each partition, lag 0), its members (the members of franz-go's
// StreamsGroupDescribe with their process and client ids, epochs, and as
// tasks what each instance says it runs, together every task once) and its
// state (coordinator, the sticky assignor, Stable, epochs, 2 members); it
// says no topology description is stored (--topology; Kafka stores one
// only with a plugin); it refuses to delete the group while it has
// members. When one instance
// closes, the other runs every task, which the tool shows; when both have
// closed the group is Empty with no members, and --delete deletes it: no
// longer listed, described as not found (also by franz-go), its offsets
// gone; the internal topics stay, as with Kafka.
func (e *cliEnv) testStreamsGroups(t *testing.T) {
	dir := t.TempDir()
	p := harness.Start(t, dir, streamsBroker...)
	s := *e
	s.p, s.adm = p, newAdmin(t, p.Addr)
	e = &s
	defer logBrokerOnFailure(t, p)
	streams := func(args ...string) string {
		t.Helper()
		return e.admin(t, e.cls.streamsGroups, args...)
	}

	e.createTopic(t, cliStreamsIn, 3)
	e.createTopic(t, cliStreamsOut, 3)
	var input strings.Builder
	for i := 0; i < 90; i++ {
		fmt.Fprintf(&input, "%d\t%s %s %s\n", i, []string{"alpha", "bravo", "charlie"}[i%3], []string{"delta", "echo"}[i%2], "foxtrot")
	}
	e.produceConsole(t, cliStreamsIn, input.String())

	a := startStreamsApp(t, e.version, p.Addr, "a")
	b := startStreamsApp(t, e.version, p.Addr, "b")
	waitFor(t, "the two instances to run every task between them, each some", 2*time.Minute, func() bool {
		ta, ra := a.tasks()
		tb, rb := b.tasks()
		return ra && rb && len(ta) > 0 && len(tb) > 0 && slices.Equal(slices.Sorted(slices.Values(append(slices.Clone(ta), tb...))), cliStreamsTasks)
	})
	repartition := cliStreamsApp + "-counts-repartition"
	inEnds, repEnds := map[int32]int64{}, map[int32]int64{}
	waitFor(t, "the group to commit the end of its input and repartition topics", time.Minute, func() bool {
		inEnds, repEnds = e.endOffsetsOf(t, cliStreamsIn), e.endOffsetsOf(t, repartition)
		return fmt.Sprint(e.committedIn(t, cliStreamsApp, cliStreamsIn)) == fmt.Sprint(inEnds) &&
			fmt.Sprint(e.committedIn(t, cliStreamsApp, repartition)) == fmt.Sprint(repEnds)
	})
	if len(inEnds) != 3 || len(repEnds) != 3 {
		t.Fatalf("end offsets: %s %v, %s %v; want 3 partitions each", cliStreamsIn, inEnds, repartition, repEnds)
	}
	d := describeStreamsGroup(t, p.Addr, cliStreamsApp)
	waitFor(t, "the group to be Stable with 2 members at the assignment epoch", time.Minute, func() bool {
		d = describeStreamsGroup(t, p.Addr, cliStreamsApp)
		if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 2 {
			return false
		}
		for _, m := range d.Members {
			if m.MemberEpoch != d.AssignmentEpoch {
				return false
			}
		}
		return true
	})

	// --list, also by state.
	if l := cliLines(streams("--list")); !slices.Equal(l, []string{cliStreamsApp}) {
		t.Errorf("--list printed %q, want %q", l, cliStreamsApp)
	}
	listed := cliStreamsTable(t, streams("--list", "--state"))
	if len(listed) != 1 || listed[0]["GROUP"] != cliStreamsApp || listed[0]["STATE"] != "Stable" {
		t.Errorf("--list --state: %v", listed)
	}
	if l := cliStreamsTable(t, streams("--list", "--state", "Empty")); len(l) != 0 {
		t.Errorf("--list --state Empty lists %v", l)
	}

	// --describe (offsets, the default) and --describe --offsets --verbose.
	ends := map[string]map[int32]int64{cliStreamsIn: inEnds, repartition: repEnds}
	checkOffsetRows := func(what string, rows []map[string]string, verbose bool) {
		t.Helper()
		seen := map[string]bool{}
		for _, r := range rows {
			part, err := strconv.Atoi(r["PARTITION"])
			topicEnds, ok := ends[r["TOPIC"]]
			if err != nil || !ok || r["GROUP"] != cliStreamsApp {
				t.Errorf("%s: unexpected row %v", what, r)
				continue
			}
			seen[fmt.Sprintf("%s-%d", r["TOPIC"], part)] = true
			want := map[string]string{"OFFSET-LAG": "0"}
			if verbose {
				end := strconv.FormatInt(topicEnds[int32(part)], 10)
				want["CURRENT-OFFSET"], want["LOG-END-OFFSET"], want["LEADER-EPOCH"] = end, end, "0"
			}
			for col, v := range want {
				if r[col] != v {
					t.Errorf("%s: %s-%d: %s %q, want %q (row %v)", what, r["TOPIC"], part, col, r[col], v, r)
				}
			}
		}
		if len(seen) != 6 || len(rows) != 6 {
			t.Errorf("%s: %d rows for %v, want one for each of the 3 partitions of %s and of %s", what, len(rows), seen, cliStreamsIn, repartition)
		}
	}
	checkOffsetRows("--describe", cliStreamsTable(t, streams("--describe", "--group", cliStreamsApp)), false)
	checkOffsetRows("--describe --offsets --verbose", cliStreamsTable(t, streams("--describe", "--group", cliStreamsApp, "--offsets", "--verbose")), true)

	// --describe --members, plain and verbose: the members franz-go
	// describes, with the tasks each instance runs.
	instanceTasks := map[string][]string{}
	for _, app := range []*streamsApp{a, b} {
		ts, _ := app.tasks()
		for _, task := range ts {
			instanceTasks[task] = append(instanceTasks[task], app.name)
		}
	}
	checkMembers := func(what string, rows []map[string]string, verbose bool) {
		t.Helper()
		if len(rows) != len(d.Members) {
			t.Fatalf("%s: %d rows, want the %d members %+v", what, len(rows), len(d.Members), d.Members)
		}
		byID := map[string]map[string]string{}
		for _, r := range rows {
			byID[r["MEMBER"]] = r
		}
		var all []string
		for _, m := range d.Members {
			r, ok := byID[m.MemberID]
			if !ok {
				t.Errorf("%s: no row of member %s (rows %v)", what, m.MemberID, rows)
				continue
			}
			want := map[string]string{"GROUP": cliStreamsApp, "PROCESS": m.ProcessID, "CLIENT-ID": m.ClientID}
			if verbose {
				want["MEMBER-EPOCH"] = strconv.Itoa(int(m.MemberEpoch))
				want["TARGET-ASSIGNMENT-EPOCH"] = strconv.Itoa(int(d.AssignmentEpoch))
				want["TOPOLOGY-EPOCH"] = "0"
				want["MEMBER-PROTOCOL"] = "streams"
			}
			for col, v := range want {
				if r[col] != v {
					t.Errorf("%s: member %s: %s %q, want %q (row %v)", what, m.MemberID, col, r[col], v, r)
				}
			}
			got := cliStreamsAssignments(t, r["ASSIGNMENTS"])
			active := describedTasks(m.Assignment.ActiveTasks)
			wantSections := map[string][]string{"ACTIVE": active}
			if verbose {
				wantSections["TARGET-ACTIVE"] = describedTasks(m.TargetAssignment.ActiveTasks)
			}
			if fmt.Sprint(got) != fmt.Sprint(wantSections) {
				t.Errorf("%s: member %s: ASSIGNMENTS %q, want %v as StreamsGroupDescribe has it", what, m.MemberID, r["ASSIGNMENTS"], wantSections)
			}
			// The member's tasks are one instance's.
			owners := map[string]bool{}
			for _, task := range got["ACTIVE"] {
				for _, o := range instanceTasks[task] {
					owners[o] = true
				}
			}
			if len(owners) != 1 {
				t.Errorf("%s: member %s has tasks %v, run by the instances %v, want one instance's (instances run %v)", what, m.MemberID, got["ACTIVE"], owners, instanceTasks)
			}
			all = append(all, got["ACTIVE"]...)
		}
		if sort.Strings(all); !slices.Equal(all, cliStreamsTasks) {
			t.Errorf("%s: the members have the tasks %v, want each of %v once", what, all, cliStreamsTasks)
		}
	}
	checkMembers("--describe --members", cliStreamsTable(t, streams("--describe", "--group", cliStreamsApp, "--members")), false)
	checkMembers("--describe --members --verbose", cliStreamsTable(t, streams("--describe", "--group", cliStreamsApp, "--members", "--verbose")), true)

	// --describe --state, plain and verbose. A wrong ASSIGNOR is reported
	// once.
	assignorReported := false
	checkState := func(what, state string, members int, verbose bool) {
		t.Helper()
		args := []string{"--describe", "--group", cliStreamsApp, "--state"}
		if verbose {
			args = append(args, "--verbose")
		}
		out := streams(args...)
		rows := cliStreamsTable(t, out)
		if len(rows) != 1 {
			t.Fatalf("%s: %d rows:\n%s", what, len(rows), out)
		}
		want := map[string]string{
			"GROUP": cliStreamsApp, "COORDINATOR (ID)": p.Addr + " (1)", "STATE": state, "#MEMBERS": strconv.Itoa(members),
		}
		if verbose {
			d := describeStreamsGroup(t, p.Addr, cliStreamsApp)
			want["GROUP-EPOCH"] = strconv.Itoa(int(d.Epoch))
			want["TARGET-ASSIGNMENT-EPOCH"] = strconv.Itoa(int(d.AssignmentEpoch))
		}
		for col, v := range want {
			if rows[0][col] != v {
				t.Errorf("%s: %s %q, want %q (row %v)", what, col, rows[0][col], v, rows[0])
			}
		}
		if rows[0]["ASSIGNOR"] != "sticky" && !assignorReported {
			assignorReported = true
			t.Errorf("%s: ASSIGNOR %q, want \"sticky\": Kafka 4.4 answers StreamsGroupDescribe v1 with the AssignorName of the "+
				"assignor that computes the next assignment (group.streams.assignors, [sticky] by default), which the tool prints (row %v)",
				what, rows[0]["ASSIGNOR"], rows[0])
		}
		if noMembers := strings.Contains(out, "Error: Streams group '"+cliStreamsApp+"' has no active members."); noMembers != (members == 0) {
			t.Errorf("%s: %d members, and the tool says it has none: %v:\n%s", what, members, noMembers, out)
		}
	}
	checkState("--describe --state", "Stable", 2, false)
	checkState("--describe --state --verbose", "Stable", 2, true)

	// --describe --topology: Kafka without a topology description plugin
	// (KIP-1331) stores none, and says so (StreamsGroupDescribe v1's
	// NOT_STORED).
	r := e.try(t, "", e.cls.streamsGroups, "--bootstrap-server", p.Addr, "--describe", "--group", cliStreamsApp, "--topology")
	if want := "Error: No topology description is stored for streams group '" + cliStreamsApp + "'."; r.err == nil || strings.TrimSpace(r.stdout) != want {
		t.Errorf("--describe --topology: %v, printed %q, want %q and a failure (stderr %q)", r.err, r.stdout, want, r.stderr)
	}

	out := streams("--delete", "--group", cliStreamsApp)
	if want := "* Group '" + cliStreamsApp + "' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: Streams group '" +
		cliStreamsApp + "' is not EMPTY."; !strings.Contains(out, want) {
		t.Errorf("--delete with members printed %q, want %q", out, want)
	}

	// One instance closes; the other takes every task over.
	a.stop(t)
	waitFor(t, "b to run every task", 2*time.Minute, func() bool {
		tb, rb := b.tasks()
		return rb && slices.Equal(tb, cliStreamsTasks)
	})
	waitFor(t, "the group to be Stable with b alone", time.Minute, func() bool {
		d = describeStreamsGroup(t, p.Addr, cliStreamsApp)
		return d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == 1 && d.Members[0].MemberEpoch == d.AssignmentEpoch
	})
	instanceTasks = map[string][]string{}
	for _, task := range cliStreamsTasks {
		instanceTasks[task] = []string{"b"}
	}
	checkMembers("--describe --members after a closed", cliStreamsTable(t, streams("--describe", "--group", cliStreamsApp, "--members")), false)
	checkState("--describe --state after a closed", "Stable", 1, false)

	// Both closed: the group is Empty, and is deleted.
	b.stop(t)
	waitFor(t, "the group to be Empty", time.Minute, func() bool {
		d = describeStreamsGroup(t, p.Addr, cliStreamsApp)
		return d.ErrorCode == 0 && d.State == "Empty"
	})
	if len(d.Members) != 0 {
		t.Errorf("the Empty group has members %+v", d.Members)
	}
	listed = cliStreamsTable(t, streams("--list", "--state"))
	if len(listed) != 1 || listed[0]["GROUP"] != cliStreamsApp || listed[0]["STATE"] != "Empty" {
		t.Errorf("--list --state of the empty group: %v", listed)
	}
	checkState("--describe --state of the empty group", "Empty", 0, false)
	out = streams("--delete", "--group", cliStreamsApp)
	if strings.TrimSpace(out) != "Deletion of requested streams groups ('"+cliStreamsApp+"') was successful." {
		t.Errorf("--delete of the empty group said %q", out)
	}
	if l := cliLines(streams("--list")); len(l) != 0 {
		t.Errorf("--list after the delete: %q", l)
	}
	r = e.try(t, "", e.cls.streamsGroups, "--bootstrap-server", p.Addr, "--describe", "--group", cliStreamsApp)
	if want := "Error: Executing streams group command failed due to org.apache.kafka.common.errors.GroupIdNotFoundException: Group " +
		cliStreamsApp + " not found."; r.err == nil || !strings.Contains(r.stdout, want) {
		t.Errorf("--describe of the deleted group: %v, printed %q, want %q", r.err, r.stdout, want)
	}
	d = describeStreamsGroup(t, p.Addr, cliStreamsApp)
	if err := kerr.ErrorForCode(d.ErrorCode); err != kerr.GroupIDNotFound {
		t.Errorf("franz-go's StreamsGroupDescribe of the deleted group: state %q, error %v, want GROUP_ID_NOT_FOUND", d.State, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if offs, err := e.adm.FetchOffsets(ctx, cliStreamsApp); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		t.Errorf("OffsetFetch of the deleted group: %v", err)
	} else if err == nil && len(offs) != 0 {
		t.Errorf("the deleted group still has committed offsets %v", offs)
	}
	for _, topic := range []string{repartition, cliStreamsApp + "-counts-changelog"} {
		if ends := e.endOffsetsOf(t, topic); len(ends) != 3 {
			t.Errorf("%s after --delete: %d partitions, want the 3 it had (--delete leaves the internal topics)", topic, len(ends))
		}
	}
	e.checkStreamsRecords(t, dir)
}

// cliStreamsKey matches a decoded key of one of the group's StreamsGroup*
// records (types 17 and 19-23).
var cliStreamsKey = regexp.MustCompile(`^\{"type":"(17|19|20|21|22|23)","data":\{"groupId":"` + cliStreamsApp + `"(?:,"memberId":"[^"]+")?\}\}$`)

// streamsValueChecks are what a decoded value of each type must show.
var streamsValueChecks = map[string]*regexp.Regexp{
	"17": regexp.MustCompile(`^\{"version":"0","data":\{"epoch":[1-9]\d*,"metadataHash":`),
	"19": regexp.MustCompile(`"clientId":"[^"]+","clientHost":"[^"]+","rebalanceTimeoutMs":\d+,"topologyEpoch":0,"processId":"[^"]+"`),
	"20": regexp.MustCompile(`^\{"version":"0","data":\{"assignmentEpoch":[1-9]\d*\}\}$`),
	"21": regexp.MustCompile(`"activeTasks":\[\{"subtopologyId":"[01]","partitions":\[\d`),
	"22": regexp.MustCompile(`"memberEpoch":[1-9]\d*,"previousMemberEpoch":\d+,"state":[123],"activeTasks":\[\{"subtopologyId"`),
	"23": regexp.MustCompile(`"subtopologies":\[\{"subtopologyId":"0","sourceTopics":\["` + cliStreamsIn + `"\]`),
}

// checkStreamsRecords decodes the streams broker's __consumer_offsets
// with Kafka's DumpLogSegments --offsets-decoder: the group's records are
// Kafka's StreamsGroup* records, every type decoded with its values, and
// after --delete the last value of each key is a tombstone.
func (e *cliEnv) checkStreamsRecords(t *testing.T, dir string) {
	t.Helper()
	last, seen := map[string]string{}, map[string]bool{}
	for seg, batches := range e.dumpLogs(t, offsetsSegments(t, dir), "--offsets-decoder") {
		cliCheckBatches(t, seg, batches, true)
		for _, b := range batches {
			for _, r := range b.records {
				if m := cliStreamsKey.FindStringSubmatch(r.key); m != nil {
					last[r.key] = r.payload
					seen[m[1]] = seen[m[1]] || streamsValueChecks[m[1]].MatchString(r.payload)
				}
			}
		}
	}
	for _, typ := range []string{"17", "19", "20", "21", "22", "23"} {
		if !seen[typ] {
			t.Errorf("__consumer_offsets: no decodable StreamsGroup record of type %s for %s (%d keys)", typ, cliStreamsApp, len(last))
		}
	}
	for k, v := range last {
		if v != "<DELETE>" {
			t.Errorf("after --delete of %s, the last value of %s is %s", cliStreamsApp, k, v)
		}
	}
}
