package group

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeAssignmentsDuringRebalance checks what DescribeGroups shows of
// members outside the Stable state, as Kafka 4.1's ClassicGroupMember
// describeNoMetadata does: no protocol metadata, but the member's current
// assignment, which a rebalance started from Stable keeps and one that
// interrupts CompletingRebalance empties.
func TestDescribeAssignmentsDuringRebalance(t *testing.T) {
	s := &script{
		t: t, file: "describe", clock: newManualClock(), path: t.TempDir(),
		ids: map[string]string{}, names: map[string]string{}, prev: map[string]string{},
		joins: map[string][]*kmsg.JoinGroupResponse{}, syncs: map[string][]*kmsg.SyncGroupResponse{},
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	s.cfg = DefaultConfig()
	s.cfg.NumPartitions = 1
	s.cfg.InitialRebalanceDelay = 0
	s.start()
	defer s.ld.dir.Close()
	defer s.c.Close()
	run := func(line string) {
		s.line++
		s.run(strings.Fields(line))
	}
	describe := func(wantState string) map[string][2]string {
		t.Helper()
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"g"}
		d := s.c.DescribeGroups(req).Groups[0]
		if d.State != wantState {
			t.Fatalf("state %s, want %s", d.State, wantState)
		}
		out := map[string][2]string{}
		for _, m := range d.Members {
			out[s.names[m.MemberID]] = [2]string{string(m.ProtocolMetadata), string(m.MemberAssignment)}
		}
		return out
	}

	run("join a version=3 -> pending")
	run("advance 0s")
	run("expect join a NONE gen=1 leader=a members=1")
	run("sync a generation=1 assign=a:A1 -> NONE assignment=A1")
	if got := describe("Stable"); got["a"] != [2]string{"a", "A1"} {
		t.Fatalf("Stable: a is %q, want metadata and assignment", got["a"])
	}

	// b joins: the rebalance starts from Stable, a keeps its assignment.
	run("join b version=3 -> pending")
	if got := describe("PreparingRebalance"); got["a"] != [2]string{"", "A1"} || got["b"] != [2]string{"", ""} {
		t.Fatalf("PreparingRebalance: %q, want a's assignment only", got)
	}
	run("join a version=3 -> NONE gen=2 leader=a members=2")
	run("expect join b NONE gen=2 leader=a members=0")
	if got := describe("CompletingRebalance"); got["a"] != [2]string{"", "A1"} {
		t.Fatalf("CompletingRebalance: %q, want a's assignment", got)
	}

	// c joins before the leader's SyncGroup: the assignments are reset.
	run("join c version=3 -> pending")
	if got := describe("PreparingRebalance"); got["a"] != [2]string{"", ""} {
		t.Fatalf("rebalance from CompletingRebalance: %q, want the assignments emptied", got)
	}
}

// TestListGroupsWhileLoading checks that ListGroups answers
// COORDINATOR_LOAD_IN_PROGRESS alone while a partition loads, as Kafka's
// GroupCoordinatorService.listGroups fails the whole read then, listing
// no group.
func TestListGroupsWhileLoading(t *testing.T) {
	s := &script{
		t: t, file: "list", clock: newManualClock(), path: t.TempDir(),
		ids: map[string]string{}, names: map[string]string{}, prev: map[string]string{},
		joins: map[string][]*kmsg.JoinGroupResponse{}, syncs: map[string][]*kmsg.SyncGroupResponse{},
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	s.cfg = DefaultConfig()
	s.cfg.NumPartitions = 2
	s.cfg.InitialRebalanceDelay = 0
	s.start()
	defer s.ld.dir.Close()
	defer s.c.Close()
	for _, line := range []string{"join a version=3 -> pending", "advance 0s", "expect join a NONE gen=1 leader=a members=1"} {
		s.line++
		s.run(strings.Fields(line))
	}
	req := kmsg.NewPtrListGroupsRequest()
	if resp := s.c.ListGroups(req); resp.ErrorCode != 0 || len(resp.Groups) != 1 {
		t.Fatalf("loaded: %+v", resp)
	}
	loaded := 1 - PartitionFor("g", 2)
	s.c.mu.Lock()
	s.c.parts[loaded] = loading
	s.c.mu.Unlock()
	if resp := s.c.ListGroups(req); resp.ErrorCode != errLoadInProgress || len(resp.Groups) != 0 {
		t.Fatalf("while the other partition loads: %+v, want COORDINATOR_LOAD_IN_PROGRESS and no group", resp)
	}
}
