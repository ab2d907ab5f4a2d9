package controller

import (
	"maps"
	"slices"

	"github.com/gregor-broker/gregor/acl"
	"github.com/gregor-broker/gregor/delegation"
	"github.com/gregor-broker/gregor/quota"
	"github.com/gregor-broker/gregor/sasl"
)

// Endpoint is one listener a broker registered.
type Endpoint struct {
	Listener         string
	Host             string
	Port             int32
	SecurityProtocol int16
}

// Broker is a registered broker. Epoch is the raft index of the record that
// registered this incarnation.
type Broker struct {
	ID            int32
	Epoch         int64
	IncarnationID [16]byte
	Rack          string
	Endpoints     []Endpoint
	Fenced        bool
	ShuttingDown  bool
	// LogDirs are the log dirs the broker registered; OfflineLogDirs
	// those of them it reported failed since (KIP-858, dirs.go).
	LogDirs        [][16]byte `json:",omitempty"`
	OfflineLogDirs [][16]byte `json:",omitempty"`
	// CordonedLogDirs are the log dirs it reported cordoned (KIP-1066):
	// they take no new partition.
	CordonedLogDirs [][16]byte `json:",omitempty"`
}

// usable reports whether the broker may lead or join an ISR.
func (b *Broker) usable() bool { return b != nil && !b.Fenced && !b.ShuttingDown }

// hasUncordonedDirs reports whether some log dir of the broker is not
// cordoned: only then may new partitions be placed on it.
func (b *Broker) hasUncordonedDirs() bool {
	if len(b.LogDirs) == 0 {
		return len(b.CordonedLogDirs) == 0
	}
	return slices.ContainsFunc(b.LogDirs, func(d [16]byte) bool { return !slices.Contains(b.CordonedLogDirs, d) })
}

// Partition is one partition's assignment and leadership. ELR and
// LastKnownELR are KIP-966's eligible leader replicas and last known
// leader (elect.go).
type Partition struct {
	Replicas         []int32
	ISR              []int32
	Leader           int32
	LeaderEpoch      int32
	PartitionEpoch   int32
	AddingReplicas   []int32
	RemovingReplicas []int32
	ELR              []int32 `json:",omitempty"`
	LastKnownELR     []int32 `json:",omitempty"`
	// Directories is the log dir holding each replica, by broker, as the
	// brokers assigned them (AssignReplicasToDirs, dirs.go); a replica
	// not in it is unassigned.
	Directories map[int32][16]byte `json:",omitempty"`
}

// clone returns a deep copy, so a change never touches a published image.
func (p Partition) clone() Partition {
	p.Replicas = slices.Clone(p.Replicas)
	p.ISR = slices.Clone(p.ISR)
	p.AddingReplicas = slices.Clone(p.AddingReplicas)
	p.RemovingReplicas = slices.Clone(p.RemovingReplicas)
	p.ELR = slices.Clone(p.ELR)
	p.LastKnownELR = slices.Clone(p.LastKnownELR)
	p.Directories = maps.Clone(p.Directories)
	return p
}

// equal reports whether two partition states are the same.
func (p Partition) equal(q Partition) bool {
	return slices.Equal(p.Replicas, q.Replicas) && slices.Equal(p.ISR, q.ISR) &&
		p.Leader == q.Leader && p.LeaderEpoch == q.LeaderEpoch && p.PartitionEpoch == q.PartitionEpoch &&
		slices.Equal(p.AddingReplicas, q.AddingReplicas) && slices.Equal(p.RemovingReplicas, q.RemovingReplicas) &&
		slices.Equal(p.ELR, q.ELR) && slices.Equal(p.LastKnownELR, q.LastKnownELR) &&
		maps.Equal(p.Directories, q.Directories)
}

// Topic is a topic and its partitions, indexed by partition number.
type Topic struct {
	Name       string
	ID         [16]byte
	Partitions []Partition
}

// Config resource types, as in kmsg.ConfigResourceType.
const (
	ResourceTopic         int8 = 2
	ResourceBroker        int8 = 4
	ResourceClientMetrics int8 = 16
	ResourceGroup         int8 = 32
)

// ConfigResource names what a config override applies to: a topic by name,
// or a broker by id in decimal ("" is the cluster-wide broker default).
type ConfigResource struct {
	Type int8
	Name string
}

// Image is the cluster metadata after applying the raft log up to Offset.
// An Image is immutable once published: every apply builds a new one that
// shares unchanged brokers and topics with the previous one. Readers must
// not modify anything reachable from it.
type Image struct {
	ClusterID      string
	Offset         uint64
	Brokers        map[int32]*Broker
	Topics         map[string]*Topic
	TopicsByID     map[[16]byte]*Topic
	Configs        map[ConfigResource]map[string]string
	NextProducerID int64
	ClientQuotas   map[string]quota.Entry // by quota.Entity.Key
	// ScramCredentials are by sasl.CredentialKey; the map is replaced,
	// never changed in place, so readers of an image need no lock.
	ScramCredentials map[string]sasl.Credential
	// ACLs are by acl.Binding.Key, replaced like ScramCredentials.
	ACLs map[string]acl.Binding
	// Features are the feature levels an operator set (UpdateFeatures),
	// replaced whole; package features gives the others' defaults.
	Features map[string]int16 `json:",omitempty"`
	// DelegationTokens are by token id, replaced like ScramCredentials.
	DelegationTokens map[string]delegation.Token `json:",omitempty"`
	// Controllers are the registered controllers, replaced like
	// ScramCredentials.
	Controllers map[int32]*RegisteredController `json:",omitempty"`
	// AdoptedSingleNode is the node whose single node's metadata the
	// quorum started from, if any.
	AdoptedSingleNode *int32 `json:",omitempty"`
}

func emptyImage() *Image {
	return &Image{
		Brokers:      map[int32]*Broker{},
		Topics:       map[string]*Topic{},
		TopicsByID:   map[[16]byte]*Topic{},
		Configs:      map[ConfigResource]map[string]string{},
		ClientQuotas: map[string]quota.Entry{},
	}
}

// shallowCopy copies the maps (not their values), for copy-on-write.
func (img *Image) shallowCopy() *Image {
	n := *img
	n.Brokers = make(map[int32]*Broker, len(img.Brokers))
	for k, v := range img.Brokers {
		n.Brokers[k] = v
	}
	n.Topics = make(map[string]*Topic, len(img.Topics))
	n.TopicsByID = make(map[[16]byte]*Topic, len(img.TopicsByID))
	for k, v := range img.Topics {
		n.Topics[k] = v
		n.TopicsByID[v.ID] = v
	}
	n.Configs = make(map[ConfigResource]map[string]string, len(img.Configs))
	for k, v := range img.Configs {
		n.Configs[k] = v
	}
	n.ClientQuotas = maps.Clone(img.ClientQuotas)
	if n.ClientQuotas == nil {
		n.ClientQuotas = map[string]quota.Entry{}
	}
	return &n
}

// SortedBrokerIDs returns the registered broker ids in ascending order.
func (img *Image) SortedBrokerIDs() []int32 {
	ids := make([]int32, 0, len(img.Brokers))
	for id := range img.Brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// SortedTopicNames returns the topic names in ascending order.
func (img *Image) SortedTopicNames() []string {
	names := make([]string, 0, len(img.Topics))
	for n := range img.Topics {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// usable reports whether broker id is registered, unfenced and not shutting down.
func (img *Image) usable(id int32) bool { return img.Brokers[id].usable() }

// DeletedTopics are the topics of img gone in next (or replaced by a
// topic of the same name with another id), by name with their ids.
func (img *Image) DeletedTopics(next *Image) map[string][16]byte {
	out := map[string][16]byte{}
	for name, t := range img.Topics {
		if n := next.Topics[name]; n == nil || n.ID != t.ID {
			out[name] = t.ID
		}
	}
	return out
}

// TopicConfig returns the value of a topic-level override, if any.
func (img *Image) TopicConfig(topic, key string) (string, bool) {
	v, ok := img.Configs[ConfigResource{ResourceTopic, topic}][key]
	return v, ok
}

// ClusterConfig returns the cluster-wide dynamic broker default, if any.
func (img *Image) ClusterConfig(key string) (string, bool) {
	v, ok := img.Configs[ConfigResource{ResourceBroker, ""}][key]
	return v, ok
}

// LeadsAny reports whether broker id leads any partition.
func (img *Image) LeadsAny(id int32) bool {
	for _, t := range img.Topics {
		for _, p := range t.Partitions {
			if p.Leader == id {
				return true
			}
		}
	}
	return false
}
