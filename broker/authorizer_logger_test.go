package broker

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TestAuthorizerAuditLog follows kafka.authorizer.logger through
// real clients: denials written at INFO from the start, grants only once
// the logger is at DEBUG, probes only at TRACE, one line per resource
// and request with Kafka's resourceRefCount, each in Kafka's words.
func TestAuthorizerAuditLog(t *testing.T) {
	b, log := startBrokerLogged(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string) *kgo.Client {
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism(), kgo.DisableIdempotentWrite())
	}
	admin, alice, bob := login("admin"), login("alice"), login("bob")
	adm := kadm.NewClient(admin)
	for _, topic := range []string{"orders", "payroll"} {
		if _, err := adm.CreateTopic(ctxT(t), 3, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("orders").Operations(kadm.OpRead))
	createACLs(t, adm, kadm.NewACLs().Deny("User:alice").Topics("orders").Operations(kadm.OpWrite))
	node := strconv.Itoa(int(b.cfg.NodeID))
	if got := describedConfigsOf(t, admin, kmsg.ConfigResourceTypeBrokerLogger, node)["kafka.authorizer.logger"].value(); got != "INFO" {
		t.Fatalf("kafka.authorizer.logger starts at %s, want INFO as in Kafka's log4j2.yaml", got)
	}
	lines := func(part string) int { return strings.Count(log.String(), part) }
	const alicePrefix = "Principal = User:alice is "
	const from = " from host = 127.0.0.1 on resource = "

	// A denial, at INFO, named after the DENY ACL.
	if err := produceErr(t, alice, "orders"); err == nil {
		t.Fatal("alice wrote to orders past a DENY")
	}
	denied := alicePrefix + "Denied operation = WRITE" + from + "Topic:LITERAL:orders for request = Produce with resourceRefCount = 1 " +
		"based on rule MatchingAcl(acl=StandardAcl[resourceType=TOPIC, resourceName=orders, patternType=LITERAL, principal=User:alice, " +
		"host=*, operation=WRITE, permissionType=DENY])"
	if n := lines(`level=INFO msg="` + denied + `"`); n < 1 {
		t.Fatalf("no INFO line %q:\n%s", denied, log.String())
	}

	// A listing leaves payroll out without a line; asking for it by name
	// is a refusal, written.
	listedTopics(t, alice)
	if n := lines("Topic:LITERAL:payroll"); n != 0 {
		t.Fatalf("a listing of every topic wrote %d lines about payroll at INFO:\n%s", n, log.String())
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("payroll")}}
	if _, err := meta.RequestWith(ctxT(t), alice); err != nil {
		t.Fatal(err)
	}
	named := alicePrefix + "Denied operation = DESCRIBE" + from + "Topic:LITERAL:payroll for request = Metadata with resourceRefCount = 1 based on rule DefaultDeny"
	if n := lines(`level=INFO msg="` + named + `"`); n != 1 {
		t.Fatalf("%d INFO lines %q:\n%s", n, named, log.String())
	}

	// Grants are written once the logger is at DEBUG: a fetch of three
	// partitions of one topic is one line with resourceRefCount = 3.
	fetch := func() {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes = -1, 1<<20
		ft := kmsg.FetchRequestTopic{Topic: "orders", TopicID: b.topics.get("orders").id}
		for p := range int32(3) {
			ft.Partitions = append(ft.Partitions, kmsg.FetchRequestTopicPartition{Partition: p, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, LogStartOffset: -1})
		}
		req.Topics = []kmsg.FetchRequestTopic{ft}
		resp, err := req.RequestWith(ctxT(t), alice)
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("alice's fetch: %v %+v", err, resp)
		}
	}
	granted := alicePrefix + "Allowed operation = READ" + from + "Topic:LITERAL:orders for request = Fetch with resourceRefCount = 3 " +
		"based on rule MatchingAcl(acl=StandardAcl[resourceType=TOPIC, resourceName=orders, patternType=LITERAL, principal=User:alice, " +
		"host=*, operation=READ, permissionType=ALLOW])"
	fetch()
	if n := lines("is Allowed"); n != 0 {
		t.Fatalf("%d grants written at INFO:\n%s", n, log.String())
	}
	if code, msg := alterConfigsOf(t, admin, kmsg.ConfigResourceTypeBrokerLogger, node, setOp("kafka.authorizer.logger", "DEBUG")); code != 0 {
		t.Fatalf("kafka.authorizer.logger=DEBUG: %d %s", code, msg)
	}
	fetch()
	if n := lines(`level=DEBUG msg="` + granted + `"`); n != 1 {
		t.Fatalf("%d DEBUG lines %q:\n%s", n, granted, log.String())
	}
	if n := lines(`msg="Principal = User:admin is Allowed operation = ALTER_CONFIGS` + from + `Cluster:LITERAL:kafka-cluster for request = IncrementalAlterConfigs ` +
		`with resourceRefCount = 1 based on rule SuperUser"`); n != 0 {
		t.Fatalf("the request that set DEBUG was written before DEBUG was set:\n%s", log.String())
	}
	describedConfigsOf(t, admin, kmsg.ConfigResourceTypeBrokerLogger, node)
	if n := lines(`msg="Principal = User:admin is Allowed operation = DESCRIBE_CONFIGS` + from + `Cluster:LITERAL:kafka-cluster for request = DescribeConfigs ` +
		`with resourceRefCount = 1 based on rule SuperUser"`); n != 1 {
		t.Fatalf("a super user's DescribeConfigs: %d lines:\n%s", n, log.String())
	}

	// A probe's denial (CREATE on the cluster, tried before CREATE on the
	// topic) is written at TRACE only.
	if _, err := kadm.NewClient(bob).CreateTopic(ctxT(t), 1, 1, nil, "bobs"); err == nil {
		t.Fatal("bob created a topic without CREATE")
	}
	probe := "Principal = User:bob is Denied operation = CREATE" + from + "Cluster:LITERAL:kafka-cluster for request = CreateTopics"
	topicDenied := "Principal = User:bob is Denied operation = CREATE" + from + "Topic:LITERAL:bobs for request = CreateTopics"
	if lines(probe) != 0 || lines(`level=INFO msg="`+topicDenied) != 1 {
		t.Fatalf("bob's CreateTopics: want no line for CREATE on the cluster and one INFO line for the topic:\n%s", log.String())
	}
	if code, msg := alterConfigsOf(t, admin, kmsg.ConfigResourceTypeBrokerLogger, node, setOp("kafka.authorizer.logger", "TRACE")); code != 0 {
		t.Fatalf("kafka.authorizer.logger=TRACE: %d %s", code, msg)
	}
	kadm.NewClient(bob).CreateTopic(ctxT(t), 1, 1, nil, "bobs")
	if n := lines(`level=DEBUG-4 msg="` + probe); n != 1 {
		t.Fatalf("at TRACE, %d lines %q:\n%s", n, probe, log.String())
	}
}

// TestAuthorizerClusterGrants checks the cluster-wide grants Kafka's
// handlers try before the per-topic ones: DELETE on the cluster deletes
// any topic (and without it a topic the principal may not describe is
// refused without disclosing it), ALTER on it writes transaction markers, DESCRIBE on a topic
// answers OffsetForLeaderEpoch whatever replica id is sent.
func TestAuthorizerClusterGrants(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string) *kgo.Client {
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism(), kgo.DisableIdempotentWrite())
	}
	adm := kadm.NewClient(login("admin"))
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "doomed"); err != nil {
		t.Fatal(err)
	}
	bob := login("bob")
	createACLs(t, adm, kadm.NewACLs().Allow("User:bob").Clusters().Operations(kadm.OpDelete, kadm.OpAlter))
	createACLs(t, adm, kadm.NewACLs().Allow("User:bob").Topics("doomed").Operations(kadm.OpDescribe))

	epochs := kmsg.NewPtrOffsetForLeaderEpochRequest()
	epochs.ReplicaID = 7
	epochs.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "doomed", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 0}}}}
	if resp, err := epochs.RequestWith(ctxT(t), bob); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("OffsetForLeaderEpoch with DESCRIBE on the topic: %v %+v", err, resp)
	}

	markers := kmsg.NewPtrWriteTxnMarkersRequest()
	markers.Markers = []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 1, ProducerEpoch: 0, Committed: true,
		Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "absent", Partitions: []int32{0}}}}}
	if resp, err := markers.RequestWith(ctxT(t), bob.Broker(int(b.cfg.NodeID))); err != nil || resp.Markers[0].Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("WriteTxnMarkers with ALTER on the cluster: %v %+v", err, resp)
	}

	// Without DELETE on the cluster, DeleteTopics hides what may not be
	// described: alice may describe doomed and ghost, not hidden.
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "hidden"); err != nil {
		t.Fatal(err)
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("doomed", "ghost").Operations(kadm.OpDescribe))
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TimeoutMillis = 5000
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("doomed")}, {Topic: kmsg.StringPtr("ghost")}, {TopicID: b.topics.get("hidden").id}}
	resp, err := del.RequestWith(ctxT(t), login("alice"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int16{}
	for _, r := range resp.Topics {
		name := "<id>"
		if r.Topic != nil {
			name = *r.Topic
		}
		got[name] = r.ErrorCode
	}
	if len(got) != 3 || got["doomed"] != kerr.TopicAuthorizationFailed.Code || got["ghost"] != kerr.UnknownTopicOrPartition.Code ||
		got["<id>"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice's DeleteTopics: %v, want doomed refused, ghost unknown, hidden refused without its name", got)
	}

	if _, err := kadm.NewClient(bob).DeleteTopic(ctxT(t), "doomed"); err != nil {
		t.Fatalf("bob with DELETE on the cluster: %v", err)
	}
	if b.topics.get("doomed") != nil {
		t.Fatal("doomed is still there")
	}
}

func TestJavaHostAddress(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":        "127.0.0.1",
		"::ffff:10.0.0.1":  "10.0.0.1",
		"::1":              "0:0:0:0:0:0:0:1",
		"2001:db8::ab:0":   "2001:db8:0:0:0:0:ab:0",
		"fe80::1%eth0":     "fe80:0:0:0:0:0:0:1%eth0",
		"2001:DB8:0:0:1::": "2001:db8:0:0:1:0:0:0",
	} {
		host, zone, _ := strings.Cut(in, "%")
		if got := javaHostAddress(net.ParseIP(host), zone); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// TestAuthorizerKafkaApisChecks checks two more of KafkaApis' rules: the
// cluster's authorized operations are 0 to a principal that may not
// describe the cluster, and deleting a share group's offsets takes DELETE
// on the group (altering them, READ).
func TestAuthorizerKafkaApisChecks(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string, opts ...kgo.Opt) *kgo.Client {
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism(), append(opts, kgo.DisableIdempotentWrite())...)
	}
	adm := kadm.NewClient(login("admin"))
	alice, bob := login("alice"), login("bob")
	// Metadata has the cluster's operations in v8-v10 (Kafka 2.3-2.7).
	oldMeta := func(user string) *kgo.Client { return login(user, kgo.MaxVersions(kversion.V2_7_0())) }
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpIdempotentWrite))
	createACLs(t, adm, kadm.NewACLs().Allow("User:bob").Clusters().Operations(kadm.OpIdempotentWrite, kadm.OpDescribe))
	const describe, idempotent = 1 << int(kmsg.ACLOperationDescribe), 1 << int(kmsg.ACLOperationIdempotentWrite)
	for _, c := range []struct {
		who      string
		cl, meta *kgo.Client
		want     int32
	}{{"alice", alice, oldMeta("alice"), 0}, {"bob", bob, oldMeta("bob"), describe | idempotent}} {
		meta := kmsg.NewPtrMetadataRequest()
		meta.IncludeClusterAuthorizedOperations = true
		mr, err := meta.RequestWith(ctxT(t), c.meta)
		if err != nil {
			t.Fatal(err)
		}
		dc := kmsg.NewPtrDescribeClusterRequest()
		dc.IncludeClusterAuthorizedOperations = true
		dr, err := dc.RequestWith(ctxT(t), c.cl)
		if err != nil {
			t.Fatal(err)
		}
		if mr.AuthorizedOperations != c.want || dr.ClusterAuthorizedOperations != c.want {
			t.Errorf("%s: cluster operations %b in Metadata, %b in DescribeCluster, want %b", c.who, mr.AuthorizedOperations, dr.ClusterAuthorizedOperations, c.want)
		}
	}

	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Groups("shared").Operations(kadm.OpRead))
	createACLs(t, adm, kadm.NewACLs().Allow("User:bob").Groups("shared").Operations(kadm.OpDelete))
	deleteOffsets := func(cl *kgo.Client) int16 {
		t.Helper()
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = "shared"
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	if code := deleteOffsets(alice); code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("alice with READ on the group deleted its share offsets: error %d", code)
	}
	if code := deleteOffsets(bob); code == kerr.GroupAuthorizationFailed.Code {
		t.Error("bob with DELETE on the group was refused")
	}
}
