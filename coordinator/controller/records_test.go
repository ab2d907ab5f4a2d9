package controller

import "testing"

// Applying a batch builds a new image and leaves the published one as it
// was, also when one batch changes several partitions of one topic.
func TestApplyLeavesPublishedImageAlone(t *testing.T) {
	id := [16]byte{1}
	base := emptyImage().apply(1, []Record{
		{RegisterBroker: &RegisterBroker{ID: 1}},
		{Topic: &Topic{Name: "t", ID: id, Partitions: []Partition{
			{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
			{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		}}},
	})
	if base.Brokers[1].Epoch != 1 || !base.Brokers[1].Fenced || base.Offset != 1 {
		t.Fatalf("registration: %+v", base.Brokers[1])
	}
	next := base.apply(2, []Record{
		{Partition: &PartitionRecord{TopicID: id, Index: 0, Partition: Partition{Replicas: []int32{1}, Leader: -1, LeaderEpoch: 1}}},
		{Partition: &PartitionRecord{TopicID: id, Index: 1, Partition: Partition{Replicas: []int32{1}, Leader: -1, LeaderEpoch: 1}}},
		{Partition: &PartitionRecord{TopicID: id, Index: 2, Partition: Partition{Replicas: []int32{1}, Leader: 1}}},
		{BrokerState: &BrokerState{ID: 1}},
	})
	old := base.Topics["t"]
	if len(old.Partitions) != 2 || old.Partitions[0].Leader != 1 || old.Partitions[1].Leader != 1 || !base.Brokers[1].Fenced {
		t.Fatalf("published image changed: %+v %+v", old.Partitions, base.Brokers[1])
	}
	nt := next.Topics["t"]
	if next.TopicsByID[id] != nt || len(nt.Partitions) != 3 || nt.Partitions[0].Leader != -1 || nt.Partitions[1].Leader != -1 ||
		next.Brokers[1].Fenced || next.Offset != 2 {
		t.Fatalf("new image: %+v", nt.Partitions)
	}
	gone := next.apply(3, []Record{{RemoveTopic: &id}})
	if len(gone.Topics) != 0 || len(gone.TopicsByID) != 0 || next.Topics["t"] == nil {
		t.Fatal("topic removal")
	}
}

// The batch encoding round-trips.
func TestBatchRoundTrip(t *testing.T) {
	cid := "abc"
	next := int64(2000)
	recs := []Record{{ClusterID: &cid}, {NextProducerID: &next},
		{Config: &ConfigRecord{Resource: ConfigResource{ResourceTopic, "t"}, Values: map[string]string{"a": "b"}}}}
	b, err := encodeBatch(recs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeBatch(b)
	if err != nil || len(got) != 3 || *got[0].ClusterID != "abc" || *got[1].NextProducerID != 2000 ||
		got[2].Config.Values["a"] != "b" || got[2].Config.Resource.Name != "t" {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if _, err := decodeBatch([]byte("{")); err == nil {
		t.Fatal("a broken batch decoded")
	}
}
