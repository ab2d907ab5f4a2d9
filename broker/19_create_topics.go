package broker

// CreateTopics, versions 2-7: Kafka's name rules and '.'/'_' collisions,
// num.partitions and default.replication.factor for -1, replication
// factors above the live brokers refused, manual assignments checked
// against the brokers, configs validated (null values refused), each entry
// checked in the order of Kafka's controller, validate-only, from v5 the
// resulting partitions, factor and configs in the response, the
// partitions counted against controller_mutation_rate (quotas.go), and a
// request that would make more than Kafka's 10,000 metadata records
// refused whole (controller.MaxRecordsPerUserOp).

import (
	"fmt"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const liveBrokers = 1

func createTopicsHandler(b *Broker, c *conn, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	if b.cluster != nil {
		return b.clusterCreateTopics(c, req)
	}
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	counts := countNames(req.Topics, func(rt kmsg.CreateTopicsRequestTopic) string { return rt.Topic })
	if b.excessiveCreateTopics(req, counts) {
		return controller.ExcessiveCreateTopics(req), nil
	}
	q := c.mutationQuota(req.Version, 6)
	defer q.finish(resp)
	answered := map[string]bool{}
	for _, rt := range req.Topics {
		if answered[rt.Topic] {
			continue // Kafka answers a topic named twice once
		}
		answered[rt.Topic] = true
		st := kmsg.CreateTopicsResponseTopic{Topic: rt.Topic, NumPartitions: -1, ReplicationFactor: -1}
		var t *topic
		var code int16
		var msg string
		if counts[rt.Topic] > 1 {
			code, msg = errInvalidRequest, controller.DuplicateTopicName
		} else {
			t, code, msg = b.createTopic(rt, req.ValidateOnly, q)
			if t != nil {
				st.TopicID = t.id
				st.NumPartitions = partitionCount(rt, b.cfg.NumPartitions)
				st.ReplicationFactor = 1
				st.Configs = b.createdTopicConfigs(configMap(rt.Configs))
			}
		}
		st.ErrorCode = code
		if code != 0 {
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// createdTopicConfigs are a new topic's configs given its overrides, as
// CreateTopics answers them from v5 (Kafka's controller:
// computeEffectiveTopicConfigs).
func (b *Broker) createdTopicConfigs(overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	var out []kmsg.CreateTopicsResponseTopicConfig
	for _, cfg := range b.describeTopicConfigs(overrides, nil, false, false) {
		out = append(out, kmsg.CreateTopicsResponseTopicConfig{
			Name: cfg.Name, Value: cfg.Value, ReadOnly: cfg.ReadOnly, Source: int8(cfg.Source), IsSensitive: cfg.IsSensitive,
		})
	}
	return out
}

func partitionCount(rt kmsg.CreateTopicsRequestTopic, def int32) int32 {
	switch {
	case len(rt.ReplicaAssignment) > 0:
		return int32(len(rt.ReplicaAssignment))
	case rt.NumPartitions == -1:
		return def
	}
	return rt.NumPartitions
}

func configMap(configs []kmsg.CreateTopicsRequestTopicConfig) map[string]string {
	m := map[string]string{}
	for _, c := range configs {
		if c.Value != nil {
			m[c.Name] = *c.Value
		}
	}
	return m
}

// excessiveCreateTopics reports whether req would make more than
// Kafka's 10,000 metadata records: it is then refused whole, before
// anything is placed, as Kafka's controller refuses it.
func (b *Broker) excessiveCreateTopics(req *kmsg.CreateTopicsRequest, counts map[string]int) bool {
	records := 0
	for _, rt := range req.Topics {
		if n := b.partitionsCreated(rt); n > 0 && counts[rt.Topic] == 1 && controller.ValidateTopicName(rt.Topic) == nil {
			records += 1 + int(n) + len(configMap(rt.Configs))
		}
	}
	return records > controller.MaxRecordsPerUserOp
}

// newTopicRefusal checks one CreateTopics entry, on a single node and in
// a cluster, in the order of Kafka's controller
// (ReplicationControlManager.createTopics), so that an entry wrong in
// several ways gets Kafka's error: the name, an existing or colliding
// topic (taken), the configs (null values, then their values), then the
// replicas and partitions asked for (place). The mutation quota comes
// after these.
func (b *Broker) newTopicRefusal(rt kmsg.CreateTopicsRequestTopic, taken func(name string) (int16, string), place func(kmsg.CreateTopicsRequestTopic) (int16, string)) (int16, string) {
	if rt.Topic == controller.MetadataTopic {
		return errInvalidRequest, controller.MetadataTopicRefusal
	}
	if err := controller.ValidateTopicName(rt.Topic); err != nil {
		return errInvalidTopic, err.Error()
	}
	if code, msg := taken(rt.Topic); code != 0 {
		return code, msg
	}
	if code, msg := controller.NullConfigsRefusal(rt.Configs); code != 0 {
		return code, msg
	}
	if code, msg := controller.ValueTooLong(configMap(rt.Configs)); code != 0 {
		return code, msg
	}
	if err := validateTopicConfigs(configMap(rt.Configs), b.liveConfig()); err != nil {
		return errInvalidConfig, err.Error()
	}
	return place(rt)
}

// createTopic checks one CreateTopics entry (newTopicRefusal), then the
// mutation quota (nil: none, for the broker's own topics), and creates
// the topic.
func (b *Broker) createTopic(rt kmsg.CreateTopicsRequestTopic, validateOnly bool, q *mutationQuota) (*topic, int16, string) {
	taken := func(name string) (int16, string) {
		if ce := b.topics.nameTaken(name); ce != nil {
			return ce.code, ce.msg
		}
		return 0, ""
	}
	if code, msg := b.newTopicRefusal(rt, taken, b.placeOnThisNode); code != 0 {
		return nil, code, msg
	}
	if !q.admit(b.partitionsCreated(rt)) {
		return nil, errThrottlingQuotaExceeded, *throttledMessage
	}
	t, err := b.topics.create(rt.Topic, partitionCount(rt, b.cfg.NumPartitions), configMap(rt.Configs), validateOnly)
	if err != nil {
		if ce, ok := err.(*createError); ok {
			return nil, ce.code, ce.msg
		}
		b.logger.Error("creating topic", "topic", rt.Topic, "err", err)
		return nil, errUnknownServerError, err.Error()
	}
	if !validateOnly {
		for _, ct := range b.coordinatorTopics() {
			ct.created(t)
		}
	}
	return t, 0, ""
}

// placeOnThisNode checks a new topic's replicas and partitions as
// Kafka's controller would with this node the one registered broker.
func (b *Broker) placeOnThisNode(rt kmsg.CreateTopicsRequestTopic) (int16, string) {
	if len(rt.ReplicaAssignment) > 0 {
		return controller.ManualAssignmentRefusal(rt, b.assignedBroker)
	}
	if rt.ReplicationFactor == 0 || rt.ReplicationFactor < -1 {
		return errInvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value."
	}
	if rt.NumPartitions == 0 || rt.NumPartitions < -1 {
		return errInvalidPartitions, "Number of partitions was set to an invalid non-positive value."
	}
	rf := rt.ReplicationFactor
	if rf == -1 {
		rf = b.cfg.DefaultReplicationFactor
	}
	if b.dirs.AllCordoned() {
		return errInvalidReplicationFactor, fmt.Sprintf("Unable to replicate the partition %d time(s): %s", rf, errAllDirsCordoned)
	}
	if rf > liveBrokers {
		return errInvalidReplicationFactor, fmt.Sprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered or some brokers have all their log directories cordoned.", rf, rf, liveBrokers)
	}
	return 0, ""
}

// assignedBroker is a single node's answer to a manual assignment's
// check: itself is the one registered broker, cordoned when every log dir
// is.
func (b *Broker) assignedBroker(id int32) (registered, cordoned, usable bool) {
	if id != b.cfg.NodeID {
		return false, false, false
	}
	return true, b.dirs.AllCordoned(), true
}

// countNames counts how often each name appears in a request, so entries
// named twice can be refused with INVALID_REQUEST as Kafka does.
func countNames[T any](items []T, name func(T) string) map[string]int {
	counts := map[string]int{}
	for _, it := range items {
		counts[name(it)]++
	}
	return counts
}
