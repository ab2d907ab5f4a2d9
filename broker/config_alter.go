package broker

// Config alteration shared by AlterConfigs (33, which replaces a
// resource's whole set of overrides) and IncrementalAlterConfigs (44:
// SET, DELETE, APPEND, SUBTRACT), following Kafka's KRaft path: the
// request is checked (each resource once, each key once, no null values),
// broker resources are validated as the broker does before forwarding
// (node id, only dynamic keys, valid values: INVALID_REQUEST), topic
// resources as the controller does (a valid topic name, known config names
// and valid values: INVALID_CONFIG, then the topic must exist). Unless validate-only, the
// new overrides are written to the metastore and applied to the live logs
// before the response. Alterations are serialised by liveConfig.mu. As in
// Kafka, a client without ALTER_CONFIGS still gets the broker's own
// refusals (preprocessErrors) rather than the authorization error.

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/internal/features"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Incremental operations, as numbered on the wire.
const (
	cfgOpSet      = 0
	cfgOpDelete   = 1
	cfgOpAppend   = 2
	cfgOpSubtract = 3
)

// alterOp is one requested change; the legacy API only sets.
type alterOp struct {
	name  string
	op    int8
	value *string
}

// touched is the keys an incremental request names (nil for the legacy
// API, which replaces every key).
func (r alterResource) touched(incremental bool) []string {
	if !incremental {
		return nil
	}
	keys := []string{}
	for _, o := range r.ops {
		if !slices.Contains(keys, o.name) {
			keys = append(keys, o.name)
		}
	}
	return keys
}

// alterResource is one resource of either request.
type alterResource struct {
	typ  kmsg.ConfigResourceType
	name string
	ops  []alterOp
}

// configError is a Kafka error code with its message.
type configError struct {
	code int16
	msg  string
}

func configErr(code int16, format string, args ...any) *configError {
	return &configError{code, fmt.Sprintf(format, args...)}
}

// alterConfigs applies every resource of a request and returns each one's
// error (nil for success), in request order.
func (b *Broker) alterConfigs(resources []alterResource, incremental, validateOnly bool) []*configError {
	errs := duplicateResources(resources)
	b.live.mu.Lock()
	defer b.live.mu.Unlock()
	for i, r := range resources {
		if errs[i] == nil {
			errs[i] = b.alterResource(r, incremental, validateOnly)
		}
	}
	return errs
}

// duplicateResources refuses, in request order, every resource given
// more than once.
func duplicateResources(resources []alterResource) []*configError {
	errs := make([]*configError, len(resources))
	seen := map[string]int{}
	for i, r := range resources {
		id := fmt.Sprintf("%d/%s", r.typ, r.name)
		if j, dup := seen[id]; dup {
			errs[i] = configErr(errInvalidRequest, "Each resource must appear at most once.")
			errs[j] = errs[i]
		}
		seen[id] = i
	}
	return errs
}

// preprocessErrors are, in request order, the errors Kafka's brokers
// answer before a resource is authorized (ConfigAdminManager.preprocess;
// the controller authorizes the rest): a resource or a key given twice,
// a null value, a broker resource of another node or whose change does
// not validate, a type that cannot be altered. nil for one that passes.
func (b *Broker) preprocessErrors(resources []alterResource, incremental bool) []*configError {
	errs := duplicateResources(resources)
	b.live.mu.Lock()
	defer b.live.mu.Unlock()
	for i, r := range resources {
		if errs[i] != nil {
			continue
		}
		if errs[i] = checkOps(r); errs[i] != nil {
			continue
		}
		switch r.typ {
		case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeClientMetrics:
		case kmsg.ConfigResourceTypeBroker:
			errs[i] = b.alterBroker(r, incremental, true, true)
		case kmsg.ConfigResourceTypeBrokerLogger:
			if !incremental {
				errs[i] = configErr(errInvalidRequest, "Unknown resource type %d", r.typ)
			}
		default:
			errs[i] = configErr(errInvalidRequest, "Unknown resource type %d", r.typ)
		}
	}
	return errs
}

// checkOps refuses a key given twice, an unknown operation and null
// values.
func checkOps(r alterResource) *configError {
	names := map[string]bool{}
	var nulls []string
	for _, o := range r.ops {
		if names[o.name] {
			return configErr(errInvalidRequest, "Error due to duplicate config keys")
		}
		names[o.name] = true
		if o.value == nil && o.op != cfgOpDelete {
			nulls = append(nulls, o.name)
		}
		if o.op < cfgOpSet || o.op > cfgOpSubtract {
			return configErr(errInvalidRequest, "Unknown operations type %d", o.op)
		}
	}
	if len(nulls) > 0 {
		return configErr(errInvalidRequest, "Null value not supported for : %s", strings.Join(nulls, ", "))
	}
	return nil
}

func (b *Broker) alterResource(r alterResource, incremental, validateOnly bool) *configError {
	if err := checkOps(r); err != nil {
		return err
	}
	switch r.typ {
	case kmsg.ConfigResourceTypeTopic:
		return b.alterTopic(r, incremental, validateOnly)
	case kmsg.ConfigResourceTypeBroker:
		return b.alterBroker(r, incremental, validateOnly, false)
	case kmsg.ConfigResourceTypeGroupConfig:
		return b.alterGroup(r, incremental, validateOnly)
	case kmsg.ConfigResourceTypeClientMetrics:
		return b.alterClientMetrics(r, incremental, validateOnly)
	case kmsg.ConfigResourceTypeBrokerLogger:
		if incremental {
			return b.alterBrokerLoggers(r, validateOnly)
		}
	}
	return configErr(errInvalidRequest, "Unknown resource type %d", r.typ)
}

// validateControllerConfigs is the controller's own check of a topic's,
// group's or client metrics subscription's new configs
// (controller.Config.ValidateConfigs), the broker's checks again, as
// Kafka's ControllerConfigurationValidator repeats them: a client of the
// CONTROLLER listener has no broker in between. A controller-only node
// judges by its static config.
func (b *Broker) validateControllerConfigs(res controller.ConfigResource, values map[string]string) (int16, string) {
	live := b.liveConfig()
	if live == nil {
		live = &b.cfg
	}
	var err error
	switch res.Type {
	case controller.ResourceTopic:
		err = validateTopicConfigs(values, live)
	case controller.ResourceGroup:
		err = validateGroupConfigs(values, live)
	case controller.ResourceClientMetrics:
		if cerr := validateClientMetrics(values); cerr != nil {
			return cerr.code, cerr.msg
		}
	}
	if err != nil {
		return errInvalidConfig, err.Error()
	}
	return 0, ""
}

// controllerListConfig tells the controller whether a topic's, broker's
// or client metrics subscription's config is a LIST and its default
// (controller.Config.ListConfig), for the APPEND and SUBTRACT a client of
// the CONTROLLER listener sends, as Kafka's KafkaConfigSchema does.
func controllerListConfig(res controller.ConfigResource, key string) (string, bool) {
	var typ, def string
	switch res.Type {
	case controller.ResourceTopic:
		if k := findTopicConfigKey(key); k != nil {
			typ, def = k.typ, k.def
		}
	case controller.ResourceBroker:
		if k := findKey(key); k != nil {
			typ, def = k.typ, k.def
		}
	case controller.ResourceClientMetrics:
		if k := findClientMetricsKey(key); k != nil {
			typ, def = k.typ, k.def
		}
	}
	return def, typ == "LIST"
}

// nextOverrides computes a resource's overrides after the request: the
// given set for the legacy API, the operations applied to the current set
// for the incremental one. listDefault gives a LIST key's default, which
// APPEND and SUBTRACT start from when the key is not set; ok false means
// the key is not a LIST.
func nextOverrides(cur map[string]string, r alterResource, incremental bool, notList func(name string, op int8) *configError, listDefault func(string) string) (map[string]string, *configError) {
	next := map[string]string{}
	if !incremental {
		for _, o := range r.ops {
			next[o.name] = *o.value
		}
		return next, checkValueSizes(next, r)
	}
	for k, v := range cur {
		next[k] = v
	}
	for _, o := range r.ops {
		switch o.op {
		case cfgOpSet:
			next[o.name] = *o.value
		case cfgOpDelete:
			delete(next, o.name)
		case cfgOpAppend, cfgOpSubtract:
			if err := notList(o.name, o.op); err != nil {
				return nil, err
			}
			old, ok := next[o.name]
			if !ok {
				old = listDefault(o.name)
			}
			parts := splitList(old)
			for _, v := range strings.Split(*o.value, ",") {
				i := indexOf(parts, v)
				if o.op == cfgOpAppend && i < 0 {
					parts = append(parts, v)
				} else if o.op == cfgOpSubtract && i >= 0 {
					parts = append(parts[:i], parts[i+1:]...)
				}
			}
			next[o.name] = strings.Join(parts, ",")
		}
	}
	return next, checkValueSizes(next, r)
}

// checkValueSizes refuses, as Kafka's controller does, a value the
// request sets that is longer than a metadata record's string can be
// (32767 UTF-16 units, what Java's String.length counts).
func checkValueSizes(next map[string]string, r alterResource) *configError {
	for _, o := range r.ops {
		if v, ok := next[o.name]; ok && len(utf16.Encode([]rune(v))) > math.MaxInt16 {
			return configErr(errInvalidConfig, "The configuration value cannot be added because it exceeds the maximum value size of 32767 bytes.")
		}
	}
	return nil
}

func indexOf(list []string, v string) int {
	for i, s := range list {
		if s == v {
			return i
		}
	}
	return -1
}

func opName(op int8) string {
	return map[int8]string{cfgOpSet: "SET", cfgOpDelete: "DELETE", cfgOpAppend: "APPEND", cfgOpSubtract: "SUBTRACT"}[op]
}

func (b *Broker) alterTopic(r alterResource, incremental, validateOnly bool) *configError {
	notList := func(name string, op int8) *configError {
		if k := findTopicConfigKey(name); k == nil || k.typ != "LIST" {
			return configErr(errInvalidConfig, "Can't %s to key %s because its type is not LIST.", opName(op), name)
		}
		return nil
	}
	listDefault := func(name string) string { return findTopicConfigKey(name).def }
	next, cerr := nextOverrides(b.topicOverrides(r.name), r, incremental, notList, listDefault)
	if cerr != nil {
		return cerr
	}
	// Kafka's ControllerConfigurationValidator checks the name first.
	if r.name == "" {
		return configErr(errInvalidRequest, "Default topic resources are not allowed.")
	}
	if err := controller.ValidateTopicName(r.name); err != nil {
		return configErr(errInvalidTopic, "%s", err.Error())
	}
	if err := validateTopicConfigs(next, b.liveConfig()); err != nil {
		return configErr(errInvalidConfig, "%s", err.Error())
	}
	if !b.topicExists(r.name) {
		return configErr(errUnknownTopicOrPartition, "The topic '%s' does not exist.", r.name)
	}
	if validateOnly {
		return nil
	}
	if b.cluster != nil {
		return b.cluster.setConfigs(kmsg.ConfigResourceTypeTopic, r.name, next, r.touched(incremental))
	}
	t := b.topics.get(r.name)
	err := b.meta.update(func(d *metaData) {
		if len(next) == 0 {
			delete(d.TopicConfigs, r.name)
		} else {
			d.TopicConfigs[r.name] = next
		}
	})
	if err != nil {
		b.logger.Error("persisting topic configs failed", "topic", r.name, "err", err)
		return configErr(errUnknownServerError, "persisting the configs failed: %v", err)
	}
	b.topics.applySettings(t, next)
	b.logger.Info("altered topic configs", "topic", r.name, "configs", next)
	return nil
}

// alterBroker validates and applies a change of this node's or the
// cluster-wide dynamic configs. With preprocess, it makes only the checks
// Kafka's broker makes before the change is authorized (not
// checkELRMinISR, which is the controller's) and applies nothing.
func (b *Broker) alterBroker(r alterResource, incremental, validateOnly, preprocess bool) *configError {
	perBroker := r.name != ""
	if perBroker {
		id, err := strconv.Atoi(r.name)
		if err != nil {
			return configErr(errInvalidRequest, "Node id must be an integer, but it is: %s", r.name)
		}
		if id != int(b.cfg.NodeID) {
			return configErr(errInvalidRequest, "Unexpected broker id, expected %d, but received %s", b.cfg.NodeID, r.name)
		}
	}
	curBroker, curCluster := b.dynamicBrokerConfigs()
	cur := curCluster
	if perBroker {
		cur = curBroker
	}
	notList := func(name string, op int8) *configError {
		k := findKey(name)
		if k == nil {
			return configErr(errInvalidConfig, "Unknown config name: %s", name)
		}
		if k.typ != "LIST" {
			return configErr(errInvalidConfig, "Config value %s is not allowed for config key: %s", strings.ToLower(opName(op)), name)
		}
		return nil
	}
	listDefault := func(name string) string { return findKey(name).def }
	next, cerr := nextOverrides(cur, r, incremental, notList, listDefault)
	if cerr != nil {
		return cerr
	}
	changed := make([]string, 0, len(r.ops))
	for _, o := range r.ops {
		changed = append(changed, o.name)
	}
	if cerr := checkSSLStoreLevel(perBroker, changed); cerr != nil {
		return cerr
	}
	if cerr := b.checkELRMinISR(perBroker, cur, next); cerr != nil && !preprocess {
		return cerr
	}
	if cerr := b.checkCordonedLogDirs(cur, next); cerr != nil {
		return cerr
	}
	if cerr := validateDynamicBrokerConfigs(next); cerr != nil {
		return cerr
	}
	newBroker, newCluster := curBroker, next
	if perBroker {
		newBroker, newCluster = next, curCluster
	}
	live, err := overlay(&b.cfg, newCluster, newBroker)
	if err != nil {
		if slices.ContainsFunc(changed, isDynamicSSLKey) {
			return storeRefusal("%v", err) // a store that does not load
		}
		return configErr(errInvalidRequest, "%s", err.Error())
	}
	if cerr := validateThreadCounts(b.liveConfig(), live); cerr != nil {
		return cerr
	}
	if cerr := validateListenerConnectionChange(b.liveConfig(), live); cerr != nil {
		return cerr
	}
	if cerr := validateStoreChange(b.liveConfig(), live); cerr != nil {
		return cerr
	}
	if validateOnly {
		return nil
	}
	if b.cluster != nil {
		// Every broker applies the controller's copy (applyDynamicConfigs).
		return b.cluster.setConfigs(kmsg.ConfigResourceTypeBroker, r.name, next, r.touched(incremental))
	}
	err = b.meta.update(func(d *metaData) {
		d.BrokerConfigs, d.ClusterBrokerConfigs = newBroker, newCluster
	})
	if err != nil {
		b.logger.Error("persisting broker configs failed", "err", err)
		return configErr(errUnknownServerError, "persisting the configs failed: %v", err)
	}
	b.setLiveConfig(live)
	b.logger.Info("altered broker configs", "resource", r.name, "configs", next)
	return nil
}

// checkELRMinISR keeps KIP-966's invariant while eligible leader replicas
// are on: the controller judges them by the topic's or the cluster's
// min.insync.replicas, so every broker must count the same. As in Kafka
// (its controller runs the same check in a combined single node), one
// broker's own may be neither set nor removed, and the cluster's (which
// the controller sets when ELR comes on) may change but not go.
func (b *Broker) checkELRMinISR(perBroker bool, cur, next map[string]string) *configError {
	const key = "min.insync.replicas"
	stored, _ := b.featureLevels()
	if features.Level(stored, features.ELRVersion) < 1 {
		return nil
	}
	was, had := cur[key]
	v, has := next[key]
	switch {
	case perBroker && (has && v != was || had && !has):
		return configErr(errInvalidConfig, "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
	case !perBroker && had && !has:
		return configErr(errInvalidConfig, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
	}
	return nil
}

// singleNodeELRMinISR does on a single node what Kafka's controller does
// with min.insync.replicas while eligible leader replicas are on: where
// there is no cluster-wide value it writes this node's static one (Kafka
// at a new cluster's first start, and Gregor at every start, for a
// metadata file written before), and turning the feature on (enabling)
// also removes this node's own. It reports whether d changed.
func (b *Broker) singleNodeELRMinISR(d *metaData, enabling bool) bool {
	const key = "min.insync.replicas"
	if features.Level(d.Features, features.ELRVersion) < 1 {
		return false
	}
	changed := false
	if _, own := d.BrokerConfigs[key]; own && enabling {
		d.BrokerConfigs = maps.Clone(d.BrokerConfigs)
		delete(d.BrokerConfigs, key)
		changed = true
	}
	if _, ok := d.ClusterBrokerConfigs[key]; !ok {
		cluster := maps.Clone(d.ClusterBrokerConfigs)
		if cluster == nil {
			cluster = map[string]string{}
		}
		cluster[key] = strconv.Itoa(b.cfg.settingsFor(nil).minInsync)
		d.ClusterBrokerConfigs = cluster
		changed = true
	}
	return changed
}

// keepClusterMinISR stores a single node's cluster-wide
// min.insync.replicas at start when eligible leader replicas are on and
// there is none (singleNodeELRMinISR); the metadata file is not written
// otherwise.
func (b *Broker) keepClusterMinISR() error {
	stored, _ := b.meta.features()
	_, cluster := b.meta.brokerConfigs()
	if _, ok := cluster["min.insync.replicas"]; ok || features.Level(stored, features.ELRVersion) < 1 {
		return nil
	}
	return b.meta.update(func(d *metaData) { b.singleNodeELRMinISR(d, false) })
}

// validateDynamicBrokerConfigs refuses, as Kafka's DynamicBrokerConfig
// does with INVALID_REQUEST, keys that cannot change at runtime and values
// their key does not accept.
func validateDynamicBrokerConfigs(props map[string]string) *configError {
	var static []string
	for k := range props {
		if !dynamicBrokerKeys[k] && !isDynamicListenerKey(k) && !isDynamicSSLKey(k) {
			static = append(static, k)
		}
	}
	if len(static) > 0 {
		sort.Strings(static)
		return configErr(errInvalidRequest, "Cannot update these configs dynamically: Set(%s)", strings.Join(static, ", "))
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := dynamicValidator(k)(strings.TrimSpace(props[k])); err != nil {
			return configErr(errInvalidRequest, "Invalid value %s for configuration %s: %v", props[k], k, err)
		}
	}
	return nil
}

// threadCounts are the dynamic broker keys that size a pool of workers.
var threadCounts = []struct {
	key   string
	value func(*Config) int
}{
	{"log.cleaner.threads", func(c *Config) int { return c.CleanerThreads }},
	{"num.recovery.threads.per.data.dir", func(c *Config) int { return c.RecoveryThreads }},
	{"num.replica.fetchers", func(c *Config) int { return c.Cluster.NumReplicaFetchers }},
}

// validateThreadCounts refuses, as Kafka's DynamicThreadPool and
// LogCleaner do, a change of a thread count to below 1, below half its
// current value or above double it.
func validateThreadCounts(cur, next *Config) *configError {
	for _, tc := range threadCounts {
		old, n := tc.value(cur), tc.value(next)
		var rule string
		switch {
		case n == old:
			continue
		case n < 1:
			rule = "value should be at least 1"
		case n < old/2:
			rule = fmt.Sprintf("value should be at least half the current value %d", old)
		case n > old*2:
			rule = fmt.Sprintf("value should not be greater than double the current value %d", old)
		default:
			continue
		}
		return configErr(errInvalidRequest, "Invalid dynamic configuration: Dynamic thread count update validation failed for %s=%d, %s", tc.key, n, rule)
	}
	return nil
}

// dynamicValidator checks a dynamic broker key's value: the validator of
// the topic config it is the first synonym of, or the thread counts' and
// the cleaner's ranges.
func dynamicValidator(name string) func(string) error {
	switch name {
	case "log.cleaner.threads":
		return intAtLeast(0)
	case "num.recovery.threads.per.data.dir", "num.replica.fetchers", "producer.id.expiration.ms":
		return intAtLeast(1)
	case "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size":
		return longAtLeast(0)
	case "log.cleaner.io.max.bytes.per.second":
		return positiveDouble
	case "log.retention.ms": // no validator in Kafka: a negative value means no limit
		return validLong
	}
	if isDynamicListenerKey(name) { // checked as the key it prefixes, as Kafka does
		return intAtLeast(0)
	}
	for _, k := range topicConfigKeys {
		if len(k.synonyms) > 0 && k.synonyms[0].name == name {
			return k.validate
		}
	}
	return func(string) error { return nil }
}
