package compat

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// cliPerfRate reads the MB/sec of kafka-producer-perf-test's summary line.
var cliPerfRate = regexp.MustCompile(`^\d+ records sent, [\d.]+ records/sec \(([\d.]+) MB/sec\)`)

// cliThrottleMax reads the producer's produce-throttle-time-max metric.
var cliThrottleMax = regexp.MustCompile(`^producer-metrics:produce-throttle-time-max:\{client-id=cli-throttled\}\s*:\s*([\d.]+)$`)

// testQuotas: kafka-configs sets client quotas on a client id, the default
// user and a user and client id pair, and the request, mutation and
// connection quotas, describes them, refuses a byte rate for an ip,
// deletes one; franz-go reads the same values;
// then kafka-producer-perf-test, as a client id with a producer_byte_rate,
// is held to it and reports the broker's throttle times.
func (e *cliEnv) testQuotas(t *testing.T) {
	cfg := func(args ...string) string { return e.admin(t, e.cls.configs, args...) }
	// The broker is shared with the later features: a default user's
	// consumer quota would throttle every consumer of theirs.
	defer e.removeAllQuotas(t)
	out := cfg("--alter", "--entity-type", "clients", "--entity-name", "cli-quota",
		"--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
	if strings.TrimSpace(out) != "Completed updating config for client cli-quota." {
		t.Fatalf("alter said %q", out)
	}
	cfg("--alter", "--entity-type", "users", "--entity-default", "--add-config", "consumer_byte_rate=1000")
	cfg("--alter", "--entity-type", "users", "--entity-name", "bob", "--entity-type", "clients", "--entity-name", "x",
		"--add-config", "producer_byte_rate=5000")

	describe := func(args ...string) string {
		return strings.Join(cliLines(cfg(append([]string{"--describe"}, args...)...)), "\n")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--entity-type", "clients", "--entity-name", "cli-quota"},
			"Quota configs for client-id 'cli-quota' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0"},
		{[]string{"--entity-type", "users", "--entity-default"},
			"Quota configs for the default user-principal are consumer_byte_rate=1000.0"},
		{[]string{"--entity-type", "users", "--entity-name", "bob", "--entity-type", "clients", "--entity-name", "x"},
			"Quota configs for user-principal 'bob', client-id 'x' are producer_byte_rate=5000.0"},
		{[]string{"--entity-type", "users"},
			"Quota configs for the default user-principal are consumer_byte_rate=1000.0"},
	} {
		if got := describe(c.args...); got != c.want {
			t.Errorf("--describe %v:\n got %q\nwant %q", c.args, got, c.want)
		}
	}

	// The quotas on request time, controller mutations and connections.
	cfg("--alter", "--entity-type", "clients", "--entity-name", "cli-busy",
		"--add-config", "request_percentage=50,controller_mutation_rate=10")
	cfg("--alter", "--entity-type", "ips", "--entity-name", "10.0.0.1", "--add-config", "connection_creation_rate=10")
	for args, want := range map[string]string{
		"clients cli-busy": "Quota configs for client-id 'cli-busy' are controller_mutation_rate=10.0, request_percentage=50.0",
		"ips 10.0.0.1":     "Quota configs for ip '10.0.0.1' are connection_creation_rate=10.0",
	} {
		typ, name, _ := strings.Cut(args, " ")
		if got := describe("--entity-type", typ, "--entity-name", name); got != want {
			t.Errorf("--describe %s:\n got %q\nwant %q", args, got, want)
		}
	}
	out = e.adminFails(t, e.cls.configs, "--alter", "--entity-type", "ips", "--entity-name", "10.0.0.1",
		"--add-config", "producer_byte_rate=10")
	if !strings.Contains(out, "producer_byte_rate") {
		t.Errorf("a byte rate for an ip was not refused clearly:\n%s", out)
	}
	cfg("--alter", "--entity-type", "clients", "--entity-name", "cli-quota", "--delete-config", "producer_byte_rate")
	if got, want := describe("--entity-type", "clients", "--entity-name", "cli-quota"),
		"Quota configs for client-id 'cli-quota' are consumer_byte_rate=2097152.0"; got != want {
		t.Errorf("after --delete-config: %q, want %q", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	qs, err := e.adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 5 {
		t.Errorf("franz-go sees %d quota entities, want 5: %v", len(qs), qs)
	}

	// 4 MB at 256 KB/s: a fresh client may send ten windows' worth (2.5 MB)
	// at once, the rest takes at least 6 s, so no more than 0.7 MB/s over
	// the run (the same tool reaches tens of MB/s unthrottled).
	cfg("--alter", "--entity-type", "clients", "--entity-name", "cli-throttled", "--add-config", "producer_byte_rate=262144")
	const topic = "cli-quota-perf"
	e.createTopic(t, topic, 1)
	out = e.run(t, "", e.cls.producerPerf, "--topic", topic, "--num-records", "4096", "--record-size", "1024",
		"--throughput", "-1", "--print-metrics", "--command-property", "bootstrap.servers="+e.p.Addr,
		"client.id=cli-throttled", "acks=1")
	rate, throttle := -1.0, -1.0
	for _, l := range cliLines(out) {
		if m := cliPerfRate.FindStringSubmatch(l); m != nil && strings.HasPrefix(l, "4096 records sent") {
			rate, _ = strconv.ParseFloat(m[1], 64)
		}
		if m := cliThrottleMax.FindStringSubmatch(l); m != nil {
			throttle, _ = strconv.ParseFloat(m[1], 64)
		}
	}
	if rate < 0 || throttle < 0 {
		t.Fatalf("no summary or throttle metric in the perf test's output:\n%.3000s", out)
	}
	t.Logf("under a 256 KB/s quota: %.2f MB/s, longest throttle %.0f ms", rate, throttle)
	if rate > 1.0 {
		t.Errorf("4 MB under a 256 KB/s producer quota went at %.2f MB/s", rate)
	}
	if throttle <= 0 {
		t.Errorf("the producer was never told to throttle (produce-throttle-time-max %v)", throttle)
	}
}

// removeAllQuotas deletes every client quota on the broker.
func (e *cliEnv) removeAllQuotas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	qs, err := e.adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var entries []kadm.AlterClientQuotaEntry
	for _, q := range qs {
		var ops []kadm.AlterClientQuotaOp
		for _, v := range q.Values {
			ops = append(ops, kadm.AlterClientQuotaOp{Key: v.Key, Remove: true})
		}
		entries = append(entries, kadm.AlterClientQuotaEntry{Entity: q.Entity, Ops: ops})
	}
	res, err := e.adm.AlterClientQuotas(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("removing the quotas of %s: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
	if left, err := e.adm.DescribeClientQuotas(ctx, false, nil); err != nil || len(left) != 0 {
		t.Fatalf("quotas left: %v %v", left, err)
	}
}
