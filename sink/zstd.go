package sink

import (
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// zstdCodec compresses Parquet pages with zstd at a level (parquetCodec
// holds one per level for the process). It is parquet-go's codec but for
// two things: the level is the reference zstd's (1-22, mapped to the Go
// encoder's four), and a block in which the encoder finds no match still
// has its literals entropy-coded, as the reference zstd does at every
// level. The Go encoder stores such a block raw at its default and
// fastest levels, so a page of random ids (trace ids, once their
// dictionary fell back to plain, their length prefixes aside) comes out
// at its full size instead of about half.
type zstdCodec struct {
	level    zstd.EncoderLevel
	encoders sync.Pool // *zstd.Encoder; a Go encoder encodes one page at a time
}

func (c *zstdCodec) String() string                            { return "ZSTD" }
func (c *zstdCodec) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (c *zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	e, _ := c.encoders.Get().(*zstd.Encoder)
	if e == nil {
		var err error
		e, err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(c.level),
			zstd.WithEncoderConcurrency(1),
			zstd.WithZeroFrames(true),
			zstd.WithEncoderCRC(false),
			zstd.WithAllLitEntropyCompression(true),
		)
		if err != nil {
			return dst[:0], err
		}
	}
	defer c.encoders.Put(e)
	return e.EncodeAll(src, dst[:0]), nil
}

func (c *zstdCodec) Decode(dst, src []byte) ([]byte, error) { return parquet.Zstd.Decode(dst, src) }
