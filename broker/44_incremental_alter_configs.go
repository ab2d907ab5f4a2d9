package broker

// IncrementalAlterConfigs, versions 0-1: SET, DELETE, APPEND and SUBTRACT
// (the last two for LIST configs such as cleanup.policy, starting from the
// default when the key is not set) on topics (type 2) and brokers (type
// 4: this node's id, or "" for the cluster-wide defaults), groups (type
// 32, group_configs.go) and client metrics subscriptions (type 16,
// client_metrics_configs.go); SET and DELETE on this node's loggers (type
// 8, broker_loggers.go); see config_alter.go for the rules.

import "github.com/twmb/franz-go/pkg/kmsg"

func incrementalAlterConfigsHandler(b *Broker, c *conn, req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	resources := incrementalAlterResources(req.Resources)
	for i, err := range b.alterConfigs(resources, true, req.ValidateOnly) {
		rr := kmsg.IncrementalAlterConfigsResponseResource{ResourceType: resources[i].typ, ResourceName: resources[i].name}
		if err != nil {
			rr.ErrorCode, rr.ErrorMessage = err.code, kmsg.StringPtr(err.msg)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

func incrementalAlterResources(rs []kmsg.IncrementalAlterConfigsRequestResource) []alterResource {
	resources := make([]alterResource, len(rs))
	for i, r := range rs {
		resources[i] = alterResource{typ: r.ResourceType, name: r.ResourceName}
		for _, cfg := range r.Configs {
			resources[i].ops = append(resources[i].ops, alterOp{name: cfg.Name, op: int8(cfg.Op), value: cfg.Value})
		}
	}
	return resources
}
