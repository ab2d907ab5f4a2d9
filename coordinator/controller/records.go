package controller

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/gregor-broker/gregor/acl"
	"github.com/gregor-broker/gregor/delegation"
	"github.com/gregor-broker/gregor/quota"
	"github.com/gregor-broker/gregor/sasl"
)

// Record is one metadata change; exactly one field is set. A raft log entry
// holds a batch of records applied atomically (encodeBatch). Records carry
// results, not intents: the active controller decides (placement, elections,
// epochs) and the FSM only installs what a record says, so every replica
// computes the same image.
type Record struct {
	ClusterID      *string         `json:",omitempty"`
	RegisterBroker *RegisterBroker `json:",omitempty"`
	BrokerState    *BrokerState    `json:",omitempty"`
	// BrokerOfflineDirs replaces a broker's offline log dirs (KIP-858).
	BrokerOfflineDirs *BrokerDirs `json:",omitempty"`
	// BrokerCordonedDirs replaces a broker's cordoned log dirs (KIP-1066).
	BrokerCordonedDirs *BrokerDirs `json:",omitempty"`
	// UnregisterBroker removes a broker's registration (its id).
	UnregisterBroker *int32                 `json:",omitempty"`
	Topic            *Topic                 `json:",omitempty"`
	RemoveTopic      *[16]byte              `json:",omitempty"`
	Partition        *PartitionRecord       `json:",omitempty"`
	Config           *ConfigRecord          `json:",omitempty"`
	NextProducerID   *int64                 `json:",omitempty"`
	ClientQuota      *quota.Entry           `json:",omitempty"`
	ScramCredential  *sasl.CredentialChange `json:",omitempty"`
	ACL              *acl.Change            `json:",omitempty"`
	// Features replaces the stored feature levels (Image.Features).
	Features *map[string]int16 `json:",omitempty"`
	// DelegationToken sets or removes one delegation token.
	DelegationToken *delegation.Change `json:",omitempty"`
	// Controller replaces a controller's registration (voters.go).
	Controller *RegisteredController `json:",omitempty"`
	// UnregisterController removes a controller's registration (its id).
	UnregisterController *int32 `json:",omitempty"`
	// AdoptedSingleNode names the node whose single node's metadata the
	// quorum's first batch carried (Config.Adopted).
	AdoptedSingleNode *int32 `json:",omitempty"`
}

// RegisterBroker installs a broker incarnation; its epoch becomes the raft
// index of the entry and it starts fenced.
type RegisterBroker struct {
	ID            int32
	IncarnationID [16]byte
	Rack          string
	Endpoints     []Endpoint
	LogDirs       [][16]byte `json:",omitempty"`
}

// BrokerDirs are log dirs a registered broker reported failed, or
// cordoned.
type BrokerDirs struct {
	ID   int32
	Dirs [][16]byte
}

// BrokerState sets a registered broker's fenced and shutting-down flags.
type BrokerState struct {
	ID           int32
	Fenced       bool
	ShuttingDown bool
}

// PartitionRecord replaces partition Index of a topic, or appends it when
// Index equals the current partition count.
type PartitionRecord struct {
	TopicID   [16]byte
	Index     int32
	Partition Partition
}

// A ClientQuota record (quota.Entry) replaces the client quotas of one
// entity; empty Values removes it. A ScramCredential record
// (sasl.CredentialChange) sets or removes one user's credential for one
// SCRAM mechanism. An ACL record (acl.Change) adds or removes one ACL.

// ConfigRecord replaces the overrides of one resource; empty Values removes it.
type ConfigRecord struct {
	Resource ConfigResource
	Values   map[string]string
}

func encodeBatch(recs []Record) ([]byte, error) { return json.Marshal(recs) }

func decodeBatch(b []byte) ([]Record, error) {
	var recs []Record
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, fmt.Errorf("decoding metadata batch: %w", err)
	}
	return recs, nil
}

// apply returns the image that results from applying a batch at raft index
// index. The receiver is not modified.
func (img *Image) apply(index uint64, recs []Record) *Image {
	n := img.shallowCopy()
	n.Offset = index
	fresh := map[[16]byte]bool{} // topics copied in this batch, safe to change in place
	for _, r := range recs {
		n.applyOne(index, r, fresh)
	}
	return n
}

func (n *Image) applyOne(index uint64, r Record, fresh map[[16]byte]bool) {
	switch {
	case r.ClusterID != nil:
		n.ClusterID = *r.ClusterID
	case r.RegisterBroker != nil:
		rb := r.RegisterBroker
		n.Brokers[rb.ID] = &Broker{ID: rb.ID, Epoch: int64(index), IncarnationID: rb.IncarnationID,
			Rack: rb.Rack, Endpoints: rb.Endpoints, Fenced: true, LogDirs: rb.LogDirs}
	case r.BrokerOfflineDirs != nil:
		if old := n.Brokers[r.BrokerOfflineDirs.ID]; old != nil {
			b := *old
			b.OfflineLogDirs = r.BrokerOfflineDirs.Dirs
			n.Brokers[b.ID] = &b
		}
	case r.BrokerCordonedDirs != nil:
		if old := n.Brokers[r.BrokerCordonedDirs.ID]; old != nil {
			b := *old
			b.CordonedLogDirs = r.BrokerCordonedDirs.Dirs
			n.Brokers[b.ID] = &b
		}
	case r.BrokerState != nil:
		if old := n.Brokers[r.BrokerState.ID]; old != nil {
			b := *old
			b.Fenced, b.ShuttingDown = r.BrokerState.Fenced, r.BrokerState.ShuttingDown
			n.Brokers[b.ID] = &b
		}
	case r.UnregisterBroker != nil:
		delete(n.Brokers, *r.UnregisterBroker)
	case r.Topic != nil:
		t := *r.Topic
		n.Topics[t.Name] = &t
		n.TopicsByID[t.ID] = &t
		fresh[t.ID] = true
	case r.RemoveTopic != nil:
		if t := n.TopicsByID[*r.RemoveTopic]; t != nil {
			delete(n.TopicsByID, t.ID)
			delete(n.Topics, t.Name)
			delete(n.Configs, ConfigResource{ResourceTopic, t.Name})
		}
	case r.Partition != nil:
		old := n.TopicsByID[r.Partition.TopicID]
		if old == nil || r.Partition.Index < 0 || int(r.Partition.Index) > len(old.Partitions) {
			return
		}
		t := old
		if !fresh[old.ID] {
			copied := *old
			copied.Partitions = slices.Clone(old.Partitions)
			t = &copied
			n.Topics[t.Name] = t
			n.TopicsByID[t.ID] = t
			fresh[t.ID] = true
		}
		if int(r.Partition.Index) == len(t.Partitions) {
			t.Partitions = append(t.Partitions, r.Partition.Partition)
		} else {
			t.Partitions[r.Partition.Index] = r.Partition.Partition
		}
	case r.Config != nil:
		if len(r.Config.Values) == 0 {
			delete(n.Configs, r.Config.Resource)
		} else {
			n.Configs[r.Config.Resource] = r.Config.Values
		}
	case r.NextProducerID != nil:
		n.NextProducerID = *r.NextProducerID
	case r.ClientQuota != nil:
		if len(r.ClientQuota.Values) == 0 {
			delete(n.ClientQuotas, r.ClientQuota.Entity.Key())
		} else {
			n.ClientQuotas[r.ClientQuota.Entity.Key()] = *r.ClientQuota
		}
	case r.ScramCredential != nil:
		n.ScramCredentials = maps.Clone(n.ScramCredentials)
		if n.ScramCredentials == nil {
			n.ScramCredentials = map[string]sasl.Credential{}
		}
		r.ScramCredential.Apply(n.ScramCredentials)
	case r.ACL != nil:
		n.ACLs = maps.Clone(n.ACLs)
		if n.ACLs == nil {
			n.ACLs = map[string]acl.Binding{}
		}
		r.ACL.Apply(n.ACLs)
	case r.Features != nil:
		n.Features = *r.Features
	case r.DelegationToken != nil:
		n.DelegationTokens = delegation.Applied(n.DelegationTokens, *r.DelegationToken)
	case r.Controller != nil:
		n.Controllers = maps.Clone(n.Controllers)
		if n.Controllers == nil {
			n.Controllers = map[int32]*RegisteredController{}
		}
		rc := *r.Controller
		n.Controllers[rc.ID] = &rc
	case r.UnregisterController != nil:
		n.Controllers = maps.Clone(n.Controllers)
		delete(n.Controllers, *r.UnregisterController)
	case r.AdoptedSingleNode != nil:
		id := *r.AdoptedSingleNode
		n.AdoptedSingleNode = &id
	}
}
