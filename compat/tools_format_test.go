package compat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/cmd/gregor/clustertest"
	"github.com/gregor-broker/gregor/compat/harness"
	"github.com/gregor-broker/gregor/internal/freeport"
)

// checkFormattedDir follows Kafka's quickstart: kafka-storage format
// --standalone writes meta.properties and the metadata log
// (__cluster_metadata-0) into a new log dir, and gregor starts on it with
// the same settings. It serves the formatted cluster id, does not take
// the metadata log for a topic (kafka-topics --list shows only the topic
// created), refuses to create __cluster_metadata as Kafka does, and
// leaves the metadata log's file as it was. The format also made a SCRAM
// user (--add-scram, as Kafka's docs create the first one) who logs in on
// the SASL listener, and set --release-version 3.9, whose
// metadata.version kafka-features reports.
func (e *cliEnv) checkFormattedDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "formatted")
	settings, props := standaloneSettings(t, dir)
	clusterID := strings.TrimSpace(e.run(t, "", e.cls.storage, "random-uuid"))
	e.run(t, "", e.cls.storage, "format", "-t", clusterID, "-c", props, "--standalone",
		"--release-version", "3.9", "--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]")
	checkpoints, _ := filepath.Glob(filepath.Join(dir, "__cluster_metadata-0", "*.checkpoint"))
	if len(checkpoints) != 1 {
		t.Fatalf("kafka-storage format wrote checkpoints %v", checkpoints)
	}
	before, err := os.ReadFile(checkpoints[0])
	if err != nil {
		t.Fatal(err)
	}

	p := harness.Start(t, dir, settings...)
	if out := strings.TrimSpace(e.run(t, "", e.cls.cluster, "cluster-id", "--bootstrap-server", p.Addr)); out != "Cluster ID: "+clusterID {
		t.Fatalf("kafka-cluster cluster-id said %q, formatted %s", out, clusterID)
	}
	e.run(t, "", e.cls.topics, "--bootstrap-server", p.Addr, "--create", "--topic", "after-format", "--partitions", "1")
	if out := strings.TrimSpace(e.run(t, "", e.cls.topics, "--bootstrap-server", p.Addr, "--list")); out != "after-format" {
		t.Fatalf("kafka-topics --list on a formatted dir:\n%s", out)
	}
	alice := filepath.Join(t.TempDir(), "alice.properties")
	if err := os.WriteFile(alice, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sasl := p.ListenerAddr(t, "SASL_PLAINTEXT")
	if out := strings.TrimSpace(e.run(t, "", e.cls.topics, "--bootstrap-server", sasl, "--command-config", alice, "--list")); out != "after-format" {
		t.Fatalf("kafka-topics --list as alice:\n%s", out)
	}
	if out := e.run(t, "", e.cls.features, "--bootstrap-server", p.Addr, "describe"); !strings.Contains(out, "FinalizedVersionLevel: 3.9-IV0") {
		t.Fatalf("kafka-features describe after --release-version 3.9:\n%s", out)
	}
	r := e.try(t, "", e.cls.topics, "--bootstrap-server", p.Addr, "--create", "--topic", "__cluster_metadata", "--partitions", "1")
	if r.err == nil || !strings.Contains(r.stdout+r.stderr, "Creation of internal topic __cluster_metadata is prohibited.") {
		t.Fatalf("creating __cluster_metadata: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	p.Stop()
	if after, err := os.ReadFile(checkpoints[0]); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("the metadata log's checkpoint after gregor ran: %v, changed %v", err, !bytes.Equal(after, before))
	}
	e.checkStandaloneGrows(t, dir, settings, clusterID, alice)
}

// checkStandaloneGrows takes the quorum of one checkFormattedDir ran to
// two controllers, as Kafka's docs grow a node formatted --standalone
// (KIP-853): restarted with controller.quorum.bootstrap.servers naming the
// controller to come as well, the node starts a dynamic quorum from all it
// held (its topic, the SCRAM user, metadata.version 3.9-IV0); a second node,
// formatted --no-initial-controllers, joins it as an observer and
// kafka-metadata-quorum add-controller makes it a voter.
func (e *cliEnv) checkStandaloneGrows(t *testing.T, dir string, settings []string, clusterID, alice string) {
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	first := strings.TrimPrefix(settings[2], "controller.quorum.bootstrap.servers=")
	bootstrap := fmt.Sprintf("controller.quorum.bootstrap.servers=%s,127.0.0.1:%d", first, ports[0])
	p := harness.Start(t, dir, append(settings, bootstrap)...)
	if out := strings.TrimSpace(e.run(t, "", e.cls.topics, "--bootstrap-server", p.Addr, "--list")); out != "after-format" {
		t.Fatalf("kafka-topics --list once the single node started a quorum:\n%s", out)
	}
	if out := strings.TrimSpace(e.run(t, "", e.cls.topics, "--bootstrap-server", p.ListenerAddr(t, "SASL_PLAINTEXT"), "--command-config", alice, "--list")); out != "after-format" {
		t.Fatalf("kafka-topics --list as alice in the quorum:\n%s", out)
	}
	if out := e.run(t, "", e.cls.features, "--bootstrap-server", p.Addr, "describe"); !strings.Contains(out, "FinalizedVersionLevel: 3.9-IV0") ||
		!regexp.MustCompile(`Feature: kraft.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1`).MatchString(out) {
		t.Fatalf("kafka-features describe of the quorum grown from --standalone:\n%s", out)
	}

	dir2 := filepath.Join(t.TempDir(), "second")
	second := []string{
		"process.roles=broker,controller",
		"node.id=2",
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:%d", ports[0]),
		"controller.listener.names=CONTROLLER",
		bootstrap,
	}
	props := filepath.Join(t.TempDir(), "second.properties")
	if err := os.WriteFile(props, []byte(strings.Join(append(second, "log.dirs="+dir2), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.run(t, "", e.cls.storage, "format", "-t", clusterID, "-c", props, "--no-initial-controllers")
	harness.Start(t, dir2, second...)
	controller := []string{"--bootstrap-controller", first}
	dirID := metaPropertiesValue(t, dir2, "directory.id")
	want := fmt.Sprintf("Added controller 2 with directory id %s and endpoints: CONTROLLER://127.0.0.1:%d", dirID, ports[0])
	clustertest.Eventually(t, time.Minute, "add-controller to add the second node", func() error {
		r := e.try(t, "", e.cls.quorum, append(controller, "--command-config", props, "add-controller")...)
		if strings.TrimSpace(r.stdout) != want {
			return fmt.Errorf("add-controller: %v\n%s%s", r.err, r.stdout, r.stderr)
		}
		return nil
	})
	out := e.run(t, "", e.cls.quorum, append(controller, "describe", "--status")...)
	if !strings.Contains(out, fmt.Sprintf(`{"id": 2, "directoryId": "%s"`, dirID)) || strings.Count(out, `"directoryId"`) != 2 {
		t.Fatalf("describe --status after add-controller: want two voters, node 2 with directory id %s:\n%s", dirID, out)
	}
}

// checkFormattedMetadataDir: with metadata.log.dir apart from log.dirs, as
// operators put the metadata log on its own disk, kafka-storage format
// writes the bootstrap metadata there, and gregor reads it from there (the
// SCRAM user it made logs in) and keeps its own metadata there too (a
// single voter: gregor-metadata.json), while the partitions of a topic go
// to log.dirs.
func (e *cliEnv) checkFormattedMetadataDir(t *testing.T) {
	logDir, metaDir := filepath.Join(t.TempDir(), "logs"), filepath.Join(t.TempDir(), "metadata")
	settings, props := standaloneSettings(t, logDir, "metadata.log.dir="+metaDir)
	clusterID := strings.TrimSpace(e.run(t, "", e.cls.storage, "random-uuid"))
	e.run(t, "", e.cls.storage, "format", "-t", clusterID, "-c", props, "--standalone",
		"--add-scram", "SCRAM-SHA-256=[name=bob,password=bob-secret]")
	if _, err := os.Stat(filepath.Join(metaDir, "__cluster_metadata-0")); err != nil {
		t.Fatalf("kafka-storage format wrote no metadata log into metadata.log.dir: %v", err)
	}

	p := harness.Start(t, logDir, settings...)
	if out := strings.TrimSpace(e.run(t, "", e.cls.cluster, "cluster-id", "--bootstrap-server", p.Addr)); out != "Cluster ID: "+clusterID {
		t.Fatalf("kafka-cluster cluster-id said %q, formatted %s", out, clusterID)
	}
	bob := filepath.Join(t.TempDir(), "bob.properties")
	if err := os.WriteFile(bob, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="bob-secret";`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.run(t, "", e.cls.topics, "--bootstrap-server", p.ListenerAddr(t, "SASL_PLAINTEXT"), "--command-config", bob,
		"--create", "--topic", "on-the-log-dir", "--partitions", "1")
	for _, c := range []struct {
		path string
		want bool
	}{
		{filepath.Join(logDir, "on-the-log-dir-0"), true}, {filepath.Join(metaDir, "on-the-log-dir-0"), false},
		{filepath.Join(metaDir, "gregor-metadata.json"), true}, {filepath.Join(logDir, "gregor-metadata.json"), false},
	} {
		if _, err := os.Stat(c.path); (err == nil) != c.want {
			t.Errorf("%s exists: %v, want %v", c.path, err == nil, c.want)
		}
	}
}

// standaloneSettings are the settings of a one-node KRaft combined node
// with a SASL_PLAINTEXT listener (SCRAM-SHA-256), plus extra, and the
// server.properties file holding them and log.dirs=logDir, for
// kafka-storage format -c.
func standaloneSettings(t *testing.T, logDir string, extra ...string) (settings []string, props string) {
	t.Helper()
	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	settings = append([]string{
		"process.roles=broker,controller",
		"node.id=1",
		fmt.Sprintf("controller.quorum.bootstrap.servers=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:0", ports[0]),
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=SCRAM-SHA-256",
	}, extra...)
	props = filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(props, []byte(strings.Join(append(settings, "log.dirs="+logDir), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return settings, props
}
