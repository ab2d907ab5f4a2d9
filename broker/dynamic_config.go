package broker

import (
	"maps"
	"sync"
	"sync/atomic"
)

// liveConfig is the broker's effective configuration: the static one it
// started with (Broker.cfg, from server.properties and overrides) overlaid
// with the dynamic broker configs AlterConfigs stored in the metastore,
// first the cluster-wide defaults, then this node's own, which win. It is
// rebuilt whole on every change and read without locks; topic settings
// and the log dir's background work derive from it.
type liveConfig struct {
	mu  sync.Mutex // serialises config alterations, topic and broker
	cur atomic.Pointer[Config]
}

// liveConfig returns the effective configuration; never modify it.
func (b *Broker) liveConfig() *Config { return b.live.cur.Load() }

// staticProps are the keys the broker was started with, as resolved
// (aliases applied).
func (c *Config) staticProps() map[string]string {
	out := make(map[string]string, len(c.explicit))
	for k := range c.explicit {
		out[k] = c.values[k]
	}
	maps.Copy(out, c.listenerProps)
	maps.Copy(out, c.providerProps)
	return out
}

// overlay parses the static props with the dynamic layers applied in
// order, later ones winning. The config providers resolve the layers'
// variables as they resolved the static ones, as Kafka's new KafkaConfig
// over the dynamic configs does: a dynamic key whose literal text passes
// its check (a free-form string, a store location or password) takes the
// provider's value, while the stored config and its synonym keep the
// variable.
func overlay(static *Config, layers ...map[string]string) (*Config, error) {
	props := static.staticProps()
	for _, l := range layers {
		for k, v := range l {
			props[k] = v
		}
	}
	c, _, err := ParseConfig(props)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// initLiveConfig builds the effective configuration at start. Stored
// dynamic configs that no longer pass (a rule added since they were set)
// are logged and left out, as Kafka does, so that they cannot stop the
// start; AlterConfigs can then replace or delete them.
func (b *Broker) initLiveConfig() {
	perBroker, cluster := b.dynamicBrokerConfigs()
	c, err := overlay(&b.cfg, cluster, perBroker)
	if err != nil {
		b.logger.Error("dynamic broker configs are not applied", "file", b.meta.path, "err", err)
		c = &b.cfg
	}
	b.live.cur.Store(c)
}

// reloadLiveConfig rebuilds the effective configuration from the stored
// dynamic configs after a change made outside AlterConfigs (turning on
// eligible leader replicas on a single node).
func (b *Broker) reloadLiveConfig() {
	b.live.mu.Lock()
	defer b.live.mu.Unlock()
	perBroker, cluster := b.dynamicBrokerConfigs()
	c, err := overlay(&b.cfg, cluster, perBroker)
	if err != nil {
		b.logger.Error("dynamic broker configs are not applied", "file", b.meta.path, "err", err)
		return
	}
	b.setLiveConfig(c)
}

// setLiveConfig installs a new effective configuration and applies it to
// every topic (their settings derive from the broker defaults), to the
// log dir's background work, to accept loops waiting for a connection
// slot and to the number of replica fetchers.
func (b *Broker) setLiveConfig(c *Config) {
	old := b.live.cur.Swap(c)
	b.connCounts.limitsChanged()
	for _, t := range b.topics.all() {
		b.topics.applySettings(t, b.topicOverrides(t.name))
	}
	b.applyDirSettings(old)
	b.applyThrottles()
	if b.cluster != nil && (old == nil || old.Cluster.NumReplicaFetchers != c.Cluster.NumReplicaFetchers) {
		b.cluster.fetchers.resize(c.Cluster.NumReplicaFetchers)
	}
}
