package controller

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/gregor-broker/gregor/acl"
	"github.com/gregor-broker/gregor/internal/features"
	"github.com/gregor-broker/gregor/quota"
	"github.com/gregor-broker/gregor/sasl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config overrides live in Image.Configs: topic overrides by topic name,
// dynamic broker configs by broker id, and "" for the cluster-wide broker
// default. The broker validates names and values before forwarding; the
// controller checks the resource, applies the operations and validates
// the resulting values again (Config.ValidateConfigs), as a client of the
// CONTROLLER listener has no broker in between. A broker sends its
// APPEND and SUBTRACT as SET; the controller's own work on the current
// override, or on the config's default (Config.ListConfig).

// checkResource returns the image key for a resource, or an error code
// and message: a topic's name must be valid (ControllerConfigurationValidator);
// whether it exists is checked after its values (checkValues).
func checkResource(img *Image, typ kmsg.ConfigResourceType, name string) (ConfigResource, int16, string) {
	switch int8(typ) {
	case ResourceTopic:
		if name == "" {
			return ConfigResource{}, kerr.InvalidRequest.Code, "Default topic resources are not allowed."
		}
		if err := ValidateTopicName(name); err != nil {
			return ConfigResource{}, kerr.InvalidTopicException.Code, err.Error()
		}
		return ConfigResource{ResourceTopic, name}, 0, ""
	case ResourceBroker:
		if name != "" {
			id, err := strconv.ParseInt(name, 10, 32)
			if err != nil {
				return ConfigResource{}, kerr.InvalidRequest.Code, "Unable to parse broker name as a base 10 number."
			}
			if id < 0 {
				return ConfigResource{}, kerr.InvalidRequest.Code, "Invalid negative broker ID."
			}
		}
		return ConfigResource{ResourceBroker, name}, 0, ""
	case ResourceGroup:
		if name == "" {
			return ConfigResource{}, kerr.InvalidRequest.Code, "Default group resources are not allowed."
		}
		return ConfigResource{ResourceGroup, name}, 0, ""
	case ResourceClientMetrics:
		if name == "" {
			return ConfigResource{}, kerr.InvalidRequest.Code, "Subscription name can't be empty"
		}
		return ConfigResource{ResourceClientMetrics, name}, 0, ""
	}
	if int8(typ) == int8(kmsg.ConfigResourceTypeBrokerLogger) {
		return ConfigResource{}, kerr.InvalidRequest.Code, "Unknown resource type BROKER_LOGGER"
	}
	return ConfigResource{}, kerr.InvalidRequest.Code, fmt.Sprintf("Unsupported resource type %d", typ)
}

// screenResources answers, before anything else as Kafka's ControllerApis
// does, the resources of an alteration whose type is unknown
// (UNSUPPORTED_VERSION) and those given more than once: one answer,
// "Duplicate resource.", where the second copy is, and none for the
// others. It returns each resource's refusal and whether it gets no
// answer.
func screenResources(n int, resource func(int) (kmsg.ConfigResourceType, string)) (codes []int16, msgs []string, silent []bool) {
	codes, msgs, silent = make([]int16, n), make([]string, n), make([]bool, n)
	count := map[ConfigResource]int{}
	for i := range n {
		typ, name := resource(i)
		switch typ {
		case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger,
			kmsg.ConfigResourceTypeClientMetrics, kmsg.ConfigResourceTypeGroupConfig:
		default:
			codes[i], msgs[i] = kerr.UnsupportedVersion.Code, fmt.Sprintf("Unknown resource type %d.", typ)
			continue
		}
		count[ConfigResource{int8(typ), name}]++
	}
	seen := map[ConfigResource]int{}
	for i := range n {
		typ, name := resource(i)
		key := ConfigResource{int8(typ), name}
		if codes[i] != 0 || count[key] < 2 {
			continue
		}
		seen[key]++
		if seen[key] == 2 {
			codes[i], msgs[i] = kerr.InvalidRequest.Code, "Duplicate resource."
		} else {
			silent[i] = true
		}
	}
	return codes, msgs, silent
}

// incrementalAlterConfigs handles IncrementalAlterConfigs.
func (c *Controller) incrementalAlterConfigs(req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	img := c.Image()
	codes, msgs, silent := screenResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	var recs []Record
	for i, r := range req.Resources {
		if silent[i] {
			continue
		}
		out := kmsg.IncrementalAlterConfigsResponseResource{ResourceType: r.ResourceType, ResourceName: r.ResourceName}
		var res ConfigResource
		code, msg := codes[i], msgs[i]
		if code == 0 {
			res, code, msg = checkResource(img, r.ResourceType, r.ResourceName)
		}
		var values map[string]string
		if code == 0 {
			values, code, msg = c.applyOps(res, img.Configs[res], r.Configs)
		}
		if code == 0 {
			code, msg = c.checkValues(img, res, values)
		}
		if code != 0 {
			out.ErrorCode, out.ErrorMessage = code, kmsg.StringPtr(msg)
		} else if !req.ValidateOnly {
			recs = append(recs, Record{Config: &ConfigRecord{Resource: res, Values: values}})
		}
		resp.Resources = append(resp.Resources, out)
	}
	recs = append(recs, clearELRRecords(img, recs)...)
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	return resp
}

// elrMinISRRefusal keeps, as Kafka's ConfigurationControlManager does
// while eligible leader replicas are on, every broker counting the
// cluster's min.insync.replicas: a broker's own may be neither set nor
// removed, the cluster's may change but not go.
func elrMinISRRefusal(img *Image, res ConfigResource, values map[string]string) (int16, string) {
	if res.Type != ResourceBroker || !elrEnabled(img) {
		return 0, ""
	}
	was, had := img.Configs[res][minISRKey]
	v, has := values[minISRKey]
	switch {
	case res.Name != "" && (has && v != was || had && !has):
		return kerr.InvalidConfig.Code, "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
	case res.Name == "" && had && !has:
		return kerr.InvalidConfig.Code, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
	}
	return 0, ""
}

// checkValues checks a resource's new values: the ELR rules of
// min.insync.replicas, their length (ValueTooLong), Config.ValidateConfigs,
// then that a topic exists, or a node given by id (a registered broker or
// a controller), in the order of Kafka's ConfigurationControlManager.

// ValueTooLong refuses, as Kafka's controller does, a config value longer
// than a metadata record's string can be (32767 UTF-16 units, what Java's
// String.length counts); a stored value never is, so every value of a
// resource's new set may be checked.
func ValueTooLong(values map[string]string) (int16, string) {
	for _, v := range values {
		if len(v) > math.MaxInt16 && len(utf16.Encode([]rune(v))) > math.MaxInt16 {
			return kerr.InvalidConfig.Code, "The configuration value cannot be added because it exceeds the maximum value size of 32767 bytes."
		}
	}
	return 0, ""
}
func (c *Controller) checkValues(img *Image, res ConfigResource, values map[string]string) (int16, string) {
	if code, msg := elrMinISRRefusal(img, res, values); code != 0 {
		return code, msg
	}
	if code, msg := ValueTooLong(values); code != 0 {
		return code, msg
	}
	if c.cfg.ValidateConfigs != nil {
		if code, msg := c.cfg.ValidateConfigs(res, values); code != 0 {
			return code, msg
		}
	}
	switch {
	case res.Type == ResourceTopic && img.Topics[res.Name] == nil:
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Topic '%s' does not exist.", res.Name)
	case res.Type == ResourceBroker && res.Name != "":
		id, _ := strconv.ParseInt(res.Name, 10, 32)
		_, broker := img.Brokers[int32(id)]
		_, voter := c.cfg.Voters[int32(id)]
		_, controller := img.Controllers[int32(id)]
		if !broker && !voter && !controller {
			return kerr.BrokerIDNotRegistered.Code, fmt.Sprintf("No node with id %d found.", id)
		}
	}
	return 0, ""
}

// applyOps applies IncrementalAlterConfigs operations to a resource's
// current overrides. APPEND and SUBTRACT work on LIST configs only,
// starting from the config's default when it is not set
// (Config.ListConfig), as Kafka's ConfigurationControlManager does.
func (c *Controller) applyOps(res ConfigResource, current map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, int16, string) {
	values := maps.Clone(current)
	if values == nil {
		values = map[string]string{}
	}
	for _, op := range ops {
		if op.Op != kmsg.IncrementalAlterConfigOpDelete && op.Value == nil {
			return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Null value not supported for : %s", op.Name)
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			values[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(values, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			def, isList := "", true
			if c.cfg.ListConfig != nil {
				def, isList = c.cfg.ListConfig(res, op.Name)
			}
			if !isList {
				return nil, kerr.InvalidConfig.Code, fmt.Sprintf("Can't %s to key %s because its type is not LIST.", op.Op, op.Name)
			}
			old, ok := values[op.Name]
			if !ok {
				old = def
			}
			list := splitList(old)
			for _, item := range splitList(*op.Value) {
				i := slices.Index(list, item)
				if op.Op == kmsg.IncrementalAlterConfigOpAppend && i < 0 {
					list = append(list, item)
				} else if op.Op == kmsg.IncrementalAlterConfigOpSubtract && i >= 0 {
					list = slices.Delete(list, i, i+1)
				}
			}
			values[op.Name] = strings.Join(list, ",")
		default:
			return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Unknown operation type %d", op.Op)
		}
	}
	return values, 0, ""
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// alterConfigs handles the legacy AlterConfigs: each resource's overrides
// are replaced by the ones given.
func (c *Controller) alterConfigs(req *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	img := c.Image()
	codes, msgs, silent := screenResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	var recs []Record
	for i, r := range req.Resources {
		if silent[i] {
			continue
		}
		out := kmsg.AlterConfigsResponseResource{ResourceType: r.ResourceType, ResourceName: r.ResourceName}
		var res ConfigResource
		code, msg := codes[i], msgs[i]
		if code == 0 {
			res, code, msg = checkResource(img, r.ResourceType, r.ResourceName)
		}
		values := map[string]string{}
		for _, cfg := range r.Configs {
			if cfg.Value != nil {
				values[cfg.Name] = *cfg.Value
			}
		}
		if code == 0 {
			code, msg = c.checkValues(img, res, values)
		}
		if code != 0 {
			out.ErrorCode, out.ErrorMessage = code, kmsg.StringPtr(msg)
		} else if !req.ValidateOnly {
			recs = append(recs, Record{Config: &ConfigRecord{Resource: res, Values: values}})
		}
		resp.Resources = append(resp.Resources, out)
	}
	recs = append(recs, clearELRRecords(img, recs)...)
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	return resp
}

// alterScramCredentials handles AlterUserScramCredentials (validated by
// package sasl): each credential set or removed becomes a ScramCredential
// record.
func (c *Controller) alterScramCredentials(req *kmsg.AlterUserSCRAMCredentialsRequest) kmsg.Response {
	resp, changes := sasl.Alter(req, c.Image().ScramCredentials)
	recs := make([]Record, len(changes))
	for i := range changes {
		recs[i] = Record{ScramCredential: &changes[i]}
	}
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	return resp
}

// createACLs and deleteACLs handle CreateAcls and DeleteAcls (package acl
// validates and matches): each ACL added or removed is an ACL record.
func (c *Controller) createACLs(req *kmsg.CreateACLsRequest) kmsg.Response {
	img := c.Image()
	resp, changes := acl.Create(req, img.ACLs, features.Level(img.Features, features.MetadataVersion) >= features.CIDRACLs)
	return c.proposeACLs(req, resp, changes)
}

func (c *Controller) deleteACLs(req *kmsg.DeleteACLsRequest) kmsg.Response {
	resp, changes := acl.Delete(req, c.Image().ACLs)
	return c.proposeACLs(req, resp, changes)
}

func (c *Controller) proposeACLs(req kmsg.Request, resp kmsg.Response, changes []acl.Change) kmsg.Response {
	recs := make([]Record, len(changes))
	for i := range changes {
		recs[i] = Record{ACL: &changes[i]}
	}
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	return resp
}

// alterClientQuotas handles AlterClientQuotas (validated by package quota):
// each entity whose values change becomes a ClientQuota record.
func (c *Controller) alterClientQuotas(req *kmsg.AlterClientQuotasRequest) kmsg.Response {
	resp, changed := quota.Alter(req, c.Image().ClientQuotas)
	recs := make([]Record, len(changed))
	for i := range changed {
		recs[i] = Record{ClientQuota: &changed[i]}
	}
	if _, err := c.propose(recs); err != nil {
		return c.proposeFailed(req, err)
	}
	return resp
}
