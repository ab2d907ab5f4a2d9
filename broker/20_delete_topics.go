package broker

// DeleteTopics, versions 1-6: by name, and from v6 by name or id. The
// topic's partition directories are removed.

import "github.com/twmb/franz-go/pkg/kmsg"

func deleteTopicsHandler(b *Broker, c *conn, req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsResponse, error) {
	if b.cluster != nil {
		return b.clusterDeleteTopics(c, req)
	}
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	wanted := req.Topics
	if req.Version < 6 {
		wanted = nil
		for _, name := range req.TopicNames {
			wanted = append(wanted, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(name)})
		}
	}
	for _, w := range wanted {
		st := kmsg.DeleteTopicsResponseTopic{Topic: w.Topic, TopicID: w.TopicID}
		var t *topic
		if w.Topic != nil {
			if t = b.topics.get(*w.Topic); t == nil {
				st.ErrorCode = errUnknownTopicOrPartition
			}
		} else if t = b.topics.getByID(w.TopicID); t == nil {
			st.ErrorCode = errUnknownTopicID
		}
		if t != nil {
			st.Topic, st.TopicID = kmsg.StringPtr(t.name), t.id
			if err := b.topics.delete(t); err != nil {
				st.ErrorCode = errUnknownServerError
				if ce, ok := err.(*createError); ok {
					st.ErrorCode = ce.code
				}
			}
		}
		st.ErrorMessage = errorMessage(st.ErrorCode)
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
