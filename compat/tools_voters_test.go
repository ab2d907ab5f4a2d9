package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/cmd/gregor/clustertest"
	"github.com/gregor-broker/gregor/logstore"
)

// checkVoterChanges sets up a three-node cluster as Kafka 4's docs do:
// every node configured with controller.quorum.bootstrap.servers and its
// dir prepared by kafka-storage format --initial-controllers. The nodes
// form the quorum the format named, with the cluster id and directory ids
// it gave (kafka-metadata-quorum describe --status), and the SCRAM user
// the format added (--add-scram) is known to them all. Then its quorum is
// changed (KIP-853): a fourth node, also configured with bootstrap
// servers, starts, follows the quorum and is listed by kafka-cluster
// list-endpoints; add-controller, given its server.properties, makes it a
// voter with the directory id of its meta.properties; remove-controller
// takes voter 1's vote away, and node 1 stays as an observer. A fifth
// node, a dedicated controller, describes its configuration through
// kafka-configs --bootstrap-controller and observes the quorum. With node
// 2 killed as well, voters 3 and 4 still commit: kafka-topics creates a
// topic; and kafka-cluster unregister-controller (Kafka 4.4) removes node
// 1's controller registration.
func (e *cliEnv) checkVoterChanges(t *testing.T) {
	c := clustertest.Configure(t, clustertest.Options{DynamicQuorum: true})
	clusterID := logstore.UUIDString(logstore.RandomUUID())
	dirIDs := map[int32]string{}
	var initial []string
	for _, n := range c.Nodes {
		dirIDs[n.ID] = logstore.UUIDString(logstore.RandomUUID())
		initial = append(initial, fmt.Sprintf("%d@127.0.0.1:%d:%s", n.ID, n.ControllerPort, dirIDs[n.ID]))
	}
	for _, n := range c.Nodes {
		props := filepath.Join(t.TempDir(), "server.properties")
		if err := os.WriteFile(props, []byte(strings.Join(c.Properties(n), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		e.run(t, "", e.cls.storage, "format", "-t", clusterID, "-c", props, "--initial-controllers", strings.Join(initial, ","),
			"--add-scram", "SCRAM-SHA-512=[name=carol,password=carol-secret,iterations=8192]")
	}
	c.Launch(t)
	c.WaitBrokers(t, 3, time.Minute)
	if out := strings.TrimSpace(e.run(t, "", e.cls.cluster, "cluster-id", "--bootstrap-server", c.Nodes[0].Addr())); out != "Cluster ID: "+clusterID {
		t.Fatalf("kafka-cluster cluster-id said %q, formatted %s", out, clusterID)
	}
	for _, n := range c.Nodes {
		out := strings.TrimSpace(e.run(t, "", e.cls.configs, "--bootstrap-server", n.Addr(), "--describe", "--entity-type", "users", "--entity-name", "carol"))
		if want := "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=8192"; out != want {
			t.Fatalf("kafka-configs --describe of the formatted user on node %d:\n%s\nwant %s", n.ID, out, want)
		}
	}
	voter := func(n *clustertest.Node, dir string) string {
		return fmt.Sprintf(`{"id": %d, "directoryId": "%s", "endpoints": ["CONTROLLER://127.0.0.1:%d"]}`, n.ID, dir, n.ControllerPort)
	}
	status := func() map[string]string {
		out := e.run(t, "", e.cls.quorum, "--bootstrap-server", c.Nodes[2].Addr(), "describe", "--status")
		status := map[string]string{}
		for _, l := range cliLines(out) {
			if m := quorumStatusLine.FindStringSubmatch(l); m != nil {
				status[m[1]] = m[2]
			}
		}
		return status
	}
	wantVoters := "[" + strings.Join([]string{voter(c.Nodes[0], dirIDs[1]), voter(c.Nodes[1], dirIDs[2]), voter(c.Nodes[2], dirIDs[3])}, ", ") + "]"
	if got := status()["CurrentVoters"]; got != wantVoters {
		t.Fatalf("describe --status of the formatted quorum: voters %s, want %s", got, wantVoters)
	}

	node4 := c.AddNode(t)
	c.WaitBrokers(t, 4, time.Minute)

	props := filepath.Join(t.TempDir(), "node4.properties")
	lines := []string{
		"node.id=4",
		"process.roles=broker,controller",
		fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", node4.Port, node4.ControllerPort),
		"controller.listener.names=CONTROLLER",
		"log.dirs=" + node4.Dir,
	}
	if err := os.WriteFile(props, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirID := metaPropertiesValue(t, node4.Dir, "directory.id")
	controller := []string{"--bootstrap-controller", fmt.Sprintf("127.0.0.1:%d", c.Nodes[0].ControllerPort)}
	// The new controller is registered before it votes.
	clustertest.Eventually(t, time.Minute, "kafka-cluster list-endpoints to list four controllers", func() error {
		if got := e.listEndpoints(t, controller...); len(got) != 4 || got["4"] != "controller" {
			return fmt.Errorf("list-endpoints --bootstrap-controller: %v", got)
		}
		return nil
	})
	out := strings.TrimSpace(e.run(t, "", e.cls.quorum, append(controller, "--command-config", props, "add-controller")...))
	want := fmt.Sprintf("Added controller 4 with directory id %s and endpoints: CONTROLLER://127.0.0.1:%d", dirID, node4.ControllerPort)
	if out != want {
		t.Fatalf("add-controller said %q, want %q", out, want)
	}
	wantVoters = "[" + strings.Join([]string{voter(c.Nodes[0], dirIDs[1]), voter(c.Nodes[1], dirIDs[2]), voter(c.Nodes[2], dirIDs[3]), voter(node4, dirID)}, ", ") + "]"
	if got := status()["CurrentVoters"]; got != wantVoters {
		t.Fatalf("describe --status after add-controller: voters %s, want %s", got, wantVoters)
	}

	// A dedicated controller (process.roles=controller alone) answers the
	// tools given --bootstrap-controller for itself: kafka-configs
	// describes its configuration, and it follows the quorum as an
	// observer.
	node5 := c.AddController(t)
	at5 := []string{"--bootstrap-controller", fmt.Sprintf("127.0.0.1:%d", node5.ControllerPort)}
	clustertest.Eventually(t, time.Minute, "kafka-configs --bootstrap-controller to describe the dedicated controller", func() error {
		r := e.try(t, "", e.cls.configs, append(at5, "--describe", "--all", "--entity-type", "brokers", "--entity-name", "5")...)
		if r.err != nil || !strings.Contains(r.stdout, "All configs for broker 5 are:") || !strings.Contains(r.stdout, "process.roles=controller ") {
			return fmt.Errorf("%v\n%s%s", r.err, r.stdout, r.stderr)
		}
		return nil
	})
	clustertest.Eventually(t, time.Minute, "the dedicated controller listed as an observer", func() error {
		if s := status(); !strings.Contains(s["CurrentObservers"], `{"id": 5`) {
			return fmt.Errorf("observers %s", s["CurrentObservers"])
		}
		return nil
	})

	out = e.try(t, "", e.cls.quorum, append(controller, "--command-config", props, "add-controller")...).stderr
	if !strings.Contains(out, "DuplicateVoterException") {
		t.Fatalf("adding controller 4 again: %q, want a DuplicateVoterException", out)
	}
	out = e.try(t, "", e.cls.quorum, append(controller, "remove-controller", "--controller-id", "4", "--controller-directory-id", logstore.UUIDString(logstore.RandomUUID()))...).stderr
	if !strings.Contains(out, "VoterNotFoundException") {
		t.Fatalf("removing controller 4 with another directory id: %q, want a VoterNotFoundException", out)
	}
	out = e.try(t, "", e.cls.quorum, append(controller, "remove-controller", "--controller-id", "4", "--controller-directory-id", "AAAAAAAAAAAAAAAAAAAAAA")...).stderr
	if !strings.Contains(out, "InvalidRequestException") {
		t.Fatalf("removing controller 4 with the zero directory id: %q, want an InvalidRequestException", out)
	}
	out = strings.TrimSpace(e.run(t, "", e.cls.quorum, append(controller, "remove-controller", "--controller-id", "1", "--controller-directory-id", dirIDs[1])...))
	if out != "Removed KRaft controller 1 with directory id "+dirIDs[1] {
		t.Fatalf("remove-controller said %q", out)
	}
	wantVoters = "[" + strings.Join([]string{voter(c.Nodes[1], dirIDs[2]), voter(c.Nodes[2], dirIDs[3]), voter(node4, dirID)}, ", ") + "]"
	clustertest.Eventually(t, time.Minute, "voters 2, 3 and 4 with node 1 observing", func() error {
		s := status()
		if s["CurrentVoters"] != wantVoters || !strings.Contains(s["CurrentObservers"], `{"id": 1`) {
			return fmt.Errorf("voters %s, observers %s", s["CurrentVoters"], s["CurrentObservers"])
		}
		return nil
	})

	c.Nodes[1].Kill()
	e.run(t, "", e.cls.topics, "--bootstrap-server", node4.Addr(), "--create", "--topic", "cli-new-quorum",
		"--partitions", "1", "--replication-factor", "2")
	c.WaitAgreed(t, "cli-new-quorum", 1, 2, time.Minute)
	// Metadata may still name node 2 until the brokers learn of the new
	// leader, which only voters 3 and 4 can be.
	clustertest.Eventually(t, time.Minute, "voter 3 or 4 leading, named alike by Metadata and describe --status", func() error {
		resp, err := c.Metadata()
		if err != nil {
			return err
		}
		if id := resp.ControllerID; id != 3 && id != 4 {
			return fmt.Errorf("Metadata names controller %d", id)
		}
		if s := status(); s["LeaderId"] != strconv.Itoa(int(resp.ControllerID)) {
			return fmt.Errorf("describe --status names leader %s, Metadata %d", s["LeaderId"], resp.ControllerID)
		}
		return nil
	})

	// Kafka 4.4: node 1, out of the quorum, is unregistered with
	// kafka-cluster unregister-controller (the format, Kafka 4.4's,
	// put metadata.version at 4.4-IV2, which allows it); a second time it
	// is not registered.
	if out := e.run(t, "", e.cls.features, "--bootstrap-server", node4.Addr(), "describe"); !regexp.MustCompile(`Feature: metadata.version\s.*FinalizedVersionLevel: 4.4-IV2\s`).MatchString(out) {
		t.Fatalf("kafka-features describe of the cluster Kafka 4.4 formatted:\n%s", out)
	}
	unregister := []string{"unregister-controller", "--bootstrap-server", node4.Addr(), "--id", "1"}
	if out := strings.TrimSpace(e.run(t, "", e.cls.cluster, unregister...)); out != "Controller 1 is no longer registered." {
		t.Fatalf("unregister-controller --id 1 said %q", out)
	}
	if r := e.try(t, "", e.cls.cluster, unregister...); !strings.Contains(r.stdout+r.stderr, "Controller ID 1 is not currently registered.") {
		t.Fatalf("unregister-controller --id 1 again:\n%s%s", r.stdout, r.stderr)
	}
}

// metaPropertiesValue reads one key of dir's meta.properties.
func metaPropertiesValue(t *testing.T, dir, key string) string {
	t.Helper()
	props, _ := readMetaProperties(t, dir)
	for _, l := range strings.Split(string(props), "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s/meta.properties has no %s", dir, key)
	return ""
}
