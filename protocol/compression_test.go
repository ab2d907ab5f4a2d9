package protocol

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"testing"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

var allCodecs = []int8{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLz4, CompressionZstd}

// testPayloads covers empty, tiny, compressible, incompressible, and more
// than one xerial or lz4 block.
func testPayloads() map[string][]byte {
	rng := rand.New(rand.NewSource(1))
	random := make([]byte, 100<<10)
	rng.Read(random)
	var text bytes.Buffer
	for i := 0; text.Len() < 200<<10; i++ {
		fmt.Fprintf(&text, "record %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	return map[string][]byte{
		"empty":  {},
		"byte":   {42},
		"text":   text.Bytes(),
		"random": random,
	}
}

func TestCompressRoundTrip(t *testing.T) {
	for name, src := range testPayloads() {
		for _, codec := range allCodecs {
			t.Run(fmt.Sprintf("%s/codec%d", name, codec), func(t *testing.T) {
				enc, err := Compress(codec, src)
				if err != nil {
					t.Fatal(err)
				}
				dec, err := Decompress(codec, enc, len(src))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(dec, src) {
					t.Fatalf("round trip changed %d bytes into %d", len(src), len(dec))
				}
				if len(src) > 0 {
					if _, err := Decompress(codec, enc, len(src)-1); !errors.Is(err, ErrDecompressedTooLarge) {
						t.Fatalf("limit %d below %d: got %v", len(src)-1, len(src), err)
					}
				}
				// Appending keeps what dst held.
				out, err := AppendDecompressed([]byte("pre"), codec, enc, len(src))
				if err != nil || !bytes.Equal(out, append([]byte("pre"), src...)) {
					t.Fatalf("AppendDecompressed: %v", err)
				}
			})
		}
	}
}

// The franz-go client's own codecs, as a Go producer and consumer use them.
func TestCodecsInteroperateWithFranzGo(t *testing.T) {
	kgoCodecs := map[int8]kgo.CompressionCodec{
		CompressionGzip:   kgo.GzipCompression(),
		CompressionSnappy: kgo.SnappyCompression(),
		CompressionLz4:    kgo.Lz4Compression(),
		CompressionZstd:   kgo.ZstdCompression(),
	}
	src := testPayloads()["text"]
	dec := kgo.DefaultDecompressor()
	for codec, kc := range kgoCodecs {
		c, err := kgo.DefaultCompressor(kc)
		if err != nil {
			t.Fatal(err)
		}
		theirs, used := c.Compress(new(bytes.Buffer), src)
		if int8(used) != codec {
			t.Fatalf("franz-go used codec %d, want %d", used, codec)
		}
		got, err := Decompress(codec, theirs, len(src))
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("codec %d: decoding franz-go's output: %v", codec, err)
		}
		ours, err := Compress(codec, src)
		if err != nil {
			t.Fatal(err)
		}
		got, err = dec.Decompress(ours, kgo.CompressionCodecType(codec))
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("codec %d: franz-go decoding ours: %v", codec, err)
		}
	}
}

func TestGzipReadableByStdlib(t *testing.T) {
	src := testPayloads()["text"]
	enc, err := Compress(CompressionGzip, src)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := stdgzip.NewReader(bytes.NewReader(enc))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("stdlib gunzip: %v", err)
	}
}

func TestGzipConcatenatedMembers(t *testing.T) {
	a, _ := Compress(CompressionGzip, []byte("hello, "))
	b, _ := Compress(CompressionGzip, []byte("world"))
	got, err := Decompress(CompressionGzip, append(a, b...), 100)
	if err != nil || string(got) != "hello, world" {
		t.Fatalf("got %q, %v", got, err)
	}
}

// xerialStream frames blocks the way snappy-java's SnappyOutputStream does,
// written out here independently of the code under test.
func xerialStream(blocks ...[]byte) []byte {
	out := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	for _, b := range blocks {
		enc := snappy.Encode(nil, b)
		out = binary.BigEndian.AppendUint32(out, uint32(len(enc)))
		out = append(out, enc...)
	}
	return out
}

func TestSnappyXerialAndRaw(t *testing.T) {
	part1, part2 := bytes.Repeat([]byte("abc"), 20000), []byte("tail")
	want := append(append([]byte{}, part1...), part2...)

	got, err := Decompress(CompressionSnappy, xerialStream(part1, part2), len(want))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("xerial: %v", err)
	}
	got, err = Decompress(CompressionSnappy, snappy.Encode(nil, want), len(want))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("raw block: %v", err)
	}
	// A header and no blocks is an empty stream.
	if got, err := Decompress(CompressionSnappy, xerialStream(), 0); err != nil || len(got) != 0 {
		t.Fatalf("empty xerial: %q %v", got, err)
	}
	// The limit holds across blocks.
	if _, err := Decompress(CompressionSnappy, xerialStream(part1, part2), len(want)-1); !errors.Is(err, ErrDecompressedTooLarge) {
		t.Fatalf("xerial over limit: %v", err)
	}
	for name, bad := range map[string][]byte{
		"short header":    xerialStream()[:12],
		"short length":    append(xerialStream(), 0, 0),
		"block too long":  append(xerialStream(), 0, 0, 0, 9, 1),
		"bad raw block":   {0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"bad xerial body": append(xerialStream(), 0, 0, 0, 2, 0xff, 0xff),
	} {
		if _, err := Decompress(CompressionSnappy, bad, 1<<20); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

// Compress writes xerial framing with 32 KiB blocks, as the Java client does.
func TestSnappyCompressWritesXerial(t *testing.T) {
	src := testPayloads()["text"] // 200 KiB: 7 blocks
	enc, err := Compress(CompressionSnappy, src)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(enc, []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}) {
		t.Fatalf("header % x", enc[:16])
	}
	blocks := 0
	for rest := enc[16:]; len(rest) > 0; blocks++ {
		n := binary.BigEndian.Uint32(rest)
		size, err := snappy.DecodedLen(rest[4 : 4+n])
		if err != nil || size > 32<<10 {
			t.Fatalf("block %d decodes to %d bytes (%v)", blocks, size, err)
		}
		rest = rest[4+n:]
	}
	if want := (len(src) + 32<<10 - 1) / (32 << 10); blocks != want {
		t.Fatalf("%d blocks, want %d", blocks, want)
	}
}

func TestLz4FrameHeader(t *testing.T) {
	enc, err := Compress(CompressionLz4, []byte("some data"))
	if err != nil {
		t.Fatal(err)
	}
	// Frame magic, then FLG (version 01, independent blocks) and BD (64 KiB).
	if !bytes.HasPrefix(enc, []byte{0x04, 0x22, 0x4d, 0x18}) || enc[4]>>6 != 1 || enc[4]&0x20 == 0 || enc[5] != 0x40 {
		t.Fatalf("lz4 frame starts % x", enc[:6])
	}
	enc[6]++ // the header checksum
	if _, err := Decompress(CompressionLz4, enc, 100); err == nil {
		t.Fatal("bad header checksum accepted")
	}
}

func TestDecompressionBomb(t *testing.T) {
	zeros := make([]byte, 16<<20)
	for _, codec := range allCodecs[1:] {
		enc, err := Compress(codec, zeros)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decompress(codec, enc, 1<<20); !errors.Is(err, ErrDecompressedTooLarge) {
			t.Errorf("codec %d: %d compressed bytes under a 1 MiB limit: %v", codec, len(enc), err)
		}
	}
}

func TestUnknownCodec(t *testing.T) {
	for _, codec := range []int8{5, 6, 7, -1} {
		if _, err := Decompress(codec, []byte("x"), 10); ErrorCode(err) != CodeUnsupportedCompressionType {
			t.Errorf("Decompress codec %d: %v", codec, err)
		}
		if _, err := Compress(codec, []byte("x")); ErrorCode(err) != CodeUnsupportedCompressionType {
			t.Errorf("Compress codec %d: %v", codec, err)
		}
	}
}

func TestGarbageDoesNotDecompress(t *testing.T) {
	garbage := []byte("this is not compressed data at all, not in any codec")
	for _, codec := range allCodecs[1:] {
		if _, err := Decompress(codec, garbage, 1<<20); err == nil {
			t.Errorf("codec %d decoded garbage", codec)
		}
	}
}

// Java's ZstdOutputStream writes frames without a content size and with a
// window of megabytes; a small limit must still decode them.
func TestZstdStreamFrames(t *testing.T) {
	var buf bytes.Buffer
	w, err := zstd.NewWriter(&buf, zstd.WithWindowSize(8<<20), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	src := testPayloads()["text"]
	w.Write(src)
	w.Close()
	var h zstd.Header
	if err := h.Decode(buf.Bytes()); err != nil || h.HasFCS || h.WindowSize < 1<<20 {
		t.Fatalf("test frame: %+v, %v", h, err)
	}
	got, err := Decompress(CompressionZstd, buf.Bytes(), len(src))
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("decode: %v", err)
	}
	if _, err := Decompress(CompressionZstd, buf.Bytes(), len(src)-1); !errors.Is(err, ErrDecompressedTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
	small := []byte("small batch")
	buf.Reset()
	w.Reset(&buf)
	w.Write(small)
	w.Close()
	if got, err := Decompress(CompressionZstd, buf.Bytes(), 100); err != nil || !bytes.Equal(got, small) {
		t.Fatalf("small frame, big window: %q %v", got, err)
	}
}

// Every option of a frame Kafka's decoder reads is walked right: block
// and content checksums, the content size, each block size, several
// blocks, incompressible ones.
func TestKafkaLz4FrameOptions(t *testing.T) {
	data := append(bytes.Repeat([]byte("compressible "), 40000), make([]byte, 300000)...)
	rand.New(rand.NewSource(1)).Read(data[len(data)-200000:]) // incompressible blocks
	for _, opts := range [][]lz4.Option{
		{lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)},
		{lz4.BlockSizeOption(lz4.Block256Kb), lz4.BlockChecksumOption(true)},
		{lz4.BlockSizeOption(lz4.Block1Mb), lz4.SizeOption(uint64(len(data)))},
		{lz4.BlockSizeOption(lz4.Block4Mb), lz4.BlockChecksumOption(true), lz4.SizeOption(uint64(len(data)))},
	} {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if err := w.Apply(opts...); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		frame := buf.Bytes()
		if err := checkKafkaLz4Frame(frame); err != nil {
			t.Fatalf("flags %#x, bd %#x: %v", frame[4], frame[5], err)
		}
		if err := checkKafkaLz4Frame(frame[:len(frame)-1]); err == nil {
			t.Fatalf("flags %#x: a frame cut short passes", frame[4])
		}
		if err := checkKafkaLz4Frame(append(frame, 0)); err == nil {
			t.Fatalf("flags %#x: a byte after the frame passes", frame[4])
		}
	}
}
