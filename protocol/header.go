package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersionsKey is the one API whose response header is never flexible.
const ApiVersionsKey = 18

// RequestHeader is a decoded request header.
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      []byte // nil when null; aliases the frame
	// Flexible reports whether the header (and body) use KIP-482 flexible
	// encoding; known only when the key and version are known to kmsg.
	Flexible bool
}

// ErrShortHeader says a frame ends inside its request header.
var ErrShortHeader = errors.New("request header truncated")

// PeekKeyVersion returns the API key, version and correlation id at the start
// of a frame, which every header version shares.
func PeekKeyVersion(frame []byte) (key, version int16, correlationID int32, err error) {
	if len(frame) < 8 {
		return 0, 0, 0, ErrShortHeader
	}
	return int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:])),
		int32(binary.BigEndian.Uint32(frame[4:])), nil
}

// ParseRequestHeader decodes the header of a frame whose key and version
// kmsg knows and returns it with the body that follows. The header version
// is v2 for flexible request versions and v1 otherwise (ControlledShutdown
// v0, the one v0 header user, is not served). It does not allocate: the
// client id aliases the frame.
func ParseRequestHeader(frame []byte) (RequestHeader, []byte, error) {
	var h RequestHeader
	var err error
	h.APIKey, h.APIVersion, h.CorrelationID, err = PeekKeyVersion(frame)
	if err != nil {
		return h, nil, err
	}
	if h.APIKey < 0 || int(h.APIKey) >= len(flexibleFrom) || flexibleFrom[h.APIKey] == notAnAPI {
		return h, nil, fmt.Errorf("unknown api key %d", h.APIKey)
	}
	h.Flexible = h.APIVersion >= flexibleFrom[h.APIKey]
	d := decoder{Reader: kbin.Reader{Src: frame[8:]}} // the client id is never compact
	if l := int(d.Int16()); l >= 0 {
		h.ClientID = d.Span(l)
	}
	if h.Flexible {
		d.flexible = true
		d.skipTags()
	}
	if !d.Ok() {
		return h, nil, ErrShortHeader
	}
	return h, d.Src, nil
}

const notAnAPI = -2

// flexibleFrom is, for each API key kmsg knows, the first version that
// uses flexible encoding (math.MaxInt16 for none), notAnAPI for the gaps.
var flexibleFrom = func() []int16 {
	var out []int16
	for key := int16(0); key < 1024; key++ {
		req := kmsg.RequestForKey(key)
		for int(key) >= len(out) {
			out = append(out, notAnAPI)
		}
		if req == nil {
			continue
		}
		out[key] = math.MaxInt16
		for v := req.MaxVersion(); v >= 0; v-- {
			req.SetVersion(v)
			if !req.IsFlexible() {
				break
			}
			out[key] = v
		}
	}
	for len(out) > 0 && out[len(out)-1] == notAnAPI {
		out = out[:len(out)-1]
	}
	return out
}()

// AppendResponse appends a size-prefixed response frame for a request of
// the given key and version: the correlation id, the tagged-field byte of
// the v1 response header when the version is flexible (never for
// ApiVersions), and the encoded body.
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != ApiVersionsKey {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
