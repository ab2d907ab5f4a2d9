package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/gregor-broker/gregor/acl"
	"github.com/gregor-broker/gregor/delegation"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/quota"
	"github.com/gregor-broker/gregor/sasl"
)

// metaStore keeps what a single node must remember beside the partition
// logs: topic config overrides, dynamic broker configs, client quotas and
// the producer-id block. The logs
// themselves say which topics and partitions exist (their directories) and
// their topic ids (partition.metadata). The file is rewritten whole,
// atomically (temp file, fsync, rename, fsync of the directory), on every
// change; changes are rare admin operations.
//
// File: <log dir>/gregor-metadata.json
type metaStore struct {
	path string
	mu   sync.Mutex
	data metaData
	// fresh: the file did not exist, this is the node's first start.
	fresh bool
	// failed takes the file's log dir offline after a write the operating
	// system refused: the broker halts then, as Kafka does when its
	// metadata log cannot be written (log_dir_failure.go).
	failed func(error)
}

type metaData struct {
	TopicConfigs map[string]map[string]string `json:"topic_configs"`
	// GroupConfigs are the groups' dynamic configs (group_configs.go).
	GroupConfigs map[string]map[string]string `json:"group_configs,omitempty"`
	// ClientMetricsConfigs are the client metrics subscriptions
	// (client_metrics_configs.go).
	ClientMetricsConfigs map[string]map[string]string `json:"client_metrics_configs,omitempty"`
	// BrokerConfigs are this node's dynamic broker configs and
	// ClusterBrokerConfigs the cluster-wide defaults (resource name ""),
	// both set by AlterConfigs / IncrementalAlterConfigs; they win over
	// the static server.properties values, this node's first.
	BrokerConfigs        map[string]string `json:"broker_configs,omitempty"`
	ClusterBrokerConfigs map[string]string `json:"cluster_broker_configs,omitempty"`
	// NextProducerID is the first producer id not yet handed out in any
	// block; a restart continues from here, so ids are never reused.
	NextProducerID int64 `json:"next_producer_id"`
	// ClientQuotas are the client quotas, keyed by quota.Entity.Key.
	ClientQuotas map[string]quota.Entry `json:"client_quotas,omitempty"`
	// ScramCredentials are the users' SCRAM credentials (salt, stored
	// and server keys: no passwords), keyed by sasl.CredentialKey.
	ScramCredentials map[string]sasl.Credential `json:"scram_credentials,omitempty"`
	// ACLs are the access control lists, keyed by acl.Binding.Key.
	ACLs map[string]acl.Binding `json:"acls,omitempty"`
	// Features are the feature levels set with UpdateFeatures (package
	// features has the others' defaults); FeaturesEpoch counts the
	// updates, ApiVersions' finalized features epoch.
	Features      map[string]int16 `json:"features,omitempty"`
	FeaturesEpoch int64            `json:"features_epoch,omitempty"`
	// DelegationTokens are the delegation tokens by id (HMACs and the
	// SCRAM credentials derived from them).
	DelegationTokens map[string]delegation.Token `json:"delegation_tokens,omitempty"`
	// QuorumEpoch and MetadataOffset are what DescribeQuorum reports of a
	// single node (55_describe_quorum.go): the starts of the node, each
	// the election of a quorum of one, and the changes it has committed
	// to its metadata (every write of this file, and every topic or
	// partition created).
	QuorumEpoch    int32 `json:"quorum_epoch,omitempty"`
	MetadataOffset int64 `json:"metadata_offset,omitempty"`
}

const metaFileName = "gregor-metadata.json"

func openMetaStore(dir string) (*metaStore, error) {
	m := &metaStore{path: filepath.Join(dir, metaFileName)}
	raw, err := os.ReadFile(m.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		m.fresh = true
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(raw, &m.data); err != nil {
			return nil, fmt.Errorf("%s is corrupt: %w", m.path, err)
		}
	}
	if m.data.TopicConfigs == nil {
		m.data.TopicConfigs = map[string]map[string]string{}
	}
	return m, nil
}

// update applies fn to the data and persists the result, one more change
// of the metadata (MetadataOffset); on a write error the in-memory data is
// left changed only if the file was written.
func (m *metaStore) update(fn func(d *metaData)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := m.data
	next.TopicConfigs = make(map[string]map[string]string, len(m.data.TopicConfigs))
	for k, v := range m.data.TopicConfigs {
		next.TopicConfigs[k] = v
	}
	fn(&next)
	next.MetadataOffset++
	raw, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return err
	}
	if err := logstore.WriteFileAtomic(m.path, raw); err != nil {
		if m.failed != nil {
			m.failed(err)
		}
		return err
	}
	m.data = next
	return nil
}

func (m *metaStore) topicConfigs(topic string) map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data.TopicConfigs[topic]
}

// namedConfigs returns the configs of one resource of the map field
// picks (GroupConfigs, ClientMetricsConfigs); the map is never changed in
// place (storeNamedConfigs replaces it).
func (m *metaStore) namedConfigs(field namedConfigsField, name string) map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return (*field(&m.data))[name]
}

// configNames lists the resources of the map field picks.
func (m *metaStore) configNames(field namedConfigsField) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(*field(&m.data)))
}

// namedConfigsField picks one map of named resources' configs from the
// metadata (GroupConfigs, ClientMetricsConfigs).
type namedConfigsField func(*metaData) *map[string]map[string]string

func groupConfigsField(d *metaData) *map[string]map[string]string { return &d.GroupConfigs }

// clientQuotas returns the client quotas; the map is never changed in
// place (update replaces it).
func (m *metaStore) clientQuotas() map[string]quota.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data.ClientQuotas
}

// delegationTokens returns the delegation tokens; the map is never
// changed in place.
func (m *metaStore) delegationTokens() map[string]delegation.Token {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data.DelegationTokens
}

// scramCredentials returns the SCRAM credentials; the map is never
// changed in place (update replaces it).
func (m *metaStore) scramCredentials() map[string]sasl.Credential {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data.ScramCredentials
}

// features returns the stored feature levels and their epoch; the map is
// never changed in place.
func (m *metaStore) features() (map[string]int16, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data.Features, m.data.FeaturesEpoch
}

// acls returns the ACLs; the map is never changed in place.
func (m *metaStore) acls() map[string]acl.Binding {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data.ACLs
}

// brokerConfigs returns this node's and the cluster-wide dynamic broker
// configs. The maps are never changed in place (update replaces them), so
// callers may read them without the lock.
func (m *metaStore) brokerConfigs() (perBroker, cluster map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data.BrokerConfigs, m.data.ClusterBrokerConfigs
}

// quorum is the single node's leader epoch and metadata offset.
func (m *metaStore) quorum() (epoch int32, offset int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data.QuorumEpoch, m.data.MetadataOffset
}

// elected records a start of a single node: a new leader epoch. The
// first start also stores what kafka-storage format set up.
func (m *metaStore) elected(boot bootstrap) error {
	return m.update(func(d *metaData) {
		d.QuorumEpoch++
		if m.fresh {
			boot.applyTo(d)
		}
	})
}

// committed records a metadata change kept elsewhere (a topic's or a
// partition's log), which moves MetadataOffset.
func (m *metaStore) committed() error {
	return m.update(func(*metaData) {})
}
