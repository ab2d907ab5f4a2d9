package broker

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// aclProps: saslProps with Kafka's StandardAuthorizer, admin a super user.
func aclProps(dir string) map[string]string {
	p := saslProps(dir)
	p["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	p["super.users"] = "User:admin"
	p["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
		`username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`
	return p
}

func createACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(ctxT(t), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("CreateACLs %+v: %v %s", r, r.Err, r.ErrMessage)
		}
	}
}

func produceErr(t *testing.T, cl *kgo.Client, topic string) error {
	t.Helper()
	return cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

func listedTopics(t *testing.T, cl *kgo.Client) map[string]bool {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, tp := range resp.Topics {
		out[*tp.Topic] = true
	}
	return out
}

func TestACLsWithRealClients(t *testing.T) {
	dir := t.TempDir()
	b := startBrokerWith(t, aclProps(dir))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string, opts ...kgo.Opt) *kgo.Client {
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism(), opts...)
	}
	adm := kadm.NewClient(login("admin"))
	for _, topic := range []string{"orders-eu", "orders-us", "payroll"} {
		if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	alice := login("alice", kgo.DisableIdempotentWrite())
	if err := produceErr(t, alice, "orders-eu"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice without ACLs produced: %v", err)
	}
	if got := listedTopics(t, alice); len(got) != 0 {
		t.Fatalf("alice without ACLs lists %v", got)
	}
	if _, err := kadm.NewClient(alice).CreateTopic(ctxT(t), 1, 1, nil, "alices"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice without CREATE created a topic: %v", err)
	}
	// CREATE alone does not let Metadata auto-create a topic: Kafka checks
	// DESCRIBE first. A topic asked for by id comes back without its name.
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("auto-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpCreate))
	meta := kmsg.NewPtrMetadataRequest()
	meta.AllowAutoTopicCreation = true
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("auto-hidden")}, {TopicID: b.topics.get("payroll").id}}
	resp, err := meta.RequestWith(ctxT(t), alice)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code ||
		resp.Topics[1].ErrorCode != kerr.TopicAuthorizationFailed.Code || resp.Topics[1].Topic != nil {
		t.Fatalf("metadata for alice: %+v", resp.Topics)
	}
	if b.topics.get("auto-hidden") != nil {
		t.Fatal("a topic alice may not describe was auto-created")
	}

	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("orders-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpWrite, kadm.OpRead))
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Groups("billing").Operations(kadm.OpRead))
	createACLs(t, adm, kadm.NewACLs().Deny("User:alice").Topics("orders-us").Operations(kadm.OpWrite))

	if err := produceErr(t, alice, "orders-eu"); err != nil {
		t.Fatalf("alice with WRITE on orders-*: %v", err)
	}
	if err := produceErr(t, alice, "orders-us"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("a DENY did not win over the prefixed ALLOW: %v", err)
	}
	if err := produceErr(t, alice, "payroll"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice wrote to payroll: %v", err)
	}
	if got := listedTopics(t, alice); len(got) != 2 || !got["orders-eu"] || !got["orders-us"] {
		t.Fatalf("alice lists %v, want the orders topics (READ and WRITE imply DESCRIBE)", got)
	}
	// An idempotent producer: alice may write to some topic, bob to none.
	if err := produceErr(t, login("alice"), "orders-eu"); err != nil {
		t.Fatalf("alice's idempotent producer: %v", err)
	}
	pid := kmsg.NewPtrInitProducerIDRequest()
	if resp, err := pid.RequestWith(ctxT(t), login("bob")); err != nil || resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("bob's InitProducerId: %v %+v", err, resp)
	}

	// alice consumes in the group she may read and commits; another group is refused.
	consumer := login("alice", kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders-eu"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := consumer.PollFetches(ctxT(t))
	if err := fs.Err0(); err != nil || len(fs.Records()) != 2 {
		t.Fatalf("alice in billing: %v, %d records", err, len(fs.Records()))
	}
	if err := consumer.CommitUncommittedOffsets(ctxT(t)); err != nil {
		t.Fatalf("alice's commit in billing: %v", err)
	}
	other := login("alice")
	if _, err := kadm.NewClient(other).FetchOffsets(ctxT(t), "audit"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("alice fetched the offsets of a group she has no ACL for: %v", err)
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "audit", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	// franz-go finds the coordinator first, which already needs DESCRIBE on
	// the group; the JoinGroup itself, sent to the broker, needs READ.
	if _, err := join.RequestWith(ctxT(t), other); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("alice found the coordinator of audit: %v", err)
	}
	if resp, err := join.RequestWith(ctxT(t), other.Broker(1)); err != nil || resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alice joined audit: %v %+v", err, resp)
	}

	// ACL administration needs the cluster: alice may not even describe them.
	describeAll := func(cl *kgo.Client) *kmsg.DescribeACLsResponse {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := describeAll(alice); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(r.Resources) != 0 {
		t.Fatalf("alice described ACLs: %+v", r)
	}
	acls := 0
	for _, res := range describeAll(login("admin")).Resources {
		acls += len(res.ACLs)
	}
	if acls != 5 {
		t.Fatalf("admin describes %d ACLs, want 5", acls)
	}

	// ACLs outlive a restart; deleting one takes its permission away.
	b.Close()
	b = startBrokerWith(t, aclProps(dir))
	addr = listenerAddr(t, b, "SASL_PLAINTEXT")
	alice, adm = login("alice", kgo.DisableIdempotentWrite()), kadm.NewClient(login("admin"))
	if err := produceErr(t, alice, "orders-eu"); err != nil {
		t.Fatalf("alice after restart: %v", err)
	}
	if _, err := adm.DeleteACLs(ctxT(t), kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite, kadm.OpRead)); err != nil {
		t.Fatal(err)
	}
	if err := produceErr(t, alice, "orders-eu"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice wrote after her ACL was deleted: %v", err)
	}

	// A group's configs need DESCRIBE_CONFIGS or ALTER_CONFIGS on the
	// group; READ, which alice has on billing, is not enough.
	describeGroup := func() int16 {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "billing"}}
		resp, err := req.RequestWith(ctxT(t), alice)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0].ErrorCode
	}
	if code := describeGroup(); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alice described billing's configs with READ only: error %d", code)
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Groups("billing").Operations(kadm.OpDescribeConfigs))
	if code := describeGroup(); code != 0 {
		t.Fatalf("alice with DESCRIBE_CONFIGS on billing: error %d", code)
	}
	if code := alterGroupConfigs(t, alice, "billing", setOp("consumer.session.timeout.ms", "50000")); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alice altered billing's configs without ALTER_CONFIGS: error %d", code)
	}
}

func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	b := startBroker(t, nil)
	rc := dialRaw(t, b)
	for _, v := range bothEnds(29) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.SetVersion(v)
		req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		if r := rc.request(req).(*kmsg.DescribeACLsResponse); r.ErrorCode != kerr.SecurityDisabled.Code {
			t.Fatalf("DescribeAcls v%d: %+v", v, r)
		}
	}
	for _, v := range bothEnds(30) {
		req := kmsg.NewPtrCreateACLsRequest()
		req.SetVersion(v)
		req.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:a", Host: "*", Operation: kmsg.ACLOperationRead, PermissionType: kmsg.ACLPermissionTypeAllow}}
		if r := rc.request(req).(*kmsg.CreateACLsResponse); len(r.Results) != 1 || r.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
			t.Fatalf("CreateAcls v%d: %+v", v, r)
		}
	}
	for _, v := range bothEnds(31) {
		req := kmsg.NewPtrDeleteACLsRequest()
		req.SetVersion(v)
		req.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: kmsg.ACLResourceTypeAny, ResourcePatternType: kmsg.ACLResourcePatternTypeAny,
			Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny}}
		if r := rc.request(req).(*kmsg.DeleteACLsResponse); len(r.Results) != 1 || r.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
			t.Fatalf("DeleteAcls v%d: %+v", v, r)
		}
	}
}

func TestAuthorizerConfig(t *testing.T) {
	for _, c := range []map[string]string{
		{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"},
		{"super.users": "admin"},
	} {
		c["log.dirs"] = t.TempDir()
		if _, _, err := ParseConfig(c); err == nil {
			t.Errorf("%v accepted", c)
		}
	}
}

// ACLs created through one broker of a cluster are enforced by every
// broker, and replicas (super users) still replicate. The nodes are
// ANONYMOUS on the PLAINTEXT CONTROLLER listener, so, as in Kafka, that
// principal must be a super user for the quorum to form and the brokers
// to register.
func TestClusterACLs(t *testing.T) {
	c := startCluster(t, 3, map[string]string{
		"listener.security.protocol.map":                 "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":                        "PLAIN",
		"sasl.mechanism.inter.broker.protocol":           "PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config": aclProps("")["listener.name.sasl_plaintext.plain.sasl.jaas.config"],
		"authorizer.class.name":                          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                                    "User:admin;User:ANONYMOUS",
	})
	admin := c.client(kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctxT(t), 3, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("3")}, "guarded"); err != nil {
		t.Fatal(err)
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("guarded").Operations(kadm.OpWrite))
	c.waitFor("every broker knowing the ACL", func() bool {
		for _, b := range c.nodes {
			if len(b.acls()) != 1 {
				return false
			}
		}
		return true
	})
	alice := c.client(kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 9 {
		if err := alice.ProduceSync(ctxT(t), &kgo.Record{Topic: "guarded", Partition: int32(i % 3), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("alice's acks=all write to partition %d: %v", i%3, err)
		}
	}
	bob := c.client(kgo.SASL(plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism()), kgo.DisableIdempotentWrite())
	if err := produceErr(t, bob, "guarded"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob wrote to guarded: %v", err)
	}
}

// Transactional ids are ACL resources: without WRITE on hers, alice's
// transactional producer is refused; with it, she commits a transaction,
// and bob, who may not describe it, cannot see it listed.
func TestTransactionalIDACLs(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string, opts ...kgo.Opt) *kgo.Client {
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism(), opts...)
	}
	adm := kadm.NewClient(login("admin"))
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "ledger"); err != nil {
		t.Fatal(err)
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("ledger").Operations(kadm.OpWrite, kadm.OpRead))
	alice := login("alice", kgo.TransactionalID("alice-tx"))
	err := alice.BeginTransaction()
	if err == nil {
		err = produceErr(t, alice, "ledger")
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("alice without WRITE on her transactional id: %v", err)
	}

	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").TransactionalIDs("alice-tx").Operations(kadm.OpWrite))
	alice = login("alice", kgo.TransactionalID("alice-tx"))
	if err := alice.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := produceErr(t, alice, "ledger"); err != nil {
		t.Fatalf("alice with WRITE on her transactional id: %v", err)
	}
	if err := alice.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	listed, err := kadm.NewClient(login("bob")).ListTransactions(ctxT(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := listed.TransactionalIDs(); len(ids) != 0 {
		t.Fatalf("bob, without DESCRIBE, sees transactions %v", ids)
	}
	if ids := mustList(t, adm); len(ids) != 1 || ids[0] != "alice-tx" {
		t.Fatalf("admin lists transactions %v", ids)
	}
}

// DescribeTransactions answers the transactional ids in the request's
// order, a refused one (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) in its
// place, as Kafka's handleDescribeTransactionsRequest builds the answer id
// by id.
func TestDescribeTransactionsKeepsTheOrder(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	adm := kadm.NewClient(saslClient(t, addr, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").TransactionalIDs("b-tx").Operations(kadm.OpDescribe))
	alice := saslClient(t, addr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"a-tx", "b-tx", "c-tx"}
	r, err := alice.Broker(int(b.cfg.NodeID)).Request(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	states := r.(*kmsg.DescribeTransactionsResponse).TransactionStates
	refused := kerr.TransactionalIDAuthorizationFailed.Code
	if len(states) != 3 || states[0].TransactionalID != "a-tx" || states[0].ErrorCode != refused ||
		states[1].TransactionalID != "b-tx" || states[1].ErrorCode == refused ||
		states[2].TransactionalID != "c-tx" || states[2].ErrorCode != refused {
		t.Fatalf("DescribeTransactions: %+v", states)
	}
}

// DescribeGroups answers the groups the principal may not describe first,
// then those described, as Kafka's handleDescribeGroupsRequest adds the
// refusals before the coordinator's answers.
func TestDescribeGroupsRefusalsFirst(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	adm := kadm.NewClient(saslClient(t, addr, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Groups("billing").Operations(kadm.OpDescribe))
	alice := saslClient(t, addr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"billing"}
	if _, err := alice.Broker(int(b.cfg.NodeID)).Request(ctxT(t), fc); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{"billing", "payroll"}
	r, err := alice.Broker(int(b.cfg.NodeID)).Request(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	groups := r.(*kmsg.DescribeGroupsResponse).Groups
	if len(groups) != 2 || groups[0].Group != "payroll" || groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code ||
		groups[1].Group != "billing" || groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("DescribeGroups: %+v", groups)
	}
}

func mustList(t *testing.T, adm *kadm.Client) []string {
	t.Helper()
	listed, err := adm.ListTransactions(ctxT(t), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return listed.TransactionalIDs()
}

// A described group's authorized operations are the asker's, as Kafka's
// KafkaApis computes them for each group described without an error:
// alice's READ implies DESCRIBE and her ALTER_CONFIGS DESCRIBE_CONFIGS,
// but she may not DELETE; a super user may do all five of a group's.
func TestDescribedGroupAuthorizedOperations(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string) *kgo.Client {
		// DescribeGroups v5 (Kafka 2.7's): a group nobody has joined is
		// described as Dead, without an error.
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism(), kgo.MaxVersions(kversion.V2_7_0()))
	}
	adm := kadm.NewClient(login("admin"))
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Groups("billing").Operations(kadm.OpRead, kadm.OpAlterConfigs))
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups, req.IncludeAuthorizedOperations = []string{"billing"}, true
	for _, c := range []struct {
		who  string
		want int32
	}{
		{"alice", 1<<opRead | 1<<opDescribe | 1<<opDescribeConfigs | 1<<opAlterConfigs},
		{"admin", 1<<opRead | 1<<opDelete | 1<<opDescribe | 1<<opDescribeConfigs | 1<<opAlterConfigs},
	} {
		resp, err := req.RequestWith(ctxT(t), login(c.who))
		if err != nil {
			t.Fatal(err)
		}
		if g := resp.Groups[0]; g.ErrorCode != 0 || g.AuthorizedOperations != c.want {
			t.Errorf("%s: %+v, want authorized operations %b", c.who, g, c.want)
		}
	}
}

// CreateTopics as Kafka's ControllerApis authorizes it: a topic alice may
// create but not DESCRIBE_CONFIGS is created without its configs,
// partition count and replication factor in the answer (config error
// TOPIC_AUTHORIZATION_FAILED); one she may not create is refused with
// "Authorization failed."; a name given twice, and the metadata topic's,
// are INVALID_REQUEST whatever her ACLs. CreatePartitions and DeleteTopics
// the same way.
func TestTopicAdminACLs(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	login := func(user string) *kgo.Client {
		return saslClient(t, addr, plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism())
	}
	adm := kadm.NewClient(login("admin"))
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("alice-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpCreate))
	createACLs(t, adm, kadm.NewACLs().Allow("User:alice").Topics("alice-shown").Operations(kadm.OpAlterConfigs))
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"alice-shown", "alice-hidden", "bobs", "twice", "twice", "__cluster_metadata"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 2, 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctxT(t), login("alice"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]kmsg.CreateTopicsResponseTopic{}
	for _, rt := range resp.Topics {
		if _, dup := got[rt.Topic]; dup {
			t.Errorf("%s answered twice", rt.Topic)
		}
		got[rt.Topic] = rt
	}
	if len(got) != 5 {
		t.Fatalf("answers %+v", resp.Topics)
	}
	if s := got["alice-shown"]; s.ErrorCode != 0 || s.ConfigErrorCode != 0 || s.NumPartitions != 2 || s.ReplicationFactor != 1 || len(s.Configs) == 0 {
		t.Errorf("alice-shown: %+v", s)
	}
	if h := got["alice-hidden"]; h.ErrorCode != 0 || h.ConfigErrorCode != kerr.TopicAuthorizationFailed.Code ||
		h.NumPartitions != -1 || h.ReplicationFactor != -1 || len(h.Configs) != 0 || h.TopicID == [16]byte{} {
		t.Errorf("alice-hidden: %+v", h)
	}
	if b.topics.get("alice-hidden") == nil {
		t.Error("alice-hidden was not created")
	}
	if r := got["bobs"]; r.ErrorCode != kerr.TopicAuthorizationFailed.Code || r.ErrorMessage == nil || *r.ErrorMessage != "Authorization failed." {
		t.Errorf("bobs: %+v", r)
	}
	for name, msg := range map[string]string{"twice": "Duplicate topic name.", "__cluster_metadata": "Creation of internal topic __cluster_metadata is prohibited."} {
		if r := got[name]; r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != msg {
			t.Errorf("%s: %+v", name, r)
		}
	}

	// CreatePartitions likewise: without ALTER, TOPIC_AUTHORIZATION_FAILED
	// and no message; a name given twice, INVALID_REQUEST once.
	cp := kmsg.NewPtrCreatePartitionsRequest()
	for _, name := range []string{"alice-shown", "twice", "twice"} {
		cp.Topics = append(cp.Topics, kmsg.CreatePartitionsRequestTopic{Topic: name, Count: 3})
	}
	cpResp, err := cp.RequestWith(ctxT(t), login("alice"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cpResp.Topics) != 2 {
		t.Fatalf("CreatePartitions answers %+v", cpResp.Topics)
	}
	for _, r := range cpResp.Topics {
		switch {
		case r.Topic == "alice-shown" && r.ErrorCode == kerr.TopicAuthorizationFailed.Code && r.ErrorMessage == nil:
		case r.Topic == "twice" && r.ErrorCode == kerr.InvalidRequest.Code && r.ErrorMessage != nil && *r.ErrorMessage == "Duplicate topic name.":
		default:
			t.Errorf("CreatePartitions %s: %+v", r.Topic, r)
		}
	}

	// DeleteTopics refuses malformed entries before it authorizes: a name
	// given twice, or a name with an id, is INVALID_REQUEST.
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("payroll")}, {Topic: kmsg.StringPtr("payroll")},
		{Topic: kmsg.StringPtr("ledger"), TopicID: [16]byte{1}}}
	dtResp, err := dt.RequestWith(ctxT(t), login("alice"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"payroll": "Duplicate topic name.", "ledger": "You may not specify both topic name and topic id."}
	if len(dtResp.Topics) != len(want) {
		t.Fatalf("DeleteTopics answers %+v", dtResp.Topics)
	}
	for _, r := range dtResp.Topics {
		if r.Topic == nil || r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil || *r.ErrorMessage != want[*r.Topic] {
			t.Errorf("DeleteTopics: %+v", r)
		}
	}
}

// A CreateAcls, DescribeAcls or DeleteAcls naming UNKNOWN (code 0) as a
// resource type, pattern type, operation or permission does not parse in
// Kafka (the requests' validate, at construction), which closes the
// connection before any authorizer is asked.
func TestACLRequestsWithUnknownElementsClose(t *testing.T) {
	b := startBroker(t, nil)
	create := kmsg.NewPtrCreateACLsRequest()
	create.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t",
		ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: "User:a", Host: "*", Operation: kmsg.ACLOperationUnknown,
		PermissionType: kmsg.ACLPermissionTypeAllow}}
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeUnknown
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Filters = []kmsg.DeleteACLsRequestFilter{
		{ResourceType: kmsg.ACLResourceTypeAny, ResourcePatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny},
		{ResourceType: kmsg.ACLResourceTypeAny, ResourcePatternType: kmsg.ACLResourcePatternTypeUnknown, Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny},
	}
	sendTo := func(addr string) {
		t.Helper()
		for _, req := range []kmsg.Request{create, describe, del} {
			req.SetVersion(3)
			rc := dialAddr(t, addr)
			rc.corrID++
			if _, err := rc.nc.Write(encodeRequest(req, rc.corrID)); err != nil {
				t.Fatal(err)
			}
			rc.expectClosed()
		}
	}
	sendTo(b.Addr())
	// A cluster's CONTROLLER listener (kafka-acls --bootstrap-controller):
	// Kafka's controller parses the requests the same way.
	c := startCluster(t, 1, nil)
	sendTo(strings.TrimPrefix(strings.Split(c.props[0]["listeners"], ",")[1], "CONTROLLER://"))
}
