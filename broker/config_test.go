package broker

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/internal/properties"
)

func TestParseConfigDefaultsAndErrors(t *testing.T) {
	c := DefaultConfig()
	if c.NodeID != 1 || c.LogDirs[0] != "./data" || c.Listeners[0].String() != "PLAINTEXT://localhost:9092" || !c.AutoCreateTopics || c.NumPartitions != 1 {
		t.Fatalf("defaults: %+v", c)
	}
	if c.SocketSendBufferBytes != 102400 || c.SocketReceiveBufferBytes != 102400 {
		t.Fatalf("socket buffers %d/%d, Kafka's defaults are 102400", c.SocketSendBufferBytes, c.SocketReceiveBufferBytes)
	}
	if q := c.Quota; q.Samples != 11 || q.Window != time.Second || q.MutationSamples != 11 || q.MutationWindow != time.Second {
		t.Fatalf("quota windows %+v, Kafka's defaults are 11 of 1 s for both", q)
	}
	if c.MoveThreads != 0 {
		t.Fatalf("num.replica.alter.log.dirs.threads %d by default, want 0 (one per log dir)", c.MoveThreads)
	}
	if m, _, err := ParseConfig(map[string]string{"num.replica.alter.log.dirs.threads": "3"}); err != nil || m.MoveThreads != 3 {
		t.Fatalf("num.replica.alter.log.dirs.threads=3: %d %v", m.MoveThreads, err)
	}
	if _, _, err := ParseConfig(map[string]string{"num.replica.alter.log.dirs.threads": "0"}); err == nil {
		t.Fatal("num.replica.alter.log.dirs.threads=0 was accepted")
	}
	if q, _, err := ParseConfig(map[string]string{"controller.quota.window.num": "3", "controller.quota.window.size.seconds": "2"}); err != nil ||
		q.Quota.MutationSamples != 3 || q.Quota.MutationWindow != 2*time.Second || q.Quota.Samples != 11 {
		t.Fatalf("controller quota windows: %+v %v", q.Quota, err)
	}
	props := map[string]string{"log.roll.hours": "2", "index.interval.bytes": "100", "no.such.key": "x", "log.dirs": "/a,/b"}
	c, warnings, err := ParseConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	if c.Log.SegmentMs != 2*3600*1000 || c.Log.IndexIntervalBytes != 100 {
		t.Fatalf("roll %d, index interval %d", c.Log.SegmentMs, c.Log.IndexIntervalBytes)
	}
	if _, mutated := props["log.index.interval.bytes"]; mutated {
		t.Fatal("ParseConfig changed its argument")
	}
	joined := strings.Join(warnings, "\n")
	if !strings.Contains(joined, "no.such.key") || strings.Contains(joined, "log.dirs") || !slices.Equal(c.LogDirs, []string{"/a", "/b"}) {
		t.Fatalf("warnings: %v, log dirs %v", warnings, c.LogDirs)
	}
	// log.roll.ms wins over log.roll.hours, as in Kafka.
	if c, _, _ := ParseConfig(map[string]string{"log.roll.hours": "2", "log.roll.ms": "5000"}); c.Log.SegmentMs != 5000 {
		t.Fatalf("log.roll.ms: %d", c.Log.SegmentMs)
	}
	for key, bad := range map[string]string{
		"num.partitions": "0", "auto.create.topics.enable": "yes", "listeners": "localhost:9092",
		"log.message.timestamp.type": "Now", "socket.request.max.bytes": "-1", "node.id": "x",
		"socket.send.buffer.bytes": "0", "socket.receive.buffer.bytes": "-2",
	} {
		if _, _, err := ParseConfig(map[string]string{key: bad}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: error %v", key, bad, err)
		}
	}
}

// kafkaServerProperties has the keys of the server.properties that Apache
// Kafka 4.x ships for a combined KRaft node.
const kafkaServerProperties = `process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
`

func TestKafkasOwnServerPropertiesAreAccepted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(path, []byte(kafkaServerProperties), 0o644); err != nil {
		t.Fatal(err)
	}
	props, err := properties.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	c, warnings, err := ParseConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		if strings.Contains(w, "unknown") {
			t.Errorf("a key of Kafka's own file is unknown: %s", w)
		}
	}
	served := c.clientListeners()
	if len(served) != 1 || served[0].Name != "PLAINTEXT" || served[0].Port != 9092 {
		t.Fatalf("client listeners %v", served)
	}
	if c.LogDirs[0] != "/tmp/kraft-combined-logs" || c.Log.SegmentBytes != 1073741824 {
		t.Fatalf("log dir %v, segment bytes %d", c.LogDirs, c.Log.SegmentBytes)
	}
}

// TestSocketBufferSizes checks that socket.send.buffer.bytes and
// socket.receive.buffer.bytes reach the broker's end of a connection
// (Linux reports twice the size asked for, its bookkeeping included) and
// that -1 leaves the kernel's sizes, those of a plain accepted socket.
func TestSocketBufferSizes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	plain, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	kernelSnd, kernelRcv := socketBuffers(t, plain)

	for _, tc := range []struct {
		snd, rcv         string
		wantSnd, wantRcv int
	}{
		{"65536", "32768", 2 * 65536, 2 * 32768},
		{"-1", "-1", kernelSnd, kernelRcv},
	} {
		b := startBroker(t, map[string]string{"socket.send.buffer.bytes": tc.snd, "socket.receive.buffer.bytes": tc.rcv})
		client, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		snd, rcv := socketBuffers(t, brokerSideOf(t, b))
		client.Close()
		if snd != tc.wantSnd || rcv != tc.wantRcv {
			t.Errorf("send %s receive %s: the broker's socket has SO_SNDBUF %d SO_RCVBUF %d, want %d and %d",
				tc.snd, tc.rcv, snd, rcv, tc.wantSnd, tc.wantRcv)
		}
	}
}

// brokerSideOf waits for the broker's only connection and returns it.
func brokerSideOf(t *testing.T, b *Broker) net.Conn {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b.mu.Lock()
		for c := range b.conns {
			b.mu.Unlock()
			return c.nc
		}
		b.mu.Unlock()
	}
	t.Fatal("the broker never registered the connection")
	return nil
}

func socketBuffers(t *testing.T, nc net.Conn) (snd, rcv int) {
	t.Helper()
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr, rerr error
	err = raw.Control(func(fd uintptr) {
		snd, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
		rcv, rerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	})
	for _, e := range []error{err, serr, rerr} {
		if e != nil {
			t.Fatal(e)
		}
	}
	return snd, rcv
}

// broker.id is node.id's deprecated name, as in Kafka 4: alone it sets the
// node id; beside node.id it must agree with it.
func TestBrokerIDIsNodeID(t *testing.T) {
	c, warnings, err := ParseConfig(map[string]string{"broker.id": "7"})
	if err != nil || c.NodeID != 7 || len(warnings) != 0 {
		t.Fatalf("broker.id=7: node id %d, warnings %v, %v", c.NodeID, warnings, err)
	}
	if c, _, err := ParseConfig(map[string]string{"broker.id": "7", "node.id": "7"}); err != nil || c.NodeID != 7 {
		t.Fatalf("both 7: node id %d, %v", c.NodeID, err)
	}
	_, _, err = ParseConfig(map[string]string{"broker.id": "7", "node.id": "3"})
	if err == nil || err.Error() != "`node.id` and `broker.id` must be set to the same value. `broker.id` is deprecated, please use `node.id` instead" {
		t.Fatalf("broker.id 7, node.id 3: %v", err)
	}
}

// Listener settings Kafka refuses at start-up are refused with its
// messages; what it accepts starts.
func TestListenersValidatedAsKafkaDoes(t *testing.T) {
	const pp = "PLAINTEXT:PLAINTEXT,FOO:PLAINTEXT,CONTROLLER:PLAINTEXT"
	checkParses(t, []parseCase{
		{map[string]string{"listeners": "PLAINTEXT://0.0.0.0:9092"},
			"invalid value for config key listeners: advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address. (advertised.listeners is not set, so listeners are advertised)"},
		{map[string]string{"listeners": "PLAINTEXT://0.0.0.0:9092", "advertised.listeners": "PLAINTEXT://broker1:9092"}, ""},
		{map[string]string{"listeners": "PLAINTEXT://:9092", "advertised.listeners": "PLAINTEXT://0.0.0.0:9092"},
			"invalid value for config key advertised.listeners: advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."},
		// A CONTROLLER listener bound to every interface is reached through
		// controller.quorum.voters; advertised there, it is refused.
		{map[string]string{"listeners": "PLAINTEXT://localhost:9092,CONTROLLER://0.0.0.0:9093", "controller.listener.names": "CONTROLLER",
			"advertised.listeners": "PLAINTEXT://localhost:9092"}, ""},
		{map[string]string{"listeners": "PLAINTEXT://localhost:9092,CONTROLLER://0.0.0.0:9093", "controller.listener.names": "CONTROLLER",
			"advertised.listeners": "PLAINTEXT://localhost:9092,CONTROLLER://0.0.0.0:9093"},
			"invalid value for config key advertised.listeners: advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."},
		{map[string]string{"listeners": "PLAINTEXT://localhost:9092", "advertised.listeners": "FOO://localhost:9092", "listener.security.protocol.map": pp},
			"invalid value for config key advertised.listeners: advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found FOO. The valid options based on the current configuration are PLAINTEXT"},
		{map[string]string{"listeners": "PLAINTEXT://localhost:9092,plaintext://localhost:9093"},
			"invalid value for config key listeners: Each listener must have a different name, listeners: PLAINTEXT://localhost:9092,plaintext://localhost:9093"},
		{map[string]string{"listeners": "PLAINTEXT://localhost:9092", "advertised.listeners": "PLAINTEXT://a:9092,PLAINTEXT://b:9092"},
			"invalid value for config key advertised.listeners: Each listener must have a different name, listeners: PLAINTEXT://a:9092,PLAINTEXT://b:9092"},
		{map[string]string{"listeners": "PLAINTEXT://localhost:9092,FOO://otherhost:9092", "listener.security.protocol.map": pp},
			"invalid value for config key listeners: Each listener must have a different port, listeners: PLAINTEXT://localhost:9092,FOO://otherhost:9092"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,FOO://127.0.0.2:9092", "listener.security.protocol.map": pp},
			"invalid value for config key listeners: If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, listeners: PLAINTEXT://127.0.0.1:9092,FOO://127.0.0.2:9092, port: 9092"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,FOO://localhost:9092", "listener.security.protocol.map": pp},
			"invalid value for config key listeners: Each listener must have a different port unless exactly one listener has an IPv4 address and the other IPv6 address, listeners: PLAINTEXT://127.0.0.1:9092,FOO://localhost:9092, port: 9092"},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,FOO://[::1]:9092", "listener.security.protocol.map": pp}, ""},
		{map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,FOO://127.0.0.1:0", "listener.security.protocol.map": pp}, ""},
	})
}

// Values Kafka refuses in view of another key are refused with its
// messages; where Kafka only logs an error, Gregor warns.
func TestRelatedKeysValidatedAsKafkaDoes(t *testing.T) {
	checkParses(t, []parseCase{
		{map[string]string{"log.retention.ms": "0"}, "invalid value for config key log.retention.ms: log.retention.ms must be unlimited (-1) or, greater than or equal to 1"},
		{map[string]string{"log.retention.hours": "0"}, "invalid value for config key log.retention.hours: log.retention.ms must be unlimited (-1) or, greater than or equal to 1"},
		{map[string]string{"log.retention.minutes": "0", "log.retention.hours": "5"}, "invalid value for config key log.retention.minutes: log.retention.ms must be unlimited (-1) or, greater than or equal to 1"},
		{map[string]string{"log.retention.ms": "-1"}, ""},
		{map[string]string{"log.retention.hours": "-5"}, ""},
		{map[string]string{"log.retention.ms": "-2"}, ""},
		{map[string]string{"log.retention.hours": "0", "log.retention.ms": "1"}, ""},
		{map[string]string{"log.cleaner.dedupe.buffer.size": "1048576"}, "invalid value for config key log.cleaner.dedupe.buffer.size: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."},
		{map[string]string{"log.cleaner.dedupe.buffer.size": "4194304", "log.cleaner.threads": "4"}, "invalid value for config key log.cleaner.dedupe.buffer.size: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."},
		{map[string]string{"log.cleaner.dedupe.buffer.size": "1048577"}, ""},
		{map[string]string{"replica.fetch.wait.max.ms": "30001"}, "invalid value for config key replica.fetch.wait.max.ms: replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR"},
		{map[string]string{"replica.fetch.wait.max.ms": "30000"}, ""},
		{map[string]string{"replica.fetch.wait.max.ms": "600", "replica.lag.time.max.ms": "500"}, "invalid value for config key replica.fetch.wait.max.ms: replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR"},
		{map[string]string{"replica.socket.timeout.ms": "400"}, "invalid value for config key replica.socket.timeout.ms: replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent unnecessary socket timeouts"},
		{map[string]string{"replica.socket.timeout.ms": "500"}, ""},
		{map[string]string{"connection.failed.authentication.delay.ms": "600000"}, "invalid value for config key connection.failed.authentication.delay.ms: connection.failed.authentication.delay.ms=600000 should always be less than connections.max.idle.ms=600000 to prevent failed authentication responses from timing out"},
		{map[string]string{"connection.failed.authentication.delay.ms": "600000", "connections.max.idle.ms": "-1"}, ""},
		{map[string]string{"queued.max.request.bytes": "104857599"}, "invalid value for config key queued.max.request.bytes: queued.max.request.bytes must be larger or equal to socket.request.max.bytes"},
		{map[string]string{"queued.max.request.bytes": "1000", "socket.request.max.bytes": "1000"}, ""},
		{map[string]string{"queued.max.request.bytes": "0"}, ""},
		{map[string]string{"queued.max.request.bytes": "-1"}, ""},
	})
	// As Kafka's logRetentionTimeMillis: any negative retention is unlimited.
	for _, props := range []map[string]string{{"log.retention.ms": "-2"}, {"log.retention.minutes": "-3"}, {"log.retention.hours": "-5"}} {
		c, _, err := ParseConfig(props)
		if err != nil {
			t.Fatal(err)
		}
		if ms := c.settingsFor(nil).log.RetentionMs; ms != -1 {
			t.Fatalf("%v: retention.ms %d, want -1 (unlimited)", props, ms)
		}
	}
	_, warnings, err := ParseConfig(map[string]string{"broker.heartbeat.interval.ms": "5000"})
	if err != nil || len(warnings) != 1 || !strings.HasPrefix(warnings[0], "broker.heartbeat.interval.ms (5000 ms) must be less than or equal to half of the broker.session.timeout.ms (9000 ms).") {
		t.Fatalf("heartbeat over half the session timeout: warnings %q, %v", warnings, err)
	}
	if _, warnings, _ := ParseConfig(map[string]string{"broker.heartbeat.interval.ms": "4500"}); len(warnings) != 0 {
		t.Fatalf("heartbeat at half the session timeout: warnings %q", warnings)
	}
}

// parseCase is a config and the error ParseConfig must give ("" when it
// must accept it).
type parseCase struct {
	props map[string]string
	err   string
}

func checkParses(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		_, _, err := ParseConfig(tc.props)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%v: refused: %v", tc.props, err)
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%v:\n got %v\nwant %s", tc.props, err, tc.err)
		}
	}
}

// A key naming a Java plugin that would enforce something stops the start;
// empty, or the class Gregor's behaviour is, is accepted.
func TestPluginClassesRefused(t *testing.T) {
	for _, k := range pluginKeys {
		_, _, err := ParseConfig(map[string]string{k.name: "com.example.Custom"})
		if err == nil || !strings.Contains(err.Error(), k.name) || !strings.Contains(err.Error(), "Gregor runs no Java plugins, so ") {
			t.Errorf("%s=com.example.Custom: %v", k.name, err)
		}
		if _, warnings, err := ParseConfig(map[string]string{k.name: k.def}); err != nil || len(warnings) != 0 {
			t.Errorf("%s=%q (its default): %v %v", k.name, k.def, err, warnings)
		}
	}
	if _, _, err := ParseConfig(map[string]string{"principal.builder.class": defaultPrincipalBuilder}); err != nil {
		t.Errorf("Kafka's default principal builder named explicitly: %v", err)
	}
}
