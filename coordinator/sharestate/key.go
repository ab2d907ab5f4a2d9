package sharestate

import (
	"encoding/base64"
	"strconv"

	"github.com/gregor-broker/gregor/internal/keyhash"
)

// spKey names a share-partition: a share group's view of one partition of
// a topic (Kafka's SharePartitionKey).
type spKey struct {
	group     string
	topicID   [16]byte
	partition int32
}

// Key is the share coordinator's key of a share-partition, the one
// FindCoordinator (key type 2) carries and __share_group_state partitions
// are chosen by: Kafka's SharePartitionKey.asCoordinatorKey,
// "group:topicId:partition", with the topic id printed as Kafka's
// Uuid.toString (URL-safe base64 of its 16 bytes, without padding).
func Key(group string, topicID [16]byte, partition int32) string {
	b := make([]byte, 0, len(group)+24+11)
	b = append(b, group...)
	b = append(b, ':')
	b = append(b, UUIDString(topicID)...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(partition), 10)
	return string(b)
}

// UUIDString is Kafka's Uuid.toString: URL-safe base64 without padding.
func UUIDString(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// PartitionFor is the __share_group_state partition of a share-partition:
// Kafka's ShareCoordinatorService.partitionFor,
// Utils.abs(key.asCoordinatorKey().hashCode()) % numPartitions, where
// Utils.abs maps Integer.MIN_VALUE to 0 and the hash is Java's
// String.hashCode over the key's UTF-16 code units.
func PartitionFor(group string, topicID [16]byte, partition int32, numPartitions int32) int32 {
	return keyhash.Partition(Key(group, topicID, partition), numPartitions)
}
