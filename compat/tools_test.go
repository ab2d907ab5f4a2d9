package compat

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/twmb/franz-go/pkg/kadm"
)

// TestKafkaCLITools runs Kafka's own command-line tools against one gregor
// binary, each as a matrix feature of the "kafka-cli" row: kafka-topics
// (admin), kafka-configs (configs, and client quotas with
// kafka-producer-perf-test held to one: quotas), kafka-console-producer and -consumer
// (produce, consume, and every codec), kafka-consumer-groups (group,
// commit; group-protocol with console consumers of the consumer group
// protocol), kafka-get-offsets and kafka-delete-records (offsets),
// kafka-producer-perf-test and kafka-consumer-perf-test (perf),
// kafka-cluster, kafka-storage info, kafka-broker-api-versions and
// kafka-log-dirs (cluster), kafka-transactions (transactions),
// kafka-delegation-tokens on a SASL broker of its own (delegation-tokens),
// kafka-streams-groups on a broker of its own serving streams groups
// (streams-groups),
// and DumpLogSegments over the files gregor wrote (idempotence, dumplog).
// Every output is parsed and its values checked, most against what
// franz-go reads from the same broker. The features run in order on
// shared topics; dumplog comes last because it stops the broker to read
// its index files.
func TestKafkaCLITools(t *testing.T) {
	tools := kafkaCLI(t)
	dir := t.TempDir()
	// Kafka's own test setups drop the first-rebalance delay too: each
	// console consumer in a group would otherwise wait 3 s to join.
	p := harness.Start(t, dir, "group.initial.rebalance.delay.ms=0")
	e := &cliEnv{cliTools: tools, p: p, dir: dir, adm: newAdmin(t, p.Addr)}
	e.cls.topics = tools.mainClass(t, "org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand")
	e.cls.configs = tools.mainClass(t, "org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")
	e.cls.producer = tools.mainClass(t, "org.apache.kafka.tools.ConsoleProducer", "kafka.tools.ConsoleProducer")
	e.cls.consumer = tools.mainClass(t, "org.apache.kafka.tools.consumer.ConsoleConsumer", "kafka.tools.ConsoleConsumer")
	e.cls.groups = tools.mainClass(t, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "kafka.admin.ConsumerGroupCommand")
	e.cls.offsets = tools.mainClass(t, "org.apache.kafka.tools.GetOffsetShell", "kafka.tools.GetOffsetShell")
	e.cls.deleteRecords = tools.mainClass(t, "org.apache.kafka.tools.DeleteRecordsCommand", "kafka.admin.DeleteRecordsCommand")
	e.cls.producerPerf = tools.mainClass(t, "org.apache.kafka.tools.ProducerPerformance")
	e.cls.consumerPerf = tools.mainClass(t, "org.apache.kafka.tools.ConsumerPerformance")
	e.cls.dump = tools.mainClass(t, "org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")
	e.cls.cluster = tools.mainClass(t, "org.apache.kafka.tools.ClusterTool", "kafka.tools.ClusterTool")
	e.cls.apiVersions = tools.mainClass(t, "org.apache.kafka.tools.BrokerApiVersionsCommand", "kafka.admin.BrokerApiVersionsCommand")
	e.cls.logDirs = tools.mainClass(t, "org.apache.kafka.tools.LogDirsCommand", "kafka.admin.LogDirsCommand")
	e.cls.storage = tools.mainClass(t, "kafka.tools.StorageTool", "org.apache.kafka.tools.StorageTool")
	e.cls.transactions = tools.mainClass(t, "org.apache.kafka.tools.TransactionsCommand")
	e.cls.acls = tools.mainClass(t, "org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand")
	e.cls.quorum = tools.mainClass(t, "org.apache.kafka.tools.MetadataQuorumCommand")
	e.cls.reassign = tools.mainClass(t, "org.apache.kafka.tools.reassign.ReassignPartitionsCommand")
	e.cls.election = tools.mainClass(t, "org.apache.kafka.tools.LeaderElectionCommand")
	e.cls.verifiableProducer = tools.mainClass(t, "org.apache.kafka.tools.VerifiableProducer")
	e.cls.features = tools.mainClass(t, "org.apache.kafka.tools.FeatureCommand")
	e.cls.shareGroups = tools.mainClass(t, "org.apache.kafka.tools.consumer.group.ShareGroupCommand")
	e.cls.shareConsumer = tools.mainClass(t, "org.apache.kafka.tools.consumer.ConsoleShareConsumer")
	e.cls.streamsGroups = tools.mainClass(t, "org.apache.kafka.tools.streams.StreamsGroupCommand")
	e.cls.tokens = tools.mainClass(t, "org.apache.kafka.tools.DelegationTokenCommand", "kafka.admin.DelegationTokenCommand")
	e.cls.clientMetrics = tools.mainClass(t, "org.apache.kafka.tools.ClientMetricsCommand")

	const client = "kafka-cli"
	v := tools.version
	feature(t, client, v, "admin", e.testTopics)
	feature(t, client, v, "configs", e.testConfigs)
	feature(t, client, v, "quotas", e.testQuotas)
	feature(t, client, v, "sasl", e.testSASL)
	feature(t, client, v, "delegation-tokens", e.testDelegationTokens)
	feature(t, client, v, "tls", e.testTLS)
	feature(t, client, v, "oauthbearer", e.testOAuthBearer)
	feature(t, client, v, "acls", e.testACLs)
	feature(t, client, v, "produce", e.testConsoleProduce)
	feature(t, client, v, "consume", e.testConsoleConsume)
	feature(t, client, v, "group", e.testGroups)
	feature(t, client, v, "commit", e.testResetOffsets)
	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
		feature(t, client, v, codec, func(t *testing.T) { e.testCodec(t, codec) })
	}
	feature(t, client, v, "offsets", e.testGetOffsets)
	feature(t, client, v, "perf", e.testPerf)
	feature(t, client, v, "cluster", e.testCluster)
	feature(t, client, v, "idempotence", e.testIdempotence)
	feature(t, client, v, "transactions", e.testTransactions)
	feature(t, client, v, "group-protocol", e.testGroupProtocol)
	feature(t, client, v, "share-groups", e.testShareGroups)
	feature(t, client, v, "streams-groups", e.testStreamsGroups)
	feature(t, client, v, "features", e.testFeatures)
	feature(t, client, v, "quorum", e.testSingleNodeQuorum)
	feature(t, client, v, "dumplog", e.testDumpLog) // last: it stops the broker
}

// cliEnv is the running broker and the tools' main classes.
type cliEnv struct {
	*cliTools
	p   *harness.Process
	dir string // gregor's log dir
	adm *kadm.Client
	cls struct {
		topics, configs, producer, consumer, groups, offsets, deleteRecords,
		producerPerf, consumerPerf, dump, cluster, apiVersions, logDirs, storage, transactions, acls, quorum, reassign, election, verifiableProducer, features,
		shareGroups, shareConsumer, streamsGroups, tokens, clientMetrics string
	}
	console []cliRecord // what testConsoleProduce wrote to cliConsoleTopic, as stored
}

// withOpts is e with JVM options added to every tool's command line, as
// KAFKA_OPTS adds them in Kafka's scripts.
func (e *cliEnv) withOpts(opts ...string) *cliEnv {
	tools := *e.cliTools
	tools.opts = append(slices.Clip(tools.opts), opts...)
	with := *e
	with.cliTools = &tools
	return &with
}

// admin runs an AdminClient-based tool (all take --bootstrap-server).
func (e *cliEnv) admin(t *testing.T, class string, args ...string) string {
	t.Helper()
	return e.run(t, "", class, append([]string{"--bootstrap-server", e.p.Addr}, args...)...)
}

// adminFails runs such a tool where it must fail, and returns its output
// (stdout and stderr).
func (e *cliEnv) adminFails(t *testing.T, class string, args ...string) string {
	t.Helper()
	r := e.try(t, "", class, append([]string{"--bootstrap-server", e.p.Addr}, args...)...)
	if r.err == nil {
		t.Fatalf("%v succeeded, want a failure:\n%s", args, r.stdout)
	}
	return r.stdout + r.stderr
}

// cliTopicLine matches the first line kafka-topics --describe prints per topic.
var cliTopicLine = regexp.MustCompile(`^Topic: (\S+)\s+TopicId: (\S+)\s+PartitionCount: (\d+)\s+ReplicationFactor: (\d+)\s+Configs: ?(.*)$`)

// cliPartitionLine matches its per-partition lines.
var cliPartitionLine = regexp.MustCompile(`^Topic: (\S+)\s+Partition: (\d+)\s+Leader: (\d+)\s+Replicas: (\S+)\s+Isr: (\S+)`)

// cliDescribedTopic is kafka-topics --describe for one topic.
type cliDescribedTopic struct {
	id         string
	partitions int
	rf         int
	configs    string
	leaders    map[int]string // partition -> "leader replicas isr"
}

func (e *cliEnv) describeTopic(t *testing.T, topic string) cliDescribedTopic {
	t.Helper()
	return e.describeTopicAt(t, e.p.Addr, topic)
}

// describeTopicAt runs kafka-topics --describe against the broker at addr.
func (e *cliEnv) describeTopicAt(t *testing.T, addr, topic string) cliDescribedTopic {
	t.Helper()
	out := e.run(t, "", e.cls.topics, "--bootstrap-server", addr, "--describe", "--topic", topic)
	var d cliDescribedTopic
	d.leaders = map[int]string{}
	for _, l := range cliLines(out) {
		if m := cliTopicLine.FindStringSubmatch(l); m != nil && m[1] == topic {
			d.id, d.configs = m[2], m[5]
			fmt.Sscan(m[3], &d.partitions)
			fmt.Sscan(m[4], &d.rf)
		} else if m := cliPartitionLine.FindStringSubmatch(l); m != nil && m[1] == topic {
			var p int
			fmt.Sscan(m[2], &p)
			d.leaders[p] = m[3] + " " + m[4] + " " + m[5]
		} else {
			t.Fatalf("unexpected kafka-topics --describe line %q", l)
		}
	}
	if d.id == "" {
		t.Fatalf("kafka-topics --describe %s printed no topic:\n%s", topic, out)
	}
	return d
}

// testTopics: kafka-topics creates, lists, describes, alters (partitions)
// and deletes a topic; the broker's view is checked through franz-go.
func (e *cliEnv) testTopics(t *testing.T) {
	const topic = "cli-topics"
	out := e.admin(t, e.cls.topics, "--create", "--topic", topic, "--partitions", "2",
		"--replication-factor", "1", "--config", "retention.ms=86400000")
	if strings.TrimSpace(out) != "Created topic "+topic+"." {
		t.Fatalf("create said %q", out)
	}
	out = e.adminFails(t, e.cls.topics, "--create", "--topic", topic, "--partitions", "2")
	if !strings.Contains(out, "TopicExistsException") || !strings.Contains(out, "'"+topic+"' already exists") {
		t.Fatalf("second create failed without TopicExistsException:\n%s", out)
	}
	if out := e.admin(t, e.cls.topics, "--create", "--if-not-exists", "--topic", topic, "--partitions", "2"); strings.TrimSpace(out) != "" {
		t.Fatalf("--if-not-exists on an existing topic said %q", out)
	}
	if !slices.Contains(cliLines(e.admin(t, e.cls.topics, "--list")), topic) {
		t.Fatalf("--list lacks %s", topic)
	}

	d := e.describeTopic(t, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := e.adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	id := md.Topics[topic].ID // Kafka prints ids in URL-safe base64, unpadded
	if want := base64.RawURLEncoding.EncodeToString(id[:]); d.id != want {
		t.Errorf("TopicId %s, franz-go sees %s", d.id, want)
	}
	// min.insync.replicas comes from the cluster-wide value Kafka 4.4's
	// controller writes while eligible leader replicas are on (a new
	// cluster's default), so kafka-topics lists it as Kafka's would.
	if d.partitions != 2 || d.rf != 1 || d.configs != "min.insync.replicas=1,retention.ms=86400000" {
		t.Errorf("described partitions %d, replication factor %d, configs %q", d.partitions, d.rf, d.configs)
	}
	for p := 0; p < 2; p++ {
		if d.leaders[p] != "1 1 1" {
			t.Errorf("partition %d leader/replicas/isr %q, want 1 1 1", p, d.leaders[p])
		}
	}
	if out := e.admin(t, e.cls.topics, "--describe", "--under-replicated-partitions"); strings.TrimSpace(out) != "" {
		t.Errorf("under-replicated partitions on a single node:\n%s", out)
	}

	e.admin(t, e.cls.topics, "--alter", "--topic", topic, "--partitions", "5")
	if d := e.describeTopic(t, topic); d.partitions != 5 || len(d.leaders) != 5 || d.leaders[4] != "1 1 1" {
		t.Errorf("after --alter --partitions 5: %+v", d)
	}
	// Kafka 4's tool describes with DescribeTopicPartitions (its lines
	// carry the ELR fields, which Metadata has not), in pages of the size
	// asked for: two partitions per answer give the same description.
	whole := e.admin(t, e.cls.topics, "--describe", "--topic", topic)
	paged := e.admin(t, e.cls.topics, "--describe", "--topic", topic, "--partition-size-limit-per-response", "2")
	if !strings.Contains(whole, "\tElr: \tLastKnownElr: ") || paged != whole {
		t.Errorf("kafka-topics --describe:\n%s\nin pages of two partitions:\n%s", whole, paged)
	}
	out = e.adminFails(t, e.cls.topics, "--alter", "--topic", topic, "--partitions", "3")
	if !strings.Contains(out, "InvalidPartitionsException") {
		t.Errorf("shrinking partitions failed without InvalidPartitionsException:\n%s", out)
	}

	// The version the tools report is the matrix row's version.
	if v := strings.TrimSpace(e.run(t, "", e.cls.topics, "--version")); !strings.HasPrefix(v, e.version) {
		t.Errorf("kafka-topics --version says %q, pom names %s", v, e.version)
	}

	e.admin(t, e.cls.topics, "--delete", "--topic", topic)
	waitFor(t, "deleted topic to leave --list", 30*time.Second, func() bool {
		return !slices.Contains(cliLines(e.admin(t, e.cls.topics, "--list")), topic)
	})
	out = e.adminFails(t, e.cls.topics, "--describe", "--topic", topic)
	if !strings.Contains(out, "does not exist") {
		t.Errorf("describing a deleted topic:\n%s", out)
	}
}

// cliConfigLine matches an entry of kafka-configs --describe.
var cliConfigLine = regexp.MustCompile(`^(\S+)=(\S*) sensitive=(true|false) synonyms=\{(.*)\}$`)

// describeConfigs runs kafka-configs --describe (with extra args) for a
// topic and returns its entries: key -> "value synonyms".
func (e *cliEnv) describeConfigs(t *testing.T, topic string, extra ...string) map[string]string {
	t.Helper()
	out := e.admin(t, e.cls.configs, append([]string{"--entity-type", "topics", "--entity-name", topic, "--describe"}, extra...)...)
	ls := cliLines(out)
	if len(ls) == 0 || !strings.HasSuffix(ls[0], "configs for topic "+topic+" are:") {
		t.Fatalf("kafka-configs --describe:\n%s", out)
	}
	got := map[string]string{}
	for _, l := range ls[1:] {
		m := cliConfigLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("unexpected kafka-configs line %q", l)
		}
		got[m[1]] = m[2] + " " + m[4]
	}
	return got
}

// testConfigs: kafka-configs describes a topic's dynamic configs, adds
// two, deletes one, refuses a bad value, and lists all configs with
// their defaults; kafka-topics --describe shows the overrides too. It
// sets, describes and refuses a consumer group's config the same way.
func (e *cliEnv) testConfigs(t *testing.T) {
	const topic = "cli-configs"
	e.createTopic(t, topic, 1)
	if got := e.describeConfigs(t, topic); len(got) != 0 {
		t.Fatalf("new topic has dynamic configs %v", got)
	}
	out := e.admin(t, e.cls.configs, "--entity-type", "topics", "--entity-name", topic,
		"--alter", "--add-config", "retention.ms=3600000,cleanup.policy=compact")
	if strings.TrimSpace(out) != "Completed updating config for topic "+topic+"." {
		t.Fatalf("alter said %q", out)
	}
	got := e.describeConfigs(t, topic)
	want := map[string]string{
		"retention.ms":   "3600000 DYNAMIC_TOPIC_CONFIG:retention.ms=3600000",
		"cleanup.policy": "compact DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, DEFAULT_CONFIG:log.cleanup.policy=delete",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after --add-config:\n got %v\nwant %v", got, want)
	}
	if d := e.describeTopic(t, topic); d.configs != "min.insync.replicas=1,cleanup.policy=compact,retention.ms=3600000" {
		t.Errorf("kafka-topics --describe shows configs %q", d.configs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := e.adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc[0].Configs {
		if c.Key == "retention.ms" && (c.Value == nil || *c.Value != "3600000") {
			t.Errorf("franz-go sees retention.ms %v", c.MaybeValue())
		}
	}

	out = e.adminFails(t, e.cls.configs, "--entity-type", "topics", "--entity-name", topic,
		"--alter", "--add-config", "retention.ms=soon")
	if !strings.Contains(out, "InvalidConfigurationException") {
		t.Errorf("a bad value failed without InvalidConfigurationException:\n%s", out)
	}

	e.admin(t, e.cls.configs, "--entity-type", "topics", "--entity-name", topic, "--alter", "--delete-config", "retention.ms")
	got = e.describeConfigs(t, topic)
	if _, ok := got["retention.ms"]; ok || len(got) != 1 {
		t.Errorf("after --delete-config retention.ms: %v", got)
	}
	all := e.describeConfigs(t, topic, "--all")
	for key, value := range map[string]string{
		"retention.ms": "604800000", "cleanup.policy": "compact", "segment.bytes": "1073741824",
		"max.message.bytes": "1048588", "min.insync.replicas": "1", "compression.type": "producer",
	} {
		if v, _, _ := strings.Cut(all[key], " "); v != value {
			t.Errorf("--all: %s=%q, want %s", key, all[key], value)
		}
	}
	if len(all) < 20 {
		t.Errorf("--all lists only %d configs", len(all))
	}

	// A consumer group's own configs (KIP-848), which need no group.
	const group = "cli-configs-g"
	out = e.admin(t, e.cls.configs, "--entity-type", "groups", "--entity-name", group, "--alter", "--add-config", "consumer.session.timeout.ms=50000")
	if strings.TrimSpace(out) != "Completed updating config for group "+group+"." {
		t.Errorf("group alter said %q", out)
	}
	// The broker key's value follows as a synonym (KAFKA-20289).
	out = e.admin(t, e.cls.configs, "--entity-type", "groups", "--entity-name", group, "--describe")
	if ls := cliLines(out); len(ls) != 2 || !strings.HasSuffix(ls[0], "configs for group "+group+" are:") ||
		ls[1] != "consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}" {
		t.Errorf("group configs described:\n%s", out)
	}
	// Every group's, listed by ListConfigResources though the group does
	// not exist (KIP-1142).
	out = e.admin(t, e.cls.configs, "--entity-type", "groups", "--describe")
	if !strings.Contains(out, "configs for group "+group+" are:\n  consumer.session.timeout.ms=50000 ") {
		t.Errorf("the configs of every group:\n%s", out)
	}
	out = e.adminFails(t, e.cls.configs, "--entity-type", "groups", "--entity-name", group, "--alter", "--add-config", "consumer.session.timeout.ms=1000")
	if !strings.Contains(out, "InvalidConfigurationException") || !strings.Contains(out, "group.consumer.min.session.timeout.ms") {
		t.Errorf("a session under the broker's minimum failed without InvalidConfigurationException naming it:\n%s", out)
	}

	// A client metrics subscription (KIP-714), as kafka-client-metrics
	// and kafka-configs --entity-type client-metrics keep and show it.
	out = e.admin(t, e.cls.clientMetrics, "--alter", "--name", "cli-metrics", "--metrics", "org.apache.kafka.producer.",
		"--interval", "5000", "--match", "client_software_name=apache-kafka-java")
	if strings.TrimSpace(out) != "Altered client metrics config for cli-metrics." {
		t.Errorf("kafka-client-metrics --alter said %q", out)
	}
	if out = e.admin(t, e.cls.clientMetrics, "--list"); !slices.Contains(cliLines(out), "cli-metrics") {
		t.Errorf("kafka-client-metrics --list:\n%s", out)
	}
	out = e.admin(t, e.cls.clientMetrics, "--describe", "--name", "cli-metrics")
	if want := []string{"Client metrics configs for cli-metrics are:", "interval.ms=5000",
		"match=client_software_name=apache-kafka-java", "metrics=org.apache.kafka.producer."}; !slices.Equal(cliLines(out), want) {
		t.Errorf("kafka-client-metrics --describe:\n%s\nwant the lines %q", out, want)
	}
	out = e.admin(t, e.cls.configs, "--entity-type", "client-metrics", "--entity-name", "cli-metrics", "--describe")
	if !strings.Contains(out, "interval.ms=5000 sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:interval.ms=5000}") {
		t.Errorf("kafka-configs --entity-type client-metrics --describe:\n%s", out)
	}
	out = e.adminFails(t, e.cls.clientMetrics, "--alter", "--name", "cli-metrics", "--interval", "50")
	if !strings.Contains(out, "interval must be between 100 and 3600000") {
		t.Errorf("an interval of 50 ms was not refused with Kafka's message:\n%s", out)
	}
	e.admin(t, e.cls.clientMetrics, "--delete", "--name", "cli-metrics")
	if out = e.admin(t, e.cls.clientMetrics, "--list"); slices.Contains(cliLines(out), "cli-metrics") {
		t.Errorf("kafka-client-metrics --list after --delete:\n%s", out)
	}

	// The broker's loggers and their levels, changed at runtime.
	loggers := func() string {
		return e.admin(t, e.cls.configs, "--entity-type", "broker-loggers", "--entity-name", "1", "--describe")
	}
	if out = loggers(); !strings.Contains(out, "root=INFO sensitive=false") || !strings.Contains(out, "org.apache.kafka.coordinator.group=INFO ") ||
		!strings.Contains(out, "kafka.log.LogManager=INFO ") || !strings.Contains(out, "org.apache.kafka.storage.internals.log.LogCleaner=INFO ") {
		t.Errorf("broker-loggers described:\n%s", out)
	}
	// Kafka's logger names, and log4j's inheritance: a level on kafka
	// reaches kafka.coordinator.transaction, which has none of its own.
	e.admin(t, e.cls.configs, "--entity-type", "broker-loggers", "--entity-name", "1", "--alter", "--add-config", "kafka=DEBUG")
	if out = loggers(); !strings.Contains(out, "kafka=DEBUG ") || !strings.Contains(out, "kafka.coordinator.transaction=DEBUG ") ||
		!strings.Contains(out, "kafka.log.LogManager=DEBUG ") || !strings.Contains(out, "org.apache.kafka.storage.internals.log.LogCleaner=INFO ") ||
		!strings.Contains(out, "org.apache.kafka.coordinator.group=INFO ") || !strings.Contains(out, "root=INFO ") {
		t.Errorf("broker-loggers after kafka=DEBUG:\n%s", out)
	}
	e.admin(t, e.cls.configs, "--entity-type", "broker-loggers", "--entity-name", "1", "--alter", "--delete-config", "kafka")
	if out = loggers(); !strings.Contains(out, "kafka.coordinator.transaction=INFO ") {
		t.Errorf("broker-loggers after --delete-config kafka:\n%s", out)
	}
	out = e.adminFails(t, e.cls.configs, "--entity-type", "broker-loggers", "--entity-name", "1", "--alter", "--add-config", "root=LOUD")
	if !strings.Contains(out, "Valid log levels are DEBUG,ERROR,FATAL,INFO,TRACE,WARN") {
		t.Errorf("root=LOUD was not refused with Kafka's message:\n%s", out)
	}

	// The broker's own configs, as kafka-configs shows them.
	out = e.admin(t, e.cls.configs, "--entity-type", "brokers", "--entity-name", "1", "--describe", "--all")
	if !strings.Contains(out, "All configs for broker 1 are:") || !strings.Contains(out, "log.segment.bytes=1073741824 ") {
		t.Errorf("broker configs:\n%.2000s", out)
	}
}
