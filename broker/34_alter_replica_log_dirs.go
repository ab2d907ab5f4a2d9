package broker

// AlterReplicaLogDirs, versions 1-2: moves this broker's replicas of the
// listed partitions to the listed log dirs (absolute paths, as
// DescribeLogDirs names them), as Kafka's ReplicaManager does. A move runs
// in the background while the partition keeps serving; DescribeLogDirs
// shows the copy as a future replica until it takes over (logstore's
// move.go). Errors as Kafka's: LOG_DIR_NOT_FOUND for a path that is not a
// log dir, KAFKA_STORAGE_ERROR for an offline one or, for a move that
// would start, while any dir is offline, INVALID_REPLICA_ASSIGNMENT for a cordoned one
// (cordoned_log_dirs.go), REPLICA_NOT_AVAILABLE for a partition without a replica here
// and UNKNOWN_TOPIC_OR_PARTITION for one that does not exist (either will
// be created in that dir), INVALID_TOPIC_EXCEPTION for a topic
// too long to name the copy, CLUSTER_AUTHORIZATION_FAILED without ALTER on
// the cluster.

import (
	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleAlterReplicaLogDirs(b *Broker, c *conn, req *kmsg.AlterReplicaLogDirsRequest) (*kmsg.AlterReplicaLogDirsResponse, error) {
	// A partition listed under two dirs goes to the last, as in Kafka.
	dirOf := map[logstore.TopicPartition]string{}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				dirOf[logstore.TopicPartition{Topic: t.Topic, Partition: p}] = d.Dir
			}
		}
	}
	return alterReplicaLogDirsAnswer(req, func(tp logstore.TopicPartition) int16 {
		err := b.dirs.MoveLog(tp, dirOf[tp])
		code := logstore.ErrorCode(err)
		if code == kerr.ReplicaNotAvailable.Code && !b.partitionExists(tp.Topic, tp.Partition) {
			code = errUnknownTopicOrPartition // where it will be created is recorded all the same
		}
		if code != 0 {
			b.logger.Warn("unable to alter log dirs", "topic", tp.Topic, "partition", tp.Partition, "dir", dirOf[tp], "err", err)
			return code
		}
		return 0
	}), nil
}

// alterReplicaLogDirsAnswer answers every partition of req once, by topic,
// with the code that codeOf gives it.
func alterReplicaLogDirsAnswer(req *kmsg.AlterReplicaLogDirsRequest, codeOf func(logstore.TopicPartition) int16) *kmsg.AlterReplicaLogDirsResponse {
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	topicAt := map[string]int{}
	answered := map[logstore.TopicPartition]bool{}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				tp := logstore.TopicPartition{Topic: t.Topic, Partition: p}
				if answered[tp] {
					continue
				}
				answered[tp] = true
				i, ok := topicAt[t.Topic]
				if !ok {
					i = len(resp.Topics)
					topicAt[t.Topic] = i
					resp.Topics = append(resp.Topics, kmsg.AlterReplicaLogDirsResponseTopic{Topic: t.Topic})
				}
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions,
					kmsg.AlterReplicaLogDirsResponseTopicPartition{Partition: p, ErrorCode: codeOf(tp)})
			}
		}
	}
	return resp
}
