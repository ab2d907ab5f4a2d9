package broker

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// formattedSnapshot was written by Kafka 4.4's kafka-storage format
// --standalone --release-version 3.9 --feature transaction.version=1
// --add-scram 'SCRAM-SHA-256=[name=alice,password=alice-secret]'
// --add-scram 'SCRAM-SHA-512=[name=bob,password=bob-secret,iterations=8192]'.
const formattedSnapshot = "../logstore/testdata/kafka-4.4-release-3.9-scram.checkpoint"

// putFormattedSnapshot puts formattedSnapshot where kafka-storage format
// writes it in the log dir dir.
func putFormattedSnapshot(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(formattedSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(dir, "__cluster_metadata-0")
	if err := os.MkdirAll(meta, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(meta, "00000000000000000000-0000000000.checkpoint"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A single node started on a dir kafka-storage format prepared takes the
// users --add-scram created (Kafka's way of making the first SCRAM user
// before any broker runs) and the feature levels of --release-version and
// --feature, at its first start and only then: what changes afterwards
// stays changed across restarts.
func TestSingleNodeTakesFormattedScramAndFeatures(t *testing.T) {
	dir := t.TempDir()
	putFormattedSnapshot(t, dir)
	b := startBrokerWith(t, saslProps(dir))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	if err := roundTrip(t, saslClient(t, addr, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()), "by-alice", 3); err != nil {
		t.Fatalf("alice, SCRAM-SHA-256: %v", err)
	}
	if err := saslClient(t, addr, scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()).Ping(ctxT(t)); err != nil {
		t.Fatalf("bob, SCRAM-SHA-512: %v", err)
	}
	if err := saslClient(t, addr, scram.Auth{User: "alice", Pass: "bob-secret"}.AsSha256Mechanism()).Ping(ctxT(t)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("alice with a wrong password: %v", err)
	}
	plaintext := listenerAddr(t, b, "PLAINTEXT")
	described, err := kadm.NewClient(saslFreeClient(t, plaintext)).DescribeUserSCRAMs(ctxT(t), "bob")
	if infos := described["bob"].CredInfos; err != nil || len(infos) != 1 || infos[0].Mechanism != kadm.ScramSha512 || infos[0].Iterations != 8192 {
		t.Fatalf("bob described: %+v, %v", described["bob"], err)
	}
	// 3.9 finalizes metadata.version 3.9-IV0 (21) alone, --feature added
	// transaction.version 1; group.version is off, as in Kafka 3.9.
	want := map[string]int16{"metadata.version": 21, "transaction.version": 1, "kraft.version": 1}
	if got, _ := finalizedFeatures(dialAddr(t, plaintext)); !maps.Equal(got, want) {
		t.Fatalf("finalized features %v, want %v", got, want)
	}

	// Changes after the first start stay: the format is not read again.
	res, err := kadm.NewClient(saslFreeClient(t, plaintext)).AlterUserSCRAMs(ctxT(t), []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || res["alice"].Err != nil {
		t.Fatalf("deleting alice: %v %v", err, res["alice"].Err)
	}
	if r := updateFeature(t, dialAddr(t, plaintext), "group.version", 1, 1); r.ErrorCode != 0 {
		t.Fatalf("group.version to 1: %+v", r)
	}
	b.Close()
	b = startBrokerWith(t, saslProps(dir))
	addr, plaintext = listenerAddr(t, b, "SASL_PLAINTEXT"), listenerAddr(t, b, "PLAINTEXT")
	if err := saslClient(t, addr, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()).Ping(ctxT(t)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("alice deleted, after a restart: %v", err)
	}
	if err := saslClient(t, addr, scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()).Ping(ctxT(t)); err != nil {
		t.Fatalf("bob after a restart: %v", err)
	}
	want["group.version"] = 1
	if got, _ := finalizedFeatures(dialAddr(t, plaintext)); !maps.Equal(got, want) {
		t.Fatalf("finalized features after a restart %v, want %v", got, want)
	}
}

// In a cluster the first active controller records what the format set up
// into the metadata log, so every broker serves the formatted users and
// feature levels (here a static quorum, controller.quorum.voters, whose
// format records no voters: the snapshot's are not taken).
func TestClusterTakesFormattedScramAndFeatures(t *testing.T) {
	c := clusterProps(t, 3, 0, map[string]string{
		"listener.security.protocol.map":                 "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":                        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol":           "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config": plainJAAS,
	})
	for _, p := range c.props {
		putFormattedSnapshot(t, p["log.dirs"])
	}
	c.startAll()
	c.waitFor("every broker knowing the formatted credentials", func() bool {
		for _, b := range c.nodes {
			if len(b.scramCredentials()) != 2 {
				return false
			}
		}
		return true
	})
	for _, b := range c.nodes {
		if err := saslClient(t, b.Addr(), scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism()).Ping(ctxT(t)); err != nil {
			t.Fatalf("alice on node %d: %v", b.cfg.NodeID, err)
		}
		if err := saslClient(t, b.Addr(), scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()).Ping(ctxT(t)); err != nil {
			t.Fatalf("bob on node %d: %v", b.cfg.NodeID, err)
		}
		stored, _ := b.featureLevels()
		want := map[string]int16{"metadata.version": 21, "transaction.version": 1, "group.version": 0,
			"eligible.leader.replicas.version": 0, "share.version": 0, "streams.version": 0}
		if !maps.Equal(stored, want) {
			t.Errorf("node %d: feature levels %v, want %v", b.cfg.NodeID, stored, want)
		}
	}
}
