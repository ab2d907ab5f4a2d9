package broker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/gregor-broker/gregor/quota"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// conn is one client connection. Its reader goroutine (serve) decodes and
// handles requests one at a time, so responses leave in request order, as
// Kafka guarantees; a writer goroutine writes them, flushing only when no
// other response is queued so that pipelined responses share syscalls.
type conn struct {
	b        *Broker
	nc       net.Conn
	listener *listener
	out      chan *response
	done     chan struct{} // closed when the connection closes
	once     sync.Once
	clientID string       // from the latest request header, for the group coordinator
	splice   *fetchSplice // made on the first fetch; used by the reader only
	reuse    reuse        // the data path's requests, responses and slices; reader only
	prefix   []byte       // bytes read before serve (the controller listener's peek)

	// SASL (authenticate.go): the exchange until the client is
	// authenticated on a SASL listener, then the user it authenticated as;
	// authFailed is why an authentication failed (the connection closes).
	auth       *authExchange
	user       string
	authFailed string
	// tokenAuthenticated is set when the user logged in with a delegation
	// token (tokens.go): such a connection may not manage tokens.
	tokenAuthenticated bool
	// The authenticated SASL session (KIP-368): its mechanism, when it
	// expires unless the client re-authenticates (zero: never), and when
	// the last re-authentication began.
	mechanism      string
	sessionExpires time.Time
	lastReauth     time.Time

	// Set by a handler whose client is over its quota (quotas.go): how long
	// to read nothing more once the response is sent.
	throttle        time.Duration
	requestSize     int          // of the request being handled
	audit           []auditEntry // the request's authorizations, for kafka.authorizer.logger
	queuedBytes     int64        // what it holds of queued.max.request.bytes (request_memory.go)
	idleDeadlineSet time.Time    // when the read deadline was last pushed (connlimits.go)
	// waited is how long the request being handled sat parked (a fetch's
	// long poll, acks=all, a group join), which its request quota does
	// not count.
	waited time.Duration
	// started is when the request being handled began; uncounted is set
	// while its time is still to count against request_percentage
	// (quotas.go).
	started   time.Time
	uncounted bool
	// openedShareSession is set once a share session was opened here,
	// which the connection's end closes.
	openedShareSession bool
	// raftStream is set when the connection, logged in on a SASL listener
	// that takes raft streams, turned out to be a raft stream: serve ends
	// and hands it to the controller instead of closing it.
	raftStream net.Conn
	// awaitServing is set on a broker-only node's SASL inter-broker
	// listener, which the controllers log in to before they stream the
	// metadata log that makes the broker serve: the connection's login
	// is served at once, anything else once the broker serves. (Its
	// mechanism is never SCRAM, whose credentials are in that log.)
	awaitServing bool
}

const maxRetainedFrame = 1 << 20

// loggingIn reports whether what r holds next is part of a SASL login: a
// SaslHandshake or SaslAuthenticate request, or a raw token.
func (c *conn) loggingIn(r *bufio.Reader) bool {
	if c.auth != nil && c.auth.state == authRawTokens {
		return true
	}
	hdr, err := r.Peek(6) // size, API key
	if err != nil {
		return true // the frame's read ends the connection
	}
	key := int16(binary.BigEndian.Uint16(hdr[4:]))
	return key == kmsg.SASLHandshake.Int16() || key == kmsg.SASLAuthenticate.Int16()
}

func newConn(b *Broker, nc net.Conn, l *listener) *conn {
	c := &conn{b: b, nc: nc, listener: l, out: make(chan *response, 64), done: make(chan struct{})}
	if l != nil && l.security.sasl() {
		c.auth = &authExchange{security: l.security}
	}
	return c
}

// fetchSplice returns the connection's zero-copy fetch state, or nil when
// fetches copy their records (see fetch_splice.go).
func (c *conn) fetchSplice() *fetchSplice {
	if c == nil || copyFetches.Load() {
		return nil
	}
	if c.splice == nil {
		c.splice = newFetchSplice()
	}
	return c.splice
}

// clientHost is the client's address as Kafka reports it in DescribeGroups.
func (c *conn) clientHost() string {
	if _, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		return "/" + c.clientIP()
	}
	return c.nc.RemoteAddr().String()
}

// requestContext is a context for work done on behalf of a request: it
// ends after timeout or when the connection closes.
func (c *conn) requestContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// handlers is the registry of the listener the connection came in on.
func (c *conn) handlers() map[int16]handler {
	if c.onControllerListener() {
		return c.b.controllerRegistry
	}
	return c.b.registry
}

func (c *conn) onControllerListener() bool {
	return c.listener != nil && c.listener.controller
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.nc.Close()
	})
}

func (c *conn) serve() {
	defer func() {
		if c.raftStream != nil {
			c.once.Do(func() { close(c.done) }) // the socket stays open, raft's now
			c.nc.SetDeadline(time.Time{})
			c.b.handOffRaft(c, c.raftStream)
		} else {
			c.close()
		}
		if c.openedShareSession {
			c.b.shareSessions.connClosed(c)
		}
	}()
	writerDone := make(chan struct{})
	go c.writeLoop(writerDone)
	defer func() {
		close(c.out)
		<-writerDone
	}()
	var src io.Reader = c.nc
	if len(c.prefix) > 0 {
		src = io.MultiReader(bytes.NewReader(c.prefix), c.nc)
	}
	r := bufio.NewReaderSize(src, 64*1024)
	var buf []byte
	for {
		c.extendIdleDeadline()
		var refused bool
		if c.raftStream, refused = raftAfterLogin(c, r); c.raftStream != nil || refused {
			return
		}
		if c.awaitServing && !c.loggingIn(r) {
			c.awaitServing = false
			select {
			case <-c.b.serving:
			case <-c.done:
				return
			}
			c.extendIdleDeadline()
		}
		limit := c.b.cfg.SocketRequestMaxBytes
		if c.auth != nil { // not yet authenticated: sasl.server.max.receive.size
			limit = min(limit, c.b.cfg.SaslMaxReceiveSize)
		}
		if !c.reserveRequestMemory(r, limit) {
			return
		}
		into := buf
		large := peekLargeFrame(r, limit) // nil unless the frame is above maxRetainedFrame
		if large != nil {
			into = large
		}
		frame, err := protocol.ReadFrame(r, into, limit)
		if err != nil {
			c.releaseRequestMemory()
			var tooLarge *protocol.FrameTooLargeError
			if errors.As(err, &tooLarge) {
				c.b.logger.Warn("closing connection", "remote", c.nc.RemoteAddr().String(), "reason", err)
			} else if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.b.logger.Debug("connection read ended", "remote", c.nc.RemoteAddr().String(), "err", err)
			}
			return
		}
		if cap(frame) <= maxRetainedFrame {
			buf = frame[:0]
		}
		c.requestSize = len(frame)
		var resp *response
		if c.auth != nil && c.auth.state == authRawTokens {
			resp = c.rawToken(frame)
		} else {
			resp, err = c.handle(frame)
		}
		c.releaseRequestMemory()
		if large != nil {
			releaseLargeFrame(frame)
		}
		if err != nil {
			c.b.logger.Warn("closing connection", "remote", c.nc.RemoteAddr().String(), "reason", err)
			return
		}
		if c.authFailed != "" {
			c.failAuthentication(resp)
			return
		}
		throttle := c.throttle
		c.throttle = 0
		if resp != nil {
			select {
			case c.out <- resp:
			case <-c.done:
				return
			}
		}
		if !c.pause(throttle) {
			return
		}
	}
}

// reserveRequestMemory waits until queued.max.request.bytes lets the next
// request be read, and takes its size; false if the connection closed
// meanwhile. It comes before the frame's buffer is taken, as Kafka's
// NetworkReceive takes it from the memory pool. A frame over limit is left
// for ReadFrame to refuse, as Kafka checks the size before it allocates.
func (c *conn) reserveRequestMemory(r *bufio.Reader, limit int32) bool {
	m := c.b.requestMemory
	if m == nil {
		return true
	}
	hdr, err := r.Peek(4)
	if err != nil {
		return true // ReadFrame reports it
	}
	size := int32(binary.BigEndian.Uint32(hdr))
	if size < 1 || size > limit {
		return true
	}
	if !m.acquire(int64(size), c.done) {
		return false
	}
	c.queuedBytes = int64(size)
	return true
}

// releaseRequestMemory gives the request's bytes back: when its handler
// returns, or earlier when it parks.
func (c *conn) releaseRequestMemory() {
	if c != nil && c.queuedBytes > 0 {
		c.b.requestMemory.release(c.queuedBytes)
		c.queuedBytes = 0
	}
}

func (c *conn) writeLoop(done chan struct{}) {
	defer close(done)
	w := bufio.NewWriterSize(c.nc, 64*1024)
	fs := newFileSender(c.nc)
	for resp := range c.out {
		err := writeResponse(w, fs, resp)
		resp.free() // written or copied into w
		if err != nil {
			c.close()
			continue // drain so the reader never blocks
		}
		if len(c.out) == 0 {
			if err := w.Flush(); err != nil {
				c.close()
			}
		}
	}
}

// handle decodes one frame and returns the encoded response frame (nil
// for no response), or an error to close the connection with. A handler
// that panics costs its connection, never the broker.
func (c *conn) handle(frame []byte) (out *response, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.b.logger.Error("handler panicked", "panic", p, "stack", string(debug.Stack()))
			out, err = nil, fmt.Errorf("internal error: %v", p)
		}
	}()
	key, version, correlationID, err := protocol.PeekKeyVersion(frame)
	if err != nil {
		return nil, err
	}
	if c.auth != nil {
		if err := c.auth.admits(key); err != nil {
			c.authFailed = err.Error()
			return nil, nil
		}
	} else if !c.sessionExpires.IsZero() && time.Now().After(c.sessionExpires) &&
		!(key == kmsg.SASLHandshake.Int16() && c.mayReauthenticate(version)) { // a late re-authentication, as in Kafka
		return nil, fmt.Errorf("the SASL session of %s expired at %s without re-authentication", c.user, c.sessionExpires.Format(time.RFC3339))
	}
	table := c.handlers()
	h, ok := table[key]
	if key == protocol.ApiVersionsKey && ok && (version > h.max || version < h.min) {
		// KIP-511: a newer client's ApiVersions gets the v0 layout with
		// UNSUPPORTED_VERSION and, as in Kafka, only ApiVersions' own
		// range: clients retry at that version (which carries the
		// features) and take a longer list as the final answer. Kafka
		// answers any version outside the range so, a negative one too.
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(0)
		resp.ErrorCode = errUnsupportedVersion
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: protocol.ApiVersionsKey, MinVersion: h.min, MaxVersion: h.max}}
		return encodeResponse(correlationID, resp), nil
	}
	if !ok {
		if c.b.cluster == nil && joinsQuorum(key) {
			return nil, fmt.Errorf("%s from another node, which a single node does not serve: it runs alone (without controller.quorum.voters, "+
				"its controller.quorum.bootstrap.servers naming at most itself) and no node can join it; restart it with "+
				"controller.quorum.voters naming only itself, and it starts a cluster's quorum with all it holds, which other nodes can join", kmsg.NameForKey(key))
		}
		return nil, fmt.Errorf("request for api key %d, which is not served", key)
	}
	if version < h.min || version > h.max {
		return nil, fmt.Errorf("request for %s v%d, outside the served range v%d-v%d", kmsg.NameForKey(key), version, h.min, h.max)
	}
	hdr, body, err := protocol.ParseRequestHeader(frame)
	if err != nil {
		return nil, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(key), version, err)
	}
	if hdr.ClientID != nil && string(hdr.ClientID) != c.clientID {
		c.clientID = string(hdr.ClientID)
	}
	req := c.reuse.request(key)
	req.SetVersion(version)
	defer c.reuse.release(key)
	if err := protocol.DecodeRequest(req, body); err != nil {
		return nil, fmt.Errorf("malformed %s v%d request: %w", kmsg.NameForKey(key), version, err)
	}
	if c.splice != nil {
		c.splice.reset() // ranges belong to the fetch that made them
	}
	var resp kmsg.Response
	c.uncounted = c.b.quotas.Active(quota.RequestPercentage) && !exemptFromRequestQuota(c, req)
	logged := c.requestLogging()
	if c.uncounted || logged {
		c.started, c.waited = time.Now(), 0
	}
	if denied := c.clusterDenied(req); denied != nil {
		resp = denied
	} else {
		resp, err = h.serve(c.b, c, req)
	}
	c.flushAudit(key)
	if err != nil {
		return nil, err
	}
	c.throttleWith(c.requestThrottle(), resp)
	if logged {
		c.logCompleted(key, version, correlationID, time.Since(c.started), resp)
	}
	if resp == nil {
		return nil, err
	}
	resp.SetVersion(version)
	if fr, ok := resp.(*kmsg.FetchResponse); ok && c.splice != nil && len(c.splice.ranges) > 0 {
		if out, ok := c.splice.encode(correlationID, fr); ok {
			return out, nil
		}
		if err := c.splice.materialize(fr); err != nil {
			return nil, fmt.Errorf("fetch: %w", err)
		}
	}
	return encodeResponse(correlationID, resp), nil
}

// joinsQuorum reports whether key is a request another node sends to join
// a cluster's controllers: BrokerRegistration, BrokerHeartbeat,
// ControllerRegistration.
func joinsQuorum(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.ControllerRegistration:
		return true
	}
	return false
}
