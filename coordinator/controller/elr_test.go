package controller

import (
	"crypto/rand"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reregister registers a new incarnation of b, sending prevEpoch as the
// epoch its clean shutdown recorded (-1: none, an unclean shutdown).
func reregister(t *testing.T, cl *Client, b *testBroker, prevEpoch int64) {
	t.Helper()
	rand.Read(b.inc[:])
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.IncarnationID, req.PreviousBrokerEpoch = b.id, b.inc, prevEpoch
	req.Listeners = []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(19000 + b.id)}}
	resp := send[*kmsg.BrokerRegistrationResponse](t, cl, req)
	if resp.ErrorCode != 0 {
		t.Fatalf("registering broker %d again: error %d", b.id, resp.ErrorCode)
	}
	b.epoch = resp.BrokerEpoch
}

func unfence(t *testing.T, cl *Client, b *testBroker) {
	t.Helper()
	if r := heartbeat(t, cl, b, b.epoch, false, false); r.ErrorCode != 0 || r.IsFenced {
		t.Fatalf("unfencing broker %d: %+v", b.id, r)
	}
}

// createAssigned creates topic with one partition on replicas, with
// min.insync.replicas minISR.
func createAssigned(t *testing.T, cl *Client, topic, minISR string, replicas ...int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: topic, NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: replicas}},
		Configs:           []kmsg.CreateTopicsRequestTopicConfig{{Name: "min.insync.replicas", Value: kmsg.StringPtr(minISR)}}}}
	if r := send[*kmsg.CreateTopicsResponse](t, cl, req); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %d", topic, r.Topics[0].ErrorCode)
	}
}

func partitionState(tc *testCluster, topic string) Partition {
	return tc.ctl(tc.active()).Image().Topics[topic].Partitions[0]
}

func checkPartition(t *testing.T, what string, p Partition, leader int32, isr, elr []int32) {
	t.Helper()
	if p.Leader != leader || !slices.Equal(p.ISR, isr) || !slices.Equal(p.ELR, elr) {
		t.Fatalf("%s: leader %d ISR %v ELR %v, want leader %d ISR %v ELR %v (%+v)",
			what, p.Leader, p.ISR, p.ELR, leader, isr, elr, p)
	}
}

// alterTo has leader (of topic "t") set the ISR to isr with AlterPartition.
func alterTo(t *testing.T, tc *testCluster, cl *Client, leader *testBroker, isr ...int32) {
	t.Helper()
	topic := tc.ctl(tc.active()).Image().Topics["t"]
	p := topic.Partitions[0]
	if r := alterISR(t, cl, leader, topic, 0, p.LeaderEpoch, p.PartitionEpoch, isr); r.ErrorCode != 0 {
		t.Fatalf("AlterPartition to %v: %d", isr, r.ErrorCode)
	}
}

// shrunkToLeader starts three brokers with topic "t" on replicas 1, 2, 3
// and min.insync.replicas=2, and has leader 1 shrink the ISR to itself:
// 2 and 3 become its ELR.
func shrunkToLeader(t *testing.T) (*testCluster, *Client, []*testBroker) {
	t.Helper()
	tc := startCluster(t, 3, nil)
	cl := tc.client()
	b := registerUnfenced(t, cl, 3)
	createAssigned(t, cl, "t", "2", 1, 2, 3)
	alterTo(t, tc, cl, b[0], 1)
	checkPartition(t, "ISR shrunk to the leader", partitionState(tc, "t"), 1, []int32{1}, []int32{2, 3})
	return tc, cl, b
}

// KIP-966's last replica standing: with min.insync.replicas=2 the
// replicas leaving an ISR that is below it keep their eligibility (the
// high watermark did not move without them). When the last ISR member
// dies and comes back after an unclean shutdown, having perhaps lost its
// unflushed tail, it is no longer eligible: the partition waits for an
// eligible replica instead of electing it and truncating the others to
// its log. After a clean shutdown it leads again.
func TestELRLastReplicaStanding(t *testing.T) {
	for _, clean := range []bool{false, true} {
		name := map[bool]string{false: "unclean", true: "clean"}[clean]
		t.Run(name, func(t *testing.T) {
			tc := startCluster(t, 3, nil)
			cl := tc.client()
			b := registerUnfenced(t, cl, 3)
			createAssigned(t, cl, "t", "2", 1, 2, 3)

			fenceByRequest(t, cl, b[2])
			checkPartition(t, "broker 3 fenced", partitionState(tc, "t"), 1, []int32{1, 2}, nil)
			fenceByRequest(t, cl, b[1])
			checkPartition(t, "broker 2 fenced", partitionState(tc, "t"), 1, []int32{1}, []int32{2})
			fenceByRequest(t, cl, b[0])
			p := partitionState(tc, "t")
			checkPartition(t, "broker 1, the last in the ISR, fenced", p, -1, nil, []int32{2, 1})
			if !slices.Equal(p.LastKnownELR, []int32{1}) {
				t.Fatalf("last known leader %v, want [1]", p.LastKnownELR)
			}

			prev := int64(-1)
			if clean {
				prev = b[0].epoch
			}
			reregister(t, cl, b[0], prev)
			unfence(t, cl, b[0])
			if clean {
				checkPartition(t, "broker 1 back after a clean shutdown", partitionState(tc, "t"), 1, []int32{1}, []int32{2})
				return
			}
			checkPartition(t, "broker 1 back after an unclean shutdown", partitionState(tc, "t"), -1, nil, []int32{2})
			// Broker 3 left the ISR while it still had two members: it may
			// lack committed records, so it may not lead either.
			reregister(t, cl, b[2], -1)
			unfence(t, cl, b[2])
			checkPartition(t, "broker 3 back", partitionState(tc, "t"), -1, nil, []int32{2})

			unfence(t, cl, b[1])
			p = partitionState(tc, "t")
			checkPartition(t, "broker 2, eligible, back", p, 2, []int32{2}, nil)
			if len(p.LastKnownELR) != 0 {
				t.Fatalf("last known leader %v kept after an election", p.LastKnownELR)
			}
			// The followers catch up: an ISR at min.insync.replicas keeps no ELR.
			alterTo(t, tc, cl, b[1], 2, 1)
			checkPartition(t, "broker 1 back in the ISR", partitionState(tc, "t"), 2, []int32{2, 1}, nil)
		})
	}
}

// The leader shrinking the ISR below min.insync.replicas puts the
// replicas it drops in the ELR; when the leader is then fenced, the
// first eligible replica in replica order leads with itself as the ISR.
// Changing min.insync.replicas clears the ELR, which was judged against
// the old value.
func TestELRFromAlterPartitionAndConfigChange(t *testing.T) {
	tc, cl, b := shrunkToLeader(t)

	fenceByRequest(t, cl, b[0])
	checkPartition(t, "leader fenced", partitionState(tc, "t"), 2, []int32{2}, []int32{3, 1})

	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alter.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "min.insync.replicas", Value: kmsg.StringPtr("3")}}}}
	if r := send[*kmsg.IncrementalAlterConfigsResponse](t, cl, alter); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("altering min.insync.replicas: %d", r.Resources[0].ErrorCode)
	}
	checkPartition(t, "min.insync.replicas changed", partitionState(tc, "t"), 2, []int32{2}, nil)
}

// With ISR and ELR both empty, the last known leader leads again once it
// is back, even after an unclean shutdown, as Kafka did before ELR when
// every replica was offline: with min.insync.replicas=1 a replica leaving
// a one-member ISR is not eligible, since the high watermark moved on
// without it.
func TestELRLastKnownLeader(t *testing.T) {
	tc := startCluster(t, 3, nil)
	cl := tc.client()
	b := registerUnfenced(t, cl, 2)
	createAssigned(t, cl, "t", "1", 1, 2)
	fenceByRequest(t, cl, b[1])
	checkPartition(t, "broker 2 fenced", partitionState(tc, "t"), 1, []int32{1}, nil)
	fenceByRequest(t, cl, b[0])
	checkPartition(t, "broker 1 fenced", partitionState(tc, "t"), -1, nil, []int32{1})

	reregister(t, cl, b[1], -1)
	unfence(t, cl, b[1])
	checkPartition(t, "broker 2 back", partitionState(tc, "t"), -1, nil, []int32{1})

	reregister(t, cl, b[0], -1)
	checkPartition(t, "broker 1 registered after an unclean shutdown", partitionState(tc, "t"), -1, nil, nil)
	unfence(t, cl, b[0])
	p := partitionState(tc, "t")
	checkPartition(t, "broker 1, the last known leader, back", p, 1, []int32{1}, nil)
	if len(p.LastKnownELR) != 0 {
		t.Fatalf("last known leader %v kept after the election", p.LastKnownELR)
	}
}

// eligible.leader.replicas.version 0 (UpdateFeatures) turns ELR off: the
// ELR is cleared, the last ISR member stays in the ISR when fenced, and a
// broker back after an unclean shutdown leads again, as before Kafka 4.
// Turning it on again removes brokers' own min.insync.replicas and starts
// tracking anew.
func TestELRTurnedOff(t *testing.T) {
	tc, cl, b := shrunkToLeader(t)

	setELR := func(level int16, typ int8) {
		t.Helper()
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.SetVersion(1)
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "eligible.leader.replicas.version", MaxVersionLevel: level, UpgradeType: typ}}
		if r := send[*kmsg.UpdateFeaturesResponse](t, cl, req); r.ErrorCode != 0 || len(r.Results) != 1 {
			t.Fatalf("eligible.leader.replicas.version %d: %+v", level, r)
		}
	}
	// With ELR on the active controller set the cluster's min.insync.replicas.
	clusterMinISR := func() (string, bool) { return tc.ctl(tc.active()).Image().ClusterConfig("min.insync.replicas") }
	if v, ok := clusterMinISR(); v != "1" || !ok {
		t.Fatalf("the cluster's min.insync.replicas with ELR on: %q, %v", v, ok)
	}
	setELR(0, 2)
	checkPartition(t, "ELR turned off", partitionState(tc, "t"), 1, []int32{1}, nil)
	fenceByRequest(t, cl, b[0])
	checkPartition(t, "the last ISR member fenced", partitionState(tc, "t"), -1, []int32{1}, nil)
	reregister(t, cl, b[0], -1)
	unfence(t, cl, b[0])
	checkPartition(t, "back after an unclean shutdown", partitionState(tc, "t"), 1, []int32{1}, nil)

	// With ELR off a broker may have its own min.insync.replicas; turning
	// ELR on removes it, and only it.
	perBroker := kmsg.NewPtrIncrementalAlterConfigsRequest()
	perBroker.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			{Name: "min.insync.replicas", Value: kmsg.StringPtr("1")}, {Name: "log.retention.ms", Value: kmsg.StringPtr("1000")}}}}
	if r := send[*kmsg.IncrementalAlterConfigsResponse](t, cl, perBroker); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("broker 1's own configs: %d", r.Resources[0].ErrorCode)
	}
	// Without a cluster value either, turning ELR on sets one.
	noCluster := kmsg.NewPtrIncrementalAlterConfigsRequest()
	noCluster.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker,
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "min.insync.replicas", Op: kmsg.IncrementalAlterConfigOpDelete}}}}
	if r := send[*kmsg.IncrementalAlterConfigsResponse](t, cl, noCluster); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("removing the cluster's min.insync.replicas with ELR off: %d", r.Resources[0].ErrorCode)
	}
	if v, ok := clusterMinISR(); ok {
		t.Fatalf("the cluster's min.insync.replicas after its removal: %q", v)
	}
	setELR(1, 1)
	if got := tc.ctl(tc.active()).Image().Configs[ConfigResource{ResourceBroker, "1"}]; len(got) != 1 || got["log.retention.ms"] != "1000" {
		t.Fatalf("broker 1's configs after ELR was turned on: %v, want log.retention.ms alone", got)
	}
	if v, ok := clusterMinISR(); v != "1" || !ok {
		t.Fatalf("the cluster's min.insync.replicas after ELR was turned on: %q, %v", v, ok)
	}
	alterTo(t, tc, cl, b[0], 1, 2)
	alterTo(t, tc, cl, b[0], 1)
	checkPartition(t, "ELR on again, ISR shrunk", partitionState(tc, "t"), 1, []int32{1}, []int32{2})
}

// While ELR is on the controller keeps every broker counting the same
// min.insync.replicas, as Kafka's ConfigurationControlManager does for a
// client of the CONTROLLER listener too: a broker's own may not be set,
// the cluster's may change but not go (IncrementalAlterConfigs DELETE,
// or AlterConfigs without it).
func TestELRMinISRConfigs(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	registerUnfenced(t, cl, 1)
	op := func(name string, o kmsg.IncrementalAlterConfigOp, v *string) *kmsg.IncrementalAlterConfigsResponse {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: name,
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "min.insync.replicas", Op: o, Value: v}}}}
		return send[*kmsg.IncrementalAlterConfigsResponse](t, cl, req)
	}
	check := func(what string, code int16, msg *string, wantCode int16, wantMsg string) {
		t.Helper()
		if code != wantCode || wantCode != 0 && ps(msg) != wantMsg {
			t.Errorf("%s: %d %q, want %d %q", what, code, ps(msg), wantCode, wantMsg)
		}
	}
	r := op("1", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("2")).Resources[0]
	check("a broker's own", r.ErrorCode, r.ErrorMessage, kerr.InvalidConfig.Code, "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
	r = op("", kmsg.IncrementalAlterConfigOpDelete, nil).Resources[0]
	check("the cluster's removed", r.ErrorCode, r.ErrorMessage, kerr.InvalidConfig.Code, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
	legacy := kmsg.NewPtrAlterConfigsRequest()
	legacy.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "",
		Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "log.retention.ms", Value: kmsg.StringPtr("5")}}}}
	l := send[*kmsg.AlterConfigsResponse](t, cl, legacy).Resources[0]
	check("the cluster's replaced without it", l.ErrorCode, l.ErrorMessage, kerr.InvalidConfig.Code, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
	r = op("", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("2")).Resources[0]
	check("the cluster's changed", r.ErrorCode, r.ErrorMessage, 0, "")
	if v, _ := tc.ctl(0).Image().ClusterConfig("min.insync.replicas"); v != "2" {
		t.Errorf("the cluster's min.insync.replicas: %q", v)
	}
	if _, ok := tc.ctl(0).Image().Configs[ConfigResource{ResourceBroker, "1"}]["min.insync.replicas"]; ok {
		t.Error("broker 1 has its own min.insync.replicas")
	}
}
