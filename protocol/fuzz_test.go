package protocol

import (
	"encoding/binary"
	"testing"
)

// fuzzSeeds are valid batches of every codec and a few corrupt ones.
func fuzzSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, codec := range allCodecs {
		seeds = append(seeds, buildBatch(f, codec, testRecords(1), nil), buildBatch(f, codec, testRecords(7), nil))
	}
	flipped := buildBatch(f, CompressionNone, testRecords(3), nil)
	flipped[70] ^= 0xff
	legacy := buildBatch(f, CompressionNone, testRecords(2), nil)
	legacy[16] = 1
	countLies := buildBatch(f, CompressionLz4, testRecords(4), nil)
	binary.BigEndian.PutUint32(countLies[57:], 1000)
	return append(seeds, flipped, legacy, fixCRC(countLies), []byte{}, make([]byte, 61))
}

// FuzzValidateBatch checks that no input panics or hangs ValidateBatch or
// Records. Random mutations rarely keep the CRC right, so each input is also
// tried with its CRC and base offset fixed, to reach the record parser and
// the decompressors.
func FuzzValidateBatch(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(b []byte) {
			h, err := ValidateBatch(b)
			if err != nil {
				if ErrorCode(err) <= 0 {
					t.Fatalf("error without a Kafka code: %v", err)
				}
				_ = Records(b, func(*Record) error { return nil })
				return
			}
			if h.Size() != len(b) || h.RecordCount <= 0 {
				t.Fatalf("accepted batch with header %+v", h)
			}
			n := int32(0)
			if err := Records(b, func(*Record) error { n++; return nil }); err != nil || n != h.RecordCount {
				t.Fatalf("valid batch: Records gave %d records, %v", n, err)
			}
		}
		check(b)
		if len(b) >= BatchHeaderSize {
			c := append([]byte(nil), b...)
			SetBaseOffset(c, 0)
			check(fixCRC(c))
		}
	})
}

// FuzzSplitBatches checks that splitting never panics and that what it
// returns tiles the input exactly.
func FuzzSplitBatches(f *testing.F) {
	seeds := fuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Add(append(append([]byte{}, seeds[0]...), seeds[3]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		batches, err := SplitBatches(b)
		if err != nil {
			if ErrorCode(err) <= 0 {
				t.Fatalf("error without a Kafka code: %v", err)
			}
			return
		}
		total := 0
		for _, batch := range batches {
			if len(batch) < BatchHeaderSize || &batch[0] != &b[total] {
				t.Fatalf("batch of %d bytes at %d", len(batch), total)
			}
			total += len(batch)
		}
		if total != len(b) {
			t.Fatalf("batches cover %d of %d bytes", total, len(b))
		}
	})
}

// FuzzDecompress feeds hostile payloads to every codec: errors are fine,
// panics, hangs and output beyond the limit are not.
func FuzzDecompress(f *testing.F) {
	for _, codec := range allCodecs {
		for _, n := range []int{0, 1, 7} {
			enc, err := Compress(codec, encodeRecords(testRecords(n)))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(codec), enc)
		}
	}
	f.Add(uint8(CompressionSnappy), xerialStream([]byte("abc"), []byte("def")))
	f.Fuzz(func(t *testing.T, codec uint8, src []byte) {
		const limit = 1 << 16
		out, err := Decompress(int8(codec%8), src, limit)
		if err == nil && len(out) > limit {
			t.Fatalf("%d bytes out under a limit of %d", len(out), limit)
		}
	})
}
