package broker

// AlterConfigs, versions 0-2: replaces the whole set of a resource's
// overrides, as Kafka does (keys not given return to their defaults).
// Topics (type 2), brokers (type 4: this node's id, or "" for the
// cluster-wide defaults) and groups (type 32); see config_alter.go for the
// rules. Other resource types get INVALID_REQUEST.

import "github.com/twmb/franz-go/pkg/kmsg"

func alterConfigsHandler(b *Broker, c *conn, req *kmsg.AlterConfigsRequest) (*kmsg.AlterConfigsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	resources := legacyAlterResources(req.Resources)
	for i, err := range b.alterConfigs(resources, false, req.ValidateOnly) {
		rr := kmsg.AlterConfigsResponseResource{ResourceType: resources[i].typ, ResourceName: resources[i].name}
		if err != nil {
			rr.ErrorCode, rr.ErrorMessage = err.code, kmsg.StringPtr(err.msg)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

func legacyAlterResources(rs []kmsg.AlterConfigsRequestResource) []alterResource {
	resources := make([]alterResource, len(rs))
	for i, r := range rs {
		resources[i] = alterResource{typ: r.ResourceType, name: r.ResourceName}
		for _, cfg := range r.Configs {
			resources[i].ops = append(resources[i].ops, alterOp{name: cfg.Name, op: cfgOpSet, value: cfg.Value})
		}
	}
	return resources
}
