// Package freeport picks loopback TCP ports for tests that must know a
// node's port before the node starts (every voter of a quorum names every
// other), or that restart a node on the port it had.
//
// A port found by binding 127.0.0.1:0 and closing the listener comes from
// the kernel's ephemeral range (net.ipv4.ip_local_port_range), the same
// range every outgoing connection on the machine draws its local port
// from: between the test's check and the node's bind, any client of any
// test running alongside can take it ("bind: address already in use").
// The ports handed out here lie below that range, where the kernel never
// assigns a port by itself; only another explicit bind to the same number
// can collide, so each is picked at random and checked free.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the first port considered: well above the privileged ports
// and the registered services most often found listening (Kafka's 9092,
// ZooKeeper's 2181).
const lowest = 20000

// Ports returns n distinct loopback ports that were free a moment ago and
// that the kernel does not hand out to connections by itself.
func Ports(n int) ([]int, error) {
	high := ephemeralLow() - 1
	if high-lowest+1 < 4*n {
		return nil, fmt.Errorf("freeport: only ports %d-%d lie below the ephemeral range, %d wanted", lowest, high, n)
	}
	return pick(n, lowest, high)
}

// pick returns n distinct ports of low-high, each free when tried.
func pick(n, low, high int) ([]int, error) {
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			ln.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("freeport: found %d free ports of %d in %d-%d", len(ports), n, low, high)
		}
		port := low + rand.IntN(high-low+1)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // in use (or held already by this call)
		}
		held = append(held, ln)
		ports = append(ports, port)
	}
	return ports, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range, or
// Linux's default when the range cannot be read.
func ephemeralLow() int {
	const linuxDefault = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return linuxDefault
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return linuxDefault
	}
	return low
}
