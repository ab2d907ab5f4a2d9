package keyhash

import "testing"

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
