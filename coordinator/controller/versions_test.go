package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every controller API answers at kmsg's lowest and highest version over a
// real connection, with the error Kafka gives a request for nothing known.
func TestEveryAPIAtMinAndMaxVersion(t *testing.T) {
	tc := startCluster(t, 1, nil)
	cl := tc.client()
	b := registerUnfenced(t, cl, 1)[0]
	createTopic(t, cl, "t", 1, 1, nil)
	requests := func() []kmsg.Request {
		reg := kmsg.NewPtrBrokerRegistrationRequest()
		reg.BrokerID, reg.IncarnationID = b.id, b.inc
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = b.id, b.epoch, b.epoch
		ap := kmsg.NewPtrAlterPartitionRequest()
		ap.BrokerID, ap.BrokerEpoch = b.id, b.epoch
		ct := kmsg.NewPtrCreateTopicsRequest()
		ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t", NumPartitions: 1, ReplicationFactor: 1}}
		dt := kmsg.NewPtrDeleteTopicsRequest()
		dt.TopicNames = []string{"absent"}
		dt.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("absent")}}
		cp := kmsg.NewPtrCreatePartitionsRequest()
		cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "absent", Count: 2}}
		iac := kmsg.NewPtrIncrementalAlterConfigsRequest()
		iac.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "absent"}}
		ac := kmsg.NewPtrAlterConfigsRequest()
		ac.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "absent"}}
		el := kmsg.NewPtrElectLeadersRequest()
		el.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
		ra := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		ra.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "absent",
			Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{1}}}}}
		lr := kmsg.NewPtrListPartitionReassignmentsRequest()
		pid := kmsg.NewPtrAllocateProducerIDsRequest()
		pid.BrokerID, pid.BrokerEpoch = b.id, b.epoch
		cq := kmsg.NewPtrAlterClientQuotasRequest()
		cq.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "group"}}}}
		scram := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		scram.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "nobody", Mechanism: 1}}
		ca := kmsg.NewPtrCreateACLsRequest()
		ca.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "",
			ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: "User:a", Host: "*", Operation: kmsg.ACLOperationRead, PermissionType: kmsg.ACLPermissionTypeAllow}}
		da := kmsg.NewPtrDeleteACLsRequest()
		da.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: kmsg.ACLResourceTypeUnknown}}
		dq := describeQuorumReq(MetadataTopic, 0)
		ub := kmsg.NewPtrUnregisterBrokerRequest()
		ub.BrokerID = 99
		uc := kmsg.NewPtrUnregisterControllerRequest()
		uc.ControllerID = 99
		uf := kmsg.NewPtrUpdateFeaturesRequest()
		uf.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "nope", MaxVersionLevel: 1, UpgradeType: 1}}
		ar := kmsg.NewPtrAssignReplicasToDirsRequest()
		ar.BrokerID, ar.BrokerEpoch = b.id, b.epoch
		ar.Directories = []kmsg.AssignReplicasToDirsRequestDirectory{{Topics: []kmsg.AssignReplicasToDirsRequestDirectoryTopic{{Partitions: []kmsg.AssignReplicasToDirsRequestDirectoryTopicPartition{{}}}}}}
		env := Envelope(&kmsg.RenewDelegationTokenRequest{Version: 2, HMAC: []byte("x")}, Principal{Type: "User", Name: "a"}, "test", nil)
		creg := kmsg.NewPtrControllerRegistrationRequest()
		creg.ControllerID, creg.Listeners = 1, []kmsg.ControllerRegistrationRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 1}}
		av := kmsg.NewPtrAddRaftVoterRequest()
		av.VoterID, av.Listeners = 7, []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 1}}
		rv := kmsg.NewPtrRemoveRaftVoterRequest()
		rv.VoterID, rv.VoterDirectoryID = 7, [16]byte{7}
		uv := kmsg.NewPtrUpdateRaftVoterRequest()
		uv.VoterID, uv.VoterDirectoryID, uv.KRaftVersionFeature.MaxSupportedVersion = 7, [16]byte{7}, 1
		uv.CurrentLeaderEpoch = int32(tc.ctl(0).raft.CurrentTerm())
		uv.Listeners = []kmsg.UpdateRaftVoterRequestListener{{Name: "CONTROLLER", Host: "127.0.0.1", Port: 1}}
		return []kmsg.Request{reg, hb, ap, ct, dt, cp, iac, ac, el, ra, lr, pid, cq, scram, ca, da, dq, ub, uc, uf, ar, env, creg, av, rv, uv}
	}
	if len(requests()) != len(HandledKeys) {
		t.Fatalf("%d requests for %d handled keys", len(requests()), len(HandledKeys))
	}
	for _, max := range []bool{false, true} {
		for _, req := range requests() {
			v := int16(0) // every controller API starts at v0
			if max {
				v = req.MaxVersion()
			}
			req.SetVersion(v)
			resp := sendAsIs[kmsg.Response](t, cl, req)
			if resp.GetVersion() != v {
				t.Fatalf("key %d: response version %d, want %d", req.Key(), resp.GetVersion(), v)
			}
			var got int16
			want := int16(0)
			switch r := resp.(type) {
			case *kmsg.BrokerRegistrationResponse:
				got = r.ErrorCode
			case *kmsg.BrokerHeartbeatResponse:
				got = r.ErrorCode
			case *kmsg.AlterPartitionResponse:
				got = r.ErrorCode
			case *kmsg.CreateTopicsResponse:
				got, want = r.Topics[0].ErrorCode, kerr.TopicAlreadyExists.Code
			case *kmsg.DeleteTopicsResponse:
				got, want = r.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition.Code
			case *kmsg.CreatePartitionsResponse:
				got, want = r.Topics[0].ErrorCode, kerr.UnknownTopicOrPartition.Code
			case *kmsg.IncrementalAlterConfigsResponse:
				got, want = r.Resources[0].ErrorCode, kerr.UnknownTopicOrPartition.Code
			case *kmsg.AlterConfigsResponse:
				got, want = r.Resources[0].ErrorCode, kerr.UnknownTopicOrPartition.Code
			case *kmsg.ElectLeadersResponse:
				got, want = r.Topics[0].Partitions[0].ErrorCode, kerr.ElectionNotNeeded.Code
			case *kmsg.AlterPartitionAssignmentsResponse:
				got, want = r.Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code
			case *kmsg.ListPartitionReassignmentsResponse:
				got = r.ErrorCode
			case *kmsg.AllocateProducerIDsResponse:
				got = r.ErrorCode
			case *kmsg.AlterClientQuotasResponse:
				got, want = r.Entries[0].ErrorCode, kerr.InvalidRequest.Code
			case *kmsg.AlterUserSCRAMCredentialsResponse:
				got, want = r.Results[0].ErrorCode, kerr.ResourceNotFound.Code
			case *kmsg.CreateACLsResponse: // an empty resource name
				got, want = r.Results[0].ErrorCode, kerr.InvalidRequest.Code
			case *kmsg.DeleteACLsResponse: // an UNKNOWN resource type
				got, want = r.Results[0].ErrorCode, kerr.InvalidRequest.Code
			case *kmsg.UnregisterBrokerResponse:
				got, want = r.ErrorCode, kerr.BrokerIDNotRegistered.Code
			case *kmsg.UnregisterControllerResponse: // a new cluster is at 4.2-IV1
				got, want = r.ErrorCode, kerr.UnsupportedVersion.Code
			case *kmsg.AssignReplicasToDirsResponse: // a topic id that names nothing
				got, want = r.Directories[0].Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicID.Code
			case *kmsg.UpdateFeaturesResponse: // an unknown feature
				got, want = r.ErrorCode, kerr.InvalidUpdateVersion.Code
			case *kmsg.EnvelopeResponse: // a renewal, with tokens off
				inner, err := Unwrapped(&kmsg.RenewDelegationTokenRequest{Version: 2}, r)
				if err != nil {
					t.Fatalf("envelope v%d: %v", v, err)
				}
				got, want = inner.(*kmsg.RenewDelegationTokenResponse).ErrorCode, kerr.DelegationTokenAuthDisabled.Code
			case *kmsg.ControllerRegistrationResponse:
				got = r.ErrorCode
			case *kmsg.AddRaftVoterResponse: // no directory id
				got, want = r.ErrorCode, kerr.InvalidRequest.Code
			case *kmsg.RemoveRaftVoterResponse: // a static quorum
				got, want = r.ErrorCode, kerr.UnsupportedVersion.Code
			case *kmsg.UpdateRaftVoterResponse: // not a voter
				got, want = r.ErrorCode, kerr.VoterNotFound.Code
			case *kmsg.DescribeQuorumResponse:
				if got = r.ErrorCode; got == 0 {
					got = r.Topics[0].Partitions[0].ErrorCode
				}
			default:
				t.Fatalf("key %d: unexpected response %T", req.Key(), resp)
			}
			if got != want {
				t.Errorf("key %d v%d: error %d, want %d", req.Key(), v, got, want)
			}
		}
	}
}
