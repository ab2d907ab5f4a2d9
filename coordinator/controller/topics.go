package controller

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MaxRecordsPerUserOp bounds the metadata records one client request may
// make, as Kafka's controller bounds them (MAX_RECORDS_PER_USER_OP): a new
// topic counts one, each of its partitions and configs one more, each
// partition CreatePartitions adds one. A request that would make more is
// refused whole, every topic with POLICY_VIOLATION and ExcessiveBatch,
// before anything is placed: a 100-byte request for two billion
// partitions costs nothing.
const MaxRecordsPerUserOp = 10000

// ExcessiveBatch is Kafka's message for a request over MaxRecordsPerUserOp.
const ExcessiveBatch = "Unable to perform excessively large batch operation."

// createTopics handles CreateTopics. A broker has already checked topic
// names and config values; here the controller answers a topic named
// twice once, checks each topic in Kafka's order (buildTopic, its config
// values again), places replicas and writes all topics of the request in
// one batch.
func (c *Controller) createTopics(req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	img := c.Image()
	var recs []Record
	seen := map[string]int{}
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	answered := map[string]bool{}
	room := MaxRecordsPerUserOp
	for _, t := range req.Topics {
		if answered[t.Topic] {
			continue // Kafka answers a topic named twice once
		}
		answered[t.Topic] = true
		rt := kmsg.CreateTopicsResponseTopic{Topic: t.Topic, NumPartitions: -1, ReplicationFactor: -1}
		var topic *Topic
		code, msg := kerr.InvalidRequest.Code, DuplicateTopicName
		if seen[t.Topic] == 1 {
			topic, code, msg = c.buildTopic(img, t, room)
		}
		if code == kerr.PolicyViolation.Code {
			return ExcessiveCreateTopics(req)
		}
		if code != 0 {
			rt.ErrorCode, rt.ErrorMessage = code, kmsg.StringPtr(msg)
		} else {
			room -= 1 + len(topic.Partitions) + len(topicConfigs(t.Configs))
			rt.TopicID = topic.ID
			rt.NumPartitions = int32(len(topic.Partitions))
			rt.ReplicationFactor = int16(len(topic.Partitions[0].Replicas))
			if !req.ValidateOnly {
				recs = append(recs, Record{Topic: topic})
				if cfg := topicConfigs(t.Configs); len(cfg) > 0 {
					recs = append(recs, Record{Config: &ConfigRecord{Resource: ConfigResource{ResourceTopic, t.Topic}, Values: cfg}})
				}
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	return resp
}

// DuplicateTopicName is Kafka's answer (INVALID_REQUEST) to a topic named
// twice in CreateTopics, CreatePartitions or DeleteTopics.
const DuplicateTopicName = "Duplicate topic name."

// ExcessiveCreateTopics refuses every topic of req: it would make more
// than MaxRecordsPerUserOp records (a single node answers the same).
func ExcessiveCreateTopics(req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range req.Topics {
		resp.Topics = append(resp.Topics, kmsg.CreateTopicsResponseTopic{Topic: t.Topic, NumPartitions: -1, ReplicationFactor: -1,
			ErrorCode: kerr.PolicyViolation.Code, ErrorMessage: kmsg.StringPtr(ExcessiveBatch)})
	}
	return resp
}

// buildTopic checks one topic of CreateTopics in the order of Kafka's
// ReplicationControlManager.createTopics, its config values with
// Config.ValidateConfigs as a broker did already (a client of the
// CONTROLLER listener comes here directly), and places its replicas; room
// is how many records the request may still make.
func (c *Controller) buildTopic(img *Image, t kmsg.CreateTopicsRequestTopic, room int) (*Topic, int16, string) {
	if t.Topic == MetadataTopic {
		return nil, kerr.InvalidRequest.Code, MetadataTopicRefusal
	}
	if err := ValidateTopicName(t.Topic); err != nil {
		// A broker has refused it already; a client of the controller
		// listener (bootstrap.controllers) comes here directly.
		return nil, kerr.InvalidTopicException.Code, err.Error()
	}
	if code, msg := TopicNameTaken(img, t.Topic); code != 0 {
		return nil, code, msg
	}
	if code, msg := NullConfigsRefusal(t.Configs); code != 0 {
		return nil, code, msg
	}
	if code, msg := ValueTooLong(topicConfigs(t.Configs)); code != 0 {
		return nil, code, msg
	}
	if c.cfg.ValidateConfigs != nil {
		if code, msg := c.cfg.ValidateConfigs(ConfigResource{ResourceTopic, t.Topic}, topicConfigs(t.Configs)); code != 0 {
			return nil, code, msg
		}
	}
	return c.PlaceTopic(img, t, room)
}

// TopicNameTaken refuses a new topic's name that a topic of img has
// (TOPIC_ALREADY_EXISTS), or that collides with one's once '.' and '_'
// are taken alike (INVALID_TOPIC_EXCEPTION).
func TopicNameTaken(img *Image, name string) (int16, string) {
	if img.Topics[name] != nil {
		return kerr.TopicAlreadyExists.Code, fmt.Sprintf("Topic '%s' already exists.", name)
	}
	if other := collidingTopic(img, name); other != "" {
		return kerr.InvalidTopicException.Code, fmt.Sprintf("Topic '%s' collides with existing topic: %s", name, other)
	}
	return 0, ""
}

// NullConfigsRefusal refuses CreateTopics configs without a value, naming
// them all, as Kafka's controller does.
func NullConfigsRefusal(cfgs []kmsg.CreateTopicsRequestTopicConfig) (int16, string) {
	var nulls []string
	for _, c := range cfgs {
		if c.Value == nil {
			nulls = append(nulls, c.Name)
		}
	}
	if len(nulls) > 0 {
		return kerr.InvalidConfig.Code, "Null value not supported for topic configs: " + strings.Join(nulls, ",")
	}
	return 0, ""
}

// PlaceTopic checks a new topic's replicas and partitions in Kafka's
// order (a manual assignment, or the replication factor, then the
// partition count) and places them on img's brokers; room is how many
// records the request may still make (PolicyViolation when it is
// exceeded). A broker runs it on its own image before the mutation
// quota, which Kafka checks after placement.
func (c *Controller) PlaceTopic(img *Image, t kmsg.CreateTopicsRequestTopic, room int) (*Topic, int16, string) {
	topic := &Topic{Name: t.Topic, ID: newUUID()}
	if len(t.ReplicaAssignment) > 0 {
		if code, msg := ManualAssignmentRefusal(t, img.assignedBroker); code != 0 {
			return nil, code, msg
		}
		if 1+len(t.ReplicaAssignment)+len(topicConfigs(t.Configs)) > room {
			return nil, kerr.PolicyViolation.Code, ExcessiveBatch
		}
		byIndex := map[int32][]int32{}
		for _, a := range t.ReplicaAssignment {
			byIndex[a.Partition] = a.Replicas
		}
		for i := range int32(len(byIndex)) {
			topic.Partitions = append(topic.Partitions, newPartition(img, append([]int32(nil), byIndex[i]...)))
		}
		return topic, 0, ""
	}
	n, rf := t.NumPartitions, t.ReplicationFactor
	if rf == 0 || rf < -1 {
		return nil, kerr.InvalidReplicationFactor.Code, "Replication factor must be larger than 0, or -1 to use the default value."
	}
	if n == 0 || n < -1 {
		return nil, kerr.InvalidPartitions.Code, "Number of partitions was set to an invalid non-positive value."
	}
	if n == -1 {
		n = c.cfg.DefaultPartitions
	}
	if rf == -1 {
		rf = c.cfg.DefaultReplicationFactor
	}
	if 1+int(n)+len(topicConfigs(t.Configs)) > room {
		return nil, kerr.PolicyViolation.Code, ExcessiveBatch
	}
	assignment, err := placeReplicas(img, n, rf)
	if err != nil {
		return nil, kerr.InvalidReplicationFactor.Code, err.Error()
	}
	for _, replicas := range assignment {
		topic.Partitions = append(topic.Partitions, newPartition(img, replicas))
	}
	return topic, 0, ""
}

// collidingTopic returns an existing topic whose name equals name once
// '.' and '_' are treated alike (their metric names would clash), or "".
func collidingTopic(img *Image, name string) string {
	if !strings.ContainsAny(name, "._") {
		return ""
	}
	unified := strings.ReplaceAll(name, ".", "_")
	for other := range img.Topics {
		if strings.ContainsAny(other, "._") && strings.ReplaceAll(other, ".", "_") == unified {
			return other
		}
	}
	return ""
}

func topicConfigs(cfgs []kmsg.CreateTopicsRequestTopicConfig) map[string]string {
	out := map[string]string{}
	for _, c := range cfgs {
		if c.Value != nil {
			out[c.Name] = *c.Value
		}
	}
	return out
}

// deleteTopics handles DeleteTopics by name (v0-5) or by name or id (v6+),
// refusing malformed entries as Kafka does (SortDeletions).
func (c *Controller) deleteTopics(req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	img := c.Image()
	var recs []Record
	removed := map[[16]byte]bool{}
	del := func(name *string, id [16]byte) kmsg.DeleteTopicsResponseTopic {
		rt := kmsg.DeleteTopicsResponseTopic{Topic: name, TopicID: id}
		var t *Topic
		if name != nil {
			t = img.Topics[*name]
		} else {
			t = img.TopicsByID[id]
		}
		switch {
		case t == nil && name == nil:
			rt.ErrorCode = kerr.UnknownTopicID.Code
		case t == nil:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			rt.Topic, rt.TopicID = kmsg.StringPtr(t.Name), t.ID
			if !removed[t.ID] {
				removed[t.ID] = true
				id := t.ID
				recs = append(recs, Record{RemoveTopic: &id})
			}
		}
		return rt
	}
	valid, refused := SortDeletions(DeletionEntries(req), img.topicID)
	resp.Topics = refused
	for _, t := range valid {
		resp.Topics = append(resp.Topics, del(t.Topic, t.TopicID))
	}
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	return resp
}

// SortDeletions parts a DeleteTopics request's entries as Kafka's
// ControllerApis.deleteTopics does: those to delete, and the malformed
// ones, refused with INVALID_REQUEST and nothing deleted: an entry with
// both a name and an id or neither, a name or an id given twice (one
// answer for all its copies), and a name whose topic's id the request
// also gives (only the name is answered, as in Kafka). idOf gives a
// topic's id by its name.
func SortDeletions(entries []kmsg.DeleteTopicsRequestTopic, idOf func(name string) ([16]byte, bool)) (valid []kmsg.DeleteTopicsRequestTopic, refused []kmsg.DeleteTopicsResponseTopic) {
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
		if id, ok := idOf(name); ok && names[name] == 1 && ids[id] > 0 {
			return id, true
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
		refused = append(refused, kmsg.DeleteTopicsResponseTopic{Topic: name, TopicID: id, ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: kmsg.StringPtr(msg)})
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
				refuse(w.Topic, none, DuplicateTopicName)
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

// topicID is the id of the topic named name, if img has it.
func (img *Image) topicID(name string) ([16]byte, bool) {
	if t := img.Topics[name]; t != nil {
		return t.ID, true
	}
	return [16]byte{}, false
}

// DeletionEntries are a DeleteTopics request's topics, by name or id
// (before v6 names only).
func DeletionEntries(req *kmsg.DeleteTopicsRequest) []kmsg.DeleteTopicsRequestTopic {
	if req.Version >= 6 {
		return req.Topics
	}
	var out []kmsg.DeleteTopicsRequestTopic
	for _, name := range req.TopicNames {
		out = append(out, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(name)})
	}
	return out
}

// createPartitions handles CreatePartitions: new partitions take the
// replication factor of partition 0, placed like new topics or as given.
func (c *Controller) createPartitions(req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	img := c.Image()
	seen := map[string]int{}
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	var recs []Record
	room := MaxRecordsPerUserOp
	answered := map[string]bool{}
	for _, t := range req.Topics {
		if answered[t.Topic] {
			continue // Kafka answers a topic named twice once
		}
		answered[t.Topic] = true
		rt := kmsg.CreatePartitionsResponseTopic{Topic: t.Topic}
		var added []Record
		code, msg := kerr.InvalidRequest.Code, kmsg.StringPtr(DuplicateTopicName)
		if seen[t.Topic] == 1 {
			added, code, msg = addPartitions(img, t, room)
		}
		if code == kerr.PolicyViolation.Code {
			return ExcessiveCreatePartitions(req)
		}
		room -= len(added)
		if code != 0 {
			rt.ErrorCode, rt.ErrorMessage = code, msg
		} else if !req.ValidateOnly {
			recs = append(recs, added...)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	return resp
}

// ExcessiveCreatePartitions refuses every topic of req: it would add more
// than MaxRecordsPerUserOp partitions.
func ExcessiveCreatePartitions(req *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, t := range req.Topics {
		resp.Topics = append(resp.Topics, kmsg.CreatePartitionsResponseTopic{Topic: t.Topic,
			ErrorCode: kerr.PolicyViolation.Code, ErrorMessage: kmsg.StringPtr(ExcessiveBatch)})
	}
	return resp
}

// PartitionIncreaseRefusal makes the first checks of Kafka's
// ReplicationControlManager.createPartitions on a topic that has have
// partitions (0: it does not exist), in its order and words: an unknown
// topic (no message), a count that is no increase, then a number of
// assignments other than the partitions added. The mutation quota and
// each assignment come after. The message is nil where Kafka gives none.
func PartitionIncreaseRefusal(t kmsg.CreatePartitionsRequestTopic, have int) (int16, *string) {
	switch {
	case have == 0:
		return kerr.UnknownTopicOrPartition.Code, nil
	case int(t.Count) == have:
		return kerr.InvalidPartitions.Code, kmsg.StringPtr(fmt.Sprintf("Topic already has %d partition(s).", have))
	case int(t.Count) < have:
		return kerr.InvalidPartitions.Code, kmsg.StringPtr(fmt.Sprintf("The topic %s currently has %d partition(s); %d would not be an increase.", t.Topic, have, t.Count))
	case t.Assignment != nil && len(t.Assignment) != int(t.Count)-have:
		return kerr.InvalidReplicaAssignment.Code, kmsg.StringPtr(fmt.Sprintf("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", int(t.Count)-have, len(t.Assignment)))
	}
	return 0, nil
}

// addPartitions checks one topic of CreatePartitions in the order of
// Kafka's controller and returns the records of its new partitions; room
// is how many the request may still add.
func addPartitions(img *Image, t kmsg.CreatePartitionsRequestTopic, room int) ([]Record, int16, *string) {
	topic := img.Topics[t.Topic]
	have := 0
	if topic != nil {
		have = len(topic.Partitions)
	}
	if code, msg := PartitionIncreaseRefusal(t, have); code != 0 {
		return nil, code, msg
	}
	extra := t.Count - int32(len(topic.Partitions))
	if int(extra) > room {
		return nil, kerr.PolicyViolation.Code, kmsg.StringPtr(ExcessiveBatch)
	}
	var assignment [][]int32
	if t.Assignment != nil {
		for i, a := range t.Assignment {
			index, want := int32(len(topic.Partitions)+i), len(topic.Partitions[0].Replicas)
			if err := CheckManualAssignment(index, a.Replicas, want, img.assignedBroker); err != nil {
				return nil, kerr.InvalidReplicaAssignment.Code, kmsg.StringPtr(err.Error())
			}
			assignment = append(assignment, append([]int32(nil), a.Replicas...))
		}
	} else {
		var err error
		if assignment, err = placeReplicas(img, extra, int16(len(topic.Partitions[0].Replicas))); err != nil {
			return nil, kerr.InvalidReplicationFactor.Code, kmsg.StringPtr(err.Error())
		}
	}
	var recs []Record
	for i, replicas := range assignment {
		recs = append(recs, Record{Partition: &PartitionRecord{TopicID: topic.ID,
			Index: int32(len(topic.Partitions) + i), Partition: newPartition(img, replicas)}})
	}
	return recs, 0, nil
}

// newUUID returns a random Kafka Uuid (never the zero uuid).
func newUUID() [16]byte {
	var u [16]byte
	for u == [16]byte{} {
		rand.Read(u[:])
	}
	return u
}

// newClusterID returns a random cluster id in Kafka's Uuid string form:
// URL-safe base64 without padding, not starting with '-'.
func newClusterID() string {
	for {
		u := newUUID()
		s := base64.RawURLEncoding.EncodeToString(u[:])
		if s[0] != '-' {
			return s
		}
	}
}
