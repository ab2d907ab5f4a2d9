package protocol

// Recompression: a topic whose compression.type names a codec stores
// every batch with that codec, whatever the producer sent. The records
// section of a v2 batch is the same bytes whatever the codec (the codec
// only wraps it), so a batch is recompressed by decompressing that section,
// compressing it with the new codec, and rewriting the three header fields
// that change: attributes (codec bits), batchLength and the CRC. Offsets,
// timestamps, producer id, epoch and sequence stay as sent.
//
// Levels are Kafka's compression.gzip.level (1-9, or -1 for the default),
// compression.lz4.level (1-17, default 9) and compression.zstd.level
// (-131072 to 22, default 3); snappy has none. The default levels use the
// shared encoders of compression.go; others build an encoder per call
// (gzip, lz4) or keep one per level (zstd), which is fine for a path taken
// only when a topic asks for a codec the producer did not use.

import (
	"encoding/binary"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Kafka's default compression levels.
const (
	DefaultGzipLevel = -1
	DefaultLz4Level  = 9
	DefaultZstdLevel = 3
)

// Recompress returns a copy of the single v2 batch in batch with its
// records compressed with codec (CompressionNone to store them
// uncompressed) at level, which is ignored for snappy and none.
func Recompress(batch []byte, codec int8, level int) ([]byte, error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return nil, err
	}
	records := batch[BatchHeaderSize:h.Size()]
	if from := h.Compression(); from != CompressionNone {
		if records, err = Decompress(from, records, DefaultMaxUncompressedBatch); err != nil {
			return nil, err
		}
	}
	out := make([]byte, BatchHeaderSize, BatchHeaderSize+len(records))
	copy(out, batch[:BatchHeaderSize])
	if out, err = AppendCompressedLevel(out, codec, level, records); err != nil {
		return nil, err
	}
	attrs := uint16(h.Attributes)&^AttrCompressionMask | uint16(codec)
	binary.BigEndian.PutUint16(out[21:], attrs)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-LogOverhead))
	binary.BigEndian.PutUint32(out[17:], BatchCRC(out))
	return out, nil
}

// AppendCompressedLevel is AppendCompressed at a Kafka compression level.
func AppendCompressedLevel(dst []byte, codec int8, level int, src []byte) ([]byte, error) {
	switch {
	case codec == CompressionGzip && level != DefaultGzipLevel:
		w, err := gzip.NewWriterLevel(nil, level)
		if err != nil {
			return dst, err
		}
		return compressWith(w, dst, src)
	case codec == CompressionLz4 && level != DefaultLz4Level:
		w := lz4.NewWriter(nil)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.CompressionLevelOption(lz4Level(level))); err != nil {
			return dst, err
		}
		return compressWith(w, dst, src)
	case codec == CompressionZstd && level != DefaultZstdLevel:
		enc, err := zstdEncoderAt(level)
		if err != nil {
			return dst, err
		}
		return enc.EncodeAll(src, dst), nil
	}
	return AppendCompressed(dst, codec, src)
}

// lz4Level maps Kafka's lz4 levels (1 fast, 2-17 high compression) onto
// the library's: fast, then its nine high-compression levels.
func lz4Level(level int) lz4.CompressionLevel {
	levels := []lz4.CompressionLevel{lz4.Level1, lz4.Level2, lz4.Level3, lz4.Level4, lz4.Level5,
		lz4.Level6, lz4.Level7, lz4.Level8, lz4.Level9}
	if level <= 1 {
		return lz4.Fast
	}
	return levels[min(level, 10)-2]
}

var zstdLevelEncoders sync.Map // int -> *zstd.Encoder

func zstdEncoderAt(level int) (*zstd.Encoder, error) {
	if e, ok := zstdLevelEncoders.Load(level); ok {
		return e.(*zstd.Encoder), nil
	}
	e, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)))
	if err != nil {
		return nil, err
	}
	actual, _ := zstdLevelEncoders.LoadOrStore(level, e)
	return actual.(*zstd.Encoder), nil
}
