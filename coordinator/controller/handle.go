package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handle answers one controller API request. Off the active controller
// every answer carries NOT_CONTROLLER, so a Client retries elsewhere. A
// returned error means the request is not a controller API.
//
// Requests are handled one at a time (c.mu): read the image, decide,
// propose the records, wait until they are applied, answer.
func (c *Controller) Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if !handled(req) {
		return nil, fmt.Errorf("controller: api key %d is not a controller api", req.Key())
	}
	// Voter changes wait for raft, not for c.mu (voters.go).
	switch r := req.(type) {
	case *kmsg.AddRaftVoterRequest:
		return c.addRaftVoter(ctx, r), nil
	case *kmsg.RemoveRaftVoterRequest:
		return c.removeRaftVoter(r), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active || ctx.Err() != nil {
		return notController(req), nil
	}
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		return c.register(r), nil
	case *kmsg.BrokerHeartbeatRequest:
		return c.heartbeat(r), nil
	case *kmsg.AlterPartitionRequest:
		return c.alterPartition(r), nil
	case *kmsg.CreateTopicsRequest:
		return c.createTopics(r), nil
	case *kmsg.DeleteTopicsRequest:
		return c.deleteTopics(r), nil
	case *kmsg.CreatePartitionsRequest:
		return c.createPartitions(r), nil
	case *kmsg.IncrementalAlterConfigsRequest:
		return c.incrementalAlterConfigs(r), nil
	case *kmsg.AlterConfigsRequest:
		return c.alterConfigs(r), nil
	case *kmsg.ElectLeadersRequest:
		return c.electLeaders(r), nil
	case *kmsg.AlterPartitionAssignmentsRequest:
		return c.alterReassignments(r), nil
	case *kmsg.ListPartitionReassignmentsRequest:
		return c.listReassignments(r), nil
	case *kmsg.AllocateProducerIDsRequest:
		return c.allocateProducerIDs(r), nil
	case *kmsg.AlterClientQuotasRequest:
		return c.alterClientQuotas(r), nil
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return c.alterScramCredentials(r), nil
	case *kmsg.CreateACLsRequest:
		return c.createACLs(r), nil
	case *kmsg.DeleteACLsRequest:
		return c.deleteACLs(r), nil
	case *kmsg.DescribeQuorumRequest:
		return c.describeQuorum(r), nil
	case *kmsg.UnregisterBrokerRequest:
		return c.unregisterBroker(r), nil
	case *kmsg.UnregisterControllerRequest:
		return c.unregisterController(r), nil
	case *kmsg.AssignReplicasToDirsRequest:
		return c.assignReplicasToDirs(r), nil
	case *kmsg.UpdateFeaturesRequest:
		return c.updateFeatures(r), nil
	case *kmsg.EnvelopeRequest:
		return c.envelope(r), nil
	case *kmsg.ControllerRegistrationRequest:
		return c.registerController(r), nil
	case *kmsg.UpdateRaftVoterRequest:
		return c.updateRaftVoter(r), nil
	}
	return nil, fmt.Errorf("controller: api key %d is not a controller api", req.Key())
}

// HandledKeys are the API keys Handle serves.
var HandledKeys = []int16{
	(*kmsg.BrokerRegistrationRequest)(nil).Key(),
	(*kmsg.BrokerHeartbeatRequest)(nil).Key(),
	(*kmsg.AlterPartitionRequest)(nil).Key(),
	(*kmsg.CreateTopicsRequest)(nil).Key(),
	(*kmsg.DeleteTopicsRequest)(nil).Key(),
	(*kmsg.CreatePartitionsRequest)(nil).Key(),
	(*kmsg.IncrementalAlterConfigsRequest)(nil).Key(),
	(*kmsg.AlterConfigsRequest)(nil).Key(),
	(*kmsg.ElectLeadersRequest)(nil).Key(),
	(*kmsg.AlterPartitionAssignmentsRequest)(nil).Key(),
	(*kmsg.ListPartitionReassignmentsRequest)(nil).Key(),
	(*kmsg.AllocateProducerIDsRequest)(nil).Key(),
	(*kmsg.AlterClientQuotasRequest)(nil).Key(),
	(*kmsg.AlterUserSCRAMCredentialsRequest)(nil).Key(),
	(*kmsg.CreateACLsRequest)(nil).Key(),
	(*kmsg.DeleteACLsRequest)(nil).Key(),
	(*kmsg.DescribeQuorumRequest)(nil).Key(),
	(*kmsg.UnregisterBrokerRequest)(nil).Key(),
	(*kmsg.UnregisterControllerRequest)(nil).Key(),
	(*kmsg.AssignReplicasToDirsRequest)(nil).Key(),
	(*kmsg.UpdateFeaturesRequest)(nil).Key(),
	(*kmsg.EnvelopeRequest)(nil).Key(),
	(*kmsg.ControllerRegistrationRequest)(nil).Key(),
	(*kmsg.AddRaftVoterRequest)(nil).Key(),
	(*kmsg.RemoveRaftVoterRequest)(nil).Key(),
	(*kmsg.UpdateRaftVoterRequest)(nil).Key(),
}

func handled(req kmsg.Request) bool {
	for _, k := range HandledKeys {
		if req.Key() == k {
			return true
		}
	}
	return false
}

// proposeFailed answers a request whose records raft did not commit here
// (leadership lost, shut down, timed out) with NOT_CONTROLLER: the client
// retries on the new leader, where it is decided again.
func (c *Controller) proposeFailed(req kmsg.Request, err error) kmsg.Response {
	c.log.Warn("controller: proposing metadata records", "api", req.Key(), "err", err)
	return notController(req)
}

// notController builds req's response with NOT_CONTROLLER in every error
// code it has (top level, or per topic or resource when there is none).
func notController(req kmsg.Request) kmsg.Response {
	return ErrorResponse(req, kerr.NotController.Code)
}

// ErrorResponse answers a controller API request with code for all of it:
// at the top level and for every topic, partition, resource or entry it
// names.
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		r.ErrorCode = code
	case *kmsg.BrokerHeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.AlterPartitionResponse:
		r.ErrorCode = code
	case *kmsg.AllocateProducerIDsResponse:
		r.ErrorCode = code
	case *kmsg.AlterPartitionAssignmentsResponse:
		r.ErrorCode = code
		for _, t := range req.(*kmsg.AlterPartitionAssignmentsRequest).Topics {
			rt := kmsg.AlterPartitionAssignmentsResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.AlterPartitionAssignmentsResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			r.Topics = append(r.Topics, rt)
		}
	case *kmsg.ListPartitionReassignmentsResponse:
		r.ErrorCode = code // with the partitions named, as Kafka's getErrorResponse lists them
		for _, t := range req.(*kmsg.ListPartitionReassignmentsRequest).Topics {
			rt := kmsg.ListPartitionReassignmentsResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.ListPartitionReassignmentsResponseTopicPartition{Partition: p})
			}
			r.Topics = append(r.Topics, rt)
		}
	case *kmsg.DescribeQuorumResponse:
		r.ErrorCode = code
	case *kmsg.UnregisterBrokerResponse:
		r.ErrorCode = code
	case *kmsg.UnregisterControllerResponse:
		r.ErrorCode = code
	case *kmsg.AssignReplicasToDirsResponse:
		r.ErrorCode = code
	case *kmsg.UpdateFeaturesResponse:
		r.ErrorCode = code
	case *kmsg.EnvelopeResponse:
		r.ErrorCode = code
	case *kmsg.ControllerRegistrationResponse:
		r.ErrorCode = code
	case *kmsg.AddRaftVoterResponse:
		r.ErrorCode = code
	case *kmsg.RemoveRaftVoterResponse:
		r.ErrorCode = code
	case *kmsg.UpdateRaftVoterResponse:
		r.ErrorCode = code
	case *kmsg.DescribeClusterResponse:
		r.ErrorCode = code
	case *kmsg.ElectLeadersResponse:
		r.ErrorCode = code
		q := req.(*kmsg.ElectLeadersRequest)
		for _, t := range q.Topics {
			rt := kmsg.ElectLeadersResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.ElectLeadersResponseTopicPartition{Partition: p, ErrorCode: code})
			}
			r.Topics = append(r.Topics, rt)
		}
	case *kmsg.CreateTopicsResponse:
		for _, t := range req.(*kmsg.CreateTopicsRequest).Topics {
			r.Topics = append(r.Topics, kmsg.CreateTopicsResponseTopic{Topic: t.Topic, ErrorCode: code,
				NumPartitions: -1, ReplicationFactor: -1})
		}
	case *kmsg.DeleteTopicsResponse:
		q := req.(*kmsg.DeleteTopicsRequest)
		for _, n := range q.TopicNames {
			r.Topics = append(r.Topics, kmsg.DeleteTopicsResponseTopic{Topic: kmsg.StringPtr(n), ErrorCode: code})
		}
		for _, t := range q.Topics {
			r.Topics = append(r.Topics, kmsg.DeleteTopicsResponseTopic{Topic: t.Topic, TopicID: t.TopicID, ErrorCode: code})
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range req.(*kmsg.CreatePartitionsRequest).Topics {
			r.Topics = append(r.Topics, kmsg.CreatePartitionsResponseTopic{Topic: t.Topic, ErrorCode: code})
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, res := range req.(*kmsg.IncrementalAlterConfigsRequest).Resources {
			r.Resources = append(r.Resources, kmsg.IncrementalAlterConfigsResponseResource{ErrorCode: code,
				ResourceType: res.ResourceType, ResourceName: res.ResourceName})
		}
	case *kmsg.AlterConfigsResponse:
		for _, res := range req.(*kmsg.AlterConfigsRequest).Resources {
			r.Resources = append(r.Resources, kmsg.AlterConfigsResponseResource{ErrorCode: code,
				ResourceType: res.ResourceType, ResourceName: res.ResourceName})
		}
	case *kmsg.AlterClientQuotasResponse:
		for _, e := range req.(*kmsg.AlterClientQuotasRequest).Entries {
			out := kmsg.AlterClientQuotasResponseEntry{ErrorCode: code}
			for _, p := range e.Entity {
				out.Entity = append(out.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
			}
			r.Entries = append(r.Entries, out)
		}
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		req := req.(*kmsg.AlterUserSCRAMCredentialsRequest)
		for _, name := range scramRequestUsers(req) {
			r.Results = append(r.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: name, ErrorCode: code})
		}
	case *kmsg.CreateACLsResponse:
		for range req.(*kmsg.CreateACLsRequest).Creations {
			r.Results = append(r.Results, kmsg.CreateACLsResponseResult{ErrorCode: code})
		}
	case *kmsg.DeleteACLsResponse:
		for range req.(*kmsg.DeleteACLsRequest).Filters {
			r.Results = append(r.Results, kmsg.DeleteACLsResponseResult{ErrorCode: code})
		}
	}
	return resp
}

// IsNotController reports whether a controller API response says
// NOT_CONTROLLER (at the top level, or for its first topic or resource).
func IsNotController(resp kmsg.Response) bool {
	code := kerr.NotController.Code
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode == code
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode == code
	case *kmsg.AlterPartitionResponse:
		return r.ErrorCode == code
	case *kmsg.AllocateProducerIDsResponse:
		return r.ErrorCode == code
	case *kmsg.AlterPartitionAssignmentsResponse:
		return r.ErrorCode == code
	case *kmsg.ListPartitionReassignmentsResponse:
		return r.ErrorCode == code
	case *kmsg.DescribeQuorumResponse:
		return r.ErrorCode == code
	case *kmsg.UnregisterBrokerResponse:
		return r.ErrorCode == code
	case *kmsg.UpdateFeaturesResponse:
		return r.ErrorCode == code
	case *kmsg.EnvelopeResponse:
		return r.ErrorCode == code
	case *kmsg.ControllerRegistrationResponse:
		return r.ErrorCode == code
	case *kmsg.AddRaftVoterResponse:
		return r.ErrorCode == code
	case *kmsg.RemoveRaftVoterResponse:
		return r.ErrorCode == code
	case *kmsg.ElectLeadersResponse:
		if r.Version >= 1 {
			return r.ErrorCode == code
		}
		return len(r.Topics) > 0 && len(r.Topics[0].Partitions) > 0 && r.Topics[0].Partitions[0].ErrorCode == code
	case *kmsg.CreateTopicsResponse:
		return len(r.Topics) > 0 && r.Topics[0].ErrorCode == code
	case *kmsg.DeleteTopicsResponse:
		return len(r.Topics) > 0 && r.Topics[0].ErrorCode == code
	case *kmsg.CreatePartitionsResponse:
		return len(r.Topics) > 0 && r.Topics[0].ErrorCode == code
	case *kmsg.IncrementalAlterConfigsResponse:
		return len(r.Resources) > 0 && r.Resources[0].ErrorCode == code
	case *kmsg.AlterConfigsResponse:
		return len(r.Resources) > 0 && r.Resources[0].ErrorCode == code
	case *kmsg.AlterClientQuotasResponse:
		return len(r.Entries) > 0 && r.Entries[0].ErrorCode == code
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		return len(r.Results) > 0 && r.Results[0].ErrorCode == code
	case *kmsg.CreateACLsResponse:
		return len(r.Results) > 0 && r.Results[0].ErrorCode == code
	case *kmsg.DeleteACLsResponse:
		return len(r.Results) > 0 && r.Results[0].ErrorCode == code
	}
	return false
}

// scramRequestUsers are the users an AlterUserScramCredentials request
// names, each once, in request order.
func scramRequestUsers(req *kmsg.AlterUserSCRAMCredentialsRequest) []string {
	var users []string
	for _, d := range req.Deletions {
		if !slices.Contains(users, d.Name) {
			users = append(users, d.Name)
		}
	}
	for _, u := range req.Upsertions {
		if !slices.Contains(users, u.Name) {
			users = append(users, u.Name)
		}
	}
	return users
}
