// Package keyhash places a coordinator's key (a group id, a transactional
// id, a share-partition's "group:topicId:partition") in a partition of the
// coordinator's internal topic exactly as Kafka does, so that a key has the
// same coordinator whichever broker computes it; and a followed partition
// on one of a follower's replica fetchers, as Kafka's fetcher manager does.
package keyhash

import (
	"fmt"
	"unicode/utf16"
)

// Partition is Kafka's Utils.abs(key.hashCode()) % partitions.
func Partition(key string, partitions int32) int32 {
	return abs(stringHash(key)) % partitions
}

// Fetcher is Kafka's AbstractFetcherManager.getFetcherId: which of
// fetchers fetchers copies a topic's partition,
// Utils.abs(31 * topic.hashCode() + partition) % fetchers.
func Fetcher(topic string, partition, fetchers int32) int32 {
	return abs(31*stringHash(topic)+partition) % fetchers
}

// stringHash is Java's String.hashCode: over UTF-16 code units, in
// wrapping int32 arithmetic.
func stringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// abs is Kafka's Utils.abs, which takes Integer.MIN_VALUE to 0.
func abs(h int32) int32 {
	switch {
	case h == -1<<31:
		return 0
	case h < 0:
		return -h
	}
	return h
}

// Resize is a coordinator's SetPartitionCount: n partitions of state (the
// zero value: never loaded) in place of parts, none of which may be loaded,
// since keys move when the count changes.
func Resize[T any](topic string, parts []T, n int32, loaded func(T) bool) ([]T, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%s: partition count %d", topic, n)
	}
	for i, p := range parts {
		if loaded(p) {
			return nil, fmt.Errorf("%s-%d is loaded", topic, i)
		}
	}
	return make([]T, n), nil
}
