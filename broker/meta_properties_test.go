package broker

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/logstore"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var directoryIDProperty = regexp.MustCompile(`(?m)^directory\.id=(\S+)$`)

// writeOldMetaProperties writes the meta.properties Kafka before 3.7
// formatted: version 1, without a directory.id.
func writeOldMetaProperties(t *testing.T, dir, clusterID string, nodeID int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := fmt.Sprintf("#\n#Mon Jan 01 00:00:00 UTC 2024\nnode.id=%d\nversion=1\ncluster.id=%s\n", nodeID, clusterID)
	if err := os.WriteFile(filepath.Join(dir, "meta.properties"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// storedDirectoryID is the directory.id of dir's meta.properties, or "".
func storedDirectoryID(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	if m := directoryIDProperty.FindSubmatch(data); m != nil {
		return string(m[1])
	}
	return ""
}

// Dirs that an older Kafka formatted have no directory.id: as Kafka's
// KafkaRaftServer.initializeLogDirs does, the node gives each a new one,
// different for every dir, and writes it into its meta.properties, so
// DescribeQuorum shows the voter with it.
func TestMetaPropertiesWithoutDirectoryIDGetOne(t *testing.T) {
	first, second := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	const clusterID = "MkU3OEVBNTcwNTJENDM2Qk"
	writeOldMetaProperties(t, first, clusterID, 1)
	writeOldMetaProperties(t, second, clusterID, 1)
	props := singleNodeProps(first + "," + second)
	b := startBroker(t, props)

	firstID, secondID := storedDirectoryID(t, first), storedDirectoryID(t, second)
	if firstID == "" || secondID == "" || firstID == secondID {
		t.Fatalf("directory ids written: %q and %q, want two different ones", firstID, secondID)
	}
	_, p := describeMetadataQuorum(t, b.Addr())
	if len(p.CurrentVoters) != 1 || logstore.UUIDString(p.CurrentVoters[0].ReplicaDirectoryID) != firstID {
		t.Fatalf("DescribeQuorum voters %+v, want node 1 with the first dir's directory id %s", p.CurrentVoters, firstID)
	}
	b.Close()
	b = startBroker(t, props)
	if got := storedDirectoryID(t, first); got != firstID {
		t.Fatalf("directory id %s after a restart, was %s", got, firstID)
	}
}

// A log dir copied from another (to add a disk) keeps the other's
// directory id: Kafka's MetaPropertiesEnsemble.verify refuses to start
// with two dirs of one directory id, which the controller could not tell
// apart.
func TestLogDirsWithOneDirectoryIDAreRefused(t *testing.T) {
	first, second := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	b := startBroker(t, map[string]string{"log.dirs": first})
	b.Close()
	data, err := os.ReadFile(filepath.Join(first, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(second, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(second, "meta.properties"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := ParseConfig(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": first + "," + second})
	if err != nil {
		t.Fatal(err)
	}
	b, err = New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		b.Close()
		t.Fatal("started with two log dirs of one directory id")
	}
	if id := storedDirectoryID(t, first); !strings.Contains(err.Error(), "directory id "+id) {
		t.Fatalf("refusal %q does not name the directory id %s", err, id)
	}
}

// With metadata.log.dir apart from log.dirs, the metadata log's dir is
// the voter's: kafka-storage format --standalone records the voter with
// that dir's directory id, and DescribeQuorum shows it with that one, as
// Kafka's raft client names itself by its metadata log dir.
func TestSingleNodeVoterHasTheMetadataDirsID(t *testing.T) {
	logDir, metaDir := filepath.Join(t.TempDir(), "logs"), filepath.Join(t.TempDir(), "metadata")
	const clusterID = "MkU3OEVBNTcwNTJENDM2Qk"
	writeOldMetaProperties(t, logDir, clusterID, 1) // formatted too, with the same cluster id
	writeOldMetaProperties(t, metaDir, clusterID, 1)
	dirID := logstore.RandomUUID()
	data := fmt.Sprintf("node.id=1\ndirectory.id=%s\nversion=1\ncluster.id=%s\n", logstore.UUIDString(dirID), clusterID)
	if err := os.WriteFile(filepath.Join(metaDir, "meta.properties"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	props := singleNodeProps(logDir)
	props["metadata.log.dir"] = metaDir
	b := startBroker(t, props)
	_, p := describeMetadataQuorum(t, b.Addr())
	if len(p.CurrentVoters) != 1 || p.CurrentVoters[0].ReplicaDirectoryID != dirID {
		t.Fatalf("DescribeQuorum voters %+v, want node 1 with the metadata dir's directory id %s (the log dir's is %s)",
			p.CurrentVoters, logstore.UUIDString(dirID), storedDirectoryID(t, logDir))
	}
}

// A combined node with metadata.log.dir apart from its log dirs gives
// that dir a meta.properties too (kafka-storage format writes one into
// every dir): its directory id is the one the node votes with, so each
// voter reports it and a static quorum can be upgraded to kraft.version 1,
// whose voters DescribeQuorum then lists with those ids.
func TestClusterMetadataDirHasADirectoryID(t *testing.T) {
	c := clusterProps(t, 3, 0, nil)
	metaDirs := make([]string, len(c.props))
	for i := range c.props {
		metaDirs[i] = filepath.Join(t.TempDir(), "metadata")
		c.props[i]["metadata.log.dir"] = metaDirs[i]
	}
	c.startAll()
	cl := c.client()
	waitUntil(t, "kraft.version upgraded to 1", 30*time.Second, func() bool {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "kraft.version", MaxVersionLevel: 1, UpgradeType: 1}}
		resp, err := req.RequestWith(ctxT(t), cl)
		return err == nil && resp.ErrorCode == 0
	})
	want := map[int32][16]byte{}
	for i, dir := range metaDirs {
		id, err := logstore.DirectoryID(dir)
		if err != nil || id == [16]byte{} {
			t.Fatalf("node %d's metadata dir's directory id: %v", i+1, err)
		}
		want[int32(i+1)] = id
	}
	describe := kmsg.NewPtrDescribeQuorumRequest()
	describe.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	resp, err := describe.RequestWith(ctxT(t), cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeQuorum: %v %+v", err, resp)
	}
	got := map[int32][16]byte{}
	for _, v := range resp.Topics[0].Partitions[0].CurrentVoters {
		got[v.ReplicaID] = v.ReplicaDirectoryID
	}
	if !maps.Equal(got, want) {
		t.Fatalf("DescribeQuorum's voters: %v, want the metadata dirs' directory ids %v", got, want)
	}
}
