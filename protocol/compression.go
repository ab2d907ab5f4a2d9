package protocol

// Compression codecs of record batches.
//
// A compressed v2 batch keeps its 61-byte header in the clear and compresses
// only the records section; the codec number sits in the low three bits of
// the attributes. The codecs and the framing real clients use:
//
//	1 gzip    RFC 1952, possibly several concatenated members.
//	2 snappy  Java clients write the xerial stream (see xerial below);
//	          librdkafka and some Go clients write one raw snappy block.
//	3 lz4     One frame of the LZ4 frame format (magic 0x184D2204) with
//	          independent blocks and a correct header checksum (only magic
//	          v0 message sets had the broken one): all Kafka reads, so
//	          all produced batches may hold (validate.go).
//	4 zstd    One or more zstd frames.
//
// Decompression refuses to produce more than the caller's maxOut bytes, so
// a small batch cannot expand into an unbounded allocation. Decoders and
// encoders are pooled (gzip, lz4) or shared (zstd: EncodeAll and DecodeAll
// are safe for concurrent use), so the hot path allocates only its output.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// ErrDecompressedTooLarge says decompression would exceed the caller's limit.
var ErrDecompressedTooLarge = errors.New("decompressed data exceeds the size limit")

// Decompress returns src decompressed with codec, refusing to produce more
// than maxOut bytes (ErrDecompressedTooLarge). CompressionNone returns a copy
// of src. A codec other than 0..4 gives a *BatchError with
// UNSUPPORTED_COMPRESSION_TYPE.
func Decompress(codec int8, src []byte, maxOut int) ([]byte, error) {
	return AppendDecompressed(nil, codec, src, maxOut)
}

// AppendDecompressed is Decompress appending to dst, so that callers can
// reuse a buffer. maxOut bounds the bytes appended, not len(dst).
func AppendDecompressed(dst []byte, codec int8, src []byte, maxOut int) ([]byte, error) {
	switch codec {
	case CompressionNone:
		if len(src) > maxOut {
			return dst, ErrDecompressedTooLarge
		}
		return append(dst, src...), nil
	case CompressionGzip:
		return gunzip(dst, src, maxOut)
	case CompressionSnappy:
		return unsnappy(dst, src, maxOut)
	case CompressionLz4:
		return unlz4(dst, src, maxOut)
	case CompressionZstd:
		return unzstd(dst, src, maxOut)
	}
	return dst, unknownCodec(codec)
}

// Compress returns src compressed with codec, framed as the Java client
// frames it. CompressionNone returns a copy of src.
func Compress(codec int8, src []byte) ([]byte, error) {
	return AppendCompressed(nil, codec, src)
}

// AppendCompressed is Compress appending to dst.
func AppendCompressed(dst []byte, codec int8, src []byte) ([]byte, error) {
	switch codec {
	case CompressionNone:
		return append(dst, src...), nil
	case CompressionGzip:
		return gzipCompress(dst, src)
	case CompressionSnappy:
		return xerialCompress(dst, src), nil
	case CompressionLz4:
		return lz4Compress(dst, src)
	case CompressionZstd:
		return zstdEncoder.EncodeAll(src, dst), nil
	}
	return dst, unknownCodec(codec)
}

func unknownCodec(codec int8) error {
	return batchErr(CodeUnsupportedCompressionType, "unknown compression codec %d", codec)
}

// readLimited appends everything r produces to dst, failing once more than
// maxOut bytes have been appended.
func readLimited(dst []byte, r io.Reader, maxOut int) ([]byte, error) {
	start := len(dst)
	for {
		room := maxOut + 1 - (len(dst) - start) // one byte more detects excess
		if room <= 0 {
			return dst, ErrDecompressedTooLarge
		}
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		buf := dst[len(dst):cap(dst)]
		if len(buf) > room {
			buf = buf[:room]
		}
		n, err := r.Read(buf)
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			if len(dst)-start > maxOut {
				return dst, ErrDecompressedTooLarge
			}
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// --- gzip ---

type gzipDecoder struct {
	src bytes.Reader
	zr  gzip.Reader
}

var (
	gzipDecoders = sync.Pool{New: func() any { return new(gzipDecoder) }}
	gzipEncoders = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
)

func gunzip(dst, src []byte, maxOut int) ([]byte, error) {
	d := gzipDecoders.Get().(*gzipDecoder)
	defer gzipDecoders.Put(d)
	d.src.Reset(src)
	if err := d.zr.Reset(&d.src); err != nil {
		return dst, err // the library's errors say "gzip: ..."
	}
	out, err := readLimited(dst, &d.zr, maxOut)
	d.src.Reset(nil) // do not keep the caller's bytes alive in the pool
	return out, err
}

func gzipCompress(dst, src []byte) ([]byte, error) {
	w := gzipEncoders.Get().(*gzip.Writer)
	defer gzipEncoders.Put(w)
	return compressWith(w, dst, src)
}

// streamEncoder is a pooled compressing writer (gzip, lz4).
type streamEncoder interface {
	io.WriteCloser
	Reset(io.Writer)
}

// compressWith appends src compressed by w to dst, leaving w detached.
func compressWith(w streamEncoder, dst, src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	w.Reset(buf)
	defer w.Reset(nil)
	if _, err := w.Write(src); err != nil {
		return dst, err
	}
	if err := w.Close(); err != nil {
		return dst, err
	}
	return buf.Bytes(), nil
}

// --- lz4 ---

type lz4Decoder struct {
	src bytes.Reader
	zr  *lz4.Reader
}

var (
	lz4Decoders = sync.Pool{New: func() any { return &lz4Decoder{zr: lz4.NewReader(nil)} }}
	lz4Encoders = sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		// 64 KiB blocks, as the Java client writes them: its consumers size
		// their buffers by the block size announced in the frame.
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			panic(err)
		}
		return w
	}}
)

func unlz4(dst, src []byte, maxOut int) ([]byte, error) {
	d := lz4Decoders.Get().(*lz4Decoder)
	defer lz4Decoders.Put(d)
	d.src.Reset(src)
	d.zr.Reset(&d.src)
	out, err := readLimited(dst, d.zr, maxOut) // errors say "lz4: ..."
	d.src.Reset(nil)
	d.zr.Reset(nil)
	return out, err
}

// The LZ4 frame fields Kafka's decoder (Lz4BlockInputStream) reads.
const (
	lz4FrameMagic      = 0x184D2204
	lz4FlagReserved    = 0x03 // the dictionary id bit among them
	lz4FlagContentSum  = 0x04
	lz4FlagContentSize = 0x08
	lz4FlagBlockSum    = 0x10
	lz4FlagIndependent = 0x20
	lz4BDReserved      = 0x8f
	lz4Uncompressed    = 1 << 31 // in a block's size word
)

// checkKafkaLz4Frame refuses an lz4 payload that Kafka's decoder, in its
// broker and in Java consumers, cannot read, though pierrec/lz4 can
// (unlz4 still reads them, for batches stored before the check): it
// reads exactly one frame of the LZ4 frame format, version 1, with
// independent blocks of a maximum size id 4 to 7 and every reserved bit
// clear; legacy and skippable frames have another magic. Kafka ignores
// bytes after that frame; we refuse them, as a second frame's records
// would be lost to Java consumers.
func checkKafkaLz4Frame(src []byte) error {
	if len(src) < 7 {
		return errors.New("lz4: truncated frame header")
	}
	if binary.LittleEndian.Uint32(src) != lz4FrameMagic {
		return fmt.Errorf("lz4: frame magic %#x is not the LZ4 frame format's", binary.LittleEndian.Uint32(src))
	}
	flags, bd := src[4], src[5]
	switch {
	case flags>>6 != 1:
		return fmt.Errorf("lz4: frame version %d", flags>>6)
	case flags&lz4FlagReserved != 0 || bd&lz4BDReserved != 0:
		return errors.New("lz4: reserved frame descriptor bits set")
	case flags&lz4FlagIndependent == 0:
		return errors.New("lz4: dependent blocks, which Kafka does not read")
	case bd>>4 < 4:
		return fmt.Errorf("lz4: block maximum size id %d", bd>>4)
	}
	maxBlock := 1 << (2*(bd>>4) + 8)
	at := 7
	if flags&lz4FlagContentSize != 0 {
		at += 8
	}
	for {
		if at+4 > len(src) {
			return errors.New("lz4: frame cut short")
		}
		size := int(binary.LittleEndian.Uint32(src[at:]) &^ lz4Uncompressed)
		at += 4
		if size == 0 { // end mark
			break
		}
		if size > maxBlock {
			return fmt.Errorf("lz4: block of %d bytes above the frame's maximum %d", size, maxBlock)
		}
		at += size
		if flags&lz4FlagBlockSum != 0 {
			at += 4
		}
	}
	if flags&lz4FlagContentSum != 0 {
		at += 4
	}
	switch {
	case at > len(src):
		return errors.New("lz4: frame cut short")
	case at < len(src):
		return fmt.Errorf("lz4: %d bytes after the frame, which Kafka does not read", len(src)-at)
	}
	return nil
}

func lz4Compress(dst, src []byte) ([]byte, error) {
	w := lz4Encoders.Get().(*lz4.Writer)
	defer lz4Encoders.Put(w)
	return compressWith(w, dst, src)
}

// --- zstd ---

var zstdEncoder = mustZstdEncoder()

func mustZstdEncoder() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true))
	if err != nil {
		panic(err)
	}
	return enc
}

// zstd's DecodeAll is safe for concurrent use and, unlike the streaming
// decoder, keeps no window buffer besides its output. Its size limit is set
// per decoder, not per call, and it also caps the frame window it accepts,
// so we share one decoder per power-of-two limit, never below
// zstdMaxWindow, the largest window Kafka decodes: libzstd's default limit
// (ZSTD_WINDOWLOG_LIMIT_DEFAULT), which zstd-jni keeps in Kafka's broker and
// consumers. The Java client's frames have no content size and announce
// windows of 2 MiB (level 3) up to 128 MiB (level 22, KIP-390) however
// small the batch; a frame announcing more is refused, as Kafka refuses
// it. A bomb is thus refused after at most max(2*maxOut, 128 MiB) bytes;
// the exact limit is checked afterwards. In practice there are few
// limits, as they come from configuration.
const zstdMaxWindow = 1 << 27

var zstdDecoders sync.Map // int (log2 of limit) -> *zstd.Decoder

func zstdDecoderFor(maxOut int) (*zstd.Decoder, error) {
	limit, shift := min(max(maxOut, zstdMaxWindow), 1<<40), 0
	for 1<<shift < limit {
		shift++
	}
	if d, ok := zstdDecoders.Load(shift); ok {
		return d.(*zstd.Decoder), nil
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(1<<shift), zstd.WithDecoderMaxWindow(zstdMaxWindow),
		zstd.WithDecoderConcurrency(0))
	if err != nil {
		return nil, err
	}
	if prev, loaded := zstdDecoders.LoadOrStore(shift, d); loaded {
		d.Close()
		return prev.(*zstd.Decoder), nil
	}
	return d, nil
}

func unzstd(dst, src []byte, maxOut int) ([]byte, error) {
	d, err := zstdDecoderFor(maxOut)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	out, err := d.DecodeAll(src, dst)
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return dst, ErrDecompressedTooLarge
	case err != nil:
		return dst, fmt.Errorf("zstd: %w", err)
	case len(out)-start > maxOut:
		return dst, ErrDecompressedTooLarge
	}
	return out, nil
}

// --- snappy ---

// xerial is the stream snappy-java's SnappyOutputStream writes, which the
// Java client uses for snappy batches:
//
//	offset  size  field
//	0       8     magic 0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00
//	8       4     version (1)
//	12      4     minimum compatible version (1)
//	16      ...   repeated: int32 big-endian length, then one raw snappy block
//
// Each block holds at most xerialBlockSize uncompressed bytes.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	xerialBlockSize  = 32 << 10 // SnappyOutputStream's default
)

func unsnappy(dst, src []byte, maxOut int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(dst, src, maxOut)
	}
	if len(src) < xerialHeaderSize {
		return dst, errors.New("snappy: truncated xerial header")
	}
	start := len(dst)
	rest := src[xerialHeaderSize:]
	for len(rest) > 0 {
		if len(rest) < 4 {
			return dst, errors.New("snappy: truncated xerial block length")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return dst, fmt.Errorf("snappy: xerial block of %d bytes, %d left", n, len(rest))
		}
		var err error
		if dst, err = snappyBlock(dst, rest[:n], maxOut-(len(dst)-start)); err != nil {
			return dst, err
		}
		rest = rest[n:]
	}
	return dst, nil
}

// snappyBlock appends the decoding of one raw snappy block to dst.
func snappyBlock(dst, block []byte, maxOut int) ([]byte, error) {
	n, err := snappy.DecodedLen(block) // errors say "snappy: ..."
	if err != nil {
		return dst, err
	}
	if n > maxOut {
		return dst, ErrDecompressedTooLarge
	}
	dst = slices.Grow(dst, n)
	out, err := snappy.Decode(dst[len(dst):len(dst)+n], block)
	if err != nil {
		return dst, err
	}
	return dst[:len(dst)+len(out)], nil
}

func xerialCompress(dst, src []byte) []byte {
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	for len(src) > 0 {
		chunk := src[:min(len(src), xerialBlockSize)]
		src = src[len(chunk):]
		// Reserve the length, encode in place after it, then fill it in.
		lenAt := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		need := snappy.MaxEncodedLen(len(chunk))
		dst = slices.Grow(dst, need)
		enc := snappy.Encode(dst[len(dst):len(dst)+need], chunk)
		binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(enc)))
		dst = dst[:len(dst)+len(enc)]
	}
	return dst
}
