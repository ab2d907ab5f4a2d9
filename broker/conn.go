package broker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"

	"github.com/gregor-broker/gregor/protocol"
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
	out      chan []byte
	done     chan struct{} // closed when the connection closes
	once     sync.Once
	clientID string // from the latest request header, for the group coordinator
}

const maxRetainedFrame = 1 << 20

func newConn(b *Broker, nc net.Conn, l *listener) *conn {
	return &conn{b: b, nc: nc, listener: l, out: make(chan []byte, 64), done: make(chan struct{})}
}

// clientHost is the client's address as Kafka reports it in DescribeGroups.
func (c *conn) clientHost() string {
	if a, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		return "/" + a.IP.String()
	}
	return c.nc.RemoteAddr().String()
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.nc.Close()
	})
}

func (c *conn) serve() {
	defer c.close()
	writerDone := make(chan struct{})
	go c.writeLoop(writerDone)
	defer func() {
		close(c.out)
		<-writerDone
	}()
	r := bufio.NewReaderSize(c.nc, 64*1024)
	var buf []byte
	for {
		frame, err := protocol.ReadFrame(r, buf, c.b.cfg.SocketRequestMaxBytes)
		if err != nil {
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
		resp, err := c.handle(frame)
		if err != nil {
			c.b.logger.Warn("closing connection", "remote", c.nc.RemoteAddr().String(), "reason", err)
			return
		}
		if resp != nil {
			select {
			case c.out <- resp:
			case <-c.done:
				return
			}
		}
	}
}

func (c *conn) writeLoop(done chan struct{}) {
	defer close(done)
	w := bufio.NewWriterSize(c.nc, 64*1024)
	for resp := range c.out {
		if _, err := w.Write(resp); err != nil {
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

// handle decodes one frame and returns the encoded response frame, nil for
// no response, or an error to close the connection with. A handler that
// panics costs its connection, never the broker.
func (c *conn) handle(frame []byte) (out []byte, err error) {
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
	h, ok := handlers[key]
	if key == protocol.ApiVersionsKey && ok && version > h.max {
		// KIP-511: a newer client's ApiVersions gets the v0 layout with
		// UNSUPPORTED_VERSION and our ranges, so it can retry lower.
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(0)
		resp.ErrorCode = errUnsupportedVersion
		resp.ApiKeys = advertisedKeys()
		return protocol.AppendResponse(nil, correlationID, resp), nil
	}
	if !ok {
		return nil, fmt.Errorf("request for api key %d, which is not served", key)
	}
	if version < h.min || version > h.max {
		return nil, fmt.Errorf("request for %s v%d, outside the served range v%d-v%d", kmsg.NameForKey(key), version, h.min, h.max)
	}
	hdr, body, err := protocol.ParseRequestHeader(frame)
	if err != nil {
		return nil, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(key), version, err)
	}
	if hdr.ClientID != nil {
		c.clientID = *hdr.ClientID
	}
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("malformed %s v%d request: %w", kmsg.NameForKey(key), version, err)
	}
	resp, err := h.serve(c.b, c, req)
	if err != nil || resp == nil {
		return nil, err
	}
	resp.SetVersion(version)
	return protocol.AppendResponse(nil, correlationID, resp), nil
}
