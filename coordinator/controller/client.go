package controller

import (
	"context"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client sends controller API requests to the active controller over the
// Kafka protocol. It keeps one connection per voter, remembers which voter
// answered last, and on NOT_CONTROLLER or a connection error tries the
// next voter, backing off after each full round, until ctx ends. AddVoters
// teaches it voters added since it started, and voters' new addresses; a
// voter not reached at its latest address is tried at the one the client
// started with (controller.quorum.voters), where it is when every voter
// moved at once and none could record the move.
type Client struct {
	clientID   string
	configured map[int32]string
	security   Security

	mu     sync.Mutex
	ids    []int32
	addrs  map[int32]string
	leader *int32 // voter that answered last; nil when unknown
	conns  map[int32]*voterConn
	closed bool
}

type voterConn struct {
	mu sync.Mutex // one request at a time per connection
	w  *wireConn
}

// NewClient returns a client for the voters (node id -> CONTROLLER host:port),
// which it reaches as security says.
func NewClient(voters map[int32]string, clientID string, security Security) *Client {
	c := &Client{clientID: clientID, configured: maps.Clone(voters), security: security, addrs: map[int32]string{}, conns: map[int32]*voterConn{}}
	c.AddVoters(voters)
	return c
}

// AddVoters adds voters the client does not know, or moved to another
// address; the ones it knows stay, since a removed voter answers
// NOT_CONTROLLER and the client moves on.
func (c *Client) AddVoters(voters map[int32]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, addr := range voters {
		if old, ok := c.addrs[id]; ok && old == addr {
			continue
		}
		if _, ok := c.addrs[id]; !ok {
			c.ids = append(c.ids, id)
		}
		c.addrs[id] = addr
		c.conns[id] = &voterConn{}
	}
	slices.Sort(c.ids)
}

// Send sends req (at the version set on it) to the active controller and
// returns its response. It retries NOT_CONTROLLER answers and connection
// failures on the other voters until ctx is done.
func (c *Client) Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	backoff := 20 * time.Millisecond
	for {
		for _, id := range c.order() {
			resp, err := c.sendTo(ctx, id, req)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err == nil && !IsNotController(resp) {
				c.mu.Lock()
				c.leader = &id
				c.mu.Unlock()
				return resp, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// order lists the voters to try: the last known leader first.
func (c *Client) order() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int32, 0, len(c.ids))
	if c.leader != nil {
		out = append(out, *c.leader)
	}
	for _, id := range c.ids {
		if c.leader == nil || id != *c.leader {
			out = append(out, id)
		}
	}
	return out
}

func (c *Client) sendTo(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	vc, addr := c.conns[id], c.addrs[id]
	c.mu.Unlock()
	vc.mu.Lock()
	defer vc.mu.Unlock()
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, net.ErrClosed
	}
	if vc.w == nil {
		conn, err := c.security.Dial(ctx, addr, c.clientID, voterDialTimeout)
		if alt, ok := c.configured[id]; err != nil && ok && alt != addr {
			conn, err = c.security.Dial(ctx, alt, c.clientID, voterDialTimeout)
		}
		if err != nil {
			return nil, err
		}
		vc.w = &wireConn{conn: conn}
	}
	resp, err := vc.w.roundTrip(ctx, c.clientID, req)
	if err != nil {
		vc.w.conn.Close()
		vc.w = nil
	}
	return resp, err
}

// voterDialTimeout bounds connecting to a voter (its TLS handshake and
// SASL login included) when Security has no Setup.
const voterDialTimeout = 5 * time.Second

// Close closes the client's connections.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	conns := slices.Collect(maps.Values(c.conns))
	c.mu.Unlock()
	for _, vc := range conns {
		vc.mu.Lock()
		if vc.w != nil {
			vc.w.conn.Close()
			vc.w = nil
		}
		vc.mu.Unlock()
	}
	return nil
}
