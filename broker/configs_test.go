package broker

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// topicConfigCases holds, for every topic config, a valid value other than
// the default and a value Kafka refuses.
var topicConfigCases = map[string][2]string{
	"cleanup.policy":                          {"compact,delete", "forever"},
	"compression.gzip.level":                  {"5", "10"},
	"compression.lz4.level":                   {"12", "0"},
	"compression.type":                        {"zstd", "brotli"},
	"compression.zstd.level":                  {"-3", "23"},
	"errors.deadletterqueue.group.enable":     {"true", "x"},
	"delete.retention.ms":                     {"1000", "-1"},
	"file.delete.delay.ms":                    {"10", "soon"},
	"flush.messages":                          {"100", "0"},
	"flush.ms":                                {"5000", "-1"},
	"follower.replication.throttled.replicas": {"0:1", "oops"},
	"index.interval.bytes":                    {"1024", "-1"},
	"leader.replication.throttled.replicas":   {"*", "a:b"},
	"local.retention.bytes":                   {"1000", "-3"},
	"local.retention.ms":                      {"1000", "-3"},
	"max.compaction.lag.ms":                   {"100000", "0"},
	"max.decompressed.message.bytes":          {"100", "0"},
	"max.message.bytes":                       {"2000000", "-1"},
	"message.timestamp.after.max.ms":          {"1000", "-1"},
	"message.timestamp.before.max.ms":         {"1000", "-1"},
	"message.timestamp.type":                  {"LogAppendTime", "Now"},
	"min.cleanable.dirty.ratio":               {"0.2", "1.5"},
	"min.compaction.lag.ms":                   {"10", "-1"},
	"min.insync.replicas":                     {"2", "0"},
	"preallocate":                             {"true", "maybe"},
	"remote.copy.lag.bytes":                   {"1048576", "-2"},
	"remote.copy.lag.ms":                      {"60000", "-2"},
	"remote.log.copy.disable":                 {"true", "x"},
	"remote.log.delete.on.disable":            {"true", "x"},
	"remote.storage.enable":                   {"false", "true"}, // tiered storage is off in Gregor
	"retention.bytes":                         {"1048576", "lots"},
	"retention.ms":                            {"3600000", "-2"},
	"segment.bytes":                           {"1048576", "13"},
	"segment.index.bytes":                     {"4096", "3"},
	"segment.jitter.ms":                       {"10", "-1"},
	"segment.ms":                              {"60000", "0"},
	"unclean.leader.election.enable":          {"true", "x"},
}

func describedTopic(t *testing.T, adm *kadm.Client, topic string) map[string]*kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	out := map[string]*kadm.Config{}
	for i := range rc.Configs {
		out[rc.Configs[i].Key] = &rc.Configs[i]
	}
	return out
}

func alterTopic(t *testing.T, adm *kadm.Client, topic string, op kadm.IncrementalOp, name, value string) kadm.AlterConfigsResponse {
	t.Helper()
	resps, err := adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Op: op, Name: name, Value: kmsg.StringPtr(value)}}, topic)
	if err != nil || len(resps) != 1 {
		t.Fatalf("alter %s=%s: %v %v", name, value, err, resps)
	}
	return resps[0]
}

func TestEveryTopicConfigAlteredAndDescribedWithKadm(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "cfg"); err != nil {
		t.Fatal(err)
	}
	described := describedTopic(t, adm, "cfg")
	if len(described) != len(topicConfigKeys) || len(topicConfigCases) != len(topicConfigKeys) {
		t.Fatalf("described %d configs, table has %d, cases %d", len(described), len(topicConfigKeys), len(topicConfigCases))
	}
	// min.insync.replicas comes from the cluster-wide value that Kafka's
	// controller writes when eligible leader replicas are on (the
	// default); every other key from its default.
	sourceBefore := func(name string) kmsg.ConfigSource {
		if name == "min.insync.replicas" {
			return kmsg.ConfigSourceDynamicDefaultBrokerConfig
		}
		return kmsg.ConfigSourceDefaultConfig
	}
	for _, key := range topicConfigKeys {
		c, ok := topicConfigCases[key.name]
		if !ok {
			t.Fatalf("no test case for %s", key.name)
		}
		if d := described[key.name]; d.Source != sourceBefore(key.name) || d.MaybeValue() != key.def {
			t.Errorf("%s before: %s from source %v, want %s from %v", key.name, d.MaybeValue(), d.Source, key.def, sourceBefore(key.name))
		}
		bad := alterTopic(t, adm, "cfg", kadm.SetConfig, key.name, c[1])
		if !errors.Is(bad.Err, kerr.InvalidConfig) || !strings.Contains(bad.ErrMessage, key.name) && !strings.Contains(bad.ErrMessage, "Tiered Storage") {
			t.Errorf("%s=%s: %v %q, want INVALID_CONFIG naming the key", key.name, c[1], bad.Err, bad.ErrMessage)
		}
		if good := alterTopic(t, adm, "cfg", kadm.SetConfig, key.name, c[0]); good.Err != nil {
			t.Errorf("%s=%s: %v %s", key.name, c[0], good.Err, good.ErrMessage)
		}
	}
	described = describedTopic(t, adm, "cfg")
	for name, c := range topicConfigCases {
		if d := described[name]; d.MaybeValue() != c[0] || d.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("%s after: %s from %v, want %s from the topic", name, d.MaybeValue(), d.Source, c[0])
		}
	}
	// The live settings follow at once.
	s := b.topics.get("cfg").settings.Load()
	if s.maxMessageBytes != 2000000 || !s.logAppendTime || s.codec != 4 || s.level != -3 || !s.compact ||
		s.log.SegmentBytes != 1048576 || s.log.RetentionMs != 3600000 || s.log.RetentionBytes != 1048576 || !s.log.Delete {
		t.Fatalf("settings: %+v", s)
	}
	if got := b.topics.get("cfg").partitions()[0].log.Config(); got.SegmentIndexBytes != 4096 || got.MinCleanableDirtyRatio != 0.2 {
		t.Fatalf("log config: %+v", got)
	}
	// DELETE returns every key to its default.
	for name := range topicConfigCases {
		if r := alterTopic(t, adm, "cfg", kadm.DeleteConfig, name, ""); r.Err != nil {
			t.Fatalf("delete %s: %v", name, r.Err)
		}
	}
	for name, d := range describedTopic(t, adm, "cfg") {
		if d.Source != sourceBefore(name) {
			t.Errorf("%s after delete: source %v", name, d.Source)
		}
	}
	if b.meta.topicConfigs("cfg") != nil {
		t.Fatalf("overrides left: %v", b.meta.topicConfigs("cfg"))
	}
	// APPEND and SUBTRACT work on the LIST config cleanup.policy, from its default.
	alterTopic(t, adm, "cfg", kadm.AppendConfig, "cleanup.policy", "compact")
	if v := describedTopic(t, adm, "cfg")["cleanup.policy"].MaybeValue(); v != "delete,compact" {
		t.Fatalf("after APPEND: %s", v)
	}
	alterTopic(t, adm, "cfg", kadm.SubtractConfig, "cleanup.policy", "delete")
	if v := describedTopic(t, adm, "cfg")["cleanup.policy"].MaybeValue(); v != "compact" {
		t.Fatalf("after SUBTRACT: %s", v)
	}
	if r := alterTopic(t, adm, "cfg", kadm.AppendConfig, "retention.ms", "5"); !errors.Is(r.Err, kerr.InvalidConfig) ||
		r.ErrMessage != "Can't APPEND to key retention.ms because its type is not LIST." {
		t.Fatalf("APPEND to a LONG: %v %q", r.Err, r.ErrMessage)
	}
	if r := alterTopic(t, adm, "no-such-topic", kadm.SetConfig, "retention.ms", "5"); !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %v", r.Err)
	}
	if r := alterTopic(t, adm, "cfg", kadm.SetConfig, "no.such.config", "5"); !errors.Is(r.Err, kerr.InvalidConfig) || r.ErrMessage != "Unknown topic config name: no.such.config" {
		t.Fatalf("unknown config: %v %q", r.Err, r.ErrMessage)
	}
	// Kafka's cross-key check.
	alterTopic(t, adm, "cfg", kadm.SetConfig, "max.compaction.lag.ms", "100")
	if r := alterTopic(t, adm, "cfg", kadm.SetConfig, "min.compaction.lag.ms", "200"); !errors.Is(r.Err, kerr.InvalidConfig) || !strings.Contains(r.ErrMessage, "min.compaction.lag.ms (200) > max.compaction.lag.ms (100)") {
		t.Fatalf("min > max lag: %v %q", r.Err, r.ErrMessage)
	}
}

// AlterTopicConfigsState (AlterConfigs) replaces the whole override set;
// validate-only changes nothing; overrides survive a restart.
func TestAlterConfigsReplacesAndPersists(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir}
	b := startBrokerWith(t, props)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("1000"), "segment.ms": kmsg.StringPtr("2000")}, "state"); err != nil {
		t.Fatal(err)
	}
	set := []kadm.AlterConfig{{Name: "segment.ms", Value: kmsg.StringPtr("3000")}}
	if _, err := adm.ValidateAlterTopicConfigsState(ctxT(t), set, "state"); err != nil {
		t.Fatal(err)
	}
	if got := b.meta.topicConfigs("state"); got["retention.ms"] != "1000" || got["segment.ms"] != "2000" {
		t.Fatalf("validate-only changed the overrides: %v", got)
	}
	resps, err := adm.AlterTopicConfigsState(ctxT(t), set, "state")
	if err != nil || resps[0].Err != nil {
		t.Fatalf("%v %v", err, resps)
	}
	d := describedTopic(t, adm, "state")
	if d["retention.ms"].Source != kmsg.ConfigSourceDefaultConfig || d["segment.ms"].MaybeValue() != "3000" {
		t.Fatalf("after replace: retention.ms %+v, segment.ms %+v", d["retention.ms"], d["segment.ms"])
	}
	if got := b.topics.get("state").partitions()[0].log.Config(); got.SegmentMs != 3000 || got.RetentionMs != 604800000 {
		t.Fatalf("log config: segment.ms %d retention.ms %d", got.SegmentMs, got.RetentionMs)
	}
	b.Close()
	b = startBrokerWith(t, props)
	d = describedTopic(t, newAdmin(t, b), "state")
	if d["segment.ms"].MaybeValue() != "3000" || d["segment.ms"].Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("after restart: %+v", d["segment.ms"])
	}
}

func describedBroker(t *testing.T, adm *kadm.Client, brokers ...int32) map[string]*kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeBrokerConfigs(ctxT(t), brokers...)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe brokers %v: %v %+v", brokers, err, rcs)
	}
	out := map[string]*kadm.Config{}
	for i := range rcs[0].Configs {
		out[rcs[0].Configs[i].Key] = &rcs[0].Configs[i]
	}
	return out
}

func alterBroker(t *testing.T, adm *kadm.Client, op kadm.IncrementalOp, name, value string, brokers ...int32) kadm.AlterConfigsResponse {
	t.Helper()
	resps, err := adm.AlterBrokerConfigs(ctxT(t), []kadm.AlterConfig{{Op: op, Name: name, Value: kmsg.StringPtr(value)}}, brokers...)
	if err != nil || len(resps) != 1 {
		t.Fatalf("alter broker %s=%s: %v %v", name, value, err, resps)
	}
	return resps[0]
}

// synonymsText renders synonyms as SOURCE:name=value for comparisons.
func synonymsText(c *kadm.Config) string {
	var parts []string
	for _, s := range c.Synonyms {
		parts = append(parts, s.Source.String()+":"+s.Key+"="+*s.Value)
	}
	return strings.Join(parts, " ")
}

// Dynamic broker configs, per broker and cluster-wide, are described with
// Kafka's sources and synonym order, flow into topic defaults at once,
// survive a restart, and static keys cannot be altered.
func TestBrokerConfigsDynamicLayers(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir, "log.retention.hours": "2"}
	b := startBrokerWith(t, props)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "layers"); err != nil {
		t.Fatal(err)
	}
	hours := describedBroker(t, adm, 1)["log.retention.hours"]
	if hours.MaybeValue() != "2" || hours.Source != kmsg.ConfigSourceStaticBrokerConfig ||
		synonymsText(hours) != "STATIC_BROKER_CONFIG:log.retention.hours=2 DEFAULT_CONFIG:log.retention.hours=168" {
		t.Fatalf("log.retention.hours: %s %v [%s]", hours.MaybeValue(), hours.Source, synonymsText(hours))
	}
	// As in Kafka: only log.retention.hours is set, and retention.ms lists
	// no synonym (Kafka drops those before log.retention.ms).
	if r := describedTopic(t, adm, "layers")["retention.ms"]; r.MaybeValue() != "7200000" || r.Source != kmsg.ConfigSourceDefaultConfig || len(r.Synonyms) != 0 {
		t.Fatalf("retention.ms: %s %v [%s]", r.MaybeValue(), r.Source, synonymsText(r))
	}
	if r := alterBroker(t, adm, kadm.SetConfig, "log.retention.ms", "5000"); r.Err != nil {
		t.Fatalf("cluster-wide: %v %s", r.Err, r.ErrMessage)
	}
	r := describedTopic(t, adm, "layers")["retention.ms"]
	if r.MaybeValue() != "5000" || r.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig ||
		synonymsText(r) != "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5000 STATIC_BROKER_CONFIG:log.retention.hours=2 DEFAULT_CONFIG:log.retention.hours=168" {
		t.Fatalf("retention.ms, cluster default: %s %v [%s]", r.MaybeValue(), r.Source, synonymsText(r))
	}
	if r := alterBroker(t, adm, kadm.SetConfig, "log.retention.ms", "6000", 1); r.Err != nil {
		t.Fatalf("per broker: %v %s", r.Err, r.ErrMessage)
	}
	r = describedTopic(t, adm, "layers")["retention.ms"]
	if r.MaybeValue() != "6000" || r.Source != kmsg.ConfigSourceDynamicBrokerConfig ||
		synonymsText(r) != "DYNAMIC_BROKER_CONFIG:log.retention.ms=6000 DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5000 STATIC_BROKER_CONFIG:log.retention.hours=2 DEFAULT_CONFIG:log.retention.hours=168" {
		t.Fatalf("retention.ms, per broker: %s %v [%s]", r.MaybeValue(), r.Source, synonymsText(r))
	}
	if got := b.topics.get("layers").partitions()[0].log.Config().RetentionMs; got != 6000 {
		t.Fatalf("live log retention %d", got)
	}
	// The cluster-wide layer: this key, and min.insync.replicas, which
	// Kafka's controller writes when eligible leader replicas are on.
	cluster := describedBroker(t, adm)
	if len(cluster) != 2 || cluster["log.retention.ms"].MaybeValue() != "5000" || cluster["log.retention.ms"].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig ||
		cluster["min.insync.replicas"] == nil {
		t.Fatalf("cluster-wide describe: %+v", cluster)
	}
	// Static keys and bad values are refused as Kafka refuses them.
	if r := alterBroker(t, adm, kadm.SetConfig, "num.partitions", "3", 1); !errors.Is(r.Err, kerr.InvalidRequest) || r.ErrMessage != "Cannot update these configs dynamically: Set(num.partitions)" {
		t.Fatalf("static key: %v %q", r.Err, r.ErrMessage)
	}
	if r := alterBroker(t, adm, kadm.SetConfig, "log.retention.ms", "soon", 1); !errors.Is(r.Err, kerr.InvalidRequest) || !strings.Contains(r.ErrMessage, "log.retention.ms") {
		t.Fatalf("bad value: %v %q", r.Err, r.ErrMessage)
	}
	// A value its key takes but Kafka's start-up checks refuse.
	if r := alterBroker(t, adm, kadm.SetConfig, "log.retention.ms", "0", 1); !errors.Is(r.Err, kerr.InvalidRequest) ||
		!strings.Contains(r.ErrMessage, "log.retention.ms must be unlimited (-1) or, greater than or equal to 1") {
		t.Fatalf("retention 0: %v %q", r.Err, r.ErrMessage)
	}
	// message.max.bytes applies to produce at once.
	rc := dialRaw(t, b)
	if r := alterBroker(t, adm, kadm.SetConfig, "message.max.bytes", "200", 1); r.Err != nil {
		t.Fatal(r.Err)
	}
	if p := produceRaw(t, rc, 9, "layers", [16]byte{}, 0, testBatch(20, "value", -1, -1, -1, 0)); p.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("produce above dynamic message.max.bytes: error %d", p.ErrorCode)
	}
	// The dynamic layers survive a restart.
	b.Close()
	b = startBrokerWith(t, props)
	adm = newAdmin(t, b)
	if r := describedTopic(t, adm, "layers")["retention.ms"]; r.MaybeValue() != "6000" || r.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("after restart: %s %v", r.MaybeValue(), r.Source)
	}
	// DELETE falls back to the cluster-wide value.
	alterBroker(t, adm, kadm.DeleteConfig, "log.retention.ms", "", 1)
	if got := b.topics.get("layers").partitions()[0].log.Config().RetentionMs; got != 5000 {
		t.Fatalf("after delete: live log retention %d", got)
	}
	// A stored value a later rule refuses (as one set before the rule
	// was) leaves the dynamic layers out at the next start and stops
	// nothing; AlterConfigs can then fix it.
	if err := b.meta.update(func(d *metaData) { d.BrokerConfigs = map[string]string{"log.retention.ms": "0"} }); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b = startBrokerWith(t, props)
	adm = newAdmin(t, b)
	if got := b.topics.get("layers").partitions()[0].log.Config().RetentionMs; got != 2*3600*1000 {
		t.Fatalf("with an invalid stored config: live log retention %d, want the static 2 hours", got)
	}
	if r := alterBroker(t, adm, kadm.SetConfig, "log.retention.ms", "7000", 1); r.Err != nil {
		t.Fatalf("replacing the invalid stored config: %v %s", r.Err, r.ErrMessage)
	}
	if got := b.topics.get("layers").partitions()[0].log.Config().RetentionMs; got != 7000 {
		t.Fatalf("after replacing it: live log retention %d", got)
	}
}

// A topic config change acts on the next request: produce limits, segment
// rolls, and the codec batches are stored with.
func TestTopicConfigChangesApplyAtOnce(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "live"); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, b)
	batch := func() []byte { return testBatch(10, "a-value-of-some-length", -1, -1, -1, 0) }
	if p := produceRaw(t, rc, 9, "live", [16]byte{}, 0, batch()); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	alterTopic(t, adm, "live", kadm.SetConfig, "max.message.bytes", "100")
	if p := produceRaw(t, rc, 9, "live", [16]byte{}, 0, batch()); p.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("produce above max.message.bytes: error %d", p.ErrorCode)
	}
	alterTopic(t, adm, "live", kadm.DeleteConfig, "max.message.bytes", "")
	alterTopic(t, adm, "live", kadm.SetConfig, "segment.bytes", "1024")
	for i := 0; i < 20; i++ {
		if p := produceRaw(t, rc, 9, "live", [16]byte{}, 0, batch()); p.ErrorCode != 0 {
			t.Fatalf("produce %d: %d", i, p.ErrorCode)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(b.cfg.LogDirs[0], "live-0", "*.log"))
	if len(logs) < 5 {
		t.Fatalf("%d segments after segment.bytes=1024", len(logs))
	}
	// A kgo producer's keyless records on a topic altered to compact fail.
	alterTopic(t, adm, "live", kadm.SetConfig, "cleanup.policy", "compact")
	cl := newClient(t, b, kgo.DefaultProduceTopic("live"))
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("no key")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless on compact: %v", err)
	}
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Key: []byte("k"), Value: []byte("keyed")}).FirstErr(); err != nil {
		t.Fatalf("keyed on compact: %v", err)
	}
}

// Kafka's precedence among broker synonyms: ms > minutes > hours, with
// unit conversion, and negative values meaning unlimited.
func TestBrokerSynonymPrecedence(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		want  int64
	}{
		{map[string]string{}, 7 * 24 * 3600 * 1000},
		{map[string]string{"log.retention.hours": "1"}, 3600 * 1000},
		{map[string]string{"log.retention.hours": "1", "log.retention.minutes": "30"}, 30 * 60 * 1000},
		{map[string]string{"log.retention.hours": "1", "log.retention.minutes": "30", "log.retention.ms": "1000"}, 1000},
		{map[string]string{"log.retention.ms": "-1"}, -1},
		{map[string]string{"log.retention.hours": "-1"}, -1},
	} {
		cfg, _, err := ParseConfig(c.props)
		if err != nil {
			t.Fatal(err)
		}
		if s := cfg.settingsFor(nil); s.log.RetentionMs != c.want || cfg.Log.RetentionMs != c.want {
			t.Errorf("%v: retention %d (dir default %d), want %d", c.props, s.log.RetentionMs, cfg.Log.RetentionMs, c.want)
		}
	}
	cfg, _, err := ParseConfig(map[string]string{"log.roll.jitter.hours": "2", "log.cleanup.policy": "compact", "compression.type": "lz4", "compression.lz4.level": "3"})
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.settingsFor(map[string]string{"retention.bytes": "100"})
	if s.log.RetentionBytes != 100 || !s.log.Compact || s.log.Delete || !s.compact || s.codec != 3 || s.level != 3 ||
		cfg.topicValue(nil, "segment.jitter.ms") != "7200000" || s.log.SegmentJitterMs != 7200000 {
		t.Fatalf("settings %+v", s)
	}
	if s := cfg.settingsFor(map[string]string{"segment.jitter.ms": "500"}); s.log.SegmentJitterMs != 500 {
		t.Fatalf("segment.jitter.ms override: %d", s.log.SegmentJitterMs)
	}
	for key, bad := range map[string]string{"log.retention.ms": "soon", "log.cleanup.policy": "keep", "compression.type": "brotli", "log.cleaner.min.cleanable.ratio": "2"} {
		if _, _, err := ParseConfig(map[string]string{key: bad}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: %v", key, bad, err)
		}
	}
}

// Listener-prefixed keys are described with the broker's, as Kafka lists
// them: a listener's connection limit set for this broker or cluster-wide
// with its source and alterable, a listener's JAAS entry from the
// properties hidden as a password and read-only; the cluster-wide
// resource lists only what is set there.
func TestDescribeListenerPrefixedKeys(t *testing.T) {
	b := startBrokerWith(t, saslProps(t.TempDir()))
	cl := newClient(t, b, kgo.SeedBrokers(listenerAddr(t, b, "PLAINTEXT")))
	adm := kadm.NewClient(cl)
	if r := alterBroker(t, adm, kadm.SetConfig, "listener.name.plaintext.max.connections", "10", 1); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := alterBroker(t, adm, kadm.SetConfig, "listener.name.plaintext.max.connection.creation.rate", "5"); r.Err != nil {
		t.Fatal(r.Err)
	}
	jaas := "listener.name.sasl_plaintext.plain.sasl.jaas.config"
	got := map[string]string{}
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"}}
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil || len(resp.Resources) != 1 {
		t.Fatalf("describe broker 1: %v %+v", err, resp)
	}
	for _, c := range resp.Resources[0].Configs {
		if strings.HasPrefix(c.Name, "listener.name.") {
			value := "null"
			if c.Value != nil {
				value = *c.Value
			}
			got[c.Name] = fmt.Sprintf("%s %v sensitive=%v readOnly=%v", value, c.Source, c.IsSensitive, c.ReadOnly)
		}
	}
	want := map[string]string{
		"listener.name.plaintext.max.connections":              "10 DYNAMIC_BROKER_CONFIG sensitive=false readOnly=false",
		"listener.name.plaintext.max.connection.creation.rate": "5 DYNAMIC_DEFAULT_BROKER_CONFIG sensitive=false readOnly=false",
		jaas: "null STATIC_BROKER_CONFIG sensitive=true readOnly=true",
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": "null STATIC_BROKER_CONFIG sensitive=true readOnly=true",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("listener keys described\n%v\nwant\n%v", got, want)
	}
	// The cluster-wide layer: the listener key, and min.insync.replicas,
	// which Kafka's controller writes while eligible leader replicas are on.
	cluster, err := adm.DescribeBrokerConfigs(ctxT(t))
	if err != nil || len(cluster) != 1 {
		t.Fatalf("cluster-wide broker configs: %v %+v", err, cluster)
	}
	var keys []string
	for _, c := range cluster[0].Configs {
		keys = append(keys, c.Key)
	}
	if slices.Sort(keys); !slices.Equal(keys, []string{"listener.name.plaintext.max.connection.creation.rate", "min.insync.replicas"}) {
		t.Fatalf("cluster-wide broker configs: %v", keys)
	}
}

// TestAlterConfigRefusalsOfKafkasController: with eligible leader
// replicas on (a new node's default), one broker may not have its own
// min.insync.replicas, on a single node as in Kafka's combined mode; and a
// value longer than a metadata record's string is refused for any
// resource, both in Kafka 4.4's words.
func TestAlterConfigRefusalsOfKafkasController(t *testing.T) {
	b := startBrokerWith(t, map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(), "min.insync.replicas": "1"})
	cl := newClient(t, b)
	node := strconv.Itoa(int(b.cfg.NodeID))
	// As Kafka's controller at a new cluster's first start: the cluster's
	// min.insync.replicas, from the static one.
	if c := describedConfigsOf(t, cl, kmsg.ConfigResourceTypeBroker, "")["min.insync.replicas"]; c.value() != "1" ||
		c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("the cluster's min.insync.replicas at the first start: %s from %v", c.value(), c.Source)
	}
	if code, msg := alterConfigsOf(t, cl, kmsg.ConfigResourceTypeBroker, node, setOp("min.insync.replicas", "2")); code != errInvalidConfig ||
		msg != "Broker-level min.insync.replicas cannot be altered while ELR is enabled." {
		t.Errorf("min.insync.replicas for broker %s: %d %q", node, code, msg)
	}
	del := kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "min.insync.replicas", Op: kmsg.IncrementalAlterConfigOpDelete}
	if code, msg := alterConfigsOf(t, cl, kmsg.ConfigResourceTypeBroker, "", del); code != errInvalidConfig ||
		msg != "Cluster-level min.insync.replicas cannot be removed while ELR is enabled." {
		t.Errorf("removing the cluster's min.insync.replicas: %d %q", code, msg)
	}

	// With ELR off a broker may have its own; turning it on removes it.
	rc := dialAddr(t, b.Addr())
	if r := updateFeature(t, rc, "eligible.leader.replicas.version", 0, 2); r.ErrorCode != 0 {
		t.Fatalf("ELR off: %+v", r)
	}
	if code, msg := alterConfigsOf(t, cl, kmsg.ConfigResourceTypeBroker, node, setOp("min.insync.replicas", "3")); code != 0 {
		t.Fatalf("min.insync.replicas for broker %s with ELR off: %d %q", node, code, msg)
	}
	if r := updateFeature(t, rc, "eligible.leader.replicas.version", 1, 1); r.ErrorCode != 0 {
		t.Fatalf("ELR on: %+v", r)
	}
	if c := describedConfigsOf(t, cl, kmsg.ConfigResourceTypeBroker, node)["min.insync.replicas"]; c.value() != "1" ||
		c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("broker %s's min.insync.replicas after ELR came on: %s from %v, want the cluster's 1", node, c.value(), c.Source)
	}

	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 1, 1, nil, "long"); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 32768)
	const tooLong = "The configuration value cannot be added because it exceeds the maximum value size of 32767 bytes."
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "long"}, {kmsg.ConfigResourceTypeBroker, ""}, {kmsg.ConfigResourceTypeGroupConfig, "g"}} {
		if code, msg := alterConfigsOf(t, cl, r.typ, r.name, setOp("message.downconversion.enable", long)); code != errInvalidConfig || msg != tooLong {
			t.Errorf("a value of 32768 characters for %v %q: %d %q", r.typ, r.name, code, msg)
		}
	}
}

// The three checkpoint intervals reach the log dir: here the high
// watermark is written within moments, the recovery point not for an hour.
func TestCheckpointIntervalKeys(t *testing.T) {
	b := startBroker(t, map[string]string{"replica.high.watermark.checkpoint.interval.ms": "20",
		"log.flush.offset.checkpoint.interval.ms": "3600000", "log.flush.start.offset.checkpoint.interval.ms": "3600000"})
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "cp", 1)
	if p := produceRaw(t, rc, 9, "cp", [16]byte{}, 0, testBatch(4, "v", -1, -1, -1, 0)); p.ErrorCode != 0 {
		t.Fatalf("produce: %d", p.ErrorCode)
	}
	dir := b.cfg.LogDirs[0]
	waitFor(t, func() bool {
		hw, _ := os.ReadFile(filepath.Join(dir, "replication-offset-checkpoint"))
		return strings.Contains(string(hw), "cp 0 4")
	})
	if rp, _ := os.ReadFile(filepath.Join(dir, "recovery-point-offset-checkpoint")); strings.Contains(string(rp), "cp 0") {
		t.Fatalf("recovery point checkpointed before its hour: %q", rp)
	}
	if _, _, err := ParseConfig(map[string]string{"log.flush.offset.checkpoint.interval.ms": "-1"}); err == nil {
		t.Fatal("a negative checkpoint interval was accepted")
	}
}

// A client of a cluster's CONTROLLER listener (--bootstrap-controller)
// reaches the controller without a broker's checks. Kafka's controller
// validates configs itself (ControllerConfigurationValidator, called by
// ConfigurationControlManager and ReplicationControlManager.createTopics),
// so invalid topic, group and client metrics configs get the answer a
// broker gives, INVALID_CONFIG before an unknown topic, and nothing is
// written.
func TestClusterControllerValidatesConfigs(t *testing.T) {
	c := startCluster(t, 1, nil)
	controllerAddr := strings.SplitN(c.props[0]["controller.quorum.voters"], "@", 2)[1]
	adm := kadm.NewClient(c.client())
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		code int16
		msg  string
	}
	both := func(req kmsg.Request, answers func(kmsg.Response) []answer) {
		t.Helper()
		broker := answers(dialAddr(t, c.nodes[0].Addr()).request(req))
		ctl := answers(dialAddr(t, controllerAddr).request(req))
		if !slices.Equal(broker, ctl) || slices.ContainsFunc(broker, func(a answer) bool { return a.code == 0 }) {
			t.Fatalf("%s: the broker answers %+v, the CONTROLLER listener %+v; want the same refusals", kmsg.NameForKey(req.Key()), broker, ctl)
		}
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	for _, cfg := range [][2]string{{"retention.ms", "-2"}, {"no.such.config", "1"}, {"cleanup.policy", "forever"}} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "bad"+cfg[0], 1, 1
		rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: cfg[0], Value: kmsg.StringPtr(cfg[1])}}
		create.Topics = append(create.Topics, rt)
	}
	both(create, func(r kmsg.Response) (out []answer) {
		for _, st := range r.(*kmsg.CreateTopicsResponse).Topics {
			out = append(out, answer{st.ErrorCode, ps(st.ErrorMessage)})
		}
		return out
	})
	set := func(typ kmsg.ConfigResourceType, name, key, value string) kmsg.IncrementalAlterConfigsRequestResource {
		return kmsg.IncrementalAlterConfigsRequestResource{ResourceType: typ, ResourceName: name,
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: key, Value: kmsg.StringPtr(value)}}}
	}
	incremental := kmsg.NewPtrIncrementalAlterConfigsRequest()
	incremental.SetVersion(1)
	incremental.Resources = []kmsg.IncrementalAlterConfigsRequestResource{
		set(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "-2"),
		set(kmsg.ConfigResourceTypeTopic, "missing", "segment.bytes", "1"),
		set(kmsg.ConfigResourceTypeGroupConfig, "g", "consumer.session.timeout.ms", "1"),
		set(kmsg.ConfigResourceTypeClientMetrics, "sub", "interval.ms", "soon"),
	}
	both(incremental, func(r kmsg.Response) (out []answer) {
		for _, rr := range r.(*kmsg.IncrementalAlterConfigsResponse).Resources {
			out = append(out, answer{rr.ErrorCode, ps(rr.ErrorMessage)})
		}
		return out
	})
	legacy := kmsg.NewPtrAlterConfigsRequest()
	legacy.SetVersion(2)
	for _, r := range incremental.Resources {
		legacy.Resources = append(legacy.Resources, kmsg.AlterConfigsRequestResource{ResourceType: r.ResourceType, ResourceName: r.ResourceName,
			Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: r.Configs[0].Name, Value: r.Configs[0].Value}}})
	}
	both(legacy, func(r kmsg.Response) (out []answer) {
		for _, rr := range r.(*kmsg.AlterConfigsResponse).Resources {
			out = append(out, answer{rr.ErrorCode, ps(rr.ErrorMessage)})
		}
		return out
	})
	img := c.nodes[0].cluster.image()
	if len(img.Topics) != 1 || slices.ContainsFunc(slices.Collect(maps.Keys(img.Configs)), func(r controller.ConfigResource) bool { return r.Type != controller.ResourceBroker }) {
		t.Fatalf("the refused requests wrote configs %v, topics %d", img.Configs, len(img.Topics))
	}
}

// APPEND and SUBTRACT sent to a cluster's CONTROLLER listener work as on
// a broker, as Kafka's controller applies them
// (ConfigurationControlManager.incrementalAlterConfigResource): only on
// LIST configs (INVALID_CONFIG otherwise), starting from the config's
// default when it is not set, and a list emptied stays set, to "".
func TestClusterControllerListOperations(t *testing.T) {
	c := startCluster(t, 1, nil)
	controllerAddr := strings.SplitN(c.props[0]["controller.quorum.voters"], "@", 2)[1]
	adm := kadm.NewClient(c.client())
	if _, err := adm.CreateTopics(ctxT(t), 1, 1, nil, "via-broker", "via-controller"); err != nil {
		t.Fatal(err)
	}
	op := func(topic, key string, o kmsg.IncrementalAlterConfigOp, value string) (int16, string, map[string]string) {
		addr := c.nodes[0].Addr()
		if topic == "via-controller" {
			addr = controllerAddr
		}
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.SetVersion(1)
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: topic,
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: key, Op: o, Value: kmsg.StringPtr(value)}}}}
		r := dialAddr(t, addr).request(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		return r.ErrorCode, ps(r.ErrorMessage), c.nodes[0].cluster.ctl.Image().Configs[controller.ConfigResource{Type: controller.ResourceTopic, Name: topic}]
	}
	for _, step := range []struct {
		key   string
		op    kmsg.IncrementalAlterConfigOp
		value string
	}{
		{"retention.ms", kmsg.IncrementalAlterConfigOpAppend, "5"},
		{"no.such.config", kmsg.IncrementalAlterConfigOpSubtract, "5"},
		{"cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, "compact"},
		{"cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, "delete,compact"},
	} {
		bCode, bMsg, bConfigs := op("via-broker", step.key, step.op, step.value)
		cCode, cMsg, cConfigs := op("via-controller", step.key, step.op, step.value)
		if bCode != cCode || bMsg != cMsg || !maps.Equal(bConfigs, cConfigs) {
			t.Fatalf("%v %s %s: the broker answers %d %q and stores %v, the CONTROLLER listener %d %q and %v",
				step.op, step.key, step.value, bCode, bMsg, bConfigs, cCode, cMsg, cConfigs)
		}
	}
}

// A broker checks AlterConfigs and IncrementalAlterConfigs before it
// authorizes them (Kafka's ConfigAdminManager.preprocess, then the
// controller's authorization): a resource given twice, a key given
// twice, a null value, another node's broker resource, a broker change
// that does not validate and a resource type that cannot be altered are
// INVALID_REQUEST with Kafka's messages even for a client without
// ALTER_CONFIGS; the rest gets the authorization error.
func TestAlterConfigsChecksBeforeAuthorizing(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	alice := saslClient(t, listenerAddr(t, b, "SASL_PLAINTEXT"), plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	self := strconv.Itoa(int(b.cfg.NodeID))
	type res struct {
		typ  kmsg.ConfigResourceType
		name string
		cfgs [][2]*string
		code int16
		msg  string
	}
	v := kmsg.StringPtr
	resources := []res{
		{kmsg.ConfigResourceTypeTopic, "twice", [][2]*string{{v("retention.ms"), v("1")}}, errInvalidRequest, "Each resource must appear at most once."},
		{kmsg.ConfigResourceTypeTopic, "twice", [][2]*string{{v("retention.ms"), v("2")}}, errInvalidRequest, "Each resource must appear at most once."},
		{kmsg.ConfigResourceTypeTopic, "keys", [][2]*string{{v("retention.ms"), v("1")}, {v("retention.ms"), v("2")}}, errInvalidRequest, "Error due to duplicate config keys"},
		{kmsg.ConfigResourceTypeTopic, "null", [][2]*string{{v("retention.ms"), nil}}, errInvalidRequest, "Null value not supported for : retention.ms"},
		{kmsg.ConfigResourceTypeBroker, self, [][2]*string{{v("log.dirs"), v("/tmp")}}, errInvalidRequest, "Cannot update these configs dynamically: Set(log.dirs)"},
		{kmsg.ConfigResourceTypeBroker, "77", [][2]*string{{v("log.retention.ms"), v("1")}}, errInvalidRequest, "Unexpected broker id, expected " + self + ", but received 77"},
		{kmsg.ConfigResourceType(99), "x", [][2]*string{{v("a"), v("1")}}, errInvalidRequest, "Unknown resource type 99"},
		{kmsg.ConfigResourceTypeTopic, "fine", [][2]*string{{v("retention.ms"), v("1")}}, errTopicAuthorization, ""},
		{kmsg.ConfigResourceTypeBroker, "", [][2]*string{{v("log.retention.ms"), v("1")}}, errClusterAuthorization, ""},
	}
	check := func(api string, got map[string][]int16, msgs map[string][]string) {
		t.Helper()
		for _, r := range resources {
			key := fmt.Sprintf("%d/%s", r.typ, r.name)
			if len(got[key]) == 0 || got[key][0] != r.code || r.msg != "" && msgs[key][0] != r.msg {
				t.Errorf("%s of %s: %v %q, want %d %q", api, key, got[key], msgs[key], r.code, r.msg)
			}
		}
	}
	incremental := kmsg.NewPtrIncrementalAlterConfigsRequest()
	legacy := kmsg.NewPtrAlterConfigsRequest()
	for _, r := range resources {
		ir := kmsg.IncrementalAlterConfigsRequestResource{ResourceType: r.typ, ResourceName: r.name}
		lr := kmsg.AlterConfigsRequestResource{ResourceType: r.typ, ResourceName: r.name}
		for _, c := range r.cfgs {
			ir.Configs = append(ir.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: *c[0], Value: c[1]})
			lr.Configs = append(lr.Configs, kmsg.AlterConfigsRequestResourceConfig{Name: *c[0], Value: c[1]})
		}
		incremental.Resources = append(incremental.Resources, ir)
		legacy.Resources = append(legacy.Resources, lr)
	}
	node := alice.Broker(int(b.cfg.NodeID)) // not sharded by broker resource
	resp, err := node.Request(ctxT(t), incremental)
	if err != nil {
		t.Fatal(err)
	}
	got, msgs := map[string][]int16{}, map[string][]string{}
	for _, r := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		key := fmt.Sprintf("%d/%s", r.ResourceType, r.ResourceName)
		got[key], msgs[key] = append(got[key], r.ErrorCode), append(msgs[key], ps(r.ErrorMessage))
	}
	check("IncrementalAlterConfigs", got, msgs)
	if resp, err = node.Request(ctxT(t), legacy); err != nil {
		t.Fatal(err)
	}
	got, msgs = map[string][]int16{}, map[string][]string{}
	for _, r := range resp.(*kmsg.AlterConfigsResponse).Resources {
		key := fmt.Sprintf("%d/%s", r.ResourceType, r.ResourceName)
		got[key], msgs[key] = append(got[key], r.ErrorCode), append(msgs[key], ps(r.ErrorMessage))
	}
	check("AlterConfigs", got, msgs)
}

// CreateTopics on a cluster's CONTROLLER listener answers, from v5, with
// the new topic's configs, as a broker does: Kafka's controller lists
// them itself (ReplicationControlManager.createTopic,
// computeEffectiveTopicConfigs).
func TestClusterControllerCreateTopicsConfigs(t *testing.T) {
	c := startCluster(t, 1, nil)
	controllerAddr := strings.SplitN(c.props[0]["controller.quorum.voters"], "@", 2)[1]
	create := func(addr, topic string) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 2, 1
		rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}
		req.Topics = append(req.Topics, rt)
		return dialAddr(t, addr).request(req).(*kmsg.CreateTopicsResponse).Topics[0]
	}
	viaBroker := create(c.nodes[0].Addr(), "via-broker")
	viaController := create(controllerAddr, "via-controller")
	if viaBroker.ErrorCode != 0 || viaController.ErrorCode != 0 || len(viaBroker.Configs) == 0 ||
		viaController.NumPartitions != 2 || viaController.ReplicationFactor != 1 ||
		!slices.EqualFunc(viaBroker.Configs, viaController.Configs, func(a, b kmsg.CreateTopicsResponseTopicConfig) bool {
			return a.Name == b.Name && ps(a.Value) == ps(b.Value) && a.Source == b.Source && a.ReadOnly == b.ReadOnly && a.IsSensitive == b.IsSensitive
		}) {
		t.Fatalf("configs created through the broker: %+v\nthrough the CONTROLLER listener: %+v", viaBroker, viaController)
	}
}

// A dynamic log.retention.ms takes any LONG, as Kafka's broker config
// does (no validator: a negative value, as in server.properties, means no
// time limit, which topics describe as retention.ms -1).
func TestDynamicNegativeLogRetention(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	if _, err := newAdmin(t, b).CreateTopic(ctxT(t), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if code, msg := alterConfigsOf(t, cl, kmsg.ConfigResourceTypeBroker, "", setOp("log.retention.ms", "-2")); code != 0 {
		t.Fatalf("setting log.retention.ms -2 cluster-wide: %d %s", code, msg)
	}
	if v := describedConfigsOf(t, cl, kmsg.ConfigResourceTypeTopic, "t")["retention.ms"]; v.value() != "-1" {
		t.Fatalf("retention.ms of a topic under log.retention.ms -2: %s", v.value())
	}
}

// AlterConfigs and IncrementalAlterConfigs answer in the order of the
// request, refused resources among the others, as Kafka's broker
// reassembles its answers (ConfigAdminManager.reassembleIncrementalResponse
// and reassembleLegacyResponse).
func TestAlterConfigsAnswersInRequestOrder(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	admin := saslClient(t, addr, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())
	createACLs(t, kadm.NewClient(admin), kadm.NewACLs().Allow("User:alice").Topics("mine").Operations(kadm.OpAlterConfigs))
	alice := saslClient(t, addr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	names := []string{"theirs", "mine", "other"}
	incremental := kmsg.NewPtrIncrementalAlterConfigsRequest()
	legacy := kmsg.NewPtrAlterConfigsRequest()
	for _, n := range names {
		incremental.Resources = append(incremental.Resources, kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: n,
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1")}}})
		legacy.Resources = append(legacy.Resources, kmsg.AlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: n,
			Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1")}}})
	}
	ir, err := incremental.RequestWith(ctxT(t), alice)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range ir.Resources {
		got = append(got, fmt.Sprintf("%s:%d", r.ResourceName, r.ErrorCode))
	}
	want := []string{"theirs:29", "mine:3", "other:29"}
	if !slices.Equal(got, want) {
		t.Errorf("IncrementalAlterConfigs answers %v, want %v", got, want)
	}
	lr, err := legacy.RequestWith(ctxT(t), alice)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, r := range lr.Resources {
		got = append(got, fmt.Sprintf("%s:%d", r.ResourceName, r.ErrorCode))
	}
	if !slices.Equal(got, want) {
		t.Errorf("AlterConfigs answers %v, want %v", got, want)
	}
}

// A new topic's config value longer than a metadata record's string
// (32767) is refused, INVALID_CONFIG, before its value is validated, by a
// broker and on a cluster's CONTROLLER listener alike, as Kafka's
// controller refuses it (ConfigurationControlManager.validateAlterConfig,
// which CreateTopics reaches through incrementalAlterConfig).
func TestClusterCreateTopicsLongConfigValue(t *testing.T) {
	c := startCluster(t, 1, nil)
	controllerAddr := strings.SplitN(c.props[0]["controller.quorum.voters"], "@", 2)[1]
	long := strings.TrimSuffix(strings.Repeat("0:1,", 9000), ",") // a valid list of 35999 characters
	const want = "The configuration value cannot be added because it exceeds the maximum value size of 32767 bytes."
	for i, addr := range []string{c.nodes[0].Addr(), controllerAddr} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("long-%d", i), 1, 1
		rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "leader.replication.throttled.replicas", Value: kmsg.StringPtr(long)}}
		req.Topics = append(req.Topics, rt)
		st := dialAddr(t, addr).request(req).(*kmsg.CreateTopicsResponse).Topics[0]
		if st.ErrorCode != errInvalidConfig || ps(st.ErrorMessage) != want {
			t.Errorf("CreateTopics on %s: %d %q, want INVALID_CONFIG %q", addr, st.ErrorCode, ps(st.ErrorMessage), want)
		}
	}
}
