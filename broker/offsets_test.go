package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offset.metadata.max.bytes bounds the metadata's length as Java counts a
// String's (Kafka's OffsetMetadataManager.isMetadataInvalid compares
// metadata.length()): in UTF-16 code units, not in the bytes it takes on
// the wire. 3000 "é" (6000 bytes) fit in the default 4096; 2049 emoji
// (two units each) do not, and 2048 do.
func TestOffsetMetadataMaxBytesCountsUTF16Units(t *testing.T) {
	_, rc := startWithTopic(t, "t")
	findCoordinatorRaw(t, rc, "g")
	for _, tc := range []struct {
		name     string
		metadata string
		want     int16
	}{
		{"3000 two-byte letters", strings.Repeat("é", 3000), 0},
		{"2048 emoji", strings.Repeat("😀", 2048), 0},
		{"2049 emoji", strings.Repeat("😀", 2049), kerr.OffsetMetadataTooLarge.Code},
		{"4097 ASCII letters", strings.Repeat("a", 4097), kerr.OffsetMetadataTooLarge.Code},
	} {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(9)
		req.Group, req.Generation = "g", -1
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.Metadata = 0, 7, &tc.metadata
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
		if code := rc.request(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != tc.want {
			t.Errorf("%s: OffsetCommit answered %d, want %d", tc.name, code, tc.want)
		}
	}

	// The accepted metadata is returned whole.
	f := kmsg.NewPtrOffsetFetchRequest()
	f.SetVersion(8)
	f.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
	got := rc.request(f).(*kmsg.OffsetFetchResponse).Groups[0].Topics[0].Partitions[0]
	if got.Metadata == nil || *got.Metadata != strings.Repeat("😀", 2048) {
		t.Fatalf("OffsetFetch: metadata of %d bytes, want the 2048 emoji", len(*got.Metadata))
	}
}
