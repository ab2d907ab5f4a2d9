package compat

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const cliSaslTopic = "cli-sasl"

// testSASL runs a second broker whose only listener is SASL_PLAINTEXT,
// with PLAIN users in its JAAS config and SCRAM enabled, configured with
// the keys a Kafka broker takes. The Java tools log in with
// --command-config files as Kafka's docs show: kafka-configs (as the
// PLAIN admin) creates a SCRAM-SHA-256 user and describes it, the console
// producer and consumer run as that user, franz-go reads the same records
// as that user, and a wrong password is refused with Kafka's message.
func (e *cliEnv) testSASL(t *testing.T) {
	p := harness.Start(t, t.TempDir(),
		"listeners=SASL_PLAINTEXT://127.0.0.1:0",
		"security.inter.broker.protocol=SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol=PLAIN",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`,
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;")
	props := func(name, mechanism, module, user, password string) string {
		return cliProperties(t, name, fmt.Sprintf("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=%s\n"+
			"sasl.jaas.config=org.apache.kafka.common.security.%s required username=\"%s\" password=\"%s\";\n",
			mechanism, module, user, password))
	}
	admin := props("admin", "PLAIN", "plain.PlainLoginModule", "admin", "admin-secret")
	alice := props("alice", "SCRAM-SHA-256", "scram.ScramLoginModule", "alice", "alice-secret")
	wrong := props("wrong", "SCRAM-SHA-256", "scram.ScramLoginModule", "alice", "not-her-secret")
	as := func(config string, args ...string) []string {
		return append([]string{"--bootstrap-server", p.Addr, "--command-config", config}, args...)
	}

	out := e.run(t, "", e.cls.configs, as(admin, "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret]")...)
	if strings.TrimSpace(out) != "Completed updating config for user alice." {
		t.Fatalf("alter said %q", out)
	}
	out = e.run(t, "", e.cls.configs, as(admin, "--describe", "--entity-type", "users", "--entity-name", "alice")...)
	if want := "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192"; !strings.Contains(out, want) {
		t.Fatalf("describe said %q, want %q", out, want)
	}
	e.run(t, "", e.cls.topics, as(admin, "--create", "--topic", cliSaslTopic, "--partitions", "2")...)

	const n = 50
	e.consoleRoundTrip(t, cliSaslTopic, "sasl", n, []string{"--bootstrap-server", p.Addr, "--command-config", alice},
		[]string{"--bootstrap-server", p.Addr, "--command-config", alice})

	// franz-go, logged in as alice, sees the same count.
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, cliSaslTopic)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != n {
		t.Fatalf("franz-go as alice sees %d records, want %d", total, n)
	}

	r := e.try(t, "", e.cls.topics, as(wrong, "--list")...)
	if r.err == nil {
		t.Fatalf("kafka-topics with a wrong password succeeded:\n%s", r.stdout)
	}
	if want := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"; !strings.Contains(r.stdout+r.stderr, want) {
		t.Fatalf("wrong password: output lacks %q:\n%s\n%s", want, r.stdout, r.stderr)
	}
}

// consoleRoundTrip sends n keyed records (cliInput(prefix, n)) to topic
// with the console producer and reads them back with the console
// consumer, each run with its own connection arguments (bootstrap server
// and --command-config): every record must come back as sent.
func (e *cliEnv) consoleRoundTrip(t *testing.T, topic, prefix string, n int, producer, consumer []string) {
	t.Helper()
	if out := e.run(t, cliInput(prefix, n), e.cls.producer, append(producer, "--topic", topic,
		"--reader-property", "parse.key=true")...); strings.TrimSpace(out) != "" {
		t.Fatalf("console producer printed %q", out)
	}
	r := e.try(t, "", e.cls.consumer, append(consumer, "--topic", topic,
		"--from-beginning", "--max-messages", fmt.Sprint(n), "--timeout-ms", "60000",
		"--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
		"--formatter-property", "print.key=true")...)
	if r.err != nil {
		t.Fatalf("console consumer: %v\n%s\n%s", r.err, r.stdout, r.stderr)
	}
	got := cliParseConsole(t, r.stdout)
	if len(got) != n {
		t.Fatalf("console consumer printed %d records, want %d", len(got), n)
	}
	for _, rec := range got {
		var i int
		if _, err := fmt.Sscanf(rec.key, prefix+"-key-%d", &i); err != nil || rec.value != fmt.Sprintf("%s value %d", prefix, i) {
			t.Fatalf("consumed %+v, not a produced record", rec)
		}
	}
}
