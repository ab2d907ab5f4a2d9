package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit and OffsetFetch v10 name topics by id: offsets committed by
// id are fetched by id and by name (v9), an id no topic has is
// UNKNOWN_TOPIC_ID, and fetching every topic's offsets answers with ids
// and leaves out a deleted topic.
func TestOffsetsByTopicID(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	for _, name := range []string{"kept", "deleted"} {
		if _, err := adm.CreateTopic(ctxT(t), 2, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	kept, deleted := b.topics.get("kept").id, b.topics.get("deleted").id
	missing := [16]byte{1, 2, 3}
	raw := dialRaw(t, b)
	findCoordinatorRaw(t, raw, "g")

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 10, "g", -1
	part := func(i int32, offset int64) kmsg.OffsetCommitRequestTopicPartition {
		return kmsg.OffsetCommitRequestTopicPartition{Partition: i, Offset: offset, LeaderEpoch: -1}
	}
	commit.Topics = []kmsg.OffsetCommitRequestTopic{
		{TopicID: kept, Partitions: []kmsg.OffsetCommitRequestTopicPartition{part(0, 7), part(1, 9)}},
		{TopicID: deleted, Partitions: []kmsg.OffsetCommitRequestTopicPartition{part(0, 3)}},
		{TopicID: missing, Partitions: []kmsg.OffsetCommitRequestTopicPartition{part(0, 1)}},
	}
	cr := raw.request(commit).(*kmsg.OffsetCommitResponse)
	codes := map[[16]byte]int16{}
	for _, rt := range cr.Topics {
		for _, p := range rt.Partitions {
			codes[rt.TopicID] = max(codes[rt.TopicID], p.ErrorCode)
		}
	}
	if len(cr.Topics) != 3 || codes[kept] != 0 || codes[deleted] != 0 || codes[missing] != errUnknownTopicID {
		t.Fatalf("OffsetCommit v10: %+v, want kept and deleted committed, the missing id UNKNOWN_TOPIC_ID", cr.Topics)
	}

	fetch := func(version int16, topics []kmsg.OffsetFetchRequestGroupTopic) []kmsg.OffsetFetchResponseGroupTopic {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = version
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: topics}}
		resp := raw.request(req).(*kmsg.OffsetFetchResponse)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("OffsetFetch v%d: %+v", version, resp.Groups)
		}
		return resp.Groups[0].Topics
	}
	byID := fetch(10, []kmsg.OffsetFetchRequestGroupTopic{{TopicID: kept, Partitions: []int32{0, 1}}, {TopicID: missing, Partitions: []int32{0}}})
	if len(byID) != 2 || byID[0].TopicID != kept || byID[0].Partitions[0].Offset != 7 || byID[0].Partitions[1].Offset != 9 ||
		byID[1].TopicID != missing || byID[1].Partitions[0].ErrorCode != errUnknownTopicID || byID[1].Partitions[0].Offset != -1 {
		t.Errorf("OffsetFetch v10 by id: %+v", byID)
	}
	byName := fetch(9, []kmsg.OffsetFetchRequestGroupTopic{{Topic: "kept", Partitions: []int32{1}}})
	if len(byName) != 1 || byName[0].Partitions[0].Offset != 9 {
		t.Errorf("OffsetFetch v9 by name of an offset committed by id: %+v", byName)
	}

	if _, err := adm.DeleteTopics(ctxT(t), "deleted"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the topic deleted", 10*time.Second, func() bool { return b.topics.get("deleted") == nil })
	all := fetch(10, nil)
	if len(all) != 1 || all[0].TopicID != kept || len(all[0].Partitions) != 2 {
		t.Errorf("OffsetFetch v10 of every topic: %+v, want kept alone, by id", all)
	}
}
