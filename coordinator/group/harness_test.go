package group

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// manualClock is a Clock that moves only when a test advances it; due
// timers run in the advancing goroutine, in deadline order.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	c       *manualClock
	at      time.Time
	f       func()
	stopped bool
}

func newManualClock() *manualClock { return &manualClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves time forward by d, firing due timers one at a time.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var due *manualTimer
		for len(c.timers) > 0 {
			t := c.timers[0]
			if t.stopped {
				c.timers = c.timers[1:]
				continue
			}
			if !t.at.After(end) {
				due = t
				c.timers = c.timers[1:]
				if t.at.After(c.now) {
					c.now = t.at
				}
			}
			break
		}
		if due == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		due.stopped = true
		c.mu.Unlock()
		due.f()
	}
}

// logDir is a real log dir with the partitions of __consumer_offsets,
// the coordinator's Log in these tests.
type logDir struct {
	dir  *logstore.Dir
	logs []*logstore.Log
}

func openLogDir(t *testing.T, path string, partitions int32) *logDir {
	t.Helper()
	d, err := logstore.OpenDir(path, "test-cluster", 1, logstore.DefaultConfig(), logstore.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ld := &logDir{dir: d}
	for p := int32(0); p < partitions; p++ {
		tp := logstore.TopicPartition{Topic: "__consumer_offsets", Partition: p}
		l := d.Log(tp)
		if l == nil {
			if l, err = d.CreateLog(tp, [16]byte{1}, logstore.DefaultConfig()); err != nil {
				t.Fatal(err)
			}
		}
		l.SetHighWatermark(l.LogEndOffset())
		ld.logs = append(ld.logs, l)
	}
	return ld
}

func (ld *logDir) Append(p int32, batch []byte) (int64, error) {
	l := ld.logs[p]
	res, err := l.Append(batch, logstore.AppendOptions{LogAppendTime: -1, LeaderEpoch: -1})
	if err != nil {
		return 0, err
	}
	l.SetHighWatermark(l.LogEndOffset())
	return res.BaseOffset, nil
}

func (ld *logDir) Replay(p int32, fn func([]byte) error) error {
	return ld.logs[p].ReplayCommitted(fn)
}

// script runs a testdata script against a coordinator: one command per
// line, '#' starts a comment. See testdata/README for the commands.
type script struct {
	t       *testing.T
	file    string
	line    int
	clock   *manualClock
	cfg     Config
	path    string
	ld      *logDir
	c       *Coordinator
	ids     map[string]string // member name -> member id
	names   map[string]string // member id -> name
	prev    map[string]string // member name -> its previous id
	joins   map[string][]*kmsg.JoinGroupResponse
	syncs   map[string][]*kmsg.SyncGroupResponse
	respMu  sync.Mutex
	logger  *slog.Logger
	numPart int32
}

func runScript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := &script{
		t: t, file: filepath.Base(file), clock: newManualClock(), path: t.TempDir(),
		ids: map[string]string{}, names: map[string]string{}, prev: map[string]string{},
		joins: map[string][]*kmsg.JoinGroupResponse{}, syncs: map[string][]*kmsg.SyncGroupResponse{},
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	s.cfg = DefaultConfig()
	s.cfg.NumPartitions = 3
	s.cfg.OffsetsRetentionCheckInterval = 0 // the script expires offsets explicitly
	started := false
	for i, raw := range strings.Split(string(data), "\n") {
		s.line = i + 1
		line := strings.TrimSpace(raw)
		if j := strings.Index(line, "#"); j >= 0 {
			line = strings.TrimSpace(line[:j])
		}
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		if fields[0] != "config" && !started {
			s.start()
			started = true
		}
		s.run(fields)
	}
	if s.c != nil {
		s.c.Close()
		s.ld.dir.Close()
	}
}

func (s *script) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s:%d: %s", s.file, s.line, fmt.Sprintf(format, args...))
}

func (s *script) start() {
	s.ld = openLogDir(s.t, s.path, s.cfg.NumPartitions)
	s.c = New(s.cfg, s.ld, s.clock, s.logger)
	for p := int32(0); p < s.cfg.NumPartitions; p++ {
		if err := s.c.Load(p); err != nil {
			s.fatalf("load: %v", err)
		}
	}
}

// args splits "key=value" words; the words without '=' are returned in order.
func args(fields []string) (map[string]string, []string) {
	kv := map[string]string{}
	var plain []string
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		} else {
			plain = append(plain, f)
		}
	}
	return kv, plain
}

func (s *script) duration(v string) time.Duration {
	d, err := time.ParseDuration(v)
	if err != nil {
		s.fatalf("bad duration %q", v)
	}
	return d
}

func (s *script) num(v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		s.fatalf("bad number %q", v)
	}
	return n
}

func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return err.(*kerr.Error).Message
	}
	return strconv.Itoa(int(code))
}

// splitArrow separates "cmd args -> expected".
func splitArrow(fields []string) ([]string, []string) {
	for i, f := range fields {
		if f == "->" {
			return fields[:i], fields[i+1:]
		}
	}
	return fields, nil
}

func (s *script) run(fields []string) {
	cmd, want := splitArrow(fields)
	kv, plain := args(cmd[1:])
	group, ok := kv["group"]
	switch {
	case !ok:
		group = "g"
	case group == "-":
		group = ""
	}
	switch cmd[0] {
	case "config":
		for k, v := range kv {
			switch k {
			case "initial-delay":
				s.cfg.InitialRebalanceDelay = s.duration(v)
			case "max-size":
				s.cfg.MaxSize = int(s.num(v))
			case "retention":
				s.cfg.OffsetsRetention = s.duration(v)
			case "new-member-timeout":
				s.cfg.NewMemberJoinTimeout = s.duration(v)
			default:
				s.fatalf("unknown config %s", k)
			}
		}
	case "join":
		s.join(plain[0], group, kv)
		s.expectNow("join", plain[0], want)
	case "sync":
		s.sync(plain[0], group, kv)
		s.expectNow("sync", plain[0], want)
	case "heartbeat":
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version = 4
		req.Group, req.MemberID, req.Generation = group, s.memberID(plain[0], kv), int32(s.num(kv["generation"]))
		req.InstanceID = s.instance(kv)
		s.expectCode(s.c.Heartbeat(req).ErrorCode, want)
	case "leave":
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version = 5
		req.Group = group
		for _, name := range plain {
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = s.ids[name]
			if name == "-" {
				m.MemberID = ""
			}
			m.InstanceID = s.instance(kv)
			req.Members = append(req.Members, m)
		}
		resp := s.c.LeaveGroup(req)
		var got []string
		for _, m := range resp.Members {
			got = append(got, codeName(m.ErrorCode))
		}
		if resp.ErrorCode != 0 {
			got = []string{"top-level", codeName(resp.ErrorCode)}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			s.fatalf("leave: got %v, want %v", got, want)
		}
	case "commit":
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 9
		req.Group, req.Generation = group, -1
		if plain[0] != "-" {
			req.MemberID = s.ids[plain[0]]
		}
		if g, ok := kv["generation"]; ok {
			req.Generation = int32(s.num(g))
		}
		if v, ok := kv["version"]; ok {
			req.Version = int16(s.num(v))
		}
		if r, ok := kv["retention-ms"]; ok {
			req.RetentionTimeMillis = s.num(r)
		}
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = int32(s.num(kv["partition"])), s.num(kv["offset"])
		meta := kv["metadata"]
		p.Metadata = &meta
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: kv["topic"], Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
		resp := s.c.OffsetCommit(req, func(t string, p int32) bool { return t != "missing" && p < 8 })
		s.expectCode(resp.Topics[0].Partitions[0].ErrorCode, want)
	case "offset":
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		if v, ok := kv["version"]; ok {
			req.Version = int16(s.num(v))
		}
		req.RequireStable = len(plain) > 0 && plain[0] == "stable"
		topic, partition := kv["topic"], int32(s.num(kv["partition"]))
		var code, pcode int16
		var offset int64
		if req.Version >= 8 {
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = group
			rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{partition}}}
			req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
			g := s.c.OffsetFetch(req).Groups[0]
			code = g.ErrorCode
			if code == 0 {
				pcode, offset = g.Topics[0].Partitions[0].ErrorCode, g.Topics[0].Partitions[0].Offset
			}
		} else {
			req.Group = group
			req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{partition}}}
			resp := s.c.OffsetFetch(req)
			code = resp.ErrorCode
			if code == 0 {
				pcode, offset = resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[0].Partitions[0].Offset
			}
		}
		got := codeName(code)
		if code == 0 {
			got = strconv.FormatInt(offset, 10)
			if pcode != 0 {
				got = codeName(pcode) + " " + got
			}
		}
		if got != strings.Join(want, " ") {
			s.fatalf("offset: got %s, want %v", got, want)
		}
	case "txn-commit":
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = 4
		if v, ok := kv["version"]; ok {
			req.Version = int16(s.num(v))
		}
		req.TransactionalID = "txn-" + kv["producer"]
		req.Group = group
		req.ProducerID, req.ProducerEpoch = s.num(kv["producer"]), int16(s.num(kv["epoch"]))
		if plain[0] != "-" {
			req.MemberID = s.memberID(plain[0], kv)
		}
		if g, ok := kv["generation"]; ok {
			req.Generation = int32(s.num(g))
		}
		req.InstanceID = s.instance(kv)
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = int32(s.num(kv["partition"])), s.num(kv["offset"])
		meta := kv["metadata"]
		p.Metadata = &meta
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: kv["topic"], Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{p}}}
		resp := s.c.TxnOffsetCommit(req, func(t string, p int32) bool { return t != "missing" && p < 8 })
		s.expectCode(resp.Topics[0].Partitions[0].ErrorCode, want)
	case "marker":
		// What the broker does to end a transaction on the group's
		// partition: append a real control batch, then tell the coordinator.
		commit := plain[0] == "commit"
		if !commit && plain[0] != "abort" {
			s.fatalf("marker commit|abort, not %s", plain[0])
		}
		part := PartitionFor(group, s.cfg.NumPartitions)
		pid := s.num(kv["producer"])
		batch := protocol.AppendEndTxnMarker(nil, pid, int16(s.num(kv["epoch"])),
			protocol.EndTxnMarker{Commit: commit}, s.clock.Now().UnixMilli())
		if _, err := s.ld.Append(part, batch); err != nil {
			s.fatalf("appending marker: %v", err)
		}
		if len(plain) < 2 || plain[1] != "log-only" {
			s.c.CompleteTxn(part, pid, commit)
		}
	case "reload":
		// The partition's leadership moves away and back: Unload, then Load.
		part := PartitionFor(group, s.cfg.NumPartitions)
		s.c.Unload(part)
		if err := s.c.Load(part); err != nil {
			s.fatalf("load: %v", err)
		}
	case "offset-delete":
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		req.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: kv["topic"], Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: int32(s.num(kv["partition"]))}}}}
		resp := s.c.OffsetDelete(req)
		code := resp.ErrorCode
		if code == 0 {
			code = resp.Topics[0].Partitions[0].ErrorCode
		}
		s.expectCode(code, want)
	case "delete-group":
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version = 2
		req.Groups = []string{group}
		s.expectCode(s.c.DeleteGroups(req).Groups[0].ErrorCode, want)
	case "expire-offsets":
		s.c.ExpireOffsets()
	case "advance":
		s.clock.Advance(s.duration(plain[0]))
	case "state":
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version = 6
		req.Groups = []string{group}
		d := s.c.DescribeGroups(req).Groups[0]
		got, wantState := []string{d.State}, []string{plain[0]}
		if n, ok := kv["members"]; ok {
			got = append(got, "members="+strconv.Itoa(len(d.Members)))
			wantState = append(wantState, "members="+n)
		}
		if gen, ok := kv["generation"]; ok {
			g, _ := s.c.acquire(group, false)
			got = append(got, "generation="+strconv.Itoa(int(g.generation)))
			g.mu.Unlock()
			wantState = append(wantState, "generation="+gen)
		}
		if strings.Join(got, " ") != strings.Join(wantState, " ") {
			s.fatalf("state: got %v, want %v", got, wantState)
		}
	case "expect":
		s.expectLater(plain[0], plain[1], plain[2], kv)
	case "pending":
		s.respMu.Lock()
		n := len(s.joins[plain[1]]) + len(s.syncs[plain[1]])
		s.respMu.Unlock()
		if n != 0 {
			s.fatalf("%s %s has %d responses, want none yet", plain[0], plain[1], n)
		}
	case "restart":
		s.c.Close()
		s.ld.dir.Close()
		s.start()
	default:
		s.fatalf("unknown command %q", cmd[0])
	}
}

func (s *script) memberID(name string, kv map[string]string) string {
	if id, ok := kv["member"]; ok {
		switch id {
		case "-":
			return ""
		case "old": // the id this member had before its last new one
			return s.prev[name]
		}
		return id
	}
	return s.ids[name]
}

func (s *script) instance(kv map[string]string) *string {
	if v, ok := kv["instance"]; ok {
		return &v
	}
	return nil
}

func (s *script) join(name, group string, kv map[string]string) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	if v, ok := kv["version"]; ok {
		req.Version = int16(s.num(v))
	}
	req.Group = group
	req.MemberID = s.memberID(name, kv)
	req.InstanceID = s.instance(kv)
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 30000
	if v, ok := kv["session"]; ok {
		req.SessionTimeoutMillis = int32(s.duration(v).Milliseconds())
	}
	if v, ok := kv["rebalance"]; ok {
		req.RebalanceTimeoutMillis = int32(s.duration(v).Milliseconds())
	}
	req.ProtocolType = "consumer"
	if v, ok := kv["type"]; ok {
		req.ProtocolType = v
	}
	protocols := "range"
	if v, ok := kv["protocols"]; ok {
		protocols = v
	}
	for _, p := range strings.Split(protocols, ",") {
		meta := kv["meta"]
		if meta == "" {
			meta = name
		}
		req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: []byte(meta)})
	}
	s.c.JoinGroup(req, "client-"+name, "/127.0.0.1", func(r *kmsg.JoinGroupResponse) {
		s.respMu.Lock()
		defer s.respMu.Unlock()
		s.joins[name] = append(s.joins[name], r)
		if r.MemberID != "" && (r.ErrorCode == 0 || r.ErrorCode == errMemberIDRequired) {
			if old := s.ids[name]; old != r.MemberID {
				s.prev[name] = old
			}
			s.ids[name] = r.MemberID
			s.names[r.MemberID] = name
		}
	})
}

func (s *script) sync(name, group string, kv map[string]string) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID = group, s.memberID(name, kv)
	req.Generation = int32(s.num(kv["generation"]))
	req.InstanceID = s.instance(kv)
	if v, ok := kv["assign"]; ok {
		for _, a := range strings.Split(v, ",") {
			who, what, _ := strings.Cut(a, ":")
			req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: s.ids[who], MemberAssignment: []byte(what)})
		}
	}
	s.c.SyncGroup(req, func(r *kmsg.SyncGroupResponse) {
		s.respMu.Lock()
		defer s.respMu.Unlock()
		s.syncs[name] = append(s.syncs[name], r)
	})
}

func (s *script) expectCode(code int16, want []string) {
	s.t.Helper()
	if len(want) != 1 || codeName(code) != want[0] {
		s.fatalf("got %s, want %v", codeName(code), want)
	}
}

// expectNow checks the immediate answer of a join or sync: "-> pending"
// means none yet, "-> CODE k=v..." an answer with that code.
func (s *script) expectNow(kind, name string, want []string) {
	if len(want) == 0 {
		return
	}
	if want[0] == "pending" {
		s.run([]string{"pending", kind, name})
		return
	}
	kv, _ := args(want[1:])
	s.expectLater(kind, name, want[0], kv)
}

func (s *script) expectLater(kind, name, code string, kv map[string]string) {
	s.respMu.Lock()
	defer s.respMu.Unlock()
	var got []string
	switch kind {
	case "join":
		if len(s.joins[name]) == 0 {
			s.fatalf("no join response for %s", name)
		}
		r := s.joins[name][0]
		s.joins[name] = s.joins[name][1:]
		got = append(got, codeName(r.ErrorCode))
		for _, k := range sortedKeys(kv) {
			switch k {
			case "gen":
				got = append(got, "gen="+strconv.Itoa(int(r.Generation)))
			case "leader":
				got = append(got, "leader="+s.names[r.LeaderID])
			case "members":
				got = append(got, "members="+strconv.Itoa(len(r.Members)))
			case "skip":
				got = append(got, "skip="+strconv.FormatBool(r.SkipAssignment))
			case "protocol":
				p := ""
				if r.Protocol != nil {
					p = *r.Protocol
				}
				got = append(got, "protocol="+p)
			default:
				s.fatalf("unknown join key %s", k)
			}
		}
	case "sync":
		if len(s.syncs[name]) == 0 {
			s.fatalf("no sync response for %s", name)
		}
		r := s.syncs[name][0]
		s.syncs[name] = s.syncs[name][1:]
		got = append(got, codeName(r.ErrorCode))
		if _, ok := kv["assignment"]; ok {
			got = append(got, "assignment="+string(r.MemberAssignment))
		}
	default:
		s.fatalf("expect join|sync, not %s", kind)
	}
	want := []string{code}
	for _, k := range sortedKeys(kv) {
		want = append(want, k+"="+kv[k])
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		s.fatalf("%s %s: got %v, want %v", kind, name, got, want)
	}
}

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, f) })
	}
}
