// Package keyhash places a coordinator's key (a group id, a transactional
// id, a share-partition's "group:topicId:partition") in a partition of the
// coordinator's internal topic exactly as Kafka does, so that a key has the
// same coordinator whichever broker computes it.
package keyhash

import "unicode/utf16"

// Partition is Kafka's Utils.abs(key.hashCode()) % partitions: Java's
// String.hashCode over UTF-16 code units in wrapping int32 arithmetic,
// with Integer.MIN_VALUE taken to 0 by Utils.abs.
func Partition(key string, partitions int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(key)) {
		h = 31*h + int32(u)
	}
	switch {
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % partitions
}
