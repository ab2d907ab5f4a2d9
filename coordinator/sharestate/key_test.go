package sharestate

import (
	"encoding/binary"
	"testing"
	"unicode/utf16"
)

// javaHashBySum is Java's String.hashCode as its definition states it,
// s[0]*31^(n-1) + s[1]*31^(n-2) + ... + s[n-1] over UTF-16 code units in
// 32-bit arithmetic, computed term by term (the code under test uses
// Horner's rule).
func javaHashBySum(s string) int32 {
	units := utf16.Encode([]rune(s))
	var sum uint32
	for i, u := range units {
		pow := uint32(1)
		for range len(units) - 1 - i {
			pow *= 31
		}
		sum += uint32(u) * pow
	}
	return int32(sum)
}

func uuidOf(msb, lsb uint64) [16]byte {
	var id [16]byte
	binary.BigEndian.PutUint64(id[:8], msb)
	binary.BigEndian.PutUint64(id[8:], lsb)
	return id
}

// The strings are what Kafka's Uuid.toString prints for these ids
// (java.util.Base64.getUrlEncoder().withoutPadding(), run for this test).
func TestUUIDStringIsKafkas(t *testing.T) {
	for _, tc := range []struct {
		id   [16]byte
		want string
	}{
		{uuidOf(0, 1), "AAAAAAAAAAAAAAAAAAAAAQ"}, // Kafka's METADATA_TOPIC_ID
		{uuidOf(^uint64(0), ^uint64(0)), "_____________________w"},
		{uuidOf(0x0123456789abcdef, 0xfedcba9876543210), "ASNFZ4mrze_-3LqYdlQyEA"},
	} {
		if got := UUIDString(tc.id); got != tc.want {
			t.Errorf("UUIDString(%x) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

func TestKeyIsKafkas(t *testing.T) {
	if got, want := Key("share-group", uuidOf(0, 1), 0), "share-group:AAAAAAAAAAAAAAAAAAAAAQ:0"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
	if got, want := Key("a:b", uuidOf(0x0123456789abcdef, 0xfedcba9876543210), 12345), "a:b:ASNFZ4mrze_-3LqYdlQyEA:12345"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
	if got, want := Key("g", uuidOf(0, 1), -1), "g:AAAAAAAAAAAAAAAAAAAAAQ:-1"; got != want {
		t.Errorf("Key = %q, want %q", got, want)
	}
}

// The hashes and partitions were printed by Java (String.hashCode and
// Kafka's Utils.abs(hash) % n) for these keys.
func TestPartitionForIsKafkas(t *testing.T) {
	for _, tc := range []struct {
		group     string
		topic     [16]byte
		partition int32
		key       string
		hash      int32
		p50, p7   int32
	}{
		{"share-group", uuidOf(0, 1), 0, "share-group:AAAAAAAAAAAAAAAAAAAAAQ:0", -296178449, 49, 0}, // negative hash
		{"g", uuidOf(0x0123456789abcdef, 0xfedcba9876543210), 7, "g:ASNFZ4mrze_-3LqYdlQyEA:7", 1102242271, 21, 4},
		{"grüppe", uuidOf(^uint64(0), ^uint64(0)), 3, "grüppe:_____________________w:3", 1259318615, 15, 2},
		{"g\U0001F600", uuidOf(0, 1), 1, "g\U0001F600:AAAAAAAAAAAAAAAAAAAAAQ:1", -1532514793, 43, 5}, // a surrogate pair
		// Integer.MIN_VALUE, whose Math.abs is itself: Utils.abs makes it 0
		// (a plain abs would give -2 for 7 partitions).
		{"afyjeqbtxd", uuidOf(0, 1), 0, "afyjeqbtxd:AAAAAAAAAAAAAAAAAAAAAQ:0", -1 << 31, 0, 0},
	} {
		if k := Key(tc.group, tc.topic, tc.partition); k != tc.key {
			t.Fatalf("Key = %q, want %q", k, tc.key)
		}
		if h := javaHashBySum(tc.key); h != tc.hash {
			t.Fatalf("the test's hash of %q is %d, Java's %d", tc.key, h, tc.hash)
		}
		if got := PartitionFor(tc.group, tc.topic, tc.partition, 50); got != tc.p50 {
			t.Errorf("PartitionFor(%q, 50) = %d, want %d", tc.key, got, tc.p50)
		}
		if got := PartitionFor(tc.group, tc.topic, tc.partition, 7); got != tc.p7 {
			t.Errorf("PartitionFor(%q, 7) = %d, want %d", tc.key, got, tc.p7)
		}
	}
}
