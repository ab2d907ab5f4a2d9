package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
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

// TxnOffsetCommit v6 names topics by id (KIP-1319): the offset committed by
// id inside a transaction is fetched by name once the transaction commits,
// an id no topic has is UNKNOWN_TOPIC_ID, and a group that does not exist,
// asked for with a generation, is GROUP_ID_NOT_FOUND where v5 answers
// ILLEGAL_GENERATION.
func TestTxnOffsetCommitByTopicID(t *testing.T) {
	b, rc := startWithTopic(t, "txn-ids")
	id := b.topics.get("txn-ids").id
	missing := [16]byte{9, 9, 9}
	const txnID, group = "by-id", "by-id-group"
	pid, epoch := initTxnProducer(t, rc, txnID)
	findCoordinatorRaw(t, rc, group)
	commit := func(version int16, group string, generation int32, topics ...kmsg.TxnOffsetCommitRequestTopic) []kmsg.TxnOffsetCommitResponseTopic {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.SetVersion(version)
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = txnID, group, pid, epoch, generation
		req.Topics = topics
		return rc.request(req).(*kmsg.TxnOffsetCommitResponse).Topics
	}
	at := func(offset int64) []kmsg.TxnOffsetCommitRequestTopicPartition {
		return []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}
	}
	var got []kmsg.TxnOffsetCommitResponseTopic
	waitFor(t, func() bool { // the group's partition loads in the background
		got = commit(6, group, -1, kmsg.TxnOffsetCommitRequestTopic{TopicID: id, Partitions: at(4)},
			kmsg.TxnOffsetCommitRequestTopic{TopicID: missing, Partitions: at(1)})
		return len(got) == 2 && got[0].Partitions[0].ErrorCode != kerr.CoordinatorLoadInProgress.Code
	})
	if got[0].TopicID != id || got[0].Partitions[0].ErrorCode != 0 || got[1].TopicID != missing || got[1].Partitions[0].ErrorCode != errUnknownTopicID {
		t.Fatalf("TxnOffsetCommit v6: %+v, want the topic committed by id and the missing id UNKNOWN_TOPIC_ID", got)
	}
	pid, epoch = endTxnV5(t, rc, txnID, pid, epoch, true)
	of := kmsg.NewPtrOffsetFetchRequest()
	of.SetVersion(7)
	of.Group, of.RequireStable = group, true
	of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "txn-ids", Partitions: []int32{0}}}
	waitFor(t, func() bool {
		p := rc.request(of).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]
		return p.ErrorCode == 0 && p.Offset == 4
	})

	for version, want := range map[int16]int16{5: kerr.IllegalGeneration.Code, 6: kerr.GroupIDNotFound.Code} {
		topic := kmsg.TxnOffsetCommitRequestTopic{Topic: "txn-ids", TopicID: id, Partitions: at(5)}
		if code := commit(version, "no-such-group", 3, topic)[0].Partitions[0].ErrorCode; code != want {
			t.Errorf("TxnOffsetCommit v%d with a generation to a group that does not exist: %d, want %d", version, code, want)
		}
	}
}

// A client without READ on the group (or, for TxnOffsetCommit, WRITE on the
// transactional id) committing by topic id gets the authorization error
// for every topic, as Kafka answers before it looks the ids up: an id
// that exists and one that does not are answered alike.
func TestCommitsByTopicIDRefusedBeforeTheLookup(t *testing.T) {
	b := startBrokerWith(t, aclProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	admin := kadm.NewClient(saslClient(t, addr, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if _, err := admin.CreateTopic(ctxT(t), 1, 1, nil, "secret-topic"); err != nil {
		t.Fatal(err)
	}
	known, missing := b.topics.get("secret-topic").id, [16]byte{4, 5, 6}
	// DESCRIBE on the group lets the client find its coordinator, no more.
	createACLs(t, admin, kadm.NewACLs().Allow("User:alice").Groups("g").Operations(kadm.OpDescribe))
	alice := saslClient(t, addr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	partitions := []int32{0}

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.Generation = 10, "g", -1
	for _, id := range [][16]byte{known, missing} {
		commit.Topics = append(commit.Topics, kmsg.OffsetCommitRequestTopic{TopicID: id,
			Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: partitions[0], Offset: 1, LeaderEpoch: -1}}})
	}
	cr, err := commit.RequestWith(ctxT(t), alice)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range cr.Topics {
		if rt.Partitions[0].ErrorCode != errGroupAuthorization {
			t.Errorf("OffsetCommit v10 without READ on the group, topic %x: code %d, want GROUP_AUTHORIZATION_FAILED", rt.TopicID, rt.Partitions[0].ErrorCode)
		}
	}

	txn := kmsg.NewPtrTxnOffsetCommitRequest()
	txn.Version, txn.TransactionalID, txn.Group, txn.ProducerID, txn.Generation = 6, "t", "g", 1, -1
	for _, id := range [][16]byte{known, missing} {
		txn.Topics = append(txn.Topics, kmsg.TxnOffsetCommitRequestTopic{TopicID: id,
			Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: partitions[0], Offset: 1, LeaderEpoch: -1}}})
	}
	tr, err := txn.RequestWith(ctxT(t), alice)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range tr.Topics {
		if rt.Partitions[0].ErrorCode != errTxnIDAuthFailed {
			t.Errorf("TxnOffsetCommit v6 without WRITE on the transactional id, topic %x: code %d, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", rt.TopicID, rt.Partitions[0].ErrorCode)
		}
	}
}
