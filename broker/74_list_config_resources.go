package broker

// ListConfigResources, versions 0-1 (KIP-1142; v0 was KIP-714's
// ListClientMetricsResources): the resources DescribeConfigs can describe,
// of the types asked for (none: every type the version knows; one it
// does not know: UNSUPPORTED_VERSION). Topics are every topic, brokers
// every registered broker, groups those with configs, whether the group
// exists or not (kafka-configs --describe --entity-type groups lists
// them beside ListGroups'), client metrics subscriptions by name, and
// for broker loggers the brokers, as Kafka lists them. It needs
// DESCRIBE_CONFIGS on the cluster, as in Kafka.

import (
	"maps"
	"slices"
	"strconv"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func listConfigResourcesHandler(b *Broker, c *conn, req *kmsg.ListConfigResourcesRequest) (*kmsg.ListConfigResourcesResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	known := []int8{int8(kmsg.ConfigResourceTypeClientMetrics)}
	if req.Version >= 1 {
		known = []int8{int8(kmsg.ConfigResourceTypeTopic), int8(kmsg.ConfigResourceTypeBroker), int8(kmsg.ConfigResourceTypeBrokerLogger),
			int8(kmsg.ConfigResourceTypeClientMetrics), int8(kmsg.ConfigResourceTypeGroupConfig)}
	}
	types := req.ResourceTypes
	if len(types) == 0 {
		types = known
	}
	for _, t := range types {
		if !slices.Contains(known, t) {
			resp.ErrorCode = errUnsupportedVersion
			return resp, nil
		}
	}
	add := func(typ kmsg.ConfigResourceType, names ...string) {
		if !slices.Contains(types, int8(typ)) {
			return
		}
		for _, n := range names {
			resp.ConfigResources = append(resp.ConfigResources, kmsg.ListConfigResourcesResponseConfigResource{Name: n, Type: int8(typ)})
		}
	}
	topics, brokers, groups := b.configResourceNames()
	add(kmsg.ConfigResourceTypeGroupConfig, groups...)
	add(kmsg.ConfigResourceTypeClientMetrics, b.clientMetricsSubscriptions()...)
	add(kmsg.ConfigResourceTypeBroker, brokers...)
	add(kmsg.ConfigResourceTypeBrokerLogger, brokers...)
	add(kmsg.ConfigResourceTypeTopic, topics...)
	return resp, nil
}

// configResourceNames lists the topics, brokers (by id) and groups with
// configs, from the controller's image in a cluster.
func (b *Broker) configResourceNames() (topics, brokers, groups []string) {
	if b.cluster == nil {
		for _, t := range b.topics.all() {
			topics = append(topics, t.name)
		}
		return topics, []string{strconv.Itoa(int(b.cfg.NodeID))}, b.meta.configNames(groupConfigsField)
	}
	img := b.cluster.image()
	if img == nil {
		return nil, nil, nil
	}
	for _, id := range slices.Sorted(maps.Keys(img.Brokers)) {
		brokers = append(brokers, strconv.Itoa(int(id)))
	}
	for r := range img.Configs {
		if r.Type == controller.ResourceGroup {
			groups = append(groups, r.Name)
		}
	}
	slices.Sort(groups)
	return img.SortedTopicNames(), brokers, groups
}
