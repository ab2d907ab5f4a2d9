package broker

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// A single node answers ElectLeaders and the partition reassignment APIs
// as a Kafka cluster of one broker does: no election is needed, no
// reassignment is in progress, the only assignment a partition can be
// given is [this node], and unknown partitions and other brokers get
// Kafka's codes.
func TestSingleNodeElectionsAndReassignments(t *testing.T) {
	b := startBroker(t, nil)
	if _, err := newAdmin(t, b).CreateTopic(ctxT(t), 2, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	raw := dialRaw(t, b)

	elect := kmsg.NewPtrElectLeadersRequest()
	elect.Version, elect.ElectionType = 2, 0
	elect.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0, 1, 7}}, {Topic: "nope", Partitions: []int32{0}}}
	er := raw.request(elect).(*kmsg.ElectLeadersResponse)
	want := map[string][]int16{"t": {errElectionNotNeeded, errElectionNotNeeded, errUnknownTopicOrPartition}, "nope": {errUnknownTopicOrPartition}}
	// Kafka 4.4's words for what does not exist; a refusal's default
	// message otherwise.
	notNeeded := "Leader election not needed for topic partition."
	wantMsg := map[string][]string{"t": {notNeeded, notNeeded, "No such partition as t-7"}, "nope": {"No such topic as nope"}}
	for _, rt := range er.Topics {
		for i, p := range rt.Partitions {
			if p.ErrorCode != want[rt.Topic][i] || deref(p.ErrorMessage) != wantMsg[rt.Topic][i] {
				t.Errorf("ElectLeaders %s-%d: error %d %q, want %d %q", rt.Topic, p.Partition, p.ErrorCode, deref(p.ErrorMessage), want[rt.Topic][i], wantMsg[rt.Topic][i])
			}
		}
	}
	elect.Topics = nil
	er = raw.request(elect).(*kmsg.ElectLeadersResponse)
	for _, rt := range er.Topics {
		if len(rt.Partitions) != 0 {
			t.Errorf("ElectLeaders of every partition listed %s %v; none needs an election", rt.Topic, rt.Partitions)
		}
	}
	if er.ErrorCode != 0 || len(er.Topics) == 0 {
		t.Errorf("ElectLeaders of every partition: error %d, %d topics", er.ErrorCode, len(er.Topics))
	}
	elect.ElectionType = 5
	if er = raw.request(elect).(*kmsg.ElectLeadersResponse); er.ErrorCode != errInvalidRequest {
		t.Errorf("election type 5: error %d, want INVALID_REQUEST", er.ErrorCode)
	}
	// Every partition named is refused too, with the reason.
	elect.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	er = raw.request(elect).(*kmsg.ElectLeadersResponse)
	if len(er.Topics) != 1 || len(er.Topics[0].Partitions) != 1 || er.Topics[0].Partitions[0].ErrorCode != errInvalidRequest ||
		deref(er.Topics[0].Partitions[0].ErrorMessage) != "Unknown election type 5" {
		t.Errorf("election type 5 of t-0: %+v", er.Topics)
	}

	alter := func(allowRF bool, replicas ...[]int32) []kmsg.AlterPartitionAssignmentsResponseTopicPartition {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.Version, req.AllowReplicationFactorChange = 1, allowRF
		rt := kmsg.AlterPartitionAssignmentsRequestTopic{Topic: "t"}
		for i, r := range replicas {
			rt.Partitions = append(rt.Partitions, kmsg.AlterPartitionAssignmentsRequestTopicPartition{Partition: int32(i), Replicas: r})
		}
		req.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{rt}
		return raw.request(req).(*kmsg.AlterPartitionAssignmentsResponse).Topics[0].Partitions
	}
	got := alter(true, []int32{1}, nil, []int32{1})
	for i, w := range []struct {
		code int16
		msg  string
	}{{0, ""}, {errNoReassignmentInProgress, ""}, {errUnknownTopicOrPartition, "Unable to find partition t:2."}} {
		// Kafka's ApiError.fromThrowable drops a message that is the
		// code's default: cancelling nothing comes without one.
		if got[i].ErrorCode != w.code || deref(got[i].ErrorMessage) != w.msg || w.msg == "" && got[i].ErrorMessage != nil {
			t.Errorf("reassignment %d: error %d %q, want %d %q", i, got[i].ErrorCode, deref(got[i].ErrorMessage), w.code, w.msg)
		}
	}
	for _, c := range []struct {
		what     string
		replicas []int32
		allowRF  bool
		code     int16
		msg      string
	}{
		{"another broker", []int32{2}, true, errInvalidReplicaAssignment, "The manual partition assignment includes broker 2, but no such broker is registered."},
		{"no replica", []int32{}, true, errInvalidReplicaAssignment, "The manual partition assignment includes an empty replica list."},
		{"this node twice", []int32{1, 1}, true, errInvalidReplicaAssignment, "The manual partition assignment includes the broker 1 more than once."},
		{"two where the factor may not change", []int32{1, 1}, false, errInvalidReplicaAssignment, "The manual partition assignment includes the broker 1 more than once."},
		{"a second replica where the factor may not change", []int32{1, 2}, false, errInvalidReplicaAssignment, "The manual partition assignment includes broker 2"},
		// Kafka checks the brokers in id order.
		{"another broker after this node twice", []int32{3, 1, 1}, true, errInvalidReplicaAssignment, "The manual partition assignment includes the broker 1 more than once."},
		{"two other brokers", []int32{7, 5}, true, errInvalidReplicaAssignment, "The manual partition assignment includes broker 5, but no such broker is registered."},
	} {
		if p := alter(c.allowRF, c.replicas)[0]; p.ErrorCode != c.code || len(deref(p.ErrorMessage)) < len(c.msg) || deref(p.ErrorMessage)[:len(c.msg)] != c.msg {
			t.Errorf("%s: error %d %q, want %d %q", c.what, p.ErrorCode, deref(p.ErrorMessage), c.code, c.msg)
		}
	}
	// The answer echoes the option, as Kafka's controller sets it.
	for _, allowRF := range []bool{false, true} {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.Version, req.AllowReplicationFactorChange = 1, allowRF
		req.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t",
			Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{1}}}}}
		if r := raw.request(req).(*kmsg.AlterPartitionAssignmentsResponse); r.AllowReplicationFactorChange != allowRF {
			t.Errorf("AllowReplicationFactorChange %v answered %v", allowRF, r.AllowReplicationFactorChange)
		}
	}

	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	if lr := raw.request(list).(*kmsg.ListPartitionReassignmentsResponse); lr.ErrorCode != 0 || len(lr.Topics) != 0 {
		t.Errorf("ListPartitionReassignments: error %d, %v; none is ever in progress", lr.ErrorCode, lr.Topics)
	}
}

// A refused AlterPartitionReassignments answers every partition it names
// with the refusal, and a refused ListPartitionReassignments lists the
// partitions it names, as Kafka's getErrorResponse of each request does.
func TestReassignmentRefusalNamesEveryPartition(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	alice := saslClient(t, addr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	send := func(req kmsg.Request) kmsg.Response {
		resp, err := alice.Broker(int(b.cfg.NodeID)).Request(ctxT(t), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	alter := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	alter.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t",
		Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{1}}, {Partition: 1}}}}
	ar := send(alter).(*kmsg.AlterPartitionAssignmentsResponse)
	if ar.ErrorCode != errClusterAuthorization || len(ar.Topics) != 1 || ar.Topics[0].Topic != "t" || len(ar.Topics[0].Partitions) != 2 {
		t.Fatalf("AlterPartitionReassignments: %+v", ar)
	}
	for i, p := range ar.Topics[0].Partitions {
		if p.Partition != int32(i) || p.ErrorCode != errClusterAuthorization {
			t.Errorf("AlterPartitionReassignments partition %d: %+v", i, p)
		}
	}
	list := kmsg.NewPtrListPartitionReassignmentsRequest()
	list.Topics = []kmsg.ListPartitionReassignmentsRequestTopic{{Topic: "t", Partitions: []int32{3}}}
	lr := send(list).(*kmsg.ListPartitionReassignmentsResponse)
	if lr.ErrorCode != errClusterAuthorization || len(lr.Topics) != 1 || lr.Topics[0].Topic != "t" ||
		len(lr.Topics[0].Partitions) != 1 || lr.Topics[0].Partitions[0].Partition != 3 {
		t.Fatalf("ListPartitionReassignments: %+v", lr)
	}
}

// A partition whose log dir failed has no leader (Metadata says so), and
// an election cannot give it one: PREFERRED_LEADER_NOT_AVAILABLE, or
// ELIGIBLE_LEADERS_NOT_AVAILABLE for an unclean one, as Kafka's
// controller answers once the broker reported the dir offline; an
// election of every partition lists it.
func TestSingleNodeElectionOfOfflinePartition(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	b := startBrokerWith(t, map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": first + "," + second})
	rc := dialRaw(t, b)
	createTopicRaw(t, rc, "disk", 2)
	var victim int32 = -1
	for _, p := range b.topics.get("disk").partitions() {
		if filepath.Dir(p.log.Dir()) == second {
			victim = p.index
		}
	}
	if victim < 0 {
		t.Fatal("no partition in the second dir")
	}
	for _, d := range b.dirs.All() {
		if d.Path() == second {
			d.Fail(&os.PathError{Op: "write", Path: filepath.Join(second, "x"), Err: syscall.EIO})
		}
	}
	waitFor(t, func() bool { return b.topics.get("disk").partition(victim).offline() })
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.Version = 2
	elect.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "disk", Partitions: []int32{victim}}}
	for typ, want := range map[int8]int16{0: kerr.PreferredLeaderNotAvailable.Code, 1: kerr.EligibleLeadersNotAvailable.Code} {
		elect.ElectionType = typ
		if p := rc.request(elect).(*kmsg.ElectLeadersResponse).Topics[0].Partitions[0]; p.ErrorCode != want {
			t.Errorf("election type %d of the offline partition: error %d, want %d", typ, p.ErrorCode, want)
		}
	}
	elect.Topics, elect.ElectionType = nil, 0
	for _, rt := range rc.request(elect).(*kmsg.ElectLeadersResponse).Topics {
		if rt.Topic == "disk" && (len(rt.Partitions) != 1 || rt.Partitions[0].Partition != victim ||
			rt.Partitions[0].ErrorCode != kerr.PreferredLeaderNotAvailable.Code) {
			t.Errorf("election of every partition: disk %+v, want partition %d alone", rt.Partitions, victim)
		}
	}
}
