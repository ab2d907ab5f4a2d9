package broker

// StreamsGroupHeartbeat (88) and StreamsGroupDescribe (89), version 0:
// Kafka Streams' rebalance protocol (KIP-1071), served by the group
// coordinator (coordinator/group/streams.go) when
// group.coordinator.rebalance.protocols lists "streams" (both are always
// advertised; without it, or with streams.version 0, they answer
// UNSUPPORTED_VERSION, as Kafka does). As in Kafka's
// KafkaApis, a member needs READ on the group and, with a topology,
// DESCRIBE on every topic it names (none of Kafka's internal topics, and
// valid names only: STREAMS_INVALID_TOPOLOGY otherwise); the repartition
// and changelog topics the coordinator finds missing are created here
// when the member may CREATE them (on the cluster or the topics), and
// otherwise the MISSING_INTERNAL_TOPICS status says it may not.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/internal/features"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleStreamsGroupHeartbeat(b *Broker, c *conn, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
	refuse := func(code int16, msg string) (*kmsg.StreamsGroupHeartbeatResponse, error) {
		resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	if !b.streamsGroupsOn() {
		return refuse(errUnsupportedVersion, "")
	}
	if !c.authorizedGroup(kmsg.ACLOperationRead, req.Group) {
		return refuse(errGroupAuthorization, "")
	}
	if req.Topology != nil {
		// The topics named, each once, in the order the topology first
		// names them, as Kafka lists them in its refusals.
		var required []string
		seen := map[string]bool{}
		need := func(t string) {
			if !seen[t] {
				seen[t] = true
				required = append(required, t)
			}
		}
		for _, st := range req.Topology.Subtopologies {
			for _, t := range slices.Concat(st.SourceTopics, st.RepartitionSinkTopics) {
				need(t)
			}
			for _, ti := range slices.Concat(st.RepartitionSourceTopics, st.StateChangelogTopics) {
				need(ti.Topic)
			}
		}
		var internal, invalid, unauthorized []string
		for _, t := range required {
			switch {
			case isInternal(t):
				internal = append(internal, t)
			case controller.ValidateTopicName(t) != nil:
				invalid = append(invalid, t)
			case !c.authorizedTopic(kmsg.ACLOperationDescribe, t):
				unauthorized = append(unauthorized, t)
			}
		}
		switch {
		case len(internal) > 0:
			return refuse(errStreamsInvalidTopology, fmt.Sprintf("Use of Kafka internal topics %s in a Kafka Streams topology is prohibited.", strings.Join(internal, ",")))
		case len(invalid) > 0:
			return refuse(errStreamsInvalidTopology, fmt.Sprintf("Topic names %s are not valid topic names.", strings.Join(invalid, ",")))
		case len(unauthorized) > 0:
			return refuse(errTopicAuthorization, fmt.Sprintf("The following topics are not authorized: %s", strings.Join(unauthorized, ",")))
		}
	}
	resp, create := b.groups.StreamsGroupHeartbeat(req, c.clientID, c.clientHost())
	if resp.ErrorCode != 0 || len(create) == 0 {
		return resp, nil
	}
	var denied []string
	if !c.authorizedClusterProbe(kmsg.ACLOperationCreate) {
		for _, t := range create {
			if !c.authorizedTopic(kmsg.ACLOperationCreate, t.Name) {
				denied = append(denied, t.Name)
			}
		}
	}
	if len(denied) > 0 {
		detail := "Unauthorized to CREATE on topics " + strings.Join(denied, ", ") + "."
		i := slices.IndexFunc(resp.Status, func(s kmsg.StreamsGroupHeartbeatResponseStatus) bool {
			return s.StatusCode == streamsMissingInternalTopics
		})
		if i >= 0 {
			resp.Status[i].StatusDetail += "; " + detail
		} else {
			resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsMissingInternalTopics, StatusDetail: detail})
		}
		return resp, nil
	}
	b.createInternalTopics(c, create)
	return resp, nil
}

// streamsMissingInternalTopics is the MISSING_INTERNAL_TOPICS status.
const streamsMissingInternalTopics int8 = 3

// createInternalTopics creates a streams group's repartition and
// changelog topics, as Kafka's AutoTopicCreationManager does for it: the
// member learns of them on a later heartbeat.
func (b *Broker) createInternalTopics(c *conn, topics []group.InternalTopic) {
	req := newest(kmsg.NewPtrCreateTopicsRequest())
	req.TimeoutMillis = 30000
	for _, it := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = it.Name, it.Partitions, it.ReplicationFactor
		for _, k := range slices.Sorted(maps.Keys(it.Configs)) {
			v := it.Configs[k]
			rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: &v})
		}
		req.Topics = append(req.Topics, rt)
	}
	if b.cluster != nil {
		r, err := b.cluster.forward(c, req, 30*time.Second)
		if err != nil {
			b.logger.Warn("creating a streams group's internal topics failed", "err", err)
			return
		}
		for _, st := range r.(*kmsg.CreateTopicsResponse).Topics {
			if st.ErrorCode != 0 && st.ErrorCode != errTopicAlreadyExists {
				b.logger.Warn("creating a streams group's internal topic failed", "topic", st.Topic, "error", errorMessageText(st.ErrorCode))
			}
		}
		return
	}
	for _, rt := range req.Topics {
		if _, code, msg := b.createTopic(rt, false, nil); code != 0 && code != errTopicAlreadyExists {
			b.logger.Warn("creating a streams group's internal topic failed", "topic", rt.Topic, "error", errorMessageText(code), "message", msg)
		} else if code == 0 {
			b.logger.Info("created a streams group's internal topic", "topic", rt.Topic, "partitions", rt.NumPartitions)
		}
	}
}

// streamsGroupsOn reports whether streams groups are on:
// group.coordinator.rebalance.protocols lists "streams" and the
// streams.version feature is at least 1 (Kafka's
// isStreamsGroupProtocolEnabled).
func (b *Broker) streamsGroupsOn() bool {
	if !b.cfg.StreamsProtocol {
		return false
	}
	stored, _ := b.featureLevels()
	return features.Level(stored, features.StreamsVersion) >= 1
}

func handleStreamsGroupDescribe(b *Broker, c *conn, req *kmsg.StreamsGroupDescribeRequest) (*kmsg.StreamsGroupDescribeResponse, error) {
	if !b.streamsGroupsOn() {
		resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		for _, g := range req.Groups {
			out := kmsg.NewStreamsGroupDescribeResponseGroup()
			out.Group, out.ErrorCode = g, errUnsupportedVersion
			resp.Groups = append(resp.Groups, out)
		}
		return resp, nil
	}
	resp := b.groups.StreamsGroupDescribe(req)
	for i, g := range resp.Groups {
		code, msg := int16(0), ""
		switch {
		case !c.authorizedGroup(kmsg.ACLOperationDescribe, g.Group):
			code = errGroupAuthorization
		case !describableStreamsTopics(c, g):
			code, msg = errTopicAuthorization, "The described group uses topics that the client is not authorized to describe."
		}
		if code != 0 {
			out := kmsg.NewStreamsGroupDescribeResponseGroup()
			out.Group, out.ErrorCode, out.Members = g.Group, code, []kmsg.StreamsGroupDescribeResponseGroupMember{}
			if msg != "" {
				out.ErrorMessage = &msg
			}
			resp.Groups[i] = out
			continue
		}
		c.groupAuthorizedOperations(req.IncludeAuthorizedOperations, g.Group, g.ErrorCode, &resp.Groups[i].AuthorizedOperations)
	}
	return resp, nil
}

// describableStreamsTopics reports whether the principal may describe
// every topic of the group's topology.
func describableStreamsTopics(c *conn, g kmsg.StreamsGroupDescribeResponseGroup) bool {
	if g.Topology == nil {
		return true
	}
	for _, st := range g.Topology.Subtopologies {
		names := slices.Concat(st.SourceTopics, st.RepartitionSinkTopics)
		for _, ti := range slices.Concat(st.StateChangelogTopics, st.RepartitionSourceTopics) {
			names = append(names, ti.Topic)
		}
		for _, t := range names {
			if !c.authorizedTopic(kmsg.ACLOperationDescribe, t) {
				return false
			}
		}
	}
	return true
}
