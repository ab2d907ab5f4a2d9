package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupConfigProps lower the broker's bounds so that a group may have a
// session of a second or two.
var groupConfigProps = map[string]string{
	"group.consumer.min.session.timeout.ms":    "1000",
	"group.consumer.min.heartbeat.interval.ms": "100",
	"group.consumer.heartbeat.interval.ms":     "1000",
}

// alterGroupConfigs sends IncrementalAlterConfigs for a group and returns
// its error code.
func alterGroupConfigs(t *testing.T, cl *kgo.Client, group string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) int16 {
	t.Helper()
	code, _ := alterConfigsOf(t, cl, kmsg.ConfigResourceTypeGroupConfig, group, ops...)
	return code
}

// alterConfigsOf sends IncrementalAlterConfigs for one resource and
// returns its error code and message.
func alterConfigsOf(t *testing.T, cl *kgo.Client, typ kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: typ, ResourceName: name, Configs: ops}}
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Resources[0]
	if r.ErrorMessage != nil {
		return r.ErrorCode, *r.ErrorMessage
	}
	return r.ErrorCode, ""
}

func setOp(name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr(value)}
}

// describedConfig is a described config, with its value as text.
type describedConfig struct {
	kmsg.DescribeConfigsResponseResourceConfig
}

func (c describedConfig) value() string {
	if c.Value == nil {
		return "<null>"
	}
	return *c.Value
}

// describedGroupConfigs returns a group's described configs by name.
func describedGroupConfigs(t *testing.T, cl *kgo.Client, group string) map[string]describedConfig {
	t.Helper()
	return describedConfigsOf(t, cl, kmsg.ConfigResourceTypeGroupConfig, group)
}

// describedConfigsOf returns one resource's described configs by name.
func describedConfigsOf(t *testing.T, cl *kgo.Client, typ kmsg.ConfigResourceType, name string) map[string]describedConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: typ, ResourceName: name}}
	req.IncludeSynonyms = true
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Resources[0].ErrorCode; code != 0 {
		t.Fatalf("describing the configs of %v %s: error %d", typ, name, code)
	}
	out := map[string]describedConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = describedConfig{c}
	}
	return out
}

// A group's own session timeout and heartbeat interval (kafka-configs
// --entity-type groups) are described, checked against the broker's
// bounds, kept across a restart, and used: a member is told the group's
// heartbeat interval and is fenced after the group's session timeout.
func TestGroupConfigs(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir}
	for k, v := range groupConfigProps {
		props[k] = v
	}
	b := startBrokerWith(t, props)
	cl := newClient(t, b)
	if _, err := newAdmin(t, b).CreateTopic(ctxT(t), 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}

	d := describedGroupConfigs(t, cl, "g")
	if s := d["consumer.session.timeout.ms"]; s.value() != "45000" || s.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("consumer.session.timeout.ms of a group without configs: %s from source %v", s.value(), s.Source)
	}
	if h := d["consumer.heartbeat.interval.ms"]; h.value() != "1000" || h.Source != kmsg.ConfigSourceStaticBrokerConfig { // the broker key's source
		t.Fatalf("consumer.heartbeat.interval.ms of a group without configs: %s from source %v", h.value(), h.Source)
	}

	refused := []struct {
		what string
		op   kmsg.IncrementalAlterConfigsRequestResourceConfig
		code int16
	}{
		{"a session under group.consumer.min.session.timeout.ms", setOp("consumer.session.timeout.ms", "500"), errInvalidConfig},
		{"a heartbeat interval not under the session", setOp("consumer.heartbeat.interval.ms", "50000"), errInvalidConfig},
		{"a streams session over group.streams.max.session.timeout.ms", setOp("streams.session.timeout.ms", "70000"), errInvalidConfig},
		{"streams.num.standby.replicas over group.streams.max.standby.replicas", setOp("streams.num.standby.replicas", "3"), errInvalidConfig},
		{"a negative streams.num.standby.replicas", setOp("streams.num.standby.replicas", "-1"), errInvalidConfig},
		{"an unknown streams group key", setOp("streams.no.such.key", "1"), errInvalidConfig},
		{"a share lock under group.share.min.record.lock.duration.ms", setOp("share.record.lock.duration.ms", "1000"), errInvalidConfig},
		{"a share session not over its heartbeat interval", setOp("share.heartbeat.interval.ms", "50000"), errInvalidConfig},
		{"an unknown share.auto.offset.reset", setOp("share.auto.offset.reset", "sometimes"), errInvalidConfig},
		{"a share.auto.offset.reset duration that is not ISO-8601", setOp("share.auto.offset.reset", "by_duration:1h"), errInvalidConfig},
		{"a negative share.auto.offset.reset duration", setOp("share.auto.offset.reset", "by_duration:-PT1H"), errInvalidConfig},
		{"an unknown share.isolation.level", setOp("share.isolation.level", "read_some"), errInvalidConfig},
		{"a share.delivery.count.limit over group.share.max.delivery.count.limit", setOp("share.delivery.count.limit", "11"), errInvalidConfig},
		{"a share.partition.max.record.locks under group.share.min.partition.max.record.locks", setOp("share.partition.max.record.locks", "50"), errInvalidConfig},
		{"a value that is not a number", setOp("consumer.session.timeout.ms", "soon"), errInvalidConfig},
		{"APPEND", kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "consumer.session.timeout.ms", Op: kmsg.IncrementalAlterConfigOpAppend, Value: kmsg.StringPtr("1")}, errInvalidConfig},
	}
	for _, r := range refused {
		if code := alterGroupConfigs(t, cl, "g", r.op); code != r.code {
			t.Errorf("%s: error %d, want %d", r.what, code, r.code)
		}
	}
	if code := alterGroupConfigs(t, cl, "", setOp("consumer.session.timeout.ms", "2000")); code != errInvalidRequest {
		t.Errorf("configs for the group named \"\": error %d, want INVALID_REQUEST", code)
	}
	if code := alterGroupConfigs(t, cl, "g", setOp("consumer.session.timeout.ms", "2000"), setOp("consumer.heartbeat.interval.ms", "250")); code != 0 {
		t.Fatalf("setting the group's configs: error %d", code)
	}

	b.Close()
	b = startBrokerWith(t, props)
	cl = newClient(t, b)
	d = describedGroupConfigs(t, cl, "g")
	if s := d["consumer.session.timeout.ms"]; s.value() != "2000" || s.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("consumer.session.timeout.ms after a restart: %s from source %v", s.value(), s.Source)
	}

	join := func(group string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, "member-of-"+group, 30000
		req.SubscribedTopicNames, req.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		var resp *kmsg.ConsumerGroupHeartbeatResponse
		waitUntil(t, "a member joined "+group, 30*time.Second, func() bool {
			r, err := req.RequestWith(context.Background(), cl)
			resp = r
			return err == nil && r.ErrorCode == 0
		})
		return resp
	}
	if resp := join("g"); resp.HeartbeatIntervalMillis != 250 {
		t.Errorf("heartbeat interval given to a member of g: %d ms, want the group's 250", resp.HeartbeatIntervalMillis)
	}
	if resp := join("other"); resp.HeartbeatIntervalMillis != 1000 {
		t.Errorf("heartbeat interval given to a member of a group without configs: %d ms, want the broker's 1000", resp.HeartbeatIntervalMillis)
	}
	members := func(group string) int {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.Groups[0].Members)
	}
	start := time.Now()
	waitUntil(t, "the silent member of g fenced", 20*time.Second, func() bool { return members("g") == 0 })
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the member of g was fenced after %v, not its group's 2 s session", took)
	}
	if n := members("other"); n != 1 {
		t.Errorf("group other has %d members; its member's session is the broker's 45 s", n)
	}

	if code := alterGroupConfigs(t, cl, "g", kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "consumer.session.timeout.ms", Op: kmsg.IncrementalAlterConfigOpDelete}); code != 0 {
		t.Fatalf("deleting the group's session timeout: error %d", code)
	}
	if s := describedGroupConfigs(t, cl, "g")["consumer.session.timeout.ms"]; s.value() != "45000" || s.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("consumer.session.timeout.ms after DELETE: %s from source %v", s.value(), s.Source)
	}
}

// In a cluster a group's configs go through the controller: set through
// one broker, every broker describes them and its coordinator would use
// them; a bad value is refused before it reaches the controller.
func TestClusterGroupConfigs(t *testing.T) {
	c := startCluster(t, 3, groupConfigProps)
	addrs := c.addrs()
	via := func(i int) *kgo.Client { return c.client(kgo.SeedBrokers(addrs[i])) }
	if code := alterGroupConfigs(t, via(0), "g", setOp("consumer.session.timeout.ms", "500")); code != errInvalidConfig {
		t.Fatalf("a session under the minimum: error %d, want INVALID_CONFIG", code)
	}
	if code := alterGroupConfigs(t, via(0), "g", setOp("consumer.session.timeout.ms", "3000")); code != 0 {
		t.Fatalf("setting the group's session timeout: error %d", code)
	}
	c.waitFor("every broker describing the group's session timeout", func() bool {
		for i := range addrs {
			if s := describedGroupConfigs(t, via(i), "g")["consumer.session.timeout.ms"]; s.value() != "3000" || s.Source != kmsg.ConfigSourceGroupConfig {
				return false
			}
		}
		return true
	})
	for _, b := range c.nodes {
		if got := b.groupConfigFor("g").ConsumerSessionTimeout; got != 3*time.Second {
			t.Errorf("broker %d gives its coordinator a session of %v for g, want 3s", b.cfg.NodeID, got)
		}
	}
}

// ListConfigResources (KIP-1142) lists what DescribeConfigs can describe:
// every topic, the broker (as a broker and as its loggers), the groups
// with configs, whether they exist or not, and the client metrics
// subscriptions, which are all that v0
// (ListClientMetricsResources) lists; an unknown type is
// UNSUPPORTED_VERSION.
func TestListConfigResources(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	if _, err := newAdmin(t, b).CreateTopic(ctxT(t), 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if code := alterGroupConfigs(t, cl, "configured", setOp("consumer.session.timeout.ms", "50000")); code != 0 {
		t.Fatalf("setting a group's config: error %d", code)
	}
	if code, msg := alterConfigsOf(t, cl, kmsg.ConfigResourceTypeClientMetrics, "sub", setOp("metrics", "*")); code != 0 {
		t.Fatalf("adding a client metrics subscription: error %d %s", code, msg)
	}
	raw := dialRaw(t, b)
	list := func(version int16, types ...int8) *kmsg.ListConfigResourcesResponse {
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.Version, req.ResourceTypes = version, types
		return raw.request(req).(*kmsg.ListConfigResourcesResponse)
	}
	names := func(resp *kmsg.ListConfigResourcesResponse) map[string]int8 {
		out := map[string]int8{}
		for _, r := range resp.ConfigResources {
			out[r.Name] = r.Type
		}
		return out
	}
	all := map[string]bool{}
	for _, r := range list(1).ConfigResources {
		all[fmt.Sprintf("%d/%s", r.Type, r.Name)] = true
	}
	node := strconv.Itoa(int(b.cfg.NodeID))
	for _, want := range []string{"2/t", "4/" + node, "8/" + node, "32/configured", "16/sub"} {
		if !all[want] {
			t.Errorf("ListConfigResources lists %v, want type/name %s", all, want)
		}
	}
	if groups := names(list(1, 32)); len(groups) != 1 || groups["configured"] != 32 {
		t.Errorf("groups listed: %v, want only the configured one", groups)
	}
	if r := list(1, 99); r.ErrorCode != errUnsupportedVersion {
		t.Errorf("an unknown resource type: error %d, want UNSUPPORTED_VERSION", r.ErrorCode)
	}
	if r := list(0); r.ErrorCode != 0 || len(r.ConfigResources) != 1 || r.ConfigResources[0].Name != "sub" {
		t.Errorf("v0 (client metrics only): error %d, %v", r.ErrorCode, r.ConfigResources)
	}
}

// A group config value is parsed as Kafka's GroupConfig ConfigDef parses
// it, with ConfigDef's messages and each key's own least value, after
// every name is known.
func TestGroupConfigValueMessages(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	for _, c := range []struct {
		ops []kmsg.IncrementalAlterConfigsRequestResourceConfig
		msg string
	}{
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("consumer.session.timeout.ms", "soon")},
			"Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("consumer.heartbeat.interval.ms", "0")},
			"Invalid value 0 for configuration consumer.heartbeat.interval.ms: Value must be at least 1"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("share.record.lock.duration.ms", "500")},
			"Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("share.partition.max.record.locks", "99")},
			"Invalid value 99 for configuration share.partition.max.record.locks: Value must be at least 100"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("streams.num.standby.replicas", "-1")},
			"Invalid value -1 for configuration streams.num.standby.replicas: Value must be at least 0"},
		{[]kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("consumer.session.timeout.ms", "soon"), setOp("zz.unknown", "1")},
			"Unknown group config name: zz.unknown"},
	} {
		for range 5 { // whatever the map order
			if code, msg := alterConfigsOf(t, cl, kmsg.ConfigResourceTypeGroupConfig, "g", c.ops...); code != errInvalidConfig || msg != c.msg {
				t.Fatalf("%v: %d %q, want INVALID_CONFIG %q", c.ops, code, msg, c.msg)
			}
		}
	}
}

// A group's configs are described with their broker synonyms, as Kafka's
// ConfigHelper.createGroupConfigEntry lists them: group.<name> at each
// level it is set (the source of a config the group does not set is
// that of its broker key), or for a config without a broker key its
// default, DEFAULT_CONFIG.
func TestGroupConfigSynonyms(t *testing.T) {
	b := startBroker(t, map[string]string{"group.consumer.session.timeout.ms": "50000"})
	cl := newClient(t, b)
	type syn struct {
		name, value string
		source      kmsg.ConfigSource
	}
	check := func(d map[string]describedConfig, name string, source kmsg.ConfigSource, want ...syn) {
		t.Helper()
		c := d[name]
		var got []syn
		for _, s := range c.ConfigSynonyms {
			got = append(got, syn{s.Name, ps(s.Value), s.Source})
		}
		if c.Source != source || !slices.Equal(got, want) {
			t.Errorf("%s: source %v, synonyms %+v; want %v, %+v", name, c.Source, got, source, want)
		}
	}
	d := describedGroupConfigs(t, cl, "g")
	check(d, "consumer.session.timeout.ms", kmsg.ConfigSourceStaticBrokerConfig,
		syn{"group.consumer.session.timeout.ms", "50000", kmsg.ConfigSourceStaticBrokerConfig},
		syn{"group.consumer.session.timeout.ms", "45000", kmsg.ConfigSourceDefaultConfig})
	check(d, "consumer.heartbeat.interval.ms", kmsg.ConfigSourceDefaultConfig,
		syn{"group.consumer.heartbeat.interval.ms", "5000", kmsg.ConfigSourceDefaultConfig})
	check(d, "share.isolation.level", kmsg.ConfigSourceDefaultConfig,
		syn{"share.isolation.level", "read_uncommitted", kmsg.ConfigSourceDefaultConfig})
	if code := alterGroupConfigs(t, cl, "g", setOp("consumer.session.timeout.ms", "55000")); code != 0 {
		t.Fatalf("setting consumer.session.timeout.ms: error %d", code)
	}
	check(describedGroupConfigs(t, cl, "g"), "consumer.session.timeout.ms", kmsg.ConfigSourceGroupConfig,
		syn{"consumer.session.timeout.ms", "55000", kmsg.ConfigSourceGroupConfig},
		syn{"group.consumer.session.timeout.ms", "50000", kmsg.ConfigSourceStaticBrokerConfig},
		syn{"group.consumer.session.timeout.ms", "45000", kmsg.ConfigSourceDefaultConfig})
}

// APPEND and SUBTRACT on a group config, known or not, are refused as
// Kafka's controller refuses them before it looks at the names
// (ConfigurationControlManager.incrementalAlterConfigResource): no group
// config is a LIST.
func TestGroupConfigListOperations(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	for _, name := range []string{"consumer.session.timeout.ms", "no.such.key"} {
		op := kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpAppend, Value: kmsg.StringPtr("1")}
		want := "Can't APPEND to key " + name + " because its type is not LIST."
		if code, msg := alterConfigsOf(t, cl, kmsg.ConfigResourceTypeGroupConfig, "g", op); code != errInvalidConfig || msg != want {
			t.Errorf("APPEND to %s: %d %q, want INVALID_CONFIG %q", name, code, msg, want)
		}
	}
}
