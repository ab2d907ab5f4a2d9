package quota

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func name(s string) *string { return &s }

func TestNewEntityValidatesAsKafka(t *testing.T) {
	cases := []struct {
		parts []Part
		err   string
	}{
		{nil, "Invalid empty client quota entity"},
		{[]Part{{User, name("a")}, {User, name("b")}}, "duplicate entity entry user"},
		{[]Part{{"group", name("g")}}, "Unhandled client quota entity type: group"},
		{[]Part{{ClientID, name("")}}, "Empty client-id not supported"},
		{[]Part{{IP, name("10.0.0.1")}, {User, name("u")}}, "IP entity shouldnot be combined"},
		{[]Part{{IP, name("not-an-ip.invalid")}}, "not-an-ip.invalid is not a valid IP or resolvable host."},
	}
	for _, c := range cases {
		_, err := NewEntity(c.parts)
		var inv *InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), c.err) {
			t.Errorf("NewEntity(%v) = %v, want INVALID_REQUEST with %q", c.parts, err, c.err)
		}
	}
	e, err := NewEntity([]Part{{User, name("u")}, {ClientID, nil}})
	if err != nil {
		t.Fatal(err)
	}
	if e[0].Type != ClientID || e[1].Type != User {
		t.Errorf("parts not sorted by type: %v", e)
	}
	if e.Key() == (Entity{{ClientID, name("<default>")}, {User, name("u")}}).Key() {
		t.Error("the default client id and a client id named <default> share a key")
	}
}

func TestApplyChecksKeysAndValues(t *testing.T) {
	client, _ := NewEntity([]Part{{ClientID, name("c")}})
	ip, _ := NewEntity([]Part{{IP, nil}})
	bad := []struct {
		e   Entity
		ops []Op
		err string
	}{
		{client, []Op{{Key: ProducerByteRate, Value: 1.5}}, "producer_byte_rate cannot be a fractional value."},
		{client, []Op{{Key: ProducerByteRate, Value: 0}}, "Quota producer_byte_rate must be greater than 0"},
		{client, []Op{{Key: RequestPercentage, Value: math.Inf(1)}}, "Quota request_percentage must be a finite number"},
		{client, []Op{{Key: ConsumerByteRate, Value: 1e19}}, "Proposed value for consumer_byte_rate is too large for a LONG."},
		{client, []Op{{Key: "retention.ms", Value: 1}}, "Invalid configuration key retention.ms"},
		{client, []Op{{Key: ConnectionCreationRate, Value: 1}}, "Invalid configuration key"},
		{ip, []Op{{Key: ProducerByteRate, Value: 1}}, "Invalid configuration key"},
		{ip, []Op{{Key: ConnectionCreationRate, Value: 1.5}}, "connection_creation_rate cannot be a fractional value."},
		{ip, []Op{{Key: ConnectionCreationRate, Value: 3e9}}, "Proposed value for connection_creation_rate is too large for an INT."},
		{client, []Op{{Key: ProducerByteRate, Value: 1}, {Key: ProducerByteRate, Remove: true}}, "Duplicate quota key"},
	}
	for _, c := range bad {
		if _, err := c.e.Apply(nil, c.ops); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("Apply(%v, %v) = %v, want %q", c.e, c.ops, err, c.err)
		}
	}
	cur := map[string]float64{ProducerByteRate: 100}
	next, err := client.Apply(cur, []Op{{Key: ConsumerByteRate, Value: 200}, {Key: ProducerByteRate, Remove: true}})
	if err != nil || len(next) != 1 || next[ConsumerByteRate] != 200 {
		t.Fatalf("Apply = %v, %v", next, err)
	}
	if cur[ProducerByteRate] != 100 {
		t.Error("Apply changed the current values")
	}
}

func TestFilterMatchesAsKafka(t *testing.T) {
	userA, _ := NewEntity([]Part{{User, name("a")}})
	userDefault, _ := NewEntity([]Part{{User, nil}})
	userAClient, _ := NewEntity([]Part{{User, name("a")}, {ClientID, name("c")}})
	clientC, _ := NewEntity([]Part{{ClientID, name("c")}})
	all := []Entity{userA, userDefault, userAClient, clientC}
	cases := []struct {
		comps  []Component
		strict bool
		want   []Entity
	}{
		{[]Component{{Type: User, Match: MatchExact, Name: name("a")}}, false, []Entity{userA, userAClient}},
		{[]Component{{Type: User, Match: MatchExact, Name: name("a")}}, true, []Entity{userA}},
		{[]Component{{Type: User, Match: MatchDefault}}, false, []Entity{userDefault}},
		{[]Component{{Type: User, Match: MatchSpecified}}, true, []Entity{userA, userDefault}},
		{[]Component{{Type: ClientID, Match: MatchSpecified}}, false, []Entity{userAClient, clientC}},
		{nil, false, all},
	}
	for _, c := range cases {
		f, err := NewFilter(c.comps, c.strict)
		if err != nil {
			t.Fatal(err)
		}
		var got []Entity
		for _, e := range all {
			if f.Matches(e) {
				got = append(got, e)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("filter %v strict=%v matched %v, want %v", c.comps, c.strict, got, c.want)
			continue
		}
		for i := range got {
			if got[i].Key() != c.want[i].Key() {
				t.Errorf("filter %v strict=%v matched %v, want %v", c.comps, c.strict, got, c.want)
			}
		}
	}
	for _, comps := range [][]Component{
		{{Type: User, Match: MatchExact}},
		{{Type: User, Match: MatchDefault, Name: name("x")}},
		{{Type: User, Match: MatchSpecified}, {Type: User, Match: MatchDefault}},
		{{Type: IP, Match: MatchSpecified}, {Type: User, Match: MatchSpecified}},
		{{Type: User, Match: 3}},
	} {
		var inv *InvalidError
		if _, err := NewFilter(comps, false); !errors.As(err, &inv) {
			t.Errorf("NewFilter(%v) = %v, want INVALID_REQUEST", comps, err)
		}
	}
	var unsup *UnsupportedError
	if _, err := NewFilter([]Component{{Type: "group", Match: MatchSpecified}}, false); !errors.As(err, &unsup) {
		t.Errorf("unknown entity type: %v, want UNSUPPORTED_VERSION", err)
	}
}

func entry(values map[string]float64, parts ...Part) Entry {
	e, err := NewEntity(parts)
	if err != nil {
		panic(err)
	}
	return Entry{Entity: e, Values: values}
}

// stored keys entries as the broker stores them.
func stored(entries ...Entry) map[string]Entry {
	out := map[string]Entry{}
	for _, e := range entries {
		out[e.Entity.Key()] = e
	}
	return out
}

func TestPrecedenceAndSharing(t *testing.T) {
	m := NewManager(DefaultConfig())
	m.Set(stored(
		entry(map[string]float64{ProducerByteRate: 1000}, Part{ClientID, nil}),
		entry(map[string]float64{ProducerByteRate: 2000}, Part{ClientID, name("special")}),
		entry(map[string]float64{ProducerByteRate: 3000}, Part{User, name("alice")}),
		entry(map[string]float64{ProducerByteRate: 4000}, Part{User, name("alice")}, Part{ClientID, name("special")}),
	))
	cases := []struct {
		user, client string
		bound        float64
		sk           sensorKey
	}{
		{"ANONYMOUS", "app", 1000, sensorKey{key: ProducerByteRate, user: "", clientID: "app"}},
		{"ANONYMOUS", "special", 2000, sensorKey{key: ProducerByteRate, user: "", clientID: "special"}},
		{"alice", "app", 3000, sensorKey{key: ProducerByteRate, user: "alice", clientID: ""}},
		{"alice", "special", 4000, sensorKey{key: ProducerByteRate, user: "alice", clientID: "special"}},
	}
	for _, c := range cases {
		bound, sk, ok := m.resolve(ProducerByteRate, c.user, c.client)
		if !ok || bound != c.bound || sk != c.sk {
			t.Errorf("resolve(%s, %s) = %v %+v %v, want %v %+v", c.user, c.client, bound, sk, ok, c.bound, c.sk)
		}
	}
	if _, _, ok := m.resolve(ConsumerByteRate, "alice", "app"); ok {
		t.Error("a consumer quota applies although none is set")
	}
	if m.Active(ConsumerByteRate) || !m.Active(ProducerByteRate) {
		t.Error("Active does not follow the keys set")
	}
	if n, ok := m.WindowBytes(ProducerByteRate, "x", "y"); !ok || n != 1000*10 {
		t.Errorf("WindowBytes = %d %v, want 10000 (quota over 10 of 11 windows)", n, ok)
	}
}

func TestThrottleTimeFollowsKafkasFormula(t *testing.T) {
	m := NewManager(Config{Samples: 11, Window: time.Second})
	m.Set(stored(entry(map[string]float64{ProducerByteRate: 1000}, Part{ClientID, name("c")})))
	now := time.UnixMilli(1_000_000)
	// 10,000 bytes in a fresh rate read over the 10-window minimum: 1,000/s, at the quota.
	if d := m.Record(ProducerByteRate, "u", "c", 10_000, now); d != 0 {
		t.Fatalf("at the quota: throttled %v", d)
	}
	// 5,000 more: 1,500/s over 10 s, so (1500-1000)/1000 * 10 s = 5 s.
	if d := m.Record(ProducerByteRate, "u", "c", 5_000, now); d != 5*time.Second {
		t.Fatalf("over the quota: throttle %v, want 5s", d)
	}
	// Another client id has no quota.
	if d := m.Record(ProducerByteRate, "u", "other", 1e9, now); d != 0 {
		t.Fatalf("a client without a quota was throttled %v", d)
	}
	// After every window has expired the rate starts again from nothing.
	later := now.Add(12 * time.Second)
	if d := m.Record(ProducerByteRate, "u", "c", 100, later); d != 0 {
		t.Fatalf("after the windows expired: throttled %v", d)
	}
	m.Unrecord(ProducerByteRate, "u", "c", 100, later)
	if d := m.Record(ProducerByteRate, "u", "c", 10_000, later); d != 0 {
		t.Fatalf("Unrecord left the bytes counted: throttled %v", d)
	}
}

func TestRateSpreadsOverWindows(t *testing.T) {
	cfg := Config{Samples: 3, Window: time.Second}
	var r rate
	start := int64(10_000)
	for i := range int64(6) {
		r.record(500, start+i*500, cfg) // 1,000 bytes a second for 3 s
	}
	got, window := r.measure(start+2999, cfg)
	// Three samples of 1,000 bytes from 10,000, 11,000 and 12,000.
	if want := 3000 / 2.999; window != 2999 || math.Abs(got-want) > 1e-9 {
		t.Fatalf("rate %v over %d ms, want 3000 bytes over 2999", got, window)
	}
	// At 13,000 the first sample is as old as the three windows together
	// and is cleared: 2,000 bytes since 11,000.
	if got, window := r.measure(start+3000, cfg); window != 2000 || got != 1000 {
		t.Fatalf("rate %v over %d ms, want 1000 over 2000", got, window)
	}
	// A gap longer than all windows together clears them.
	if got, _ := r.measure(start+10_000, cfg); got != 0 {
		t.Fatalf("rate after the windows expired: %v", got)
	}
}

// controller_mutation_rate is a token bucket: a burst of the controller
// quota's samples x window seconds of the rate (not the client quotas'),
// then debt paid back at the rate.
func TestMutationBucket(t *testing.T) {
	m := NewManager(Config{Samples: 11, Window: time.Second, MutationSamples: 2, MutationWindow: time.Second})
	m.Set(stored(entry(map[string]float64{ControllerMutationRate: 5}, Part{ClientID, name("admin")})))
	now := time.Unix(1000, 0)
	if d := m.Mutations("alice", "admin", 10, now); d != 0 {
		t.Fatalf("a burst of 10 with 5/s over 2 windows: throttled %v", d)
	}
	if d := m.Mutations("alice", "admin", 0, now); d != 0 {
		t.Fatalf("an empty bucket is not in debt: %v", d)
	}
	if d := m.Mutations("alice", "admin", 5, now); d != time.Second {
		t.Fatalf("5 more: throttle %v, want 1s to pay back 5 at 5/s", d)
	}
	if d := m.Mutations("alice", "admin", 0, now.Add(600*time.Millisecond)); d != 400*time.Millisecond {
		t.Fatalf("0.6 s later: %v, want 400ms", d)
	}
	if d := m.Mutations("alice", "admin", 0, now.Add(time.Hour)); d != 0 {
		t.Fatalf("an hour later: %v", d)
	}
	if d := m.Mutations("alice", "other", 1000, now); d != 0 {
		t.Fatalf("a client without the quota: %v", d)
	}
}

// connection_creation_rate: an ip's own quota, else the default ip's;
// a connection over it is held at most a window and not counted.
func TestConnectionCreationRate(t *testing.T) {
	m := NewManager(Config{Samples: 2, Window: time.Second})
	m.Set(stored(
		entry(map[string]float64{ConnectionCreationRate: 2}, Part{IP, name("10.0.0.1")}),
		entry(map[string]float64{ConnectionCreationRate: 100}, Part{IP, nil}),
	))
	now := time.Unix(1000, 0)
	held := 0
	for range 5 {
		if d := m.Connection("10.0.0.1", now); d > 0 {
			held++
			if d > time.Second {
				t.Fatalf("held %v, more than a window", d)
			}
		}
	}
	// 2 a second, measured over at least one window: two go through.
	if held != 3 {
		t.Fatalf("%d of 5 connections held, want 3", held)
	}
	for range 5 {
		if d := m.Connection("10.0.0.2", now); d > 0 {
			t.Fatalf("an ip under the default's 100/s was held %v", d)
		}
	}
	// An IPv6 quota named in Java's long form covers the address as the
	// broker writes it (::1), as Kafka matches addresses, not text; a host
	// name stands for its first address, IPv4 first, as Java's
	// InetAddress.getByName resolves it: localhost is 127.0.0.1.
	for _, c := range []struct{ entity, from string }{{"0:0:0:0:0:0:0:1", "::1"}, {"localhost", "127.0.0.1"}} {
		m.Set(stored(entry(map[string]float64{ConnectionCreationRate: 1}, Part{IP, name(c.entity)})))
		held = 0
		for range 3 {
			if m.Connection(c.from, now) > 0 {
				held++
			}
		}
		if held != 2 {
			t.Fatalf("%d of 3 connections from %s held under a quota of 1/s for %s, want 2", held, c.from, c.entity)
		}
	}
}

// The broker's connection rate: a burst of samples-1 windows' worth,
// then the delay Kafka's formula gives, at most a window; a rate of 0
// delays every connection a window.
func TestConnectionRate(t *testing.T) {
	c := NewConnectionRate(Config{Samples: 2, Window: time.Second})
	now := time.Unix(1000, 0)
	for i := range 2 {
		if d := c.Record(2, now); d != 0 {
			t.Fatalf("connection %d within 2/s over one window delayed %v", i+1, d)
		}
	}
	// 3 over one window at 2/s: (3-2)/2 * 1 s.
	if d := c.Record(2, now); d != 500*time.Millisecond {
		t.Fatalf("third connection delayed %v, want 500ms", d)
	}
	c.Unrecord(now)
	if d := c.Record(2, now); d != 500*time.Millisecond {
		t.Fatalf("after an unrecord, the third again: %v, want 500ms", d)
	}
	if d := c.Record(0.1, now); d != time.Second {
		t.Fatalf("far over the rate: %v, want the one-window cap", d)
	}
	if d := NewConnectionRate(Config{Samples: 2, Window: time.Second}).Record(0, now); d != time.Second {
		t.Fatalf("rate 0: %v, want a window", d)
	}
}

// Kafka answers AlterClientQuotas from a map by entity: an entity named
// twice has one answer, INVALID_REQUEST, though its first entry's changes
// are stored. The Java admin client takes the first answer for an entity,
// so two answers would read as success.
func TestAlterAnswersAnEntityOnce(t *testing.T) {
	entry := func(client, key string, value float64) kmsg.AlterClientQuotasRequestEntry {
		return kmsg.AlterClientQuotasRequestEntry{
			Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: ClientID, Name: name(client)}},
			Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: key, Value: value}},
		}
	}
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = []kmsg.AlterClientQuotasRequestEntry{
		entry("a", ProducerByteRate, 100),
		entry("b", ProducerByteRate, 100),
		entry("a", ConsumerByteRate, 200),
	}
	resp, changed := Alter(req, nil)
	if len(resp.Entries) != 2 {
		t.Fatalf("%d answers, want one per entity: %+v", len(resp.Entries), resp.Entries)
	}
	a, b := resp.Entries[0], resp.Entries[1]
	if *a.Entity[0].Name != "a" || a.ErrorCode != kerr.InvalidRequest.Code || a.ErrorMessage == nil ||
		!strings.Contains(*a.ErrorMessage, "Ignoring duplicate entity") {
		t.Errorf("the entity named twice: %+v", a)
	}
	if *b.Entity[0].Name != "b" || b.ErrorCode != 0 {
		t.Errorf("the other entity: %+v", b)
	}
	if len(changed) != 2 || changed[0].Values[ProducerByteRate] != 100 || len(changed[0].Values) != 1 {
		t.Errorf("changed %+v, want a's and b's first entries", changed)
	}
}
