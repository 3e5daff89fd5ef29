package producer

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/pierrec/lz4/v4"
)

// TestLZ4FrameReadsBack: the frame the producer writes reads back through
// a standard LZ4 frame reader (pierrec's, which checks the descriptor's
// checksum), for empty input, a block's worth and one byte over, text that
// compresses and random bytes that do not (stored as they are), written
// in one call or in pieces as records are.
func TestLZ4FrameReadsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 3*lz4BlockSize/2)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	text := bytes.Repeat([]byte(`{"level":"INFO","message":"GET /api/v1/orders completed"}`+"\n"), 5000)
	for name, in := range map[string][]byte{
		"empty": {}, "one byte": {'x'}, "one block": text[:lz4BlockSize], "a block and a byte": text[:lz4BlockSize+1],
		"text": text, "random": random, "text then random": append(append([]byte{}, text[:1000]...), random...),
	} {
		for _, piece := range []int{len(in) + 1, 333} {
			var buf bytes.Buffer
			buf.WriteString("head")
			f := newLZ4Frame(&buf)
			for p := in; len(p) > 0; {
				n := min(piece, len(p))
				if _, err := f.Write(p[:n]); err != nil {
					t.Fatal(err)
				}
				p = p[n:]
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(buf.Bytes(), []byte("head")) {
				t.Fatalf("%s: the frame overwrote what the buffer held", name)
			}
			out, err := io.ReadAll(lz4.NewReader(bytes.NewReader(buf.Bytes()[4:])))
			if err != nil {
				t.Fatalf("%s, pieces of %d: %v", name, piece, err)
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("%s, pieces of %d: read back %d bytes, want %d", name, piece, len(out), len(in))
			}
		}
	}
}
