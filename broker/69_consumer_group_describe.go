package broker

// ConsumerGroupDescribe, versions 0-1 (KIP-848). A group the principal may
// not DESCRIBE answers GROUP_AUTHORIZATION_FAILED.

import "github.com/twmb/franz-go/pkg/kmsg"

func handleConsumerGroupDescribe(b *Broker, c *conn, req *kmsg.ConsumerGroupDescribeRequest) (*kmsg.ConsumerGroupDescribeResponse, error) {
	resp := b.groups.ConsumerGroupDescribe(req)
	for i, g := range resp.Groups {
		if !c.authorizedGroup(kmsg.ACLOperationDescribe, g.Group) {
			out := kmsg.NewConsumerGroupDescribeResponseGroup()
			out.Group, out.ErrorCode = g.Group, errGroupAuthorization
			resp.Groups[i] = out
		}
	}
	return resp, nil
}
