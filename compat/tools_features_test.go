package compat

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// testFeatures: the last step of Kafka's upgrade instructions,
// kafka-features upgrade --release-version, and the metadata.version
// commands, as Kafka answers them. describe lists metadata.version
// from 3.3-IV3 to 4.4-IV2, finalized at 4.2-IV1 (a new cluster's level,
// as Kafka 4.2's), and a single node kraft.version 1 (a quorum of one,
// formatted --standalone) and eligible leader replicas on. downgrade
// --release-version 4.0 moves every feature to 4.0's levels
// (metadata.version 4.0-IV3); going below 4.0-IV1 is refused with Kafka's
// message, and so is a level beyond 4.4-IV2, Kafka 4.4's newest; upgrade --release-version
// 4.1, then 4.2, comes back, and 4.3 brings cordoned log dirs
// (checkCordonedLogDirs), after which there is no way back below 4.3-IV0;
// 4.4 brings share.version 2 and its dead-letter queues (checkShareDLQ).
// It runs after the features that use share and streams groups: it
// changes share.version and streams.version, and puts them back.
func (e *cliEnv) testFeatures(t *testing.T) {
	describe := func(name, min, max, finalized string) {
		t.Helper()
		out := e.admin(t, e.cls.features, "describe")
		want := fmt.Sprintf(`(?m)^Feature: %s\s+SupportedMinVersion: %s\s+SupportedMaxVersion: %s\s+FinalizedVersionLevel: %s\s+Epoch: \d+\s*$`,
			regexp.QuoteMeta(name), regexp.QuoteMeta(min), regexp.QuoteMeta(max), regexp.QuoteMeta(finalized))
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("kafka-features describe:\n%s\nwant %s supported %s-%s, finalized at %s", out, name, min, max, finalized)
		}
	}
	describe("metadata.version", "3.3-IV3", "4.4-IV2", "4.2-IV1")
	describe("kraft.version", "0", "1", "1")
	describe("eligible.leader.replicas.version", "0", "1", "1")

	out := e.admin(t, e.cls.features, "upgrade", "--release-version", "4.2")
	if !strings.Contains(out, "metadata.version was upgraded to 29.") || strings.Contains(out, "Could not") {
		t.Errorf("kafka-features upgrade --release-version 4.2:\n%s", out)
	}
	out = e.admin(t, e.cls.features, "downgrade", "--release-version", "4.0")
	for _, line := range []string{"metadata.version was downgraded to 25.", "eligible.leader.replicas.version was downgraded to 0.",
		"share.version was downgraded to 0.", "streams.version was downgraded to 0."} {
		if !strings.Contains(out, line) {
			t.Errorf("kafka-features downgrade --release-version 4.0:\n%s\nwant %q", out, line)
		}
	}
	describe("metadata.version", "3.3-IV3", "4.4-IV2", "4.0-IV3")
	describe("eligible.leader.replicas.version", "0", "1", "0")

	out = e.adminFails(t, e.cls.features, "downgrade", "--metadata", "3.9")
	if !strings.Contains(out, "Could not downgrade metadata.version to 21.") ||
		!strings.Contains(out, "Invalid metadata.version 21. Refusing to perform the requested downgrade because it might delete metadata information.") {
		t.Errorf("kafka-features downgrade --metadata 3.9:\n%s", out)
	}
	out = e.adminFails(t, e.cls.features, "upgrade", "--feature", "metadata.version=34")
	if !strings.Contains(out, "Invalid update version 34 for feature metadata.version. Local controller") || !strings.Contains(out, "only supports versions 7-33") {
		t.Errorf("kafka-features upgrade to metadata.version 34:\n%s", out)
	}

	out = e.admin(t, e.cls.features, "upgrade", "--release-version", "4.1")
	if !strings.Contains(out, "metadata.version was upgraded to 27.") || !strings.Contains(out, "eligible.leader.replicas.version was upgraded to 1.") {
		t.Errorf("kafka-features upgrade --release-version 4.1 after 4.0:\n%s", out)
	}
	describe("metadata.version", "3.3-IV3", "4.4-IV2", "4.1-IV1")
	e.admin(t, e.cls.features, "upgrade", "--feature", "share.version=1", "--feature", "streams.version=1")
	describe("share.version", "0", "2", "1")
	out = e.admin(t, e.cls.features, "upgrade", "--release-version", "4.2")
	if !strings.Contains(out, "metadata.version was upgraded to 29.") || strings.Contains(out, "Could not") {
		t.Errorf("kafka-features upgrade --release-version 4.2 after 4.1:\n%s", out)
	}
	describe("metadata.version", "3.3-IV3", "4.4-IV2", "4.2-IV1")
	e.checkCordonedLogDirs(t)

	out = e.admin(t, e.cls.features, "upgrade", "--release-version", "4.4")
	if !strings.Contains(out, "metadata.version was upgraded to 33.") || !strings.Contains(out, "share.version was upgraded to 2.") || strings.Contains(out, "Could not") {
		t.Fatalf("kafka-features upgrade --release-version 4.4:\n%s", out)
	}
	describe("share.version", "0", "2", "2")
	e.checkShareDLQ(t)
}

// checkShareDLQ: at share.version 2 a share group's dead-letter queue
// (KIP-1191), set up with kafka-topics and kafka-configs, gets every record
// kafka-console-share-consumer --reject rejects, with the original key and
// value (errors.deadletterqueue.copy.record.enable) and Kafka's headers, as
// kafka-console-consumer prints them.
func (e *cliEnv) checkShareDLQ(t *testing.T) {
	const src, dlq, group = "cli-dlq-src", "dlq.cli", "cli-dlq-g"
	e.admin(t, e.cls.topics, "--create", "--topic", src, "--partitions", "1")
	e.admin(t, e.cls.topics, "--create", "--topic", dlq, "--partitions", "1", "--config", "errors.deadletterqueue.group.enable=true")
	e.produceConsole(t, src, cliInput("dlq", 5))
	e.admin(t, e.cls.configs, "--entity-type", "groups", "--entity-name", group, "--alter", "--add-config",
		"share.auto.offset.reset=earliest,errors.deadletterqueue.topic.name="+dlq+",errors.deadletterqueue.copy.record.enable=true")
	r := e.try(t, "", e.cls.shareConsumer, "--bootstrap-server", e.p.Addr, "--topic", src, "--group", group,
		"--reject", "--max-messages", "5", "--timeout-ms", "60000")
	if r.err != nil || !strings.Contains(r.stderr, "Processed a total of 5 messages") {
		t.Fatalf("kafka-console-share-consumer --reject: %v\n%s\n%s", r.err, r.stdout, r.stderr)
	}
	r = e.try(t, "", e.cls.consumer, "--bootstrap-server", e.p.Addr, "--topic", dlq, "--from-beginning",
		"--max-messages", "5", "--timeout-ms", "60000", "--formatter-property", "print.headers=true", "--formatter-property", "print.key=true")
	if r.err != nil {
		t.Fatalf("reading the dead-letter queue: %v\n%s\n%s", r.err, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("the dead-letter queue holds %d records, want 5:\n%s", len(lines), r.stdout)
	}
	for i, l := range lines {
		want := fmt.Sprintf("__dlq.errors.topic:%s,__dlq.errors.partition:0,__dlq.errors.offset:%d,__dlq.errors.group:%s,"+
			"__dlq.errors.delivery.count:1,__dlq.errors.message:Offset rejected by client.\tdlq-key-%d\tdlq value %d", src, i, group, i, i)
		if l != want {
			t.Errorf("dead-letter queue record %d:\n%q\nwant\n%q", i, l, want)
		}
	}
}

// checkCordonedLogDirs: cordoned.log.dirs (KIP-1066) is refused before
// metadata.version 4.3-IV0 with Kafka's message; after kafka-features
// upgrade --release-version 4.3, cordoning every dir cluster-wide makes
// kafka-topics --create fail with Kafka's placer's message, and deleting
// the config lets it through.
func (e *cliEnv) checkCordonedLogDirs(t *testing.T) {
	cordonAll := []string{"--alter", "--entity-type", "brokers", "--entity-default", "--add-config", "cordoned.log.dirs=*"}
	out := e.adminFails(t, e.cls.configs, cordonAll...)
	if !strings.Contains(out, "The cordoned.log.dirs configuration value cannot be set because it requires metadata.version >= 4.3-IV0") {
		t.Errorf("kafka-configs cordoned.log.dirs at 4.2-IV1:\n%s", out)
	}
	out = e.admin(t, e.cls.features, "upgrade", "--release-version", "4.3")
	if !strings.Contains(out, "metadata.version was upgraded to 30.") || strings.Contains(out, "Could not") {
		t.Fatalf("kafka-features upgrade --release-version 4.3:\n%s", out)
	}
	e.admin(t, e.cls.configs, cordonAll...)
	out = e.adminFails(t, e.cls.topics, "--create", "--topic", "cli-cordoned", "--partitions", "2")
	if !strings.Contains(out, "All brokers are currently fenced, or have all their log directories cordoned.") {
		t.Errorf("kafka-topics --create with every log dir cordoned:\n%s", out)
	}
	e.admin(t, e.cls.configs, "--alter", "--entity-type", "brokers", "--entity-default", "--delete-config", "cordoned.log.dirs")
	e.admin(t, e.cls.topics, "--create", "--topic", "cli-cordoned", "--partitions", "2")
}
