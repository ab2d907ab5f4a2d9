package controller

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxControllerFrame caps request and response frames on controller
// connections (Kafka's socket.request.max.bytes default).
const maxControllerFrame = 100 << 20

// appendRequest appends a size-prefixed request frame: header v1 (v2,
// with an empty tag section, for flexible versions) and the body.
func appendRequest(dst []byte, correlationID int32, clientID string, req kmsg.Request) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clientID)))
	dst = append(dst, clientID...)
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// wireConn is one Kafka-protocol connection from a Client to a voter;
// requests on it are sent one at a time.
type wireConn struct {
	conn net.Conn
	corr int32
	buf  []byte
}

func (w *wireConn) roundTrip(ctx context.Context, clientID string, req kmsg.Request) (kmsg.Response, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	w.conn.SetDeadline(deadline)
	w.corr++
	w.buf = appendRequest(w.buf[:0], w.corr, clientID, req)
	if _, err := w.conn.Write(w.buf); err != nil {
		return nil, err
	}
	frame, err := protocol.ReadFrame(w.conn, w.buf[:0], maxControllerFrame)
	if err != nil {
		return nil, err
	}
	if len(frame) < 4 || int32(binary.BigEndian.Uint32(frame)) != w.corr {
		return nil, errors.New("controller: response correlation id mismatch")
	}
	return decodeResponse(req, frame)
}

// decodeResponse decodes the answer to req from its header and body. The
// response owns a copy of the body: kmsg's bytes fields (an Envelope's
// ResponseData) alias what they are read from, and a connection's buffer
// is reused by its next request.
func decodeResponse(req kmsg.Request, frame []byte) (kmsg.Response, error) {
	resp := req.ResponseKind()
	r := kbin.Reader{Src: frame[min(len(frame), 4):]}
	if resp.IsFlexible() && resp.Key() != protocol.ApiVersionsKey {
		kmsg.SkipTags(&r)
	}
	if len(frame) < 4 || !r.Ok() {
		return nil, errors.New("controller: short response header")
	}
	if err := resp.ReadFrom(bytes.Clone(r.Src)); err != nil {
		return nil, fmt.Errorf("controller: decoding response: %w", err)
	}
	return resp, nil
}

// ServeKafka answers controller API requests on conn until it fails or is
// closed: a broker that read the first four bytes of a connection on its
// CONTROLLER listener and found a frame size (not RaftMagic) may pass the
// connection here. The connection is closed when ctx ends or the
// controller closes. Requests are answered in order, one at a time; a frame
// that is not a controller API closes the connection.
func (c *Controller) ServeKafka(ctx context.Context, conn net.Conn, sizePrefix [4]byte) error {
	defer conn.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-c.closed:
		case <-ctx.Done():
		case <-done:
		}
		conn.Close()
	}()
	reader := io.MultiReader(bytes.NewReader(sizePrefix[:]), conn)
	var in, out []byte
	for {
		frame, err := protocol.ReadFrame(reader, in, maxControllerFrame)
		if err != nil {
			return err
		}
		in = frame
		hdr, body, err := protocol.ParseRequestHeader(frame)
		if err != nil {
			return err
		}
		req := kmsg.RequestForKey(hdr.APIKey)
		req.SetVersion(hdr.APIVersion)
		if err := req.ReadFrom(body); err != nil {
			return fmt.Errorf("controller: decoding api key %d: %w", hdr.APIKey, err)
		}
		resp, err := c.Handle(ctx, req)
		if err != nil {
			return err
		}
		out = protocol.AppendResponse(out[:0], hdr.CorrelationID, resp)
		if _, err := conn.Write(out); err != nil {
			return err
		}
	}
}
