package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/compat/harness"
)

// testACLs runs kafka-acls against a broker with Kafka's StandardAuthorizer
// on a SASL_PLAINTEXT listener (admin a super user, alice a PLAIN user):
// alice, without ACLs, is refused by the console producer; kafka-acls adds
// a producer ACL on one topic and consumer ACLs (--consumer) for a group,
// lists them, and alice then produces and consumes in that group while
// another topic stays closed to her; removing the producer ACL closes
// writing again.
func (e *cliEnv) testACLs(t *testing.T) {
	p := harness.Start(t, t.TempDir(),
		"listeners=SASL_PLAINTEXT://127.0.0.1:0",
		"security.inter.broker.protocol=SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol=PLAIN",
		"sasl.enabled.mechanisms=PLAIN",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:admin",
		"group.initial.rebalance.delay.ms=0")
	props := func(user string) string {
		path := filepath.Join(t.TempDir(), user+".properties")
		text := fmt.Sprintf("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
			"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"%s\" password=\"%s-secret\";\n", user, user)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	admin, alice := props("admin"), props("alice")
	acls := func(args ...string) string {
		return e.run(t, "", e.cls.acls, append([]string{"--bootstrap-server", p.Addr, "--command-config", admin}, args...)...)
	}
	for _, topic := range []string{"cli-acl", "cli-acl-closed"} {
		e.run(t, "", e.cls.topics, "--bootstrap-server", p.Addr, "--command-config", admin, "--create", "--topic", topic, "--partitions", "1")
	}
	produce := func(topic string) cliResult {
		return e.try(t, cliInput("acl", 10), e.cls.producer, "--bootstrap-server", p.Addr, "--command-config", alice, "--topic", topic,
			"--reader-property", "parse.key=true")
	}
	if r := produce("cli-acl"); !strings.Contains(r.stdout+r.stderr, "TopicAuthorizationException") {
		t.Fatalf("alice produced without ACLs:\n%s\n%s", r.stdout, r.stderr)
	}

	out := acls("--add", "--allow-principal", "User:alice", "--producer", "--topic", "cli-acl")
	if !strings.Contains(out, "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=cli-acl, patternType=LITERAL)`") {
		t.Fatalf("kafka-acls --add --producer said:\n%s", out)
	}
	acls("--add", "--allow-principal", "User:alice", "--consumer", "--topic", "cli-acl", "--group", "cli-acl-group")
	listed := acls("--list", "--topic", "cli-acl")
	for _, op := range []string{"operation=WRITE", "operation=DESCRIBE", "operation=CREATE", "operation=READ"} {
		if !strings.Contains(listed, "(principal=User:alice, host=*, "+op+", permissionType=ALLOW)") {
			t.Errorf("kafka-acls --list lacks %s:\n%s", op, listed)
		}
	}

	if r := produce("cli-acl"); r.err != nil || strings.TrimSpace(r.stdout+r.stderr) != "" {
		t.Fatalf("alice with the producer ACL: %v\n%s\n%s", r.err, r.stdout, r.stderr)
	}
	if r := produce("cli-acl-closed"); !strings.Contains(r.stdout+r.stderr, "TopicAuthorizationException") {
		t.Fatalf("alice produced to a topic without ACLs:\n%s\n%s", r.stdout, r.stderr)
	}
	r := e.try(t, "", e.cls.consumer, "--bootstrap-server", p.Addr, "--command-config", alice, "--topic", "cli-acl",
		"--group", "cli-acl-group", "--from-beginning", "--max-messages", "10", "--timeout-ms", "60000")
	if r.err != nil || !strings.Contains(r.stderr, "Processed a total of 10 messages") {
		t.Fatalf("alice consuming in her group: %v\n%s\n%s", r.err, r.stdout, r.stderr)
	}

	// Without WRITE on any topic her idempotent producer gets no producer
	// id (she may still describe cli-acl, through her consumer ACLs).
	acls("--remove", "--force", "--allow-principal", "User:alice", "--producer", "--topic", "cli-acl")
	if r := produce("cli-acl"); !strings.Contains(r.stdout+r.stderr, "ClusterAuthorizationException") {
		t.Fatalf("alice produced after her ACL was removed:\n%s\n%s", r.stdout, r.stderr)
	}
}
