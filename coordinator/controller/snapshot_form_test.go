package controller

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"testing"

	"github.com/gregor-broker/gregor/acl"
	"github.com/gregor-broker/gregor/delegation"
	"github.com/gregor-broker/gregor/quota"
	"github.com/gregor-broker/gregor/sasl"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memorySink is a raft snapshot sink in memory.
type memorySink struct{ bytes.Buffer }

func (*memorySink) ID() string    { return "memory" }
func (*memorySink) Cancel() error { return nil }
func (*memorySink) Close() error  { return nil }

// A snapshot holds the whole image: restored, it equals the image that was
// written, with something in every field a record can set.
func TestSnapshotKeepsEveryField(t *testing.T) {
	clusterID, next, adopted, broker, controller := "cid", int64(7000), int32(1), int32(2), int32(3)
	topic := &Topic{Name: "t", ID: [16]byte{1}, Partitions: []Partition{{Replicas: []int32{2}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 4,
		PartitionEpoch: 5, ELR: []int32{1}, LastKnownELR: []int32{1}, Directories: map[int32][16]byte{2: {9}}}}}
	features := map[string]int16{"metadata.version": 29}
	cred := sasl.Credential{Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("v"), Iterations: 4096}
	token := delegation.Token{ID: "tok", Owner: "User:a", Requester: "User:a", IssueMs: 1, ExpiryMs: 2, MaxMs: 3, HMAC: []byte("h"),
		Credentials: map[string]sasl.Credential{"SCRAM-SHA-256": cred}}
	recs := []Record{
		{ClusterID: &clusterID},
		{RegisterBroker: &RegisterBroker{ID: broker, IncarnationID: [16]byte{2}, Rack: "r", Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "h", Port: 1}},
			LogDirs: [][16]byte{{9}}}},
		{BrokerOfflineDirs: &BrokerDirs{ID: broker, Dirs: [][16]byte{{8}}}},
		{BrokerCordonedDirs: &BrokerDirs{ID: broker, Dirs: [][16]byte{{9}}}},
		{BrokerState: &BrokerState{ID: broker, Fenced: false, ShuttingDown: true}},
		{Topic: topic},
		{Config: &ConfigRecord{Resource: ConfigResource{ResourceTopic, "t"}, Values: map[string]string{"retention.ms": "1"}}},
		{NextProducerID: &next},
		{ClientQuota: &quota.Entry{Entity: quota.Entity{{Type: "user", Name: kmsg.StringPtr("a")}}, Values: map[string]float64{"producer_byte_rate": 1}}},
		{ScramCredential: &sasl.CredentialChange{User: "a", Mechanism: sasl.ScramMechanismNamed("SCRAM-SHA-256"), Credential: &cred}},
		{ACL: &acl.Change{Binding: acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: "User:a", Host: "*", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}}},
		{Features: &features},
		{DelegationToken: &delegation.Change{Set: &token}},
		{Controller: &RegisteredController{ID: controller, IncarnationID: [16]byte{3}, Endpoints: []Endpoint{{Listener: "CONTROLLER", Host: "h", Port: 2}},
			DirectoryID: [16]byte{4}}},
		{AdoptedSingleNode: &adopted},
	}
	img := emptyImage().apply(42, recs)

	var sink memorySink
	if err := (fsmSnapshot{img}).Persist(&sink); err != nil {
		t.Fatal(err)
	}
	f := newFSM(slog.New(slog.NewTextHandler(io.Discard, nil)), 1<<20)
	if err := f.Restore(io.NopCloser(&sink)); err != nil {
		t.Fatal(err)
	}
	restored := f.image.Load()
	got, want := reflect.ValueOf(*restored), reflect.ValueOf(*img)
	for i := range want.NumField() {
		if want.Field(i).IsZero() {
			t.Errorf("Image.%s is empty in the written image: give this test a record that sets it", want.Type().Field(i).Name)
		}
		if !reflect.DeepEqual(got.Field(i).Interface(), want.Field(i).Interface()) {
			t.Errorf("%s restored from a snapshot: %s, want %s", want.Type().Field(i).Name, dump(got.Field(i)), dump(want.Field(i)))
		}
	}
}

// dump shows a value with its pointers followed.
func dump(v reflect.Value) string {
	b, _ := json.Marshal(v.Interface())
	return string(b)
}
