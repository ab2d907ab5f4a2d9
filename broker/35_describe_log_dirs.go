package broker

// DescribeLogDirs, versions 1-5: every log dir of this node (log.dirs), by
// its absolute path, with the partitions in it: each one's size, its
// offset lag (the high watermark less the log end offset, 0 for a leader)
// and, for a partition being moved in (AlterReplicaLogDirs), the copy as a
// future replica: the bytes copied so far and how many offsets it is
// behind. From v4 the file system's total and usable bytes, from v5
// whether the dir is cordoned (cordoned_log_dirs.go). An offline
// dir (log_dir_failure.go) comes with KAFKA_STORAGE_ERROR and nothing
// else, as in Kafka. A null topic
// list means every partition; otherwise only the listed partitions that
// exist.

import (
	"cmp"
	"maps"
	"slices"
	"syscall"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeLogDirs(b *Broker, c *conn, req *kmsg.DescribeLogDirsRequest) (*kmsg.DescribeLogDirsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	moves := b.dirs.Moves()
	for _, d := range b.dirs.All() {
		path := d.Path()
		dir := kmsg.DescribeLogDirsResponseDir{Dir: path, TotalBytes: -1, UsableBytes: -1}
		if d.Offline() != nil {
			dir.ErrorCode = errKafkaStorageError
			resp.Dirs = append(resp.Dirs, dir)
			continue
		}
		dir.IsCordoned = b.dirs.Cordoned(d)
		var fs syscall.Statfs_t
		if err := syscall.Statfs(path, &fs); err == nil {
			dir.TotalBytes = int64(fs.Blocks) * int64(fs.Bsize)
			dir.UsableBytes = int64(fs.Bavail) * int64(fs.Bsize)
		}
		byTopic := map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
		add := func(tp logstore.TopicPartition, p kmsg.DescribeLogDirsResponseDirTopicPartition) {
			if want, all := requestedPartitions(req, tp.Topic); all || want[tp.Partition] {
				p.Partition = tp.Partition
				byTopic[tp.Topic] = append(byTopic[tp.Topic], p)
			}
		}
		for tp, l := range d.Logs() {
			add(tp, kmsg.DescribeLogDirsResponseDirTopicPartition{Size: l.Size(), OffsetLag: max(l.HighWatermark()-l.LogEndOffset(), 0)})
		}
		for _, m := range moves {
			if l := b.dirs.Log(m.Partition); m.To == d && l != nil {
				add(m.Partition, kmsg.DescribeLogDirsResponseDirTopicPartition{Size: m.Size, OffsetLag: max(l.LogEndOffset()-m.End, 0), IsFuture: true})
			}
		}
		for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
			ps := byTopic[topic]
			slices.SortFunc(ps, func(x, y kmsg.DescribeLogDirsResponseDirTopicPartition) int {
				return cmp.Compare(x.Partition, y.Partition)
			})
			dir.Topics = append(dir.Topics, kmsg.DescribeLogDirsResponseDirTopic{Topic: topic, Partitions: ps})
		}
		resp.Dirs = append(resp.Dirs, dir)
	}
	return resp, nil
}

// requestedPartitions returns the partitions of topic the request asks
// for, or all when it asks for everything (a null topic list).
func requestedPartitions(req *kmsg.DescribeLogDirsRequest, topic string) (map[int32]bool, bool) {
	if req.Topics == nil {
		return nil, true
	}
	want := map[int32]bool{}
	for _, rt := range req.Topics {
		if rt.Topic == topic {
			for _, p := range rt.Partitions {
				want[p] = true
			}
		}
	}
	return want, false
}
