// Package connsetup gives each connection a node makes its setup time as
// Kafka's NetworkClient does: a connection (TCP, the TLS handshake, a SASL
// login) not set up within socket.connection.setup.timeout.ms is given
// up, and each consecutive failure to the same address doubles that, up
// to socket.connection.setup.timeout.max.ms, with 20% jitter (Kafka's
// ExponentialBackoff with multiplier 2 and jitter 0.2); a connection set
// up starts the address over.
package connsetup

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Timeout is the time allowed to a connection after failures consecutive
// failed ones.
func Timeout(initial, maxTimeout time.Duration, failures int) time.Duration {
	if maxTimeout <= initial {
		return initial
	}
	exp := min(float64(failures), math.Log2(float64(maxTimeout)/float64(max(initial, time.Millisecond))))
	d := time.Duration(float64(initial) * math.Pow(2, exp) * (0.8 + 0.4*rand.Float64()))
	return min(d, maxTimeout)
}

// Policy counts the consecutive failed setups of one client's connections
// by address.
type Policy struct {
	initial, max time.Duration

	mu       sync.Mutex
	failures map[string]int
}

// New is a Policy with socket.connection.setup.timeout.ms and .max.ms.
func New(initial, max time.Duration) *Policy {
	return &Policy{initial: initial, max: max, failures: map[string]int{}}
}

// Timeout is the time the next connection to address has to be set up.
func (p *Policy) Timeout(address string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Timeout(p.initial, p.max, p.failures[address])
}

// Done records how a connection to address ended its setup: err nil
// starts the address over, an error counts one more failure.
func (p *Policy) Done(address string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.failures[address]++
	} else {
		delete(p.failures, address)
	}
}

// Failures is the number of consecutive failed setups to address.
func (p *Policy) Failures(address string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failures[address]
}
