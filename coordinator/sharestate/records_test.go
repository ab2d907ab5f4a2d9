package sharestate

import (
	"encoding/hex"
	"reflect"
	"testing"
)

// The bytes Kafka 4.4's generated ShareSnapshotKey, ShareUpdateKey,
// ShareSnapshotValue and ShareUpdateValue write for these values
// (MessageUtil.toCoordinatorTypePrefixedBytes for the keys,
// toVersionPrefixedBytes(0, ...) for the values, run for this test).
const (
	kafkaSnapshotKey    = "000000036772700123456789abcdeffedcba987654321000000007"
	kafkaUpdateKey      = "000100036772700123456789abcdeffedcba987654321000000007"
	kafkaSnapshot       = "000000000001000000020000000300000000000000040000000000000006000000000000000702000000000000000800000000000000090200010001000400000005"
	kafkaSnapshotNoDone = "00000000000100000002000000030000000000000004000000000000000600000000000000070100"
	kafkaUpdate         = "000000000004ffffffffffffffffffffffff02000000000000000500000000000000060200010001000400000009"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var recordKey = spKey{"grp", uuidOf(0x0123456789abcdef, 0xfedcba9876543210), 7}

func TestRecordsAreKafkas(t *testing.T) {
	if got := hex.EncodeToString(appendKey(nil, snapshotKeyVersion, recordKey)); got != kafkaSnapshotKey {
		t.Errorf("snapshot key\n got %s\nwant %s", got, kafkaSnapshotKey)
	}
	v := offsets{
		snapshotEpoch: 1, stateEpoch: 2, leaderEpoch: 3, startOffset: 4, deliveryCompleteCount: 5,
		createTimestamp: 6, writeTimestamp: 7, batches: []StateBatch{sb(8, 9, 2, 1)},
	}
	if got := hex.EncodeToString(snapshotValue(&v)); got != kafkaSnapshot {
		t.Errorf("snapshot value\n got %s\nwant %s", got, kafkaSnapshot)
	}
	back, ok, err := readSnapshotValue(unhex(t, kafkaSnapshot))
	if err != nil || !ok || !reflect.DeepEqual(back, v) {
		t.Errorf("read back %+v (%v, %v), want %+v", back, ok, err, v)
	}

	// The default delivery complete count (-1) is not written.
	v.deliveryCompleteCount, v.batches = -1, []StateBatch{}
	if got := hex.EncodeToString(snapshotValue(&v)); got != kafkaSnapshotNoDone {
		t.Errorf("snapshot value without count\n got %s\nwant %s", got, kafkaSnapshotNoDone)
	}
	back, ok, err = readSnapshotValue(unhex(t, kafkaSnapshotNoDone))
	if err != nil || !ok || !reflect.DeepEqual(back, v) {
		t.Errorf("read back %+v (%v, %v), want %+v", back, ok, err, v)
	}

	version, k, err := readKey(unhex(t, kafkaUpdateKey))
	if err != nil || version != updateKeyVersion || k != recordKey {
		t.Errorf("update key read as version %d %+v (%v)", version, k, err)
	}
	u, ok, err := readUpdateValue(unhex(t, kafkaUpdate))
	want := update{snapshotEpoch: 4, leaderEpoch: -1, startOffset: -1, deliveryCompleteCount: 9, batches: []StateBatch{sb(5, 6, 2, 1)}}
	if err != nil || !ok || !reflect.DeepEqual(u, want) {
		t.Errorf("update value read as %+v (%v, %v), want %+v", u, ok, err, want)
	}

	// A value of a later version is skipped, a cut one refused.
	later := unhex(t, kafkaSnapshot)
	later[1] = 1
	if _, ok, err := readSnapshotValue(later); ok || err != nil {
		t.Errorf("version 1 value: ok %v, err %v", ok, err)
	}
	if _, _, err := readSnapshotValue(unhex(t, kafkaSnapshot)[:30]); err == nil {
		t.Errorf("cut value read without error")
	}
}

// The record a change appends is one uncompressed, non-transactional
// batch without a producer, holding the snapshot under the key version 0.
func TestAppendedRecord(t *testing.T) {
	h := newHarness(t)
	h.expect("initialize", h.initialize("grp", topicA, 0, 4, 100), 0)
	p := PartitionFor("grp", topicA, 0, h.n)
	recs := h.logs.records(p)
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	r := recs[0]
	if r.header.ProducerID != -1 || r.header.ProducerEpoch != -1 || r.header.BaseSequence != -1 || r.header.Attributes != 0 {
		t.Errorf("batch header %+v", r.header)
	}
	version, k, err := readKey(r.key)
	if err != nil || version != snapshotKeyVersion || k != (spKey{"grp", topicA, 0}) {
		t.Fatalf("key version %d %+v (%v)", version, k, err)
	}
	v, ok, err := readSnapshotValue(r.value)
	now := h.clock.now().UnixMilli()
	want := offsets{stateEpoch: 4, leaderEpoch: -1, startOffset: 100, deliveryCompleteCount: 0, createTimestamp: now, writeTimestamp: now, batches: []StateBatch{}}
	if err != nil || !ok || !reflect.DeepEqual(v, want) {
		t.Fatalf("value %+v (%v, %v), want %+v", v, ok, err, want)
	}
}
