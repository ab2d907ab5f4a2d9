package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafka-configs --entity-type broker-loggers: this node's loggers, named
// as Kafka's, are described with their levels, a level set on one
// changes what that logger writes at once, one set on a parent (kafka,
// org.apache.kafka) what its children without one write, deleting it
// makes it follow its parent or root again, and
// what Kafka's RuntimeLoggerManager refuses is refused with its codes and
// messages.
func TestBrokerLoggers(t *testing.T) {
	b, log := startBrokerLogged(t, map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(),
		"group.consumer.min.session.timeout.ms": "1000"})
	cl := newClient(t, b)
	const bl = kmsg.ConfigResourceTypeBrokerLogger
	node := "1"

	levels := func() map[string]string {
		out := map[string]string{}
		for name, c := range describedConfigsOf(t, cl, bl, node) {
			if c.Source != kmsg.ConfigSourceDynamicBrokerLoggerConfig {
				t.Errorf("logger %s described with source %v", name, c.Source)
			}
			out[name] = c.value()
		}
		return out
	}
	if got := levels(); got["root"] != "INFO" || got[kafkaLoggerName] != "INFO" || got[apacheLoggerName] != "INFO" ||
		got[groupLoggerName] != "INFO" || got[txnLoggerName] != "INFO" || got[logManagerLoggerName] != "INFO" ||
		got[logCleanerLoggerName] != "INFO" || got["kafka.request.logger"] != "WARN" || got["kafka.authorizer.logger"] != "INFO" || len(got) != 9 {
		t.Fatalf("loggers at start: %v, want root, kafka, org.apache.kafka, the two coordinators', the log manager's, the cleaner's and kafka.authorizer.logger at INFO, kafka.request.logger at WARN", got)
	}
	// kafka.log.LogManager follows its parent kafka; the cleaner has a
	// level of its own, as in Kafka's log4j2.yaml.
	if code, msg := alterConfigsOf(t, cl, bl, node, setOp(kafkaLoggerName, "ERROR")); code != 0 {
		t.Fatalf("kafka=ERROR: error %d %s", code, msg)
	}
	if got := levels(); got[logManagerLoggerName] != "ERROR" || got[logCleanerLoggerName] != "INFO" || got[apacheLoggerName] != "INFO" {
		t.Errorf("with kafka at ERROR: %v", got)
	}
	if code, msg := alterConfigsOf(t, cl, bl, node, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: kafkaLoggerName, Op: kmsg.IncrementalAlterConfigOpDelete}); code != 0 {
		t.Fatalf("deleting kafka's level: error %d %s", code, msg)
	}

	// kafka.request.logger: a record per request once at DEBUG, none
	// before or after its level is deleted (root is at INFO).
	completed := func() int { return strings.Count(log.String(), `msg="Completed request" api=Metadata apiKey=3`) }
	metadata := func() {
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t), cl); err != nil {
			t.Fatal(err)
		}
	}
	metadata()
	if code, msg := alterConfigsOf(t, cl, bl, node, setOp("kafka.request.logger", "DEBUG")); code != 0 {
		t.Fatalf("kafka.request.logger=DEBUG: error %d %s", code, msg)
	}
	if completed() != 0 {
		t.Errorf("requests were logged with kafka.request.logger at WARN:\n%s", log.String())
	}
	metadata()
	if completed() != 1 || !strings.Contains(log.String(), "listener=PLAINTEXT securityProtocol=PLAINTEXT principal=User:ANONYMOUS requestBytes=") ||
		!strings.Contains(log.String(), "clientId=kgo connection=") {
		t.Errorf("with kafka.request.logger at DEBUG, %d Metadata requests logged:\n%s", completed(), log.String())
	}
	del := kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "kafka.request.logger", Op: kmsg.IncrementalAlterConfigOpDelete}
	if code, msg := alterConfigsOf(t, cl, bl, node, del); code != 0 {
		t.Fatalf("deleting kafka.request.logger's level: error %d %s", code, msg)
	}
	metadata()
	if completed() != 1 || levels()["kafka.request.logger"] != "INFO" {
		t.Errorf("after its level was deleted kafka.request.logger (now %s) logged a request at root's INFO", levels()["kafka.request.logger"])
	}

	join := func(group string) {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, "member-of-"+group, 30000
		req.SubscribedTopicNames, req.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		waitUntil(t, "a member joined "+group, 30*time.Second, func() bool {
			r, err := req.RequestWith(ctxT(t), cl)
			return err == nil && r.ErrorCode == 0
		})
	}
	joined := func(group string) bool {
		return strings.Contains(log.String(), `msg="member joins the consumer group" group=`+group+" ")
	}
	for _, logger := range []string{groupLoggerName, apacheLoggerName} { // the coordinator's own, then its parent's
		if code, msg := alterConfigsOf(t, cl, bl, node, setOp(logger, "WARN")); code != 0 {
			t.Fatalf("%s=WARN: error %d %s", logger, code, msg)
		}
		join("quiet-" + logger)
		if levels()[groupLoggerName] != "WARN" || joined("quiet-"+logger) {
			t.Errorf("the group coordinator logged a join at INFO with %s at WARN (levels %v)", logger, levels())
		}
		del = kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: logger, Op: kmsg.IncrementalAlterConfigOpDelete}
		if code, msg := alterConfigsOf(t, cl, bl, node, del); code != 0 {
			t.Fatalf("deleting %s's level: error %d %s", logger, code, msg)
		}
		join("heard-" + logger)
		if levels()[groupLoggerName] != "INFO" || !joined("heard-"+logger) {
			t.Errorf("after %s's level was deleted the group coordinator did not follow root's INFO (levels %v)", logger, levels())
		}
	}

	closeOne := func() { // a frame cut short: a DEBUG record of root's
		raw := dialRaw(t, b)
		raw.nc.Write([]byte{0, 0, 0, 100, 0, 18})
		raw.nc.Close()
	}
	closeOne()
	time.Sleep(200 * time.Millisecond) // the broker reads the cut frame while root is at INFO
	if code, msg := alterConfigsOf(t, cl, bl, node, setOp("root", "DEBUG")); code != 0 {
		t.Fatalf("root=DEBUG: error %d %s", code, msg)
	}
	before := strings.Count(log.String(), "connection read ended")
	closeOne()
	waitUntil(t, "root writing DEBUG records", 10*time.Second, func() bool {
		return strings.Count(log.String(), "connection read ended") > before
	})
	if before != 0 {
		t.Errorf("a DEBUG record was written with root at INFO")
	}

	refused := []struct {
		what, name string
		op         kmsg.IncrementalAlterConfigsRequestResourceConfig
		code       int16
		msg        string
	}{
		{"another node", "2", setOp("root", "INFO"), errInvalidRequest, "Unexpected node id. Expected 1, but received 2"},
		{"a name that is not a node id", "b1", setOp("root", "INFO"), errInvalidRequest, "Node id must be an integer, but it is: b1"},
		{"an unknown logger", node, setOp("kafka.server.ReplicaManager", "DEBUG"), errInvalidConfig, "Logger kafka.server.ReplicaManager does not exist!"},
		{"an unknown level", node, setOp("root", "debug"), errInvalidConfig,
			"Cannot set the log level of root to debug as it is not a supported log level. Valid log levels are DEBUG,ERROR,FATAL,INFO,TRACE,WARN"},
		{"deleting root's level", node, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: "root", Op: kmsg.IncrementalAlterConfigOpDelete},
			errInvalidRequest, "Removing the log level of the root logger is not allowed"},
		{"APPEND", node, listOp("root", kmsg.IncrementalAlterConfigOpAppend, "INFO"), errInvalidRequest, "APPEND operation is not allowed for the BROKER_LOGGER resource"},
	}
	raw := dialRaw(t, b) // franz-go would send a request for broker 2 to broker 2
	for _, r := range refused {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = 1
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: bl, ResourceName: r.name,
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{r.op}}}
		res := raw.request(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		if code, msg := res.ErrorCode, deref(res.ErrorMessage); code != r.code || msg != r.msg {
			t.Errorf("%s: error %d %q, want %d %q", r.what, code, msg, r.code, r.msg)
		}
	}

	validate := kmsg.NewPtrIncrementalAlterConfigsRequest()
	validate.ValidateOnly = true
	validate.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: bl, ResourceName: node,
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp(txnLoggerName, "ERROR")}}}
	if resp, err := validate.RequestWith(ctxT(t), cl); err != nil || resp.Resources[0].ErrorCode != 0 || levels()[txnLoggerName] != "DEBUG" {
		t.Errorf("validate-only: %v, %s now %s (want root's DEBUG, unchanged)", err, txnLoggerName, levels()[txnLoggerName])
	}
	legacy := kmsg.NewPtrAlterConfigsRequest()
	legacy.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: bl, ResourceName: node,
		Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "root", Value: kmsg.StringPtr("INFO")}}}}
	if resp, err := legacy.RequestWith(ctxT(t), cl); err != nil || resp.Resources[0].ErrorCode != errInvalidRequest {
		t.Errorf("legacy AlterConfigs of broker loggers: %v %+v, want INVALID_REQUEST as in Kafka", err, resp)
	}

	describe := kmsg.NewPtrDescribeConfigsRequest()
	describe.Version = 4
	describe.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: bl, ResourceName: "7"}}
	if r := raw.request(describe).(*kmsg.DescribeConfigsResponse).Resources[0]; r.ErrorCode != errInvalidRequest ||
		deref(r.ErrorMessage) != "Unexpected broker id, expected 1 but received 7" {
		t.Errorf("describing another node's loggers: error %d %q", r.ErrorCode, deref(r.ErrorMessage))
	}
	list := kmsg.NewPtrListConfigResourcesRequest()
	list.ResourceTypes = []int8{int8(bl)}
	lr, err := list.RequestWith(ctxT(t), cl)
	if err != nil || len(lr.ConfigResources) != 1 || lr.ConfigResources[0].Name != node {
		t.Errorf("ListConfigResources of broker loggers: %v %+v, want this node", err, lr)
	}
}

// The log cleaner's messages go through
// org.apache.kafka.storage.internals.log.LogCleaner: at WARN a clean is
// not logged; with its level deleted (following root's INFO) it is.
func TestLogCleanerLogger(t *testing.T) {
	b, log := startBrokerLogged(t, map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(),
		"log.cleaner.backoff.ms": "20"})
	cl := newClient(t, b)
	const bl, node = kmsg.ConfigResourceTypeBrokerLogger, "1"
	const keys, rounds = 10, 40
	rc := dialRaw(t, b)
	cleaned := func(topic string) bool {
		return strings.Contains(log.String(), `msg="logstore: cleaned log" partition=`+topic+"-0 dirty.from=")
	}
	if code, msg := alterConfigsOf(t, cl, bl, node, setOp(logCleanerLoggerName, "WARN")); code != 0 {
		t.Fatalf("%s=WARN: error %d %s", logCleanerLoggerName, code, msg)
	}
	writeCompacted(t, b, rc, "quiet", keys, rounds)
	waitUntil(t, "quiet compacted", 30*time.Second, func() bool { return len(readCompacted(t, rc, "quiet", keys*rounds)) < keys*rounds/2 })
	if cleaned("quiet") {
		t.Errorf("a clean was logged at INFO with the cleaner's logger at WARN:\n%s", log.String())
	}
	del := kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: logCleanerLoggerName, Op: kmsg.IncrementalAlterConfigOpDelete}
	if code, msg := alterConfigsOf(t, cl, bl, node, del); code != 0 {
		t.Fatalf("deleting %s's level: error %d %s", logCleanerLoggerName, code, msg)
	}
	writeCompacted(t, b, rc, "heard", keys, rounds)
	waitUntil(t, "the clean of heard logged", 30*time.Second, func() bool { return cleaned("heard") })
}

// In a cluster, a node's partitions becoming leaders and followers are
// logged through state.change.logger, INFO of its own as in Kafka's
// log4j2.yaml: not at WARN, and again once that level is deleted.
func TestStateChangeLogger(t *testing.T) {
	c := startCluster(t, 3, nil)
	cl := c.client()
	const bl = kmsg.ConfigResourceTypeBrokerLogger
	changes := func(topic string) (leading, following int) {
		for _, line := range strings.Split(c.log.String(), "\n") {
			switch {
			case !strings.Contains(line, " topic="+topic+" "):
			case strings.Contains(line, `msg="leading partition" `):
				leading++
			case strings.Contains(line, `msg="following partition" `):
				following++
			}
		}
		return leading, following
	}
	// applied: every node holds its replica of the topic with a leader.
	applied := func(topic string) bool {
		for _, b := range c.nodes {
			tp := b.topics.get(topic)
			if tp == nil {
				return false
			}
			p := (*tp.parts.Load())[0]
			if p == nil || p.state.Load() == nil || p.state.Load().leader < 0 {
				return false
			}
		}
		return true
	}
	// create returns once every node has logged, or not, its replica's
	// first state: installState holds stateMu until it has.
	create := func(topic string) {
		if _, err := kadm.NewClient(cl).CreateTopic(ctxT(t), 1, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
		c.waitFor(topic+" applied on every node", func() bool { return applied(topic) })
		for _, b := range c.nodes {
			p := (*b.topics.get(topic).parts.Load())[0]
			p.stateMu.Lock()
			p.stateMu.Unlock()
		}
	}
	for node := 1; node <= 3; node++ {
		if got := describedConfigsOf(t, cl, bl, fmt.Sprint(node))[stateChangeLoggerName].value(); got != "INFO" {
			t.Fatalf("node %d: state.change.logger at %q, want INFO", node, got)
		}
		if code, msg := alterConfigsOf(t, cl, bl, fmt.Sprint(node), setOp(stateChangeLoggerName, "WARN")); code != 0 {
			t.Fatalf("node %d: state.change.logger=WARN: error %d %s", node, code, msg)
		}
	}
	create("quiet")
	if l, f := changes("quiet"); l != 0 || f != 0 {
		t.Errorf("with state.change.logger at WARN: %d leading and %d following partition records logged", l, f)
	}
	for node := 1; node <= 3; node++ {
		del := kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: stateChangeLoggerName, Op: kmsg.IncrementalAlterConfigOpDelete}
		if code, msg := alterConfigsOf(t, cl, bl, fmt.Sprint(node), del); code != 0 {
			t.Fatalf("node %d: deleting state.change.logger's level: error %d %s", node, code, msg)
		}
	}
	create("heard")
	// A leader lost to a slow heartbeat adds records; none may be missing.
	c.waitFor("the leader and both followers of heard logged", func() bool { l, f := changes("heard"); return l >= 1 && f >= 2 })
}
