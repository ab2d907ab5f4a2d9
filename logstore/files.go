package logstore

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File names, made and parsed only here.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	snapshotSuffix  = ".snapshot"
	tmpSuffix       = ".tmp"
	// kraftMetadataDir is Kafka's metadata log, which kafka-storage
	// format writes into the first log dir; it is not a partition of a
	// topic, and Gregor leaves it alone.
	kraftMetadataDir   = "__cluster_metadata-0"
	deleteDirSuffix    = "-delete"
	futureDirSuffix    = "-future"
	leaderEpochFile    = "leader-epoch-checkpoint"
	partitionMetaFile  = "partition.metadata"
	metaPropertiesFile = "meta.properties"
	cleanShutdownFile  = ".kafka_cleanshutdown"
	lockFile           = ".lock"
	recoveryPointFile  = "recovery-point-offset-checkpoint"
	logStartFile       = "log-start-offset-checkpoint"
	replicationFile    = "replication-offset-checkpoint"
	cleanerFile        = "cleaner-offset-checkpoint"

	// Extra suffixes of segment files being swapped or deleted (Kafka's
	// CleanedFileSuffix, SwapFileSuffix, DeletedFileSuffix).
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
	deletedSuffix = ".deleted"
)

// offsetName is the 20-digit, zero-padded file name prefix for an offset.
func offsetName(off int64) string { return fmt.Sprintf("%020d", off) }

func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, offsetName(base)+suffix)
}

// parseOffsetName returns the offset in a name like 00000000000000000042.log
// when it ends in suffix.
func parseOffsetName(name, suffix string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, suffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || off < 0 {
		return 0, false
	}
	return off, true
}

// parseOffsetPrefix returns the offset naming a file like
// 00000000000000000042.log.swap: 20 digits and a dot.
func parseOffsetPrefix(name string) (int64, bool) {
	if len(name) < 21 || name[20] != '.' {
		return 0, false
	}
	return parseOffsetName(name[:20], "")
}

// partitionDirName is <topic>-<partition>.
func partitionDirName(tp TopicPartition) string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// parsePartitionDirName undoes partitionDirName. Names of directories being
// deleted (…-delete) or filled by a move (…-future) and anything else not
// shaped like <topic>-<n> do not parse.
func parsePartitionDirName(name string) (TopicPartition, bool) {
	if strings.HasSuffix(name, deleteDirSuffix) || strings.HasSuffix(name, futureDirSuffix) {
		return TopicPartition{}, false
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// deleteDirName is Kafka's name for a partition dir awaiting deletion:
// <topic>-<partition>.<uuid hex>-delete, the topic cut to keep it in 255 bytes.
func deleteDirName(tp TopicPartition) string { return markedDirName(tp, deleteDirSuffix) }

// futureDirName is Kafka's name for the copy of a partition being moved
// to another log dir: <topic>-<partition>.<uuid hex>-future.
func futureDirName(tp TopicPartition) string { return markedDirName(tp, futureDirSuffix) }

func markedDirName(tp TopicPartition, mark string) string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	suffix := "-" + strconv.FormatInt(int64(tp.Partition), 10) + "." + hex.EncodeToString(u[:]) + mark
	topic := tp.Topic
	if len(topic) > 255-len(suffix) {
		topic = topic[:255-len(suffix)]
	}
	return topic + suffix
}

// parseFutureDirName returns the partition of a …-future dir name; a
// topic cut to fit the name does not parse.
func parseFutureDirName(name string) (TopicPartition, bool) {
	rest, ok := strings.CutSuffix(name, futureDirSuffix)
	i := strings.LastIndexByte(rest, '.')
	if !ok || i < 0 || len(rest)-i-1 != 32 {
		return TopicPartition{}, false
	}
	return parsePartitionDirName(rest[:i])
}

// UUIDString formats a Kafka Uuid the way Kafka does in text: URL-safe
// base64 without padding.
func UUIDString(u [16]byte) string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// ParseUUID parses UUIDString's format.
func ParseUUID(s string) ([16]byte, error) {
	var u [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("invalid uuid %q", s)
	}
	copy(u[:], b)
	return u, nil
}

// RandomUUID returns a random Uuid that, like Kafka's Uuid.randomUuid, is
// neither all zeros nor formats with a leading '-'.
func RandomUUID() [16]byte {
	for {
		var u [16]byte
		_, _ = rand.Read(u[:])
		if u != ([16]byte{}) && UUIDString(u)[0] != '-' {
			return u
		}
	}
}

// WriteFileAtomic replaces path with data: write path.tmp, fsync it, rename
// it over path, fsync the directory.
func WriteFileAtomic(path string, data []byte) error {
	if err := replaceFile(path, data); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// replaceFile is WriteFileAtomic without the directory fsync, for a caller
// that writes several files into one directory and fsyncs it once.
func replaceFile(path string, data []byte) error {
	tmp := path + tmpSuffix
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// syncDir fsyncs a directory so that renames and creations in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
