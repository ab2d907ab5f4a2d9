package broker

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"testing"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// singleNodeProps are those of a single node whose server.properties names
// a CONTROLLER listener, as Kafka's shipped file does.
func singleNodeProps(dir string) map[string]string {
	return map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.listener.names": "CONTROLLER", "log.dirs": dir}
}

// describeMetadataQuorum asks for __cluster_metadata-0, as
// kafka-metadata-quorum does, and returns its one partition.
func describeMetadataQuorum(t *testing.T, addr string) (*kmsg.DescribeQuorumResponse, kmsg.DescribeQuorumResponseTopicPartition) {
	t.Helper()
	resp := dialAddr(t, addr).request(quorumRequest(controller.MetadataTopic)).(*kmsg.DescribeQuorumResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeQuorum answered %+v", resp)
	}
	return resp, resp.Topics[0].Partitions[0]
}

func quorumRequest(topic string) *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.SetVersion(2)
	req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: topic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	return req
}

// refusesDescribes fails the test unless who, on conn to a CONTROLLER
// listener, gets CLUSTER_AUTHORIZATION_FAILED for DescribeQuorum (which
// needs DESCRIBE on the cluster) and DescribeCluster (ALTER there).
func refusesDescribes(t *testing.T, conn *rawConn, who string) {
	t.Helper()
	if r := conn.request(quorumRequest(controller.MetadataTopic)).(*kmsg.DescribeQuorumResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("DescribeQuorum by %s: %+v, want CLUSTER_AUTHORIZATION_FAILED", who, r)
	}
	describe := kmsg.NewPtrDescribeClusterRequest()
	describe.SetVersion(1)
	describe.EndpointType = 2 // controllers
	if r := conn.request(describe).(*kmsg.DescribeClusterResponse); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("DescribeCluster by %s: %+v, want CLUSTER_AUTHORIZATION_FAILED", who, r)
	}
}

// A single node serves its CONTROLLER listener as the controller of a
// quorum of one: ApiVersions lists the admin APIs Kafka's controller
// serves, DescribeCluster lists this node as the controller, and
// DescribeQuorum, on either listener, shows it as leader and only voter,
// with an epoch that grows at each start and a high watermark that grows
// with each metadata change.
func TestSingleNodeControllerListener(t *testing.T) {
	props := singleNodeProps(t.TempDir())
	b := startBrokerWith(t, props)
	ctlAddr := b.ControllerAddr()
	if ctlAddr == "" {
		t.Fatal("the CONTROLLER listener is not bound")
	}
	ctl := dialAddr(t, ctlAddr)
	versions := ctl.request(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	var keys []int16
	for _, k := range versions.ApiKeys {
		keys = append(keys, k.ApiKey)
	}
	if want := slices.Sorted(maps.Keys(singleNodeControllerHandlers())); !slices.Equal(keys, want) {
		t.Fatalf("the CONTROLLER listener serves %v, want %v", keys, want)
	}
	if slices.Contains(keys, 0) || slices.Contains(keys, 1) {
		t.Fatalf("the CONTROLLER listener serves Produce or Fetch: %v", keys)
	}

	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.SetVersion(2)
	dc.EndpointType = endpointTypeControllers
	cluster := ctl.request(dc).(*kmsg.DescribeClusterResponse)
	host, portText, _ := net.SplitHostPort(ctlAddr)
	port, _ := strconv.Atoi(portText)
	if cluster.ErrorCode != 0 || cluster.ClusterID != b.ClusterID() || cluster.ControllerID != 1 || len(cluster.Brokers) != 1 ||
		cluster.Brokers[0].NodeID != 1 || cluster.Brokers[0].Host != host || cluster.Brokers[0].Port != int32(port) {
		t.Fatalf("DescribeCluster for controllers answered %+v", cluster)
	}
	dc.EndpointType = endpointTypeBrokers
	if cluster = ctl.request(dc).(*kmsg.DescribeClusterResponse); cluster.ErrorCode != errMismatchedEndpointType {
		t.Fatalf("DescribeCluster for brokers on the CONTROLLER listener: %+v", cluster)
	}

	check := func(addr string, epoch int32) int64 {
		t.Helper()
		resp, p := describeMetadataQuorum(t, addr)
		if p.ErrorCode != 0 || p.LeaderID != 1 || p.LeaderEpoch != epoch || len(p.CurrentVoters) != 1 || len(p.Observers) != 0 {
			t.Fatalf("DescribeQuorum partition %+v, want leader 1 at epoch %d, the only voter", p, epoch)
		}
		v := p.CurrentVoters[0]
		if v.ReplicaID != 1 || v.ReplicaDirectoryID != b.dirs.All()[0].DirectoryID() || v.LogEndOffset != p.HighWatermark ||
			p.HighWatermark < 1 || v.LastCaughtUpTimestamp != v.LastFetchTimestamp || v.LastFetchTimestamp <= 0 {
			t.Fatalf("the voter %+v (high watermark %d)", v, p.HighWatermark)
		}
		if len(resp.Nodes) != 1 || resp.Nodes[0].NodeID != 1 || len(resp.Nodes[0].Listeners) != 1 ||
			resp.Nodes[0].Listeners[0].Name != "CONTROLLER" || resp.Nodes[0].Listeners[0].Host != host ||
			resp.Nodes[0].Listeners[0].Port != uint16(port) {
			t.Fatalf("DescribeQuorum nodes %+v, want node 1 at CONTROLLER://%s", resp.Nodes, ctlAddr)
		}
		return p.HighWatermark
	}
	start := check(b.Addr(), 1)
	if check(ctlAddr, 1) != start {
		t.Fatal("the two listeners disagree on the high watermark")
	}
	adm := newAdmin(t, b)
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "quorum-t"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreatePartitions(ctxT(t), 1, "quorum-t"); err != nil {
		t.Fatal(err)
	}
	if hw := check(ctlAddr, 1); hw != start+2 {
		t.Fatalf("high watermark %d after a topic and a partition were created, want %d", hw, start+2)
	}

	resp := dialRaw(t, b).request(quorumRequest("quorum-t")).(*kmsg.DescribeQuorumResponse)
	// With the error's message, as DescribeQuorumRequest's
	// getPartitionLevelErrorResponse gives it.
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 ||
		resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code ||
		resp.Topics[0].Partitions[0].ErrorMessage == nil || *resp.Topics[0].Partitions[0].ErrorMessage != kerr.UnknownTopicOrPartition.Description {
		t.Fatalf("DescribeQuorum of another partition: %+v", resp)
	}

	// A restart is a new election: the epoch grows, and so does the log.
	before := check(b.Addr(), 1)
	b.Close()
	b = startBrokerWith(t, props)
	ctlAddr = b.ControllerAddr()
	host, portText, _ = net.SplitHostPort(ctlAddr)
	port, _ = strconv.Atoi(portText)
	if after := check(ctlAddr, 2); after <= before {
		t.Fatalf("high watermark %d after the restart, was %d", after, before)
	}
}

// With an authorizer, the CONTROLLER listener's client is ANONYMOUS and
// gets only what the ACLs allow it, as on a client listener, but for
// DescribeCluster, which Kafka's controller allows only with ALTER.
func TestSingleNodeControllerListenerIsAuthorized(t *testing.T) {
	props := singleNodeProps(t.TempDir())
	props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	b := startBrokerWith(t, props)
	ctl := dialAddr(t, b.ControllerAddr())
	refusesDescribes(t, ctl, "ANONYMOUS")
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "denied", 1, 1
	create.Topics = append(create.Topics, topic)
	created := ctl.request(create).(*kmsg.CreateTopicsResponse)
	if len(created.Topics) != 1 || created.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("CreateTopics by ANONYMOUS: %+v", created)
	}
	if b.topics.get("denied") != nil {
		t.Fatal("the topic was created")
	}
}

// A DescribeCluster refused for its endpoint type does not echo the type:
// Kafka's answer keeps the field's default (1), as its AuthHelper builds
// a fresh response with only the error.
func TestDescribeClusterRefusalEndpointType(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	for typ, code := range map[int8]int16{endpointTypeControllers: errMismatchedEndpointType, 5: errUnsupportedEndpointType} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.SetVersion(2)
		req.EndpointType = typ
		if r := rc.request(req).(*kmsg.DescribeClusterResponse); r.ErrorCode != code || r.EndpointType != endpointTypeBrokers {
			t.Errorf("endpoint type %d: error %d, endpoint type %d; want error %d, endpoint type 1", typ, r.ErrorCode, r.EndpointType, code)
		}
	}
}

// DescribeCluster on the CONTROLLER listener reports the cluster
// operations the ACLs allow, as Kafka's ControllerApis computes them with
// the broker's AuthHelper: ALTER (which DescribeCluster there needs) and
// the DESCRIBE it implies, not every operation.
func TestControllerDescribeClusterAuthorizedOperations(t *testing.T) {
	dir := t.TempDir()
	props := singleNodeProps(dir)
	props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	props["super.users"] = "User:ANONYMOUS"
	b := startBrokerWith(t, props)
	createACLs(t, newAdmin(t, b), kadm.NewACLs().Allow("User:ANONYMOUS").AllowHosts("*").Clusters().Operations(kadm.OpAlter))
	b.Close()
	delete(props, "super.users")
	b = startBrokerWith(t, props)
	req := kmsg.NewPtrDescribeClusterRequest()
	req.SetVersion(2)
	req.EndpointType, req.IncludeClusterAuthorizedOperations = endpointTypeControllers, true
	r := dialAddr(t, b.ControllerAddr()).request(req).(*kmsg.DescribeClusterResponse)
	if want := int32(1<<opAlter | 1<<opDescribe); r.ErrorCode != 0 || r.ClusterAuthorizedOperations != want {
		t.Fatalf("error %d, cluster operations %b; want %b", r.ErrorCode, r.ClusterAuthorizedOperations, want)
	}
}
