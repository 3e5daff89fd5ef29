package conn

import (
	"encoding/binary"
	"fmt"
	"testing"
)

func TestFrameCounter(t *testing.T) {
	frame := func(n int) []byte {
		b := make([]byte, 4+n)
		binary.BigEndian.PutUint32(b, uint32(n))
		return b
	}
	two := append(frame(5), frame(3)...) // 16 bytes
	for _, tc := range []struct {
		name   string
		pieces []int // lengths the stream is cut into
		want   string
	}{
		{"whole", []int{16}, "[2/2]"},
		{"each frame", []int{9, 7}, "[1/1 1/1]"},
		{"size split", []int{2, 2, 5, 7}, "[1/0 0/0 0/1 1/1]"},
		{"byte by byte", []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 7}, "[1/0 0/0 0/0 0/0 0/0 0/0 0/0 0/0 0/1 1/1]"},
		{"across", []int{11, 5}, "[2/1 0/1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f frameCounter
			var got []string
			rest := two
			for _, n := range tc.pieces {
				s, e := f.feed(rest[:n])
				rest = rest[n:]
				got = append(got, fmt.Sprintf("%d/%d", s, e))
			}
			if fmt.Sprint(got) != tc.want || !f.atBoundary() {
				t.Fatalf("started/ended %v, want %s (at a boundary: %v)", got, tc.want, f.atBoundary())
			}
		})
	}
}
