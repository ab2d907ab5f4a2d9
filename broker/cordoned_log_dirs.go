package broker

// Cordoned log dirs (KIP-1066, Kafka 4.3): cordoned.log.dirs names log
// dirs, or * for all, that take no new partition while those in them go
// on being served. It takes effect, and may be changed at runtime (per
// node or cluster-wide, like Kafka's DynamicLogConfig), from
// metadata.version 4.3-IV0; before, a change is refused with Kafka's
// message and a value from server.properties has no effect.
//
// A node places each new partition in the least-loaded dir not cordoned
// (logstore.Dirs.SetCordoned tells its dirs which are). A single node with every dir cordoned
// creates no topic or partition (INVALID_REPLICATION_FACTOR, Kafka's
// placer's message); in a cluster each broker reports its cordoned dirs
// in its heartbeats once it has caught up with the metadata, and the
// controller places no new replica on a broker whose dirs are all
// cordoned and refuses a manual assignment or a reassignment naming one
// (coordinator/controller/placement.go, reassign.go). AlterReplicaLogDirs
// will not move a replica into a cordoned dir; DescribeLogDirs v5 marks
// the cordoned dirs.

import (
	"path/filepath"
	"slices"

	"github.com/gregor-broker/gregor/internal/features"
)

const cordonedLogDirsKey = "cordoned.log.dirs"

// errAllDirsCordoned is the placer's refusal when no broker may take a
// new partition, as Kafka 4.3 words it.
const errAllDirsCordoned = "All brokers are currently fenced, or have all their log directories cordoned."

// cordonedLogDirsInEffect reports whether metadata.version lets
// cordoned.log.dirs take effect.
func (b *Broker) cordonedLogDirsInEffect() bool {
	stored, _ := b.featureLevels()
	return features.Level(stored, features.MetadataVersion) >= features.CordonedLogDirs
}

// cordonedDirs are the absolute paths of this node's cordoned log dirs,
// none before metadata.version 4.3-IV0. Entries are matched to the dirs
// by absolute path, so a relative log.dirs entry cordons its dir too.
func (b *Broker) cordonedDirs() []string {
	if !b.cordonedLogDirsInEffect() {
		return nil
	}
	cfg := b.liveConfig()
	if cfg == nil { // still starting
		cfg = &b.cfg
	}
	list := cfg.CordonedLogDirs
	if slices.Contains(list, "*") {
		list = cfg.LogDirs
	}
	out := make([]string, 0, len(list))
	for _, d := range list {
		if abs, err := filepath.Abs(d); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// checkCordonedLogDirs refuses a change of cordoned.log.dirs before
// metadata.version 4.3-IV0, as Kafka's controller does.
func (b *Broker) checkCordonedLogDirs(cur, next map[string]string) *configError {
	was, had := cur[cordonedLogDirsKey]
	v, has := next[cordonedLogDirsKey]
	if had == has && was == v || b.cordonedLogDirsInEffect() {
		return nil
	}
	return configErr(errInvalidConfig, "The cordoned.log.dirs configuration value cannot be set because it requires metadata.version >= 4.3-IV0")
}
