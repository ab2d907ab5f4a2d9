package broker

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/gregor-broker/gregor/acl"
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/delegation"
	"github.com/gregor-broker/gregor/internal/features"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/sasl"
)

// A single node grows into a cluster with one restart. It keeps its
// metadata in gregor-metadata.json and knows its partitions by their
// directories; a cluster node knows what the controller quorum's log says
// and deletes the partitions it does not name as strays. So a node started
// in a cluster on a single node's dirs first reads that metadata
// (readSingleNodeMetadata), and the quorum's first active controller, when it
// is this node (the only voter of a new quorum is), writes it into the
// quorum's first batch: every topic with its id and its partitions, this
// node their only replica, leader and ISR; the topic, broker, group and
// client metrics configs; client quotas, SCRAM credentials, ACLs,
// delegation tokens, feature levels and the next producer id; and a record
// naming this node as the one adopted. Once the node sees that record in
// the quorum's metadata the file is renamed gregor-metadata.json.adopted.
// A quorum another node started has not adopted it: the node refuses to
// start, its data untouched, rather than lose it. There is no way back: a
// single node refuses a cluster node's dirs (refuseClusterDir).

const adoptedSuffix = ".adopted"

// singleNodeMetadata is a single node's metadata as the quorum's records,
// and its feature levels; nil when the metadata dir holds none.
type singleNodeMetadata struct {
	records  []controller.Record
	features map[string]int16
}

// bootstrap is what the new quorum starts from besides the records: the
// formatted cluster id or, where metadata.log.dir is apart and unformatted,
// the log dirs' (which would be refused under another); and the formatted
// feature levels with the single node's over them.
func (s *singleNodeMetadata) bootstrap(cfg *Config, clusterID string, formatted map[string]int16) (string, map[string]int16) {
	if clusterID == "" {
		clusterID = logstore.FormattedClusterID(cfg.LogDirs[0])
	}
	if len(s.features) == 0 {
		return clusterID, formatted
	}
	levels := maps.Clone(formatted)
	if levels == nil {
		levels = map[string]int16{}
	}
	maps.Copy(levels, s.features)
	return clusterID, levels
}

// readSingleNodeMetadata reads gregor-metadata.json and the partition dirs
// of a node starting in a cluster.
func readSingleNodeMetadata(cfg *Config, dirPath string) (*singleNodeMetadata, error) {
	if _, err := os.Stat(filepath.Join(dirPath, metaFileName)); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	meta, err := openMetaStore(dirPath)
	if err != nil {
		return nil, err
	}
	// A single node counts its starts in the file; a cluster node of an
	// earlier version wrote one without them when it deleted a topic.
	if _, err := os.Stat(filepath.Join(dirPath, raftDirName)); err == nil && meta.data.QuorumEpoch == 0 {
		return nil, nil
	}
	if !cfg.hasRole("broker") {
		return nil, fmt.Errorf("%s holds a single node's metadata (%s): only a node with the broker role can bring it into a cluster",
			dirPath, metaFileName)
	}
	topics, err := singleNodeTopics(cfg)
	if err != nil {
		return nil, fmt.Errorf("reading the single node's partitions: %w", err)
	}
	d := meta.data
	recs := topics
	config := func(typ int8, name string, values map[string]string) {
		if len(values) > 0 {
			recs = append(recs, controller.Record{Config: &controller.ConfigRecord{
				Resource: controller.ConfigResource{Type: typ, Name: name}, Values: maps.Clone(values)}})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.TopicConfigs)) {
		config(controller.ResourceTopic, name, d.TopicConfigs[name])
	}
	for _, name := range slices.Sorted(maps.Keys(d.GroupConfigs)) {
		config(controller.ResourceGroup, name, d.GroupConfigs[name])
	}
	for _, name := range slices.Sorted(maps.Keys(d.ClientMetricsConfigs)) {
		config(controller.ResourceClientMetrics, name, d.ClientMetricsConfigs[name])
	}
	config(controller.ResourceBroker, strconv.Itoa(int(cfg.NodeID)), d.BrokerConfigs)
	config(controller.ResourceBroker, "", d.ClusterBrokerConfigs)
	next := d.NextProducerID
	recs = append(recs, controller.Record{NextProducerID: &next})
	for _, key := range slices.Sorted(maps.Keys(d.ClientQuotas)) {
		e := d.ClientQuotas[key]
		recs = append(recs, controller.Record{ClientQuota: &e})
	}
	for _, c := range sasl.Changes(d.ScramCredentials) {
		recs = append(recs, controller.Record{ScramCredential: &c})
	}
	for _, c := range acl.Changes(d.ACLs) {
		recs = append(recs, controller.Record{ACL: &c})
	}
	for _, tok := range delegation.Sorted(d.DelegationTokens) {
		recs = append(recs, controller.Record{DelegationToken: &delegation.Change{Set: &tok}})
	}
	self := cfg.NodeID
	recs = append(recs, controller.Record{AdoptedSingleNode: &self})
	levels := maps.Clone(d.Features)
	delete(levels, features.KRaftVersion) // the new quorum's kind decides it
	return &singleNodeMetadata{records: recs, features: levels}, nil
}

// singleNodeTopics is a Topic record for each topic in the log dirs, with
// its partitions led by this node at the last leader epoch its log holds.
func singleNodeTopics(cfg *Config) ([]controller.Record, error) {
	found, err := logstore.ListPartitions(cfg.LogDirs)
	if err != nil {
		return nil, err
	}
	dirIDs := map[string][16]byte{}
	topics := map[string]*controller.Topic{}
	for tp, p := range found {
		if p.TopicID == [16]byte{} {
			return nil, fmt.Errorf("partition %s has no topic id (partition.metadata)", tp)
		}
		t := topics[tp.Topic]
		if t == nil {
			t = &controller.Topic{Name: tp.Topic, ID: p.TopicID}
			topics[tp.Topic] = t
		}
		if t.ID != p.TopicID {
			return nil, fmt.Errorf("the partitions of topic %s have different topic ids", tp.Topic)
		}
		if _, ok := dirIDs[p.Dir]; !ok {
			if dirIDs[p.Dir], err = logstore.DirectoryID(p.Dir); err != nil {
				return nil, err
			}
		}
		for int(tp.Partition) >= len(t.Partitions) {
			t.Partitions = append(t.Partitions, controller.Partition{Leader: -1})
		}
		t.Partitions[tp.Partition] = controller.Partition{Replicas: []int32{cfg.NodeID}, ISR: []int32{cfg.NodeID},
			Leader: cfg.NodeID, LeaderEpoch: max(p.LeaderEpoch, 0), Directories: map[int32][16]byte{cfg.NodeID: dirIDs[p.Dir]}}
	}
	var recs []controller.Record
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		t := topics[name]
		for i, p := range t.Partitions {
			if p.Leader < 0 {
				return nil, fmt.Errorf("topic %s has no directory for its partition %d", name, i)
			}
		}
		recs = append(recs, controller.Record{Topic: t})
	}
	return recs, nil
}

// refuseClusterDir keeps a single node off a cluster node's dirs: their
// topics' configs and replicas' states are in the quorum's log, and a
// single node would serve every partition as its leader with the default
// configs (a compacted topic's records deleted by time).
func refuseClusterDir(dirPath string) error {
	if _, err := os.Stat(filepath.Join(dirPath, raftDirName)); err == nil {
		return fmt.Errorf("%s holds a cluster node's metadata (%s): start the node with its cluster's controller.quorum.voters "+
			"or controller.quorum.bootstrap.servers; a single node cannot take a cluster node's dirs", dirPath, raftDirName)
	}
	return nil
}

// checkAdopted makes sure the quorum started from this node's single node
// metadata before the node opens its log dirs, and then renames the file,
// whose content the quorum now holds.
func (cl *cluster) checkAdopted(dirPath string) error {
	img := cl.ctl.Image()
	if img.AdoptedSingleNode == nil || *img.AdoptedSingleNode != cl.b.cfg.NodeID {
		return fmt.Errorf("%s holds a single node's metadata (%s), which the controller quorum did not take: another node started the quorum. "+
			"Remove its %s dir and start it alone as the only voter of a new quorum (controller.quorum.voters naming only it), then add the others",
			dirPath, metaFileName, raftDirName)
	}
	path := filepath.Join(dirPath, metaFileName)
	if err := os.Rename(path, path+adoptedSuffix); err != nil {
		return err
	}
	cl.b.logger.Info("the controller quorum took this single node's metadata", "file", path+adoptedSuffix)
	return nil
}
