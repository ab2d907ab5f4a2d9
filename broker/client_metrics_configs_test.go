package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func listOp(name string, op kmsg.IncrementalAlterConfigOp, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: op, Value: kmsg.StringPtr(value)}
}

// A client metrics subscription (kafka-client-metrics --alter) is kept,
// described with its defaults, refused with Kafka's codes and messages
// where Kafka's ClientMetricsConfigs refuses it, kept across a restart,
// and gone once its last key is deleted.
func TestClientMetricsSubscriptions(t *testing.T) {
	props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}
	b := startBrokerWith(t, props)
	cl := newClient(t, b)
	const cm = kmsg.ConfigResourceTypeClientMetrics

	if code, msg := alterConfigsOf(t, cl, cm, "sub", setOp("metrics", "org.apache.kafka.producer., org.apache.kafka.consumer."),
		setOp("interval.ms", "5000"), setOp("match", "client_id=app-.*,client_software_name=apache-kafka-java")); code != 0 {
		t.Fatalf("adding a subscription: error %d %s", code, msg)
	}
	d := describedConfigsOf(t, cl, cm, "sub")
	for name, want := range map[string]string{"metrics": "org.apache.kafka.producer.,org.apache.kafka.consumer.", "interval.ms": "5000",
		"match": "client_id=app-.*,client_software_name=apache-kafka-java"} {
		if c := d[name]; c.value() != want || c.Source != kmsg.ConfigSourceClientMetricsConfig || len(c.ConfigSynonyms) != 1 {
			t.Errorf("%s described as %q from source %v (synonyms %v), want %q as CLIENT_METRICS_CONFIG", name, c.value(), c.Source, c.ConfigSynonyms, want)
		}
	}
	if len(d) != 3 {
		t.Errorf("described %d configs, want metrics, interval.ms and match", len(d))
	}
	unset := describedConfigsOf(t, cl, cm, "never-set")
	if c := unset["interval.ms"]; c.value() != "300000" || c.Source != kmsg.ConfigSourceDefaultConfig || unset["metrics"].value() != "" {
		t.Errorf("a subscription never set: interval.ms %q from %v, metrics %q; want Kafka's defaults 300000 and empty", c.value(), c.Source, unset["metrics"].value())
	}

	// APPEND and SUBTRACT work on the two lists.
	if code, msg := alterConfigsOf(t, cl, cm, "sub", listOp("metrics", kmsg.IncrementalAlterConfigOpAppend, "org.apache.kafka.stream."),
		listOp("match", kmsg.IncrementalAlterConfigOpSubtract, "client_id=app-.*")); code != 0 {
		t.Fatalf("APPEND and SUBTRACT: error %d %s", code, msg)
	}
	d = describedConfigsOf(t, cl, cm, "sub")
	if got := d["metrics"].value(); got != "org.apache.kafka.producer.,org.apache.kafka.consumer.,org.apache.kafka.stream." {
		t.Errorf("metrics after APPEND: %q", got)
	}
	if got := d["match"].value(); got != "client_software_name=apache-kafka-java" {
		t.Errorf("match after SUBTRACT: %q", got)
	}

	refused := []struct {
		what string
		name string
		ops  []kmsg.IncrementalAlterConfigsRequestResourceConfig
		code int16
		msg  string
	}{
		{"an unknown key", "s2", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("push.every", "5")}, errInvalidRequest, "Unknown client metrics configuration: push.every"},
		{"an interval under 100 ms", "s2", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("interval.ms", "99")}, errInvalidRequest, "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"an interval over an hour", "s2", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("interval.ms", "3600001")}, errInvalidRequest, "interval must be between 100 and 3600000"},
		{"an interval that is not a number", "s2", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("interval.ms", "soon")}, errInvalidConfig, "Invalid value soon for configuration interval.ms: Not a number of type INT"},
		{"a metric named twice", "s2", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("metrics", "a,b,a")}, errInvalidConfig, "Configuration 'metrics' values must not be duplicated."},
		{"an empty metric", "s2", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("metrics", "a,,b")}, errInvalidConfig, "Configuration 'metrics' values must not be empty."},
		{"a match on an unknown attribute", "s2", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("match", "client_name=x")}, errInvalidConfig, "Illegal client matching pattern: client_name=x"},
		{"a match without a pattern", "s2", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("match", "client_id=")}, errInvalidConfig, "Illegal client matching pattern: client_id="},
		{"a match with two =", "s2", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("match", "client_id=a=b")}, errInvalidConfig, "Illegal client matching pattern"},
		{"a match whose pattern does not compile", "s2", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("match", "client_id=app-[")}, errInvalidConfig, "Illegal client matching pattern: client_id=app-["},
		{"APPEND to interval.ms", "sub", []kmsg.IncrementalAlterConfigsRequestResourceConfig{listOp("interval.ms", kmsg.IncrementalAlterConfigOpAppend, "1")}, errInvalidConfig, "Can't APPEND to key interval.ms because its type is not LIST."},
		{"a subscription without a name", "", []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("metrics", "*")}, errInvalidRequest, "Subscription name can't be empty"},
	}
	for _, r := range refused {
		if code, msg := alterConfigsOf(t, cl, cm, r.name, r.ops...); code != r.code || !strings.Contains(msg, r.msg) {
			t.Errorf("%s: error %d %q, want %d %q", r.what, code, msg, r.code, r.msg)
		}
	}
	// A lookahead is a Java pattern RE2 lacks; Kafka takes it.
	if code, msg := alterConfigsOf(t, cl, cm, "s3", setOp("match", "client_id=app-(?!test).*")); code != 0 {
		t.Errorf("a Java lookahead in a match: error %d %s", code, msg)
	}
	if got := b.clientMetricsOverrides("s2"); len(got) != 0 {
		t.Errorf("a refused subscription was kept: %v", got)
	}

	b.Close()
	b = startBrokerWith(t, props)
	cl = newClient(t, b)
	if got := describedConfigsOf(t, cl, cm, "sub")["interval.ms"]; got.value() != "5000" || got.Source != kmsg.ConfigSourceClientMetricsConfig {
		t.Errorf("interval.ms after a restart: %q from %v", got.value(), got.Source)
	}
	del := func(name string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: kmsg.IncrementalAlterConfigOpDelete}
	}
	if code, msg := alterConfigsOf(t, cl, cm, "sub", del("metrics"), del("interval.ms"), del("match")); code != 0 {
		t.Fatalf("deleting the subscription: error %d %s", code, msg)
	}
	if subs := b.clientMetricsSubscriptions(); len(subs) != 1 || subs[0] != "s3" {
		t.Errorf("subscriptions after deleting sub: %v, want [s3]", subs)
	}
}

// In a cluster a subscription goes through the controller: set through
// one broker, every broker lists and describes it.
func TestClusterClientMetricsSubscriptions(t *testing.T) {
	c := startCluster(t, 3, nil)
	addrs := c.addrs()
	via := func(i int) *kgo.Client { return c.client(kgo.SeedBrokers(addrs[i])) }
	const cm = kmsg.ConfigResourceTypeClientMetrics
	if code, msg := alterConfigsOf(t, via(0), cm, "sub", setOp("interval.ms", "10")); code != errInvalidRequest {
		t.Fatalf("an interval of 10 ms: error %d %s, want INVALID_REQUEST", code, msg)
	}
	if code, msg := alterConfigsOf(t, via(0), cm, "sub", setOp("metrics", "*"), setOp("interval.ms", "1000")); code != 0 {
		t.Fatalf("adding a subscription: error %d %s", code, msg)
	}
	c.waitFor("every broker describing the subscription", func() bool {
		for i := range addrs {
			if d := describedConfigsOf(t, via(i), cm, "sub"); d["interval.ms"].value() != "1000" || d["metrics"].value() != "*" {
				return false
			}
		}
		return true
	})
	for _, b := range c.nodes {
		if subs := b.clientMetricsSubscriptions(); len(subs) != 1 || subs[0] != "sub" {
			t.Errorf("broker %d lists subscriptions %v", b.cfg.NodeID, subs)
		}
	}
}
