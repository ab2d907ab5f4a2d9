package broker

// DeleteTopics, versions 1-6: by name, and from v6 by name or id;
// malformed entries refused as Kafka refuses them (controller.SortDeletions). The
// topic's partition directories are removed, then the groups' offsets and
// share state in it (topicsDeleted). The partitions count against
// controller_mutation_rate (quotas.go). With delete.topic.enable=false
// nothing is deleted: the node that decides (this one alone, a cluster's
// controller) refuses every topic first, as Kafka's controller does.

import (
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deletionEnabled serves DeleteTopics with serve, unless this node
// decides (a single node, or the controller listener of a cluster's
// node) and its delete.topic.enable is false: then every topic of the
// request is refused, before any authorization, with INVALID_REQUEST
// before v3 and TOPIC_DELETION_DISABLED from v3, and no message, as
// Kafka's controller answers.
func deletionEnabled(onController bool, serve handlerFunc) handlerFunc {
	return func(b *Broker, c *conn, req kmsg.Request) (kmsg.Response, error) {
		if b.cfg.DeleteTopicEnable || (!onController && b.cfg.clustered()) {
			return serve(b, c, req)
		}
		del := req.(*kmsg.DeleteTopicsRequest)
		code := errTopicDeletionDisabled
		if del.Version < 3 {
			code = errInvalidRequest
		}
		resp := del.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for _, t := range controller.DeletionEntries(del) {
			resp.Topics = append(resp.Topics, kmsg.DeleteTopicsResponseTopic{Topic: t.Topic, TopicID: t.TopicID, ErrorCode: code})
		}
		return resp, nil
	}
}

func deleteTopicsHandler(b *Broker, c *conn, req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsResponse, error) {
	if b.cluster != nil {
		return b.clusterDeleteTopics(c, req)
	}
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	q := c.mutationQuota(req.Version, 5)
	defer q.finish(resp)
	deleted := map[string][16]byte{}
	defer func() { b.topicsDeleted(deleted) }()
	valid, refused := b.sortDeletions(controller.DeletionEntries(req))
	resp.Topics = refused
	for _, w := range valid {
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
			if !q.admit(int32(len(t.partitions()))) {
				st.ErrorCode = errThrottlingQuotaExceeded
			} else if err := b.topics.delete(t); err != nil {
				st.ErrorCode = errUnknownServerError
				if ce, ok := err.(*createError); ok {
					st.ErrorCode = ce.code
				}
			} else {
				deleted[t.name] = t.id
			}
		}
		st.ErrorMessage = errorMessage(st.ErrorCode)
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// sortDeletions parts a DeleteTopics request's entries as Kafka's
// ControllerApis.deleteTopics does (controller.SortDeletions), with this
// node's topics' ids.
func (b *Broker) sortDeletions(entries []kmsg.DeleteTopicsRequestTopic) (valid []kmsg.DeleteTopicsRequestTopic, refused []kmsg.DeleteTopicsResponseTopic) {
	return controller.SortDeletions(entries, func(name string) ([16]byte, bool) {
		if t := b.topics.get(name); t != nil {
			return t.id, true
		}
		return [16]byte{}, false
	})
}

// topicsDeleted forgets, in the background, what the groups coordinated
// here hold of deleted topics, as Kafka's group coordinator does when
// partitions are deleted: their committed offsets, and the share state
// of share groups in them (deleted through the share coordinator).
func (b *Broker) topicsDeleted(deleted map[string][16]byte) {
	if len(deleted) == 0 {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for group, parts := range b.groups.TopicsDeleted(deleted) {
			if code := b.deleteShareStates(group, parts); code != 0 {
				b.logger.Warn("deleting the share state of deleted topics failed", "group", group, "error", errorMessageText(code))
			}
		}
	}()
}
