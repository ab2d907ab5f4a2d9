package keyhash

import (
	"slices"
	"testing"
)

// The expected partitions are Kafka's Utils.abs(s.hashCode()) % n for the
// classic String.hashCode values: "hello" is 99162322 and
// "polygenelubricants" Integer.MIN_VALUE, which Utils.abs makes 0 (a plain
// absolute value would stay negative).
func TestPartitionIsKafkas(t *testing.T) {
	for _, tc := range []struct {
		key  string
		n    int32
		want int32
	}{
		{"hello", 50, 99162322 % 50},
		{"hello", 7, 99162322 % 7},
		{"polygenelubricants", 7, 0},
		{"", 50, 0},
		{"share-group:AAAAAAAAAAAAAAAAAAAAAQ:0", 50, 296178449 % 50}, // hash -296178449
	} {
		if got := Partition(tc.key, tc.n); got != tc.want {
			t.Errorf("Partition(%q, %d) = %d, want %d", tc.key, tc.n, got, tc.want)
		}
	}
}

// The expected fetchers are Utils.abs(31 * topic.hashCode() + partition) %
// n computed by Java: 31 * "polygenelubricants".hashCode() wraps to
// Integer.MIN_VALUE, so its partition 0 goes to fetcher 0.
func TestFetcherIsKafkas(t *testing.T) {
	for _, tc := range []struct {
		topic        string
		partition, n int32
		want         int32
	}{
		{"orders", 0, 3, 2}, {"orders", 7, 3, 1}, {"orders", 0, 4, 1}, {"orders", 49, 4, 0},
		{"hello", 3, 4, 3}, {"hello", 49, 4, 1},
		{"polygenelubricants", 0, 3, 0}, {"polygenelubricants", 3, 4, 1},
		{"__consumer_offsets", 7, 3, 1}, {"__consumer_offsets", 49, 4, 2},
		{"orders", 5, 1, 0},
	} {
		if got := Fetcher(tc.topic, tc.partition, tc.n); got != tc.want {
			t.Errorf("Fetcher(%q, %d, %d) = %d, want %d", tc.topic, tc.partition, tc.n, got, tc.want)
		}
	}
}

func TestResize(t *testing.T) {
	loaded := func(v int) bool { return v != 0 }
	if _, err := Resize("t", []int{0, 1, 0}, 5, loaded); err == nil || err.Error() != "t-1 is loaded" {
		t.Fatalf("resizing under a loaded partition: %v", err)
	}
	if _, err := Resize("t", []int{0, 0}, 0, loaded); err == nil {
		t.Fatal("resized to no partitions")
	}
	got, err := Resize("t", []int{0, 0, 0}, 5, loaded)
	if err != nil || len(got) != 5 || slices.ContainsFunc(got, loaded) {
		t.Fatalf("Resize to 5: %v, %v", got, err)
	}
}
