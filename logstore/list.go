package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// PartitionOnDisk is what a partition directory says of itself without
// its log being opened: its topic id and the last leader epoch its
// batches were written in (-1 when none).
type PartitionOnDisk struct {
	TopicID     [16]byte
	LeaderEpoch int32
	Dir         string // the log dir holding it
}

// ListPartitions reads the partition directories of the log dirs, for a
// caller that must know which partitions exist before it opens them. A
// dir that does not exist holds none; a partition in two dirs is an error.
func ListPartitions(dirs []string) (map[TopicPartition]PartitionOnDisk, error) {
	out := map[TopicPartition]PartitionOnDisk{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			tp, ok := parsePartitionDirName(e.Name())
			if !ok || !e.IsDir() || e.Name() == kraftMetadataDir {
				continue
			}
			path := filepath.Join(dir, e.Name())
			id, err := readPartitionMetadata(path)
			if err != nil {
				return nil, err
			}
			epochs, err := loadEpochCache(path)
			if err != nil {
				return nil, err
			}
			if other, dup := out[tp]; dup {
				return nil, fmt.Errorf("partition %s is in both %s and %s", tp, other.Dir, dir)
			}
			out[tp] = PartitionOnDisk{TopicID: id, LeaderEpoch: epochs.latest(), Dir: dir}
		}
	}
	return out, nil
}
