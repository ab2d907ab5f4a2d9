package broker

// ApiVersions, versions 0-4. The response lists the handler registry.
// A version above 4 is answered in the v0 layout with UNSUPPORTED_VERSION
// by the connection itself (KIP-511), before any decoding. From v3 the
// client software name and version must match Kafka's pattern, else
// INVALID_REQUEST.
// Not implemented: supported and finalized features (none are needed by
// clients of the APIs served).

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// softwareNameRE is the pattern of KIP-511's client software fields.
var softwareNameRE = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func handleApiVersions(b *Broker, c *conn, req *kmsg.ApiVersionsRequest) (*kmsg.ApiVersionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!softwareNameRE.MatchString(req.ClientSoftwareName) || !softwareNameRE.MatchString(req.ClientSoftwareVersion)) {
		resp.ErrorCode = errInvalidRequest
		return resp, nil
	}
	resp.ApiKeys = advertisedKeys(c.handlers())
	return resp, nil
}
