package controller

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gregor-broker/gregor/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Envelope (Kafka's API 58) is how a broker forwards a client's request to
// the controller when the controller must know who sent it: the request
// with its header, and the principal serialized as Kafka's
// DefaultKafkaPrincipalBuilder does (DefaultPrincipalData, prefixed with
// its version). The answer comes back the same way, the response with its
// header. Gregor forwards the delegation token requests this way
// (tokens.go).

// Principal is the sender of an enveloped request.
type Principal struct {
	Type, Name         string
	TokenAuthenticated bool
}

func (p Principal) String() string { return p.Type + ":" + p.Name }

// Envelope wraps req, sent by principal from clientHost.
func Envelope(req kmsg.Request, p Principal, clientID string, clientHost []byte) *kmsg.EnvelopeRequest {
	env := kmsg.NewPtrEnvelopeRequest()
	env.RequestData = appendRequest(nil, 0, clientID, req)[4:] // without the size
	data := kmsg.DefaultPrincipalData{Type: p.Type, Name: p.Name, TokenAuthenticated: p.TokenAuthenticated}
	env.RequestPrincipal = data.AppendTo(binary.BigEndian.AppendUint16(nil, uint16(data.Version)))
	env.ClientHostAddress = clientHost
	return env
}

// Unwrap is the request, its correlation id and the principal of an
// envelope.
func Unwrap(env *kmsg.EnvelopeRequest) (kmsg.Request, int32, Principal, error) {
	hdr, body, err := protocol.ParseRequestHeader(env.RequestData)
	if err != nil {
		return nil, 0, Principal{}, fmt.Errorf("enveloped request: %w", err)
	}
	req := kmsg.RequestForKey(hdr.APIKey)
	if req == nil || hdr.APIVersion < 0 || hdr.APIVersion > req.MaxVersion() {
		return nil, 0, Principal{}, fmt.Errorf("enveloped request: api key %d version %d unknown", hdr.APIKey, hdr.APIVersion)
	}
	req.SetVersion(hdr.APIVersion)
	if err := req.ReadFrom(body); err != nil {
		return nil, 0, Principal{}, fmt.Errorf("enveloped request: %w", err)
	}
	pb := env.RequestPrincipal
	if len(pb) < 2 {
		return nil, 0, Principal{}, errors.New("enveloped principal too short")
	}
	var data kmsg.DefaultPrincipalData
	data.Version = int16(binary.BigEndian.Uint16(pb))
	if err := data.ReadFrom(pb[2:]); err != nil {
		return nil, 0, Principal{}, fmt.Errorf("enveloped principal: %w", err)
	}
	return req, hdr.CorrelationID, Principal{Type: data.Type, Name: data.Name, TokenAuthenticated: data.TokenAuthenticated}, nil
}

// Reply wraps the answer to an enveloped request.
func Reply(env *kmsg.EnvelopeRequest, correlationID int32, resp kmsg.Response) *kmsg.EnvelopeResponse {
	out := env.ResponseKind().(*kmsg.EnvelopeResponse)
	out.ResponseData = protocol.AppendResponse(nil, correlationID, resp)[4:] // without the size
	return out
}

// Unwrapped is the answer an envelope carries back for req.
func Unwrapped(req kmsg.Request, env *kmsg.EnvelopeResponse) (kmsg.Response, error) {
	if env.ErrorCode != 0 {
		return nil, fmt.Errorf("envelope refused: error code %d", env.ErrorCode)
	}
	return decodeResponse(req, env.ResponseData)
}
