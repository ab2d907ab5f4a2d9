package broker

// OffsetFetch, versions 1-10 (several groups per request from v8, topics
// by id from v10: offsets_topic_ids.go). RequireStable (v7+) is answered
// at once: a partition with a transaction's offset commit still pending
// gets UNSTABLE_OFFSET_COMMIT, which the client retries, as Kafka answers.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleOffsetFetch(b *Broker, c *conn, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	fetch := func(r *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
		resp := b.groups.OffsetFetch(r)
		authorizeOffsetFetch(c, r, resp)
		return resp
	}
	if req.Version >= firstTopicIDOffsetsVersion {
		return b.offsetFetchByTopicID(req, fetch), nil
	}
	return fetch(req), nil
}
