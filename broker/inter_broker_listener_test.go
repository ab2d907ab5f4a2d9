package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// The inter-broker listener is Kafka's: inter.broker.listener.name, else
// the listener named by security.inter.broker.protocol (PLAINTEXT by
// default), never both; what they name must be an advertised listener
// other than a controller listener, also where neither key is set.
func TestInterBrokerListenerChoice(t *testing.T) {
	for _, c := range []struct {
		name      string
		props     map[string]string
		want, err string
	}{
		{"PLAINTEXT by default, first or not",
			map[string]string{"listeners": "SASL_PLAINTEXT://:9093,PLAINTEXT://:9092", "sasl.enabled.mechanisms": "PLAIN",
				"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS}, "PLAINTEXT", ""},
		{"none called PLAINTEXT, neither key set",
			map[string]string{"listeners": "EXTERNAL://:9094,INTERNAL://:9092", "listener.security.protocol.map": "EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT"}, "",
			"invalid value for config key inter.broker.listener.name: inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are EXTERNAL,INTERNAL"},
		{"listening but not advertised",
			map[string]string{"listeners": "PLAINTEXT://:9092,INTERNAL://:9093", "advertised.listeners": "PLAINTEXT://127.0.0.1:9092",
				"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT", "inter.broker.listener.name": "INTERNAL"}, "",
			"The valid options based on currently configured listeners are PLAINTEXT"},
		{"inter.broker.listener.name",
			map[string]string{"listeners": "EXTERNAL://:9094,internal://:9092", "listener.security.protocol.map": "EXTERNAL:PLAINTEXT,INTERNAL:PLAINTEXT",
				"inter.broker.listener.name": "internal"}, "INTERNAL", ""},
		{"security.inter.broker.protocol",
			map[string]string{"listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093", "sasl.enabled.mechanisms": "PLAIN",
				"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS,
				"security.inter.broker.protocol":                      "sasl_plaintext", "sasl.mechanism.inter.broker.protocol": "PLAIN"}, "SASL_PLAINTEXT", ""},
		{"both set",
			map[string]string{"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}, "",
			"only one of inter.broker.listener.name and security.inter.broker.protocol may be set"},
		{"a name that is no listener",
			map[string]string{"listeners": "PLAINTEXT://:9092,EXTERNAL://:9094", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
				"inter.broker.listener.name": "INTERNAL"}, "",
			"invalid value for config key inter.broker.listener.name: inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are PLAINTEXT,EXTERNAL"},
		{"the controller listener",
			map[string]string{"process.roles": "broker,controller", "node.id": "1", "controller.quorum.voters": "1@127.0.0.1:9093",
				"listeners": "PLAINTEXT://:9092,CONTROLLER://127.0.0.1:9093", "controller.listener.names": "CONTROLLER",
				"inter.broker.listener.name": "CONTROLLER"}, "",
			"invalid value for config key inter.broker.listener.name: inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are PLAINTEXT"},
		{"a protocol with no listener of its name",
			map[string]string{"security.inter.broker.protocol": "SSL"}, "",
			"invalid value for config key security.inter.broker.protocol: inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are PLAINTEXT"},
		{"an unknown protocol",
			map[string]string{"security.inter.broker.protocol": "TLS"}, "",
			"invalid value \"TLS\" for config key security.inter.broker.protocol: unknown security protocol TLS"},
	} {
		props := map[string]string{"log.dirs": t.TempDir()}
		for k, v := range c.props {
			props[k] = v
		}
		cfg, _, err := ParseConfig(props)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if l, _, _ := cfg.interBrokerListener(); l.Name != c.want {
			t.Errorf("%s: inter-broker listener %s, want %s", c.name, l.Name, c.want)
		}
	}
}

// A cluster whose clients log in with SASL on PLAINTEXT, for which the
// brokers have no credentials, and whose brokers reach each other on
// INTERNAL (inter.broker.listener.name): the two broker-only nodes
// replicate there, and follow the metadata log there, while clients use
// the other listener.
func TestClusterInterBrokerListenerName(t *testing.T) {
	c := clusterProps(t, 1, 2, map[string]string{
		"listener.security.protocol.map":                 "PLAINTEXT:SASL_PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":                        "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config": plainJAAS,
		"inter.broker.listener.name":                     "INTERNAL",
	})
	for _, p := range c.props[1:] {
		p["listeners"] += ",INTERNAL://127.0.0.1:0"
	}
	c.startAll()
	for _, b := range c.nodes[1:] {
		if l := b.interBrokerBound(); l.name != "INTERNAL" || !l.raft {
			t.Fatalf("node %d follows the metadata log on %s (raft %v)", b.cfg.NodeID, l.name, l.raft)
		}
	}
	admin := c.client(kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if _, err := kadm.NewClient(admin).CreateTopic(ctxT(t), 2, 2, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, "internal"); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := admin.ProduceSync(ctxT(t), &kgo.Record{Topic: "internal", Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("acks=all with both replicas in sync needs the follower fetching on INTERNAL: %v", err)
		}
	}
}
