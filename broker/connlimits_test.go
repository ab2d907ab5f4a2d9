package broker

import (
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// served reports whether a connection answers an ApiVersions request.
func served(rc *rawConn) bool {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw-test", "1"
	_, err := rc.tryRequest(req)
	return err == nil
}

// max.connections.per.ip (here through its override for 127.0.0.1): the
// connection beyond the maximum is closed at once, and a slot freed by a
// closed connection is taken by the next one; AlterConfigs changes it.
func TestMaxConnectionsPerIP(t *testing.T) {
	b := startBroker(t, map[string]string{"max.connections.per.ip.overrides": "127.0.0.1:3"})
	var open []*rawConn
	for range 3 {
		rc := dialRaw(t, b)
		if !served(rc) {
			t.Fatal("a connection within the maximum was refused")
		}
		open = append(open, rc)
	}
	if served(dialRaw(t, b)) {
		t.Fatal("a fourth connection from 127.0.0.1 was served with a maximum of 3")
	}
	open[0].nc.Close()
	waitFor(t, func() bool {
		rc := dialRaw(t, b)
		defer rc.nc.Close()
		return served(rc)
	})

	for _, rc := range open[1:] {
		rc.nc.Close()
	}
	var adm *kadm.Client
	waitFor(t, func() bool {
		adm = kadm.NewClient(newClient(t, b))
		_, err := adm.ListBrokers(ctxT(t))
		return err == nil
	})
	if r := alterBroker(t, adm, kadm.SetConfig, "max.connections.per.ip.overrides", "127.0.0.1:10"); r.Err != nil {
		t.Fatalf("altering the override: %v", r.Err)
	}
	for i := range 5 {
		if !served(dialRaw(t, b)) {
			t.Fatalf("connection %d under the raised maximum of 10 was refused", i+1)
		}
	}
	if _, _, err := ParseConfig(map[string]string{"max.connections.per.ip": "0", "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}); err == nil {
		t.Fatal("max.connections.per.ip=0 without overrides was accepted")
	}
}

// connection_creation_rate for an ip: connections beyond its rate are held
// and closed, not served; an address under the rate is unaffected.
func TestConnectionCreationRate(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	res := alterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("ip", "127.0.0.1"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 1}}})
	if res[0].Err != nil {
		t.Fatalf("connection_creation_rate refused: %v %s", res[0].Err, res[0].ErrMessage)
	}
	waitFor(t, func() bool { return b.quotas.Active("connection_creation_rate") })
	var conns []*rawConn
	for range 20 {
		conns = append(conns, dialRaw(t, b))
	}
	results := make(chan bool, len(conns))
	for _, rc := range conns {
		go func() { results <- served(rc) }() // a held connection answers nothing until it is closed
	}
	refused := 0
	for range conns {
		if !<-results {
			refused++
		}
	}
	// 1 a second over the 10 s the rate is measured on: about ten of the
	// twenty (the admin client's own connection came first).
	if refused < 5 || refused > 15 {
		t.Fatalf("%d of 20 quick connections refused at 1 a second", refused)
	}
}

// connections.max.idle.ms closes a connection that sends nothing for that
// long; one that keeps sending stays open.
func TestConnectionsMaxIdle(t *testing.T) {
	b := startBroker(t, map[string]string{"connections.max.idle.ms": "1500"})
	idle, busy := dialRaw(t, b), dialRaw(t, b)
	if !served(idle) || !served(busy) {
		t.Fatal("new connections not served")
	}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if !served(busy) {
			t.Fatal("a connection sending a request every 200 ms was closed")
		}
	}
	if served(idle) {
		t.Fatal("a connection idle for 3 s was served with connections.max.idle.ms=1500")
	}
}

// askVersions sends an ApiVersions request on rc without waiting for its
// answer.
func askVersions(t *testing.T, rc *rawConn) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw-test", "1"
	rc.corrID++
	if _, err := rc.nc.Write(encodeRequest(req, rc.corrID)); err != nil {
		t.Fatal(err)
	}
}

// answered reports whether the answer to a request sent on rc arrives
// within d (a later call can still read it if it does not).
func answered(rc *rawConn, d time.Duration) bool {
	rc.nc.SetReadDeadline(time.Now().Add(d))
	_, err := rc.readFrame()
	return err == nil
}

// notYet is how long a connection that must wait is watched for an
// answer it should not get: a connection the broker serves answers in
// milliseconds.
const notYet = 500 * time.Millisecond

// max.connections: once it is reached a new connection is accepted but
// not served until one closes, and the next waits behind it. The only
// listener is the inter-broker one, which is exempt only among several.
func TestMaxConnections(t *testing.T) {
	b := startBroker(t, map[string]string{"max.connections": "2"})
	first, second := dialRaw(t, b), dialRaw(t, b)
	if !served(first) || !served(second) {
		t.Fatal("connections within max.connections=2 were not served")
	}
	third, fourth := dialRaw(t, b), dialRaw(t, b)
	askVersions(t, third)
	askVersions(t, fourth)
	if answered(third, notYet) {
		t.Fatal("a third connection was served with max.connections=2")
	}
	first.nc.Close()
	if !answered(third, 20*time.Second) {
		t.Fatal("the waiting connection was not served after one of the two closed")
	}
	if answered(fourth, notYet) {
		t.Fatal("a fourth connection was served while two were open")
	}
	second.nc.Close()
	if !answered(fourth, 20*time.Second) {
		t.Fatal("the fourth connection was not served after another closed")
	}
	if _, _, err := ParseConfig(map[string]string{"max.connections": "-1", "listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}); err == nil {
		t.Fatal("max.connections=-1 was accepted")
	}
}

// startTwoListeners starts a broker with a second client listener,
// EXTERNAL, after the inter-broker one, and returns EXTERNAL's address.
func startTwoListeners(t *testing.T, props map[string]string) (*Broker, string) {
	all := map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
	}
	for k, v := range props {
		all[k] = v
	}
	b := startBroker(t, all)
	if b.listeners[1].name != "EXTERNAL" {
		t.Fatalf("second listener is %s", b.listeners[1].name)
	}
	return b, b.listeners[1].ln.Addr().String()
}

// Among several listeners the inter-broker one is not held to
// max.connections, but its connections count against the others. (Its
// own limit, without a key of its own the broker-wide one, is raised
// here: TestInterBrokerListenerTakesBrokerLimitsAsItsOwn.)
func TestMaxConnectionsSparesInterBrokerListener(t *testing.T) {
	b, external := startTwoListeners(t, map[string]string{"max.connections": "1", "listener.name.plaintext.max.connections": "3"})
	ext1 := dialAddr(t, external)
	if !served(ext1) {
		t.Fatal("the first connection was not served")
	}
	ext2 := dialAddr(t, external)
	askVersions(t, ext2)
	if answered(ext2, notYet) {
		t.Fatal("a second EXTERNAL connection was served with max.connections=1")
	}
	internal := []*rawConn{dialRaw(t, b), dialRaw(t, b)}
	for i, rc := range internal {
		if !served(rc) {
			t.Fatalf("inter-broker listener connection %d was held to max.connections", i+1)
		}
	}
	ext1.nc.Close()
	if answered(ext2, notYet) {
		t.Fatal("EXTERNAL served a connection while the inter-broker listener held two, over max.connections=1")
	}
	for _, rc := range internal {
		rc.nc.Close()
	}
	if !answered(ext2, 20*time.Second) {
		t.Fatal("the waiting EXTERNAL connection was not served once every other closed")
	}
}

// connectSerially opens n connections to addr one after another, each
// answering an ApiVersions before the next is opened, and returns how
// long that took; every one must be served.
func connectSerially(t *testing.T, addr string, n int) time.Duration {
	t.Helper()
	start := time.Now()
	for i := range n {
		if !served(dialAddr(t, addr)) {
			t.Fatalf("connection %d of %d was not served: a connection over the broker's rate is delayed, not refused", i+1, n)
		}
	}
	return time.Since(start)
}

// max.connection.creation.rate delays connections over it; set with
// IncrementalAlterConfigs it applies at once. The rate is measured as
// client quotas are, over at least quota.window.num-1 windows, which lets
// a burst of that many seconds' worth through first: two windows keep the
// burst to one second's.
func TestMaxConnectionCreationRate(t *testing.T) {
	b := startBroker(t, map[string]string{"quota.window.num": "2"})
	if r := alterBroker(t, newAdmin(t, b), kadm.SetConfig, "max.connection.creation.rate", "4"); r.Err != nil {
		t.Fatalf("altering max.connection.creation.rate: %v", r.Err)
	}
	// Twelve at 4 a second, the first four of them (fewer, after the
	// admin client's) in the burst: at least two seconds.
	if took := connectSerially(t, b.Addr(), 12); took < 1500*time.Millisecond {
		t.Fatalf("12 connections at max.connection.creation.rate=4 took %v, under the 2 s the rate allows", took)
	}
}

// The inter-broker listener, among several, is exempt from
// max.connection.creation.rate: compared with the same number of
// connections on another listener, which the rate paces.
// (Its own rate, the broker-wide one unless its listener.name key says
// otherwise, is raised here.)
func TestMaxConnectionCreationRateSparesInterBrokerListener(t *testing.T) {
	b, external := startTwoListeners(t, map[string]string{"quota.window.num": "2", "max.connection.creation.rate": "2",
		"listener.name.plaintext.max.connection.creation.rate": "1000"})
	paced := connectSerially(t, external, 8)
	if paced < 2*time.Second { // six over the burst of two at 2 a second: 3 s
		t.Fatalf("8 EXTERNAL connections at max.connection.creation.rate=2 took %v", paced)
	}
	if exempt := connectSerially(t, b.Addr(), 8); exempt > paced/3 {
		t.Fatalf("8 inter-broker listener connections took %v, the rate-paced EXTERNAL ones %v", exempt, paced)
	}
}

// alterBrokerRaw changes broker 1's dynamic config on one connection,
// with IncrementalAlterConfigs, or AlterConfigs when legacy (which
// replaces the broker's dynamic configs with these), and returns the
// error code.
func alterBrokerRaw(rc *rawConn, legacy bool, key, value string) int16 {
	if legacy {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.SetVersion(1)
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
		cfg := kmsg.NewAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = key, kmsg.StringPtr(value)
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		return rc.request(req).(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.SetVersion(1)
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value, cfg.Op = key, kmsg.StringPtr(value), kmsg.IncrementalAlterConfigOpSet
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	return rc.request(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
}

// max.connections set and raised at runtime: lowering it holds the next
// connection, raising it lets the held one through without any closing,
// and a bad value is refused.
func TestMaxConnectionsIsDynamic(t *testing.T) {
	b := startBroker(t, nil)
	ctl := dialRaw(t, b)
	if code := alterBrokerRaw(ctl, false, "max.connections", "2"); code != 0 {
		t.Fatalf("IncrementalAlterConfigs max.connections=2: %v", kerr.ErrorForCode(code))
	}
	if !served(dialRaw(t, b)) {
		t.Fatal("the second connection was not served with max.connections=2")
	}
	held := dialRaw(t, b)
	askVersions(t, held)
	if answered(held, notYet) {
		t.Fatal("a third connection was served after max.connections was set to 2")
	}
	if code := alterBrokerRaw(ctl, false, "max.connections", "-1"); code == 0 {
		t.Fatal("max.connections=-1 was accepted")
	}
	if answered(held, notYet) {
		t.Fatal("a refused alteration let the held connection through")
	}
	if code := alterBrokerRaw(ctl, true, "max.connections", "3"); code != 0 {
		t.Fatalf("AlterConfigs max.connections=3: %v", kerr.ErrorForCode(code))
	}
	if !answered(held, 20*time.Second) {
		t.Fatal("the held connection was not served after max.connections was raised to 3")
	}
}

// A broker whose accept loop waits for a slot that will never come
// (max.connections=0) still closes.
func TestCloseWhileAcceptLoopWaits(t *testing.T) {
	b := startBroker(t, map[string]string{"max.connections": "0"})
	rc := dialRaw(t, b)
	askVersions(t, rc)
	if answered(rc, notYet) {
		t.Fatal("a connection was served with max.connections=0")
	}
	closed := make(chan error, 1)
	go func() { closed <- b.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return while the accept loop waited for a connection slot")
	}
}

// alterBrokerOp changes broker 1's dynamic config with one
// IncrementalAlterConfigs operation (SET, or DELETE, which ignores value)
// and returns the error code and message.
func alterBrokerOp(rc *rawConn, op kmsg.IncrementalAlterConfigOp, key, value string) (int16, string) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.SetVersion(1)
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Op = key, op
	if op != kmsg.IncrementalAlterConfigOpDelete {
		cfg.Value = kmsg.StringPtr(value)
	}
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	r := rc.request(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	return r.ErrorCode, msg
}

// listener.name.external.max.connections: EXTERNAL holds its second
// connection while the other listener, and so the broker, still serves
// new ones; raising it at runtime releases the held connection, and the
// raised limit still holds. A value of zero set at runtime is refused, as
// Kafka refuses it; a key for a listener the broker does not have is
// accepted and left unused, as in Kafka.
func TestListenerMaxConnections(t *testing.T) {
	b, external := startTwoListeners(t, map[string]string{"listener.name.external.max.connections": "1"})
	ext1 := dialAddr(t, external)
	if !served(ext1) {
		t.Fatal("the first EXTERNAL connection was not served")
	}
	ext2 := dialAddr(t, external)
	askVersions(t, ext2)
	if answered(ext2, notYet) {
		t.Fatal("a second EXTERNAL connection was served with listener.name.external.max.connections=1")
	}
	ctl := dialRaw(t, b)
	for i := range 3 {
		if !served(dialRaw(t, b)) {
			t.Fatalf("PLAINTEXT connection %d was not served while EXTERNAL was at its own maximum", i+1)
		}
	}
	if code, msg := alterBrokerOp(ctl, kmsg.IncrementalAlterConfigOpSet, "listener.name.external.max.connections", "0"); code != kerr.InvalidRequest.Code ||
		msg != "Invalid value org.apache.kafka.common.config.ConfigException: Invalid max.connections 0 for configuration Invalid dynamic configuration" {
		t.Fatalf("listener.name.external.max.connections=0 at runtime: %v %q", kerr.ErrorForCode(code), msg)
	}
	if code, _ := alterBrokerOp(ctl, kmsg.IncrementalAlterConfigOpSet, "listener.name.external.max.connections", "-1"); code != kerr.InvalidRequest.Code {
		t.Fatalf("listener.name.external.max.connections=-1 at runtime: %v", kerr.ErrorForCode(code))
	}
	if code, msg := alterBrokerOp(ctl, kmsg.IncrementalAlterConfigOpSet, "listener.name.nosuch.max.connections", "5"); code != 0 {
		t.Fatalf("a key for a listener the broker does not have: %v %s", kerr.ErrorForCode(code), msg)
	}
	if answered(ext2, notYet) {
		t.Fatal("refused alterations let the held EXTERNAL connection through")
	}
	if code, msg := alterBrokerOp(ctl, kmsg.IncrementalAlterConfigOpSet, "listener.name.external.max.connections", "2"); code != 0 {
		t.Fatalf("IncrementalAlterConfigs listener.name.external.max.connections=2: %v %s", kerr.ErrorForCode(code), msg)
	}
	if !answered(ext2, 20*time.Second) {
		t.Fatal("the held EXTERNAL connection was not served after its listener's maximum was raised to 2")
	}
	ext3 := dialAddr(t, external)
	askVersions(t, ext3)
	if answered(ext3, notYet) {
		t.Fatal("a third EXTERNAL connection was served with listener.name.external.max.connections=2")
	}
	ext1.nc.Close()
	if !answered(ext3, 20*time.Second) {
		t.Fatal("the third EXTERNAL connection was not served after another closed")
	}
}

// The inter-broker listener is exempt from the broker-wide limits but not
// from its own, which, without its listener.name keys, are the broker-wide
// values over its own connections (Kafka reads a listener's values with
// the prefixed keys overriding the broker's): with max.connections=1 it
// holds its own second connection, though EXTERNAL's connection already
// takes the broker over the maximum, and deleting the maximum it was then
// given at runtime brings back that held state.
func TestInterBrokerListenerTakesBrokerLimitsAsItsOwn(t *testing.T) {
	b, external := startTwoListeners(t, map[string]string{"max.connections": "1"})
	ext := dialAddr(t, external)
	if !served(ext) {
		t.Fatal("the first EXTERNAL connection was not served")
	}
	int1 := dialRaw(t, b)
	if !served(int1) {
		t.Fatal("the inter-broker listener's first connection was held to the broker-wide max.connections")
	}
	int2 := dialRaw(t, b)
	askVersions(t, int2)
	if answered(int2, notYet) {
		t.Fatal("the inter-broker listener's second connection was served with max.connections=1 as its own maximum")
	}
	if code, msg := alterBrokerOp(ext, kmsg.IncrementalAlterConfigOpSet, "listener.name.plaintext.max.connections", "2"); code != 0 {
		t.Fatalf("IncrementalAlterConfigs listener.name.plaintext.max.connections=2: %v %s", kerr.ErrorForCode(code), msg)
	}
	if !answered(int2, 20*time.Second) {
		t.Fatal("the held inter-broker listener connection was not served after its listener's maximum was raised")
	}
	int3 := dialRaw(t, b)
	askVersions(t, int3)
	if answered(int3, notYet) {
		t.Fatal("a third inter-broker listener connection was served with listener.name.plaintext.max.connections=2")
	}
	if code, msg := alterBrokerOp(ext, kmsg.IncrementalAlterConfigOpDelete, "listener.name.plaintext.max.connections", ""); code != 0 {
		t.Fatalf("deleting listener.name.plaintext.max.connections: %v %s", kerr.ErrorForCode(code), msg)
	}
	int1.nc.Close()
	if answered(int3, notYet) {
		t.Fatal("with its own maximum deleted, back to max.connections=1, the inter-broker listener served a second connection")
	}
	int2.nc.Close()
	if !answered(int3, 20*time.Second) {
		t.Fatal("the held inter-broker listener connection was not served once its others closed")
	}
}

// listener.name.external.max.connection.creation.rate, set at runtime,
// paces EXTERNAL's new connections and not the other listener's: compared
// with the same number on PLAINTEXT, which has no rate of its own (nor
// the broker one).
func TestListenerMaxConnectionCreationRate(t *testing.T) {
	b, external := startTwoListeners(t, map[string]string{"quota.window.num": "2"})
	if code, msg := alterBrokerOp(dialRaw(t, b), kmsg.IncrementalAlterConfigOpSet, "listener.name.external.max.connection.creation.rate", "2"); code != 0 {
		t.Fatalf("IncrementalAlterConfigs listener.name.external.max.connection.creation.rate=2: %v %s", kerr.ErrorForCode(code), msg)
	}
	paced := connectSerially(t, external, 8)
	if paced < 2*time.Second { // six over the burst of two at 2 a second: 3 s
		t.Fatalf("8 EXTERNAL connections at listener.name.external.max.connection.creation.rate=2 took %v", paced)
	}
	if free := connectSerially(t, b.Addr(), 8); free > paced/3 {
		t.Fatalf("8 PLAINTEXT connections took %v, the EXTERNAL ones at their listener's rate %v", free, paced)
	}
}

// The per-listener keys in server.properties: a bad value is refused with
// its key; a listener without its own key takes the broker-wide value; a
// key naming no listener (the name must be in lower case) is left unused
// with a warning.
func TestListenerConnectionLimitsConfig(t *testing.T) {
	base := func(extra map[string]string) map[string]string {
		props := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT", "log.dirs": t.TempDir()}
		for k, v := range extra {
			props[k] = v
		}
		return props
	}
	if _, _, err := ParseConfig(base(map[string]string{"listener.name.external.max.connections": "-1"})); err == nil ||
		!strings.Contains(err.Error(), "listener.name.external.max.connections") {
		t.Fatalf("listener.name.external.max.connections=-1: %v", err)
	}
	if _, _, err := ParseConfig(base(map[string]string{"listener.name.plaintext.max.connection.creation.rate": "x"})); err == nil ||
		!strings.Contains(err.Error(), "listener.name.plaintext.max.connection.creation.rate") {
		t.Fatalf("listener.name.plaintext.max.connection.creation.rate=x: %v", err)
	}
	c, warnings, err := ParseConfig(base(map[string]string{"max.connections": "7", "max.connection.creation.rate": "9",
		"listener.name.external.max.connections": "3", "listener.name.plaintext.max.connection.creation.rate": "4",
		"listener.name.nosuch.max.connections": "5", "listener.name.EXTERNAL.max.connection.creation.rate": "6"}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ListenerConnectionLimits{"PLAINTEXT": {7, 4}, "EXTERNAL": {3, 9}}
	if !reflect.DeepEqual(c.ListenerConnectionLimits, want) {
		t.Fatalf("listener limits %v, want %v", c.ListenerConnectionLimits, want)
	}
	for _, key := range []string{"listener.name.nosuch.max.connections", "listener.name.EXTERNAL.max.connection.creation.rate"} {
		if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, key) }) {
			t.Errorf("no warning for %s: %q", key, warnings)
		}
	}
	for _, w := range warnings {
		if strings.Contains(w, "listener.name.external") || strings.Contains(w, "listener.name.plaintext") {
			t.Errorf("a warning for a key that is used: %s", w)
		}
	}
}

// socket.listen.backlog.size bounds the connections the kernel completes
// while the broker accepts none (here: max.connections reached): one the
// accept loop took and holds until a slot frees (as Kafka's acceptor
// does), then the backlog+1 Linux queues; the next connection's SYN goes
// unanswered, so its dial times out. With Kafka's default, 50, ten
// connections all complete.
func TestSocketListenBacklog(t *testing.T) {
	for _, c := range []struct {
		backlog string
		want    int
	}{{"2", 4}, {"5", 7}, {"", 10}} {
		props := map[string]string{"max.connections": "1"}
		if c.backlog != "" {
			props["socket.listen.backlog.size"] = c.backlog
		}
		b := startBroker(t, props)
		if !served(dialRaw(t, b)) {
			t.Fatal("the first connection was not served")
		}
		completed := 0
		for i := 0; i < 10; i++ {
			nc, err := net.DialTimeout("tcp", b.Addr(), 300*time.Millisecond)
			if err == nil {
				completed++
				t.Cleanup(func() { nc.Close() })
			}
		}
		if completed != c.want {
			t.Errorf("socket.listen.backlog.size=%q: %d of 10 connections completed while none was accepted, want %d", c.backlog, completed, c.want)
		}
	}
	if _, _, err := ParseConfig(map[string]string{"socket.listen.backlog.size": "0"}); err == nil {
		t.Fatal("socket.listen.backlog.size=0 was accepted")
	}
}
