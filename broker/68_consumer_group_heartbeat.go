package broker

// ConsumerGroupHeartbeat, versions 0-1 (KIP-848): the consumer group
// protocol, served by the group coordinator (coordinator/group/consumer.go).
// As in Kafka's KafkaApis, the member needs READ on the group and DESCRIBE
// on every topic it subscribes to by name; the topics its regex matches
// are those it may DESCRIBE (KAFKA-18813), each member's own. With the
// group.version feature at 0, or without "consumer" in
// group.coordinator.rebalance.protocols, the protocol is off:
// UNSUPPORTED_VERSION.

import (
	"github.com/gregor-broker/gregor/internal/features"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleConsumerGroupHeartbeat(b *Broker, c *conn, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if !b.consumerProtocolOn() {
		resp.ErrorCode = errUnsupportedVersion
		return resp, nil
	}
	if !c.authorizedGroup(kmsg.ACLOperationRead, req.Group) {
		resp.ErrorCode = errGroupAuthorization
		return resp, nil
	}
	for _, t := range req.SubscribedTopicNames {
		if !c.authorizedTopic(kmsg.ACLOperationDescribe, t) {
			resp.ErrorCode = errTopicAuthorization
			return resp, nil
		}
	}
	var mayDescribe func(string) bool
	if b.authorizer.Load() != nil {
		// Also called later, when a new topic matches the regex; Kafka's
		// TopicRegexResolver does not write a denial but at TRACE.
		mayDescribe = func(topic string) bool {
			return c.checkLater(req.Key(), kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, topic, auditAllowed)
		}
	}
	return b.groups.ConsumerGroupHeartbeat(req, c.clientID, c.clientHost(), mayDescribe), nil
}

// consumerProtocolOn reports whether KIP-848's consumer group protocol is
// on: group.coordinator.rebalance.protocols lists "consumer" and
// group.version is at least 1 (Kafka's isConsumerGroupProtocolEnabled).
func (b *Broker) consumerProtocolOn() bool {
	if !b.cfg.ConsumerProtocol {
		return false
	}
	stored, _ := b.featureLevels()
	return features.Level(stored, features.GroupVersion) >= 1
}
