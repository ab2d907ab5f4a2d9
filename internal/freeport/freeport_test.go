package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestPortsAreDistinctFreeAndBelowTheEphemeralRange checks each port can
// be bound once Ports returns, no two are the same, and none lies in the
// range the kernel assigns to connections.
func TestPortsAreDistinctFreeAndBelowTheEphemeralRange(t *testing.T) {
	ports, err := Ports(20)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 20 {
		t.Fatalf("got %d ports, want 20", len(ports))
	}
	low := ephemeralLow()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d handed out twice in %v", p, ports)
		}
		seen[p] = true
		if p < lowest || p >= low {
			t.Fatalf("port %d outside %d-%d", p, lowest, low-1)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d not free after Ports returned: %v", p, err)
		}
		ln.Close()
	}
}

// TestPickSkipsAPortInUse offers pick a single port, held by the test:
// it must report that it found none rather than hand that port out.
func TestPickSkipsAPortInUse(t *testing.T) {
	ports, err := Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got, err := pick(1, ports[0], ports[0]); err == nil {
		t.Fatalf("pick handed out %v, a port in use", got)
	}
}
