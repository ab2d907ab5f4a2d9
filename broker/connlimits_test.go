package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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
