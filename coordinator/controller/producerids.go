package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// producerIDBlock is the size of the blocks AllocateProducerIds hands out.
const producerIDBlock = 1000

// allocateProducerIDs hands the next block of producer ids to a broker.
func (c *Controller) allocateProducerIDs(req *kmsg.AllocateProducerIDsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	img := c.Image()
	if b := img.Brokers[req.BrokerID]; b == nil || b.Epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp
	}
	start := img.NextProducerID
	next := start + producerIDBlock
	if _, err := c.propose([]Record{{NextProducerID: &next}}); err != nil {
		return c.proposeFailed(req, err)
	}
	resp.ProducerIDStart, resp.ProducerIDLen = start, producerIDBlock
	return resp
}
