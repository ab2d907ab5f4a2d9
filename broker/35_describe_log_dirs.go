package broker

// DescribeLogDirs, versions 1-4: the one log dir this node uses, by its
// absolute path, with the size of each partition's segments, an offset lag
// of 0 and isFuture false (no partition is being moved between dirs), and
// from v4 the file system's total and usable bytes. A null topic list
// means every partition; otherwise only the listed partitions that exist.

import (
	"path/filepath"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeLogDirs(b *Broker, c *conn, req *kmsg.DescribeLogDirsRequest) (*kmsg.DescribeLogDirsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	path, err := filepath.Abs(b.dir.Path())
	if err != nil {
		path = b.dir.Path()
	}
	dir := kmsg.DescribeLogDirsResponseDir{Dir: path, TotalBytes: -1, UsableBytes: -1}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(path, &fs); err == nil {
		dir.TotalBytes = int64(fs.Blocks) * int64(fs.Bsize)
		dir.UsableBytes = int64(fs.Bavail) * int64(fs.Bsize)
	}
	for _, t := range b.topics.all() {
		want, all := requestedPartitions(req, t.name)
		if !all && len(want) == 0 {
			continue
		}
		rt := kmsg.DescribeLogDirsResponseDirTopic{Topic: t.name}
		for _, p := range t.partitions() {
			if p != nil && (all || want[p.index]) {
				rt.Partitions = append(rt.Partitions, kmsg.DescribeLogDirsResponseDirTopicPartition{Partition: p.index, Size: p.log.Size()})
			}
		}
		if len(rt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, rt)
		}
	}
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{dir}
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
