package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Election types of ElectLeaders v1+.
const (
	electPreferred int8 = 0
	electUnclean   int8 = 1
)

// electLeaders handles ElectLeaders. Preferred: the first replica leads if
// it is usable and in the ISR (else, if the leader is not usable, whoever
// settle elects cleanly); unclean: a partition without a leader takes
// whoever settle elects with unclean election allowed. With no topics given every partition
// is tried and those needing no election are left out of the answer.
func (c *Controller) electLeaders(req *kmsg.ElectLeadersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	typ := electPreferred
	if req.Version >= 1 {
		typ = req.ElectionType
	}
	if typ != electPreferred && typ != electUnclean {
		return InvalidElectionType(req)
	}
	img := c.Image()
	var recs []Record
	elect := func(t *Topic, part int32) int16 {
		if t == nil || part < 0 || int(part) >= len(t.Partitions) {
			return kerr.UnknownTopicOrPartition.Code
		}
		p := t.Partitions[part]
		next := p.clone()
		r := c.rules(img, t.Name, p, img.usable)
		switch typ {
		case electPreferred:
			if p.Leader == p.Replicas[0] {
				return kerr.ElectionNotNeeded.Code
			}
			if pref := p.Replicas[0]; img.usable(pref) && slices.Contains(p.ISR, pref) {
				next.Leader = pref
			}
			r.unclean = false
			if next = settle(p, next, r); next.Leader == p.Leader {
				return kerr.PreferredLeaderNotAvailable.Code
			}
		case electUnclean:
			if p.Leader != noLeader {
				return kerr.ElectionNotNeeded.Code
			}
			r.unclean = true
			if next = settle(p, next, r); next.Leader == noLeader {
				return kerr.EligibleLeadersNotAvailable.Code
			}
		}
		bumpEpochs(p, &next)
		recs = append(recs, Record{Partition: &PartitionRecord{TopicID: t.ID, Index: part, Partition: next}})
		return 0
	}
	if req.Topics == nil {
		for _, name := range img.SortedTopicNames() {
			t := img.Topics[name]
			rt := kmsg.ElectLeadersResponseTopic{Topic: name}
			for i := range t.Partitions {
				if code := elect(t, int32(i)); code != kerr.ElectionNotNeeded.Code {
					rt.Partitions = append(rt.Partitions, kmsg.ElectLeadersResponseTopicPartition{Partition: int32(i), ErrorCode: code, ErrorMessage: ElectionMessage(code)})
				}
			}
			resp.Topics = append(resp.Topics, rt)
		}
	} else {
		for _, rq := range req.Topics {
			rt := kmsg.ElectLeadersResponseTopic{Topic: rq.Topic}
			for _, part := range rq.Partitions {
				r := kmsg.ElectLeadersResponseTopicPartition{Partition: part, ErrorCode: elect(img.Topics[rq.Topic], part)}
				r.ErrorMessage = ElectionMessage(r.ErrorCode)
				if r.ErrorCode == kerr.UnknownTopicOrPartition.Code {
					r.ErrorMessage = kmsg.StringPtr(UnknownElectionPartition(rq.Topic, part, img.Topics[rq.Topic] != nil))
				}
				rt.Partitions = append(rt.Partitions, r)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	return resp
}

// ElectionMessage is the message beside an election's refusal: Kafka's
// controller answers ApiError(Errors), which carries the code's default
// message; nil for success.
func ElectionMessage(code int16) *string {
	switch code {
	case kerr.ElectionNotNeeded.Code:
		return kmsg.StringPtr("Leader election not needed for topic partition.")
	case kerr.PreferredLeaderNotAvailable.Code:
		return kmsg.StringPtr("The preferred leader was not available.")
	case kerr.EligibleLeadersNotAvailable.Code:
		return kmsg.StringPtr("Eligible topic partition leaders are not available.")
	}
	return nil
}

// InvalidElectionType answers an ElectLeaders of an unknown election type
// as Kafka's controller does (ElectLeadersRequest.getErrorResponse of its
// InvalidRequestException): INVALID_REQUEST for the request and for every
// partition it names, with the exception's message.
func InvalidElectionType(req *kmsg.ElectLeadersRequest) *kmsg.ElectLeadersResponse {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	resp.ErrorCode = kerr.InvalidRequest.Code
	msg := fmt.Sprintf("Unknown election type %d", req.ElectionType)
	for _, rq := range req.Topics {
		rt := kmsg.ElectLeadersResponseTopic{Topic: rq.Topic}
		for _, part := range rq.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.ElectLeadersResponseTopicPartition{Partition: part,
				ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: kmsg.StringPtr(msg)})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// rebalanceLeaders is the auto leader rebalance: every partition whose
// preferred replica is usable, in the ISR and not leading gets it back as
// leader.
func (c *Controller) rebalanceLeaders(ctx context.Context) {
	c.proposePeriodic(ctx, "moved leaders back to preferred replicas", func(img *Image) []Record {
		return partitionRecords(img, func(t *Topic, p Partition) Partition {
			if pref := p.Replicas[0]; p.Leader != pref && img.usable(pref) && slices.Contains(p.ISR, pref) {
				p.Leader = pref
			}
			return p
		})
	})
}

// electLeaderless elects leaders for the partitions that have none, by
// the partition rules: unclean where the topic allows it (Kafka's
// periodic electUnclean task).
func (c *Controller) electLeaderless(ctx context.Context) {
	c.proposePeriodic(ctx, "elected leaders for leaderless partitions", func(img *Image) []Record {
		return c.leaderlessRecords(img, img.usable)
	})
}

// proposePeriodic is one run of a periodic task of the active controller:
// the partition records records makes from the image, proposed if any.
func (c *Controller) proposePeriodic(ctx context.Context, done string, records func(*Image) []Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active || ctx.Err() != nil {
		return
	}
	recs := records(c.Image())
	if len(recs) == 0 {
		return
	}
	if _, err := c.propose(recs); err != nil {
		c.log.Warn("controller: periodic task failed", "task", done, "err", err)
		return
	}
	c.log.Info("controller: "+done, "partitions", len(recs))
}
