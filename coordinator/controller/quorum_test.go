package controller

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/delegation"
	"github.com/gregor-broker/gregor/quota"
	"github.com/gregor-broker/gregor/sasl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every voter applies a committed change at once, as Kafka's followers
// learn a new high watermark from their parked fetch: with raft's idle
// commit notice a minute away (and no broker fenced, which would be a
// next entry), new topics still show on every node within the half
// minute waitAll allows.
func TestFollowersApplyCommittedChangesAtOnce(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.commitTimeout, c.SessionTimeout = time.Minute, 5*time.Minute })
	cl := tc.client()
	registerUnfenced(t, cl, 3)
	for i := range 3 {
		name := "fresh" + strconv.Itoa(i)
		if r := createTopic(t, cl, name, 3, 3, nil); r.ErrorCode != 0 {
			t.Fatalf("creating %s: error %d", name, r.ErrorCode)
		}
		tc.waitAll(name+" on every node", func(img *Image) bool { return img.Topics[name] != nil })
	}
}

// Three voters bootstrap without a format step, elect a leader, and agree
// on one cluster id in Kafka's Uuid form.
func TestBootstrapAgreesOnClusterID(t *testing.T) {
	tc := startCluster(t, 3, nil)
	leader := tc.active()
	id := tc.ctl(leader).Image().ClusterID
	if len(id) != 22 {
		t.Fatalf("cluster id %q is not a 22-character base64 uuid", id)
	}
	tc.waitAll("every voter to have the cluster id", func(img *Image) bool { return img.ClusterID == id })
	for i := range tc.nodes {
		got, ok := tc.ctl(i).LeaderID()
		if !ok || got != tc.nodes[leader].id {
			t.Fatalf("node %d reports leader %d (%v), want %d", i+1, got, ok, tc.nodes[leader].id)
		}
	}
}

// A follower answers NOT_CONTROLLER; the Client finds the active one.
func TestFollowerAnswersNotController(t *testing.T) {
	tc := startCluster(t, 3, nil)
	leader := tc.active()
	follower := (leader + 1) % 3
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(req.MaxVersion())
	req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t", NumPartitions: 1, ReplicationFactor: 1}}
	resp, err := tc.ctl(follower).Handle(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !IsNotController(resp) {
		t.Fatalf("follower answered %+v, want NOT_CONTROLLER", resp)
	}
	// Over a raw connection to the follower as well.
	conn, err := net.Dial("tcp", tc.nodes[follower].addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w := &wireConn{conn: conn}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.SetVersion(hb.MaxVersion())
	raw, err := w.roundTrip(context.Background(), "raw", hb)
	if err != nil {
		t.Fatal(err)
	}
	if code := raw.(*kmsg.BrokerHeartbeatResponse).ErrorCode; code != kerr.NotController.Code {
		t.Fatalf("heartbeat to follower: error %d, want NOT_CONTROLLER", code)
	}
	// A non-controller API is refused outright.
	if _, err := tc.ctl(leader).Handle(context.Background(), kmsg.NewPtrMetadataRequest()); err == nil {
		t.Fatal("Handle accepted a Metadata request")
	}
}

// Closing the active controller hands over to another; losing it without
// a word (crash) gets another elected. Either way the metadata survives
// and the Client carries on against the new leader.
func TestLeaderFailoverKeepsState(t *testing.T) {
	t.Run("close", func(t *testing.T) { testFailover(t, false) })
	t.Run("crash", func(t *testing.T) { testFailover(t, true) })
}

func testFailover(t *testing.T, crash bool) {
	tc := startCluster(t, 3, nil)
	cl := tc.client()
	registerUnfenced(t, cl, 3)
	if r := createTopic(t, cl, "before", 3, 3, nil); r.ErrorCode != 0 {
		t.Fatalf("create: %d", r.ErrorCode)
	}
	old := tc.active()
	clusterID := tc.ctl(old).Image().ClusterID
	want := tc.ctl(old).Image().Topics["before"]
	stopped := time.Now()
	if crash {
		tc.crash(old)
	} else {
		tc.stop(old)
	}

	next := tc.active()
	t.Logf("new active controller %v after the old one closed", time.Since(stopped).Round(time.Millisecond))
	if next == old {
		t.Fatal("the stopped node is still active")
	}
	img := tc.ctl(next).Image()
	if img.ClusterID != clusterID {
		t.Fatalf("cluster id changed: %q -> %q", clusterID, img.ClusterID)
	}
	got := img.Topics["before"]
	if got == nil || got.ID != want.ID || len(got.Partitions) != 3 {
		t.Fatalf("topic after failover: %+v, want %+v", got, want)
	}
	if len(img.Brokers) != 3 {
		t.Fatalf("brokers after failover: %d", len(img.Brokers))
	}
	if r := createTopic(t, cl, "after", 1, 2, nil); r.ErrorCode != 0 {
		t.Fatalf("create on the new leader: %d", r.ErrorCode)
	}
	// The old leader comes back as a follower and catches up.
	tc.start(old)
	tc.waitAll("the restarted node to catch up", func(img *Image) bool { return img.Topics["after"] != nil })
}

// All voters stop and start again from their directories: the image comes
// back from snapshot plus log, and writes continue.
func TestRestartFromDisk(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) {
		c.Tokens = delegation.Config{SecretKey: "s", MaxLifetimeMs: 60_000, ExpiryTimeMs: 60_000}
	})
	cl := tc.client()
	brokers := registerUnfenced(t, cl, 3)
	createTopic(t, cl, "snapped", 2, 3, map[string]string{"cleanup.policy": "compact"})
	cq := kmsg.NewPtrAlterClientQuotasRequest()
	cq.Entries = []kmsg.AlterClientQuotasRequestEntry{{
		Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: kmsg.StringPtr("app")}},
		Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}},
	}}
	if r := send[*kmsg.AlterClientQuotasResponse](t, cl, cq); r.Entries[0].ErrorCode != 0 {
		t.Fatalf("alter client quotas: %d", r.Entries[0].ErrorCode)
	}
	sc := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	sc.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "alice", Mechanism: int8(sasl.Sha512), Iterations: 8192,
		Salt: []byte("salt"), SaltedPassword: []byte("salted-password")}}
	if r := send[*kmsg.AlterUserSCRAMCredentialsResponse](t, cl, sc); r.Results[0].ErrorCode != 0 {
		t.Fatalf("alter SCRAM credentials: %d", r.Results[0].ErrorCode)
	}
	ca := kmsg.NewPtrCreateACLsRequest()
	ca.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "snapped",
		ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: "User:alice", Host: "*", Operation: kmsg.ACLOperationRead, PermissionType: kmsg.ACLPermissionTypeAllow}}
	if r := send[*kmsg.CreateACLsResponse](t, cl, ca); r.Results[0].ErrorCode != 0 {
		t.Fatalf("create ACL: %d", r.Results[0].ErrorCode)
	}
	fu := kmsg.NewPtrUpdateFeaturesRequest()
	fu.SetVersion(1)
	fu.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "group.version", MaxVersionLevel: 0, UpgradeType: 2}}
	if r := send[*kmsg.UpdateFeaturesResponse](t, cl, fu); r.ErrorCode != 0 || r.Results[0].ErrorCode != 0 {
		t.Fatalf("update features: %+v", r)
	}
	env := send[*kmsg.EnvelopeResponse](t, cl, Envelope(kmsg.NewPtrCreateDelegationTokenRequest(), Principal{Type: "User", Name: "alice"}, "test", nil))
	inner, err := Unwrapped(kmsg.NewPtrCreateDelegationTokenRequest(), env)
	if err != nil || inner.(*kmsg.CreateDelegationTokenResponse).ErrorCode != 0 {
		t.Fatalf("create delegation token: %+v %v", inner, err)
	}
	token := inner.(*kmsg.CreateDelegationTokenResponse)
	tc.waitAll("the topic, quota, credential, ACL, feature and token everywhere", func(img *Image) bool {
		return img.Topics["snapped"] != nil && len(img.ClientQuotas) == 1 && len(img.ScramCredentials) == 1 && len(img.ACLs) == 1 &&
			len(img.Features) == 1 && len(img.DelegationTokens) == 1
	})
	for i := range tc.nodes {
		if err := tc.ctl(i).Snapshot(); err != nil {
			t.Fatalf("snapshot on node %d: %v", i+1, err)
		}
	}
	createTopic(t, cl, "logged", 1, 1, nil)
	alloc := kmsg.NewPtrAllocateProducerIDsRequest()
	alloc.BrokerID, alloc.BrokerEpoch = brokers[0].id, brokers[0].epoch
	send[*kmsg.AllocateProducerIDsResponse](t, cl, alloc)
	tc.waitAll("the last writes everywhere", func(img *Image) bool { return img.NextProducerID == producerIDBlock })
	before := tc.ctl(0).Image()

	for i := range tc.nodes {
		tc.stop(i)
	}
	for i := range tc.nodes {
		tc.start(i)
	}
	leader := tc.active()
	img := tc.ctl(leader).Image()
	if img.ClusterID != before.ClusterID || img.NextProducerID != before.NextProducerID {
		t.Fatalf("after restart: cluster %q next pid %d, want %q %d", img.ClusterID, img.NextProducerID,
			before.ClusterID, before.NextProducerID)
	}
	for _, name := range []string{"snapped", "logged"} {
		if got, want := img.Topics[name], before.Topics[name]; got == nil || got.ID != want.ID ||
			len(got.Partitions) != len(want.Partitions) {
			t.Fatalf("topic %s after restart: %+v, want %+v", name, got, want)
		}
	}
	if v, _ := img.TopicConfig("snapped", "cleanup.policy"); v != "compact" {
		t.Fatalf("config after restart: %q", v)
	}
	if qs := img.ClientQuotas; len(qs) != 1 || quota.Sorted(qs)[0].Values["producer_byte_rate"] != 1024 {
		t.Fatalf("client quotas after restart (from the snapshot): %+v", qs)
	}
	want := sasl.NewCredential(sasl.Sha512, []byte("salt"), []byte("salted-password"), 8192)
	if got, ok := img.ScramCredentials[sasl.CredentialKey("alice", sasl.Sha512)]; !ok || !bytes.Equal(got.StoredKey, want.StoredKey) ||
		!bytes.Equal(got.ServerKey, want.ServerKey) || got.Iterations != 8192 {
		t.Fatalf("SCRAM credentials after restart (from the snapshot): %+v", img.ScramCredentials)
	}
	if len(img.ACLs) != 1 {
		t.Fatalf("ACLs after restart (from the snapshot): %+v", img.ACLs)
	}
	for _, b := range img.ACLs {
		if b.ResourceName != "snapped" || b.Principal != "User:alice" || b.Operation != kmsg.ACLOperationRead {
			t.Fatalf("ACL after restart: %+v", b)
		}
	}
	if img.Features["group.version"] != 0 || len(img.Features) != 1 {
		t.Fatalf("features after restart (from the snapshot): %v", img.Features)
	}
	if tok := img.DelegationTokens[token.TokenID]; tok.Owner != "User:alice" || !bytes.Equal(tok.HMAC, token.HMAC) ||
		tok.ExpiryMs != token.ExpiryTimestamp || len(tok.Credentials) != 2 {
		t.Fatalf("delegation tokens after restart (from the snapshot): %+v", img.DelegationTokens)
	}
	if b := img.Brokers[1]; b == nil || b.Epoch != brokers[0].epoch {
		t.Fatalf("broker 1 after restart: %+v", b)
	}
	// The registered epoch still heartbeats; the new leader gave every broker a fresh session.
	if r := heartbeat(t, cl, brokers[0], int64(img.Offset), false, false); r.ErrorCode != 0 {
		t.Fatalf("heartbeat after restart: %d", r.ErrorCode)
	}
	if r := createTopic(t, cl, "later", 1, 1, nil); r.ErrorCode != 0 {
		t.Fatalf("create after restart: %d", r.ErrorCode)
	}
}

// A single voter is a quorum of one.
func TestSingleVoter(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	registerUnfenced(t, cl, 1)
	r := createTopic(t, cl, "solo", 2, -1, nil)
	if r.ErrorCode != 0 || r.ReplicationFactor != 1 || r.NumPartitions != 2 {
		t.Fatalf("create: %+v", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for tc.ctl(0).Image().Topics["solo"] == nil && time.Now().Before(deadline) {
		<-tc.ctl(0).Changed()
	}
	if tc.ctl(0).Image().Topics["solo"] == nil {
		t.Fatal("Changed never signalled the topic")
	}
}

// A broker-only node runs as an observer: once its broker registers with
// the observer listener, the active controller adds it as a raft
// non-voter and its image follows the metadata log, across a leader change.
func TestObserverFollowsMetadata(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.ObserverListener = "INTERNAL" })
	cl := tc.client()
	registerUnfenced(t, cl, 3)
	obs, addr := tc.addObserver(4)
	if tc.ctl(obs).Image().ClusterID != "" {
		t.Fatal("the observer has metadata before registering")
	}
	reg := registerObserver(t, cl, 4, addr)
	createTopic(t, cl, "seen", 1, 3, nil)
	eventually(t, "the observer to see the topic", func() bool {
		img := tc.ctl(obs).Image()
		return img.Topics["seen"] != nil && img.Brokers[4] != nil && img.Brokers[4].Epoch == reg.BrokerEpoch
	})
	if tc.ctl(obs).Active() {
		t.Fatal("the observer became active")
	}
	// The observer's broker unfences with its own image's offset.
	b := &testBroker{id: 4, epoch: reg.BrokerEpoch}
	if r := heartbeat(t, cl, b, int64(tc.ctl(obs).Image().Offset), false, false); r.IsFenced || !r.IsCaughtUp {
		t.Fatalf("observer broker heartbeat: %+v", r)
	}
	leader := tc.active()
	tc.stop(leader)
	tc.active()
	createTopic(t, cl, "after", 1, 1, nil)
	eventually(t, "the observer to follow the new leader", func() bool { return tc.ctl(obs).Image().Topics["after"] != nil })
}

// registerObserver registers the broker of observer node id, whose
// INTERNAL listener (the raft one) is at addr.
func registerObserver(t *testing.T, cl *Client, id int32, addr string) *kmsg.BrokerRegistrationResponse {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	portNum, _ := strconv.Atoi(port)
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.IncarnationID = id, [16]byte{byte(id)}
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{
		{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 1},
		{Name: "INTERNAL", Host: host, Port: uint16(portNum)},
	}
	reg := send[*kmsg.BrokerRegistrationResponse](t, cl, req)
	if reg.ErrorCode != 0 {
		t.Fatalf("register: %d", reg.ErrorCode)
	}
	return reg
}
