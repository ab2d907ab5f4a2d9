package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRequest sends one request on conn and decodes its response: the
// probe used for start-up times, so no client library state is involved.
func rawRequest(conn net.Conn, corr int32, req kmsg.Request) (kmsg.Response, error) {
	buf := make([]byte, 4, 256)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, uint32(corr))
	buf = binary.BigEndian.AppendUint16(buf, 5)
	buf = append(buf, "bench"...)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	if _, err := conn.Write(buf); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body = body[4:] // correlation id
	if resp.IsFlexible() && req.Key() != 18 {
		body = body[1:] // empty tagged fields of the response header
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, err
	}
	return resp, nil
}

// probeReady is one start-up probe: a new connection, ApiVersions v3 and a
// Metadata v12 for all topics that must list at least one broker.
func probeReady(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "bench", "1"
	r, err := rawRequest(conn, 1, av)
	if err != nil {
		return err
	}
	if code := r.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
		return fmt.Errorf("ApiVersions error %d", code)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	r, err = rawRequest(conn, 2, md)
	if err != nil {
		return err
	}
	if len(r.(*kmsg.MetadataResponse).Brokers) == 0 {
		return errNotReady
	}
	return nil
}

// metadataLatency times n full Metadata requests (all topics) on one
// connection and returns each duration.
func metadataLatency(addr string, n int) ([]time.Duration, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var out []time.Duration
	for i := 0; i < n; i++ {
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(12)
		start := time.Now()
		if _, err := rawRequest(conn, int32(i), md); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}
