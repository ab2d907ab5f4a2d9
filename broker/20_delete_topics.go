package broker

// DeleteTopics, versions 1-6: by name, and from v6 by name or id;
// malformed entries refused as Kafka refuses them (sortDeletions). The
// topic's partition directories are removed, then the groups' offsets and
// share state in it (topicsDeleted). The partitions count against
// controller_mutation_rate (quotas.go). With delete.topic.enable=false
// nothing is deleted: the node that decides (this one alone, a cluster's
// controller) refuses every topic first, as Kafka's controller does.

import "github.com/twmb/franz-go/pkg/kmsg"

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
		for _, t := range topicsToDelete(del) {
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
	valid, refused := b.sortDeletions(topicsToDelete(req))
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
// ControllerApis.deleteTopics does: those to delete, and the malformed
// ones, refused with INVALID_REQUEST and nothing deleted: an entry with
// both a name and an id or neither, a name or an id given twice (one
// answer for all its copies), and a name whose topic's id the request
// also gives (only the name is answered, as in Kafka).
func (b *Broker) sortDeletions(entries []kmsg.DeleteTopicsRequestTopic) (valid []kmsg.DeleteTopicsRequestTopic, refused []kmsg.DeleteTopicsResponseTopic) {
	var none [16]byte
	names, ids := map[string]int{}, map[[16]byte]int{}
	for _, w := range entries {
		switch {
		case w.Topic != nil && w.TopicID == none:
			names[*w.Topic]++
		case w.Topic == nil && w.TopicID != none:
			ids[w.TopicID]++
		}
	}
	mappedID := func(name string) ([16]byte, bool) {
		if t := b.topics.get(name); t != nil && names[name] == 1 && ids[t.id] > 0 {
			return t.id, true
		}
		return none, false
	}
	mapped := map[[16]byte]bool{}
	for name := range names {
		if id, ok := mappedID(name); ok {
			mapped[id] = true
		}
	}
	refuse := func(name *string, id [16]byte, msg string) {
		refused = append(refused, kmsg.DeleteTopicsResponseTopic{Topic: name, TopicID: id, ErrorCode: errInvalidRequest, ErrorMessage: kmsg.StringPtr(msg)})
	}
	answered := map[any]bool{}
	for _, w := range entries {
		switch {
		case w.Topic == nil && w.TopicID == none:
			refuse(nil, none, "Neither topic name nor id were specified.")
		case w.Topic != nil && w.TopicID != none:
			refuse(w.Topic, w.TopicID, "You may not specify both topic name and topic id.")
		case w.Topic != nil && names[*w.Topic] > 1:
			if !answered[*w.Topic] {
				refuse(w.Topic, none, "Duplicate topic name.")
			}
			answered[*w.Topic] = true
		case w.Topic == nil && ids[w.TopicID] > 1:
			if !answered[w.TopicID] {
				refuse(nil, w.TopicID, "Duplicate topic id.")
			}
			answered[w.TopicID] = true
		case w.Topic != nil:
			if id, ok := mappedID(*w.Topic); ok {
				refuse(w.Topic, id, "The provided topic name maps to an ID that was already supplied.")
			} else {
				valid = append(valid, w)
			}
		case !mapped[w.TopicID]:
			valid = append(valid, w)
		}
	}
	return valid, refused
}

// topicsToDelete are the request's topics, by name or id (before v6 names
// only).
func topicsToDelete(req *kmsg.DeleteTopicsRequest) []kmsg.DeleteTopicsRequestTopic {
	if req.Version >= 6 {
		return req.Topics
	}
	var out []kmsg.DeleteTopicsRequestTopic
	for _, name := range req.TopicNames {
		out = append(out, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(name)})
	}
	return out
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
