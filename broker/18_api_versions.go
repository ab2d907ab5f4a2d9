package broker

// ApiVersions, versions 0-4. The response lists the handler registry.
// A version above 4 is answered in the v0 layout with UNSUPPORTED_VERSION
// by the connection itself (KIP-511), before any decoding.
// Not implemented: supported and finalized features (none are needed by
// clients of the APIs served).

import "github.com/twmb/franz-go/pkg/kmsg"

func handleApiVersions(b *Broker, c *conn, req *kmsg.ApiVersionsRequest) (*kmsg.ApiVersionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = advertisedKeys()
	return resp, nil
}
