package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/acl"
	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/delegation"
	"github.com/gregor-broker/gregor/internal/features"
	"github.com/gregor-broker/gregor/logstore"
	"github.com/gregor-broker/gregor/quota"
	"github.com/gregor-broker/gregor/sasl"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// singleNodeWithData runs a single node on node i's dirs and node id (and
// its offsets.topic.num.partitions, which must not change), with a topic
// of two partitions and a config override, ten records produced by an
// idempotent producer, a group's committed offsets, a SCRAM user and a
// client quota; it returns the topic's id.
func singleNodeWithData(t *testing.T, c *testCluster, i int) [16]byte {
	t.Helper()
	props := map[string]string{"log.dirs": c.props[i]["log.dirs"], "node.id": c.props[i]["node.id"],
		"offsets.topic.num.partitions": c.props[i]["offsets.topic.num.partitions"]}
	if dir, ok := c.props[i]["metadata.log.dir"]; ok {
		props["metadata.log.dir"] = dir
	}
	single := startBroker(t, props)
	cl := newClient(t, single, kgo.DefaultProduceTopic("kept"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	created, err := adm.CreateTopic(ctxT(t), 2, 1, map[string]*string{"retention.ms": kadm.StringPtr("123456789")}, "kept")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "kept", Partition: 0, At: 3, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctxT(t), "readers", offsets); err != nil || resp.Error() != nil {
		t.Fatalf("committing: %v %v", err, resp.Error())
	}
	if _, err := adm.AlterUserSCRAMs(ctxT(t), nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "pw"}}); err != nil {
		t.Fatal(err)
	}
	quota := []kadm.AlterClientQuotaEntry{{Entity: []kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: kadm.StringPtr("slow")}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}}}}
	if _, err := adm.AlterClientQuotas(ctxT(t), quota); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	single.Close()
	return created.ID
}

// readKept checks that the cluster serves the ten records
// singleNodeWithData produced.
func readKept(t *testing.T, c *testCluster) {
	t.Helper()
	if got := consumeCluster(t, c, "kept", kgo.ReadUncommitted(), 10, 5*time.Second); len(got) != 10 || got[0] != "0" || got[9] != "9" {
		t.Fatalf("the records of kept: %v, want 0 to 9", got)
	}
}

// A single node restarted as the only voter of a new controller quorum
// brings everything it held into the cluster, where a broker that joins
// takes a replica of its topic; before, the node deleted its partitions as
// strays.
func TestSingleNodeGrowsIntoCluster(t *testing.T) {
	c := clusterProps(t, 1, 0, nil)
	dir := c.props[0]["log.dirs"]
	topicID := singleNodeWithData(t, c, 0)
	var single metaData
	if raw, err := os.ReadFile(filepath.Join(dir, metaFileName)); err != nil || json.Unmarshal(raw, &single) != nil {
		t.Fatalf("the single node's metadata: %v", err)
	}

	// A broker that joins later: node 2, with the quorum's voter.
	joiner, _ := c.addNode(2, "broker", "PLAINTEXT")
	joiner["offsets.topic.replication.factor"] = "1"
	c.brokers = 2
	c.startAll()

	if _, err := os.Stat(filepath.Join(dir, metaFileName+adoptedSuffix)); err != nil {
		t.Fatalf("the single node's metadata file not renamed: %v", err)
	}
	cl := c.client()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctxT(t), "kept")
	if err != nil || topics["kept"].ID != topicID || len(topics["kept"].Partitions) != 2 {
		t.Fatalf("the topic in the cluster: %+v, %v; want id %x and 2 partitions", topics["kept"], err, topicID)
	}
	described, err := adm.DescribeTopicConfigs(ctxT(t), "kept")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := described.On("kept", func(rc *kadm.ResourceConfig) error {
		for _, cv := range rc.Configs {
			if cv.Key == "retention.ms" && cv.MaybeValue() == "123456789" {
				return nil
			}
		}
		return errors.New("retention.ms not 123456789")
	}); err != nil {
		t.Fatalf("the topic's config: %v %v", v, err)
	}
	committed, err := adm.FetchOffsets(ctxT(t), "readers")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := committed.Lookup("kept", 0); !ok || o.At != 3 {
		t.Fatalf("the group's committed offset: %+v, want 3", o)
	}
	users, err := adm.DescribeUserSCRAMs(ctxT(t), "alice")
	if err != nil || users["alice"].Err != nil || len(users["alice"].CredInfos) != 1 {
		t.Fatalf("the SCRAM user: %+v %v", users, err)
	}
	quotas, err := adm.DescribeClientQuotas(ctxT(t), false, nil)
	if err != nil || len(quotas) != 1 || quotas[0].Values[0].Value != 1024 {
		t.Fatalf("the client quotas: %+v %v", quotas, err)
	}
	if img := c.nodes[0].cluster.image(); img.NextProducerID < single.NextProducerID || single.NextProducerID == 0 {
		t.Fatalf("next producer id %d, the single node had handed out ids below %d", img.NextProducerID, single.NextProducerID)
	}

	// The joined broker takes a replica and copies the records.
	plan := kadm.AlterPartitionAssignmentsReq{}
	plan.Assign("kept", 0, []int32{1, 2})
	if _, err := adm.AlterPartitionAssignments(ctxT(t), plan); err != nil {
		t.Fatal(err)
	}
	c.waitFor("node 2 holding partition 0's five records in the ISR", func() bool {
		p := c.nodes[1].topics.get("kept").partition(0)
		ip := c.nodes[0].imagePartition("kept", [16]byte{}, false, 0)
		return p != nil && p.log.LogEndOffset() == 5 && ip != nil && len(ip.ISR) == 2
	})
	c.stop(1)
	c.stop(0)
	if err := c.start(0); err != nil {
		t.Fatal(err)
	}
	readKept(t, c)
}

// A single node's dirs in a quorum that another node started, with the
// same cluster id: the node refuses to start and keeps every partition and
// the metadata file, where it deleted them as strays before.
func TestSingleNodeDataNotTakenByAnotherQuorum(t *testing.T) {
	c := clusterProps(t, 1, 1, nil) // node 1 a controller, node 2 a broker
	dir := c.props[1]["log.dirs"]
	singleNodeWithData(t, c, 1)
	clusterID := logstore.FormattedClusterID(dir)
	if _, err := logstore.EnsureMetaProperties(c.props[0]["log.dirs"], clusterID, 1); err != nil {
		t.Fatal(err)
	}
	c.props[1]["initial.broker.registration.timeout.ms"] = "20000"
	if err := c.start(0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.stop(0) })
	err := c.start(1)
	if err == nil {
		c.stop(1)
		t.Fatal("node 2 started on a single node's dirs that the quorum did not take")
	}
	if !strings.Contains(err.Error(), "another node started the quorum") {
		t.Fatalf("node 2's start: %v", err)
	}
	for _, name := range []string{metaFileName, "kept-0", "kept-1"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("%s after the refused start: %v", name, err)
		}
	}
}

// A cluster node does not write the single node's metadata file (it did
// when it deleted a topic), and one left by an earlier version, which
// counts no starts, is not taken for a single node's: the node restarts
// and keeps its partitions.
func TestClusterNodeIsNoSingleNode(t *testing.T) {
	c := startCluster(t, 1, nil)
	adm := kadm.NewClient(c.client())
	for _, name := range []string{"kept", "gone"} {
		if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := adm.DeleteTopic(ctxT(t), "gone"); err != nil {
		t.Fatal(err)
	}
	dir := c.props[0]["log.dirs"]
	c.waitFor("gone deleted", func() bool { return c.nodes[0].topics.get("gone") == nil })
	c.stop(0) // after the deletion's last step
	path := filepath.Join(dir, metaFileName)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a cluster node wrote %s: %v", path, err)
	}
	if err := os.WriteFile(path, []byte(`{"topic_configs":{},"next_producer_id":0,"metadata_offset":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.start(0); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the node unfenced", func() bool { return !c.nodes[0].cluster.fenced.Load() })
	if _, err := os.Stat(filepath.Join(dir, "kept-0")); err != nil || c.nodes[0].topics.get("kept") == nil {
		t.Fatalf("kept after the restart: %v", err)
	}
}

// A cluster node's dirs started as a single node (its config without the
// quorum) are refused: the single node would lead every partition with
// the default configs, deleting a compacted topic's records by time.
func TestSingleNodeRefusesClusterDirs(t *testing.T) {
	c := startCluster(t, 1, nil)
	if _, err := kadm.NewClient(c.client()).CreateTopic(ctxT(t), 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, "kept"); err != nil {
		t.Fatal(err)
	}
	c.stop(0)
	dir := c.props[0]["log.dirs"]
	cfg, _, err := ParseConfig(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := New(cfg, nil); err == nil {
		b.Close()
		t.Fatal("a single node started on a cluster node's dirs")
	} else if !strings.Contains(err.Error(), "holds a cluster node's metadata") {
		t.Fatalf("the refusal: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kept-0")); err != nil {
		t.Fatal(err)
	}
}

// Every field of a single node's metadata file is carried into the
// quorum's records, or named here as a single node's own: a field added to
// metaData fails this test until adopt.go takes it.
func TestAdoptionCarriesEveryMetadataField(t *testing.T) {
	configOf := func(typ int8, name string) func([]controller.Record) bool {
		return func(recs []controller.Record) bool {
			return slices.ContainsFunc(recs, func(r controller.Record) bool {
				return r.Config != nil && r.Config.Resource == controller.ConfigResource{Type: typ, Name: name} && r.Config.Values["k"] == "v"
			})
		}
	}
	some := func(has func(controller.Record) bool) func([]controller.Record) bool {
		return func(recs []controller.Record) bool { return slices.ContainsFunc(recs, has) }
	}
	carried := map[string]func([]controller.Record) bool{
		"TopicConfigs":         configOf(controller.ResourceTopic, "t"),
		"GroupConfigs":         configOf(controller.ResourceGroup, "g"),
		"ClientMetricsConfigs": configOf(controller.ResourceClientMetrics, "m"),
		"BrokerConfigs":        configOf(controller.ResourceBroker, "7"),
		"ClusterBrokerConfigs": configOf(controller.ResourceBroker, ""),
		"NextProducerID":       some(func(r controller.Record) bool { return r.NextProducerID != nil && *r.NextProducerID == 5000 }),
		"ClientQuotas":         some(func(r controller.Record) bool { return r.ClientQuota != nil }),
		"ScramCredentials":     some(func(r controller.Record) bool { return r.ScramCredential != nil && r.ScramCredential.User == "alice" }),
		"ACLs":                 some(func(r controller.Record) bool { return r.ACL != nil && r.ACL.Binding.Principal == "User:alice" }),
		"DelegationTokens":     some(func(r controller.Record) bool { return r.DelegationToken != nil && r.DelegationToken.Set.ID == "tok" }),
		"Features":             nil, // the bootstrap feature levels, checked below
		"FeaturesEpoch":        nil, // a single node's count of feature updates
		"QuorumEpoch":          nil, // a single node's count of its starts
		"MetadataOffset":       nil, // a single node's count of metadata changes
	}
	typ := reflect.TypeOf(metaData{})
	for i := range typ.NumField() {
		if _, ok := carried[typ.Field(i).Name]; !ok {
			t.Errorf("metaData.%s is neither carried into a cluster nor named a single node's own", typ.Field(i).Name)
		}
	}

	values := map[string]string{"k": "v"}
	named := map[string]map[string]string{"t": values}
	cred := sasl.Credential{Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("v"), Iterations: 4096}
	alice := acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
	single := metaData{TopicConfigs: named, GroupConfigs: map[string]map[string]string{"g": values},
		ClientMetricsConfigs: map[string]map[string]string{"m": values}, BrokerConfigs: values, ClusterBrokerConfigs: values,
		NextProducerID: 5000, ClientQuotas: map[string]quota.Entry{"q": {Entity: quota.Entity{{Type: "client-id", Name: kmsg.StringPtr("c")}},
			Values: map[string]float64{"producer_byte_rate": 1}}},
		ScramCredentials: map[string]sasl.Credential{sasl.CredentialKey("alice", sasl.ScramMechanismNamed("SCRAM-SHA-256")): cred},
		ACLs:             map[string]acl.Binding{alice.Key(): alice}, Features: map[string]int16{"metadata.version": 21, "kraft.version": 1},
		FeaturesEpoch: 1, DelegationTokens: map[string]delegation.Token{"tok": {ID: "tok", Owner: "User:alice", HMAC: []byte("h")}},
		QuorumEpoch: 3, MetadataOffset: 9}
	dir := t.TempDir()
	raw, err := json.Marshal(single)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, metaFileName), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := ParseConfig(map[string]string{"node.id": "7", "log.dirs": dir})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readSingleNodeMetadata(&cfg, dir)
	if err != nil || got == nil {
		t.Fatalf("reading the single node's metadata: %v %v", got, err)
	}
	for field, found := range carried {
		if found != nil && !found(got.records) {
			t.Errorf("metaData.%s is not in the records: %+v", field, got.records)
		}
	}
	if !maps.Equal(got.features, map[string]int16{"metadata.version": 21}) {
		t.Errorf("the feature levels carried: %v, want metadata.version alone (kraft.version is the new quorum's)", got.features)
	}
	if last := got.records[len(got.records)-1]; last.AdoptedSingleNode == nil || *last.AdoptedSingleNode != 7 {
		t.Errorf("no record names node 7 adopted: %+v", last)
	}
}

// A single node that kept its metadata apart (metadata.log.dir), in a dir
// without meta.properties, grows too: the quorum takes the log dirs'
// cluster id, not a new one the log dirs would be refused for.
func TestSingleNodeWithMetadataDirGrowsIntoCluster(t *testing.T) {
	c := clusterProps(t, 1, 0, nil)
	c.props[0]["metadata.log.dir"] = t.TempDir()
	topicID := singleNodeWithData(t, c, 0)
	c.startAll()
	if tp := c.nodes[0].cluster.image().Topics["kept"]; tp == nil || tp.ID != topicID {
		t.Fatalf("the single node's topic in the quorum: %+v", tp)
	}
	readKept(t, c)
}

// Kafka's way to grow a quorum of one (KIP-853): the node formatted
// --standalone, then controllers added. A single node on such a dir,
// restarted with controller.quorum.bootstrap.servers naming another
// controller too, starts a dynamic quorum from everything it held, and a
// controller with auto-join becomes its second voter.
func TestStandaloneSingleNodeGrowsIntoDynamicQuorum(t *testing.T) {
	c := clusterProps(t, 1, 0, map[string]string{"controller.quorum.auto.join.enable": "true"})
	formatInitialControllers(t, c) // one voter: kafka-storage format --standalone
	topicID := singleNodeWithData(t, c, 0)
	_, port := c.addNode(2, "controller", "CONTROLLER")
	bootstrap := c.props[0]["controller.quorum.bootstrap.servers"] + fmt.Sprintf(",127.0.0.1:%d", port)
	for _, p := range c.props {
		p["controller.quorum.bootstrap.servers"] = bootstrap
	}
	c.brokers = 1
	c.startAll()

	img := c.nodes[0].cluster.image()
	if kraft := img.Features[features.KRaftVersion]; kraft != 1 {
		t.Fatalf("kraft.version %d, want 1: a dynamic quorum", kraft)
	}
	if tp := img.Topics["kept"]; tp == nil || tp.ID != topicID {
		t.Fatalf("the single node's topic in the quorum: %+v", tp)
	}
	c.waitFor("node 2 a voter", func() bool {
		_, voter := c.nodes[0].cluster.ctl.Voters()[2]
		return voter
	})
	readKept(t, c)
}
