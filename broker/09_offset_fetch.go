package broker

// OffsetFetch, versions 1-9 (several groups per request from v8).
// RequireStable (v7+) needs no waiting: there are no transactional
// offset commits to wait for.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleOffsetFetch(b *Broker, c *conn, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	resp := b.groups.OffsetFetch(req)
	authorizeOffsetFetch(c, req, resp)
	return resp, nil
}
