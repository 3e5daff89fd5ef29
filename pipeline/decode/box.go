package decode

import (
	"time"
	"unsafe"
)

// A row is a []any, and Go stores a string, a time or a number put in an
// interface in a heap object of its own: about ten small objects per
// decoded row, most of the allocations of the hot path and work for the
// garbage collector. boxes hands out such interface values from blocks of
// boxBlock values instead: the value is written once into a slot of the
// block and the interface points at the slot, which is what Go's own
// conversion makes, one allocation per block instead of per value. A slot
// is never written again once handed out, so the value behaves exactly as
// any other interface value (==, type switches, reflect).
//
// A block lives as long as any of its values: at most boxBlock rows' worth,
// and rows are dropped in chunks as they are staged. Blocks start small and
// double: a decodeState the pool dropped (at every GC) leaves little unused.
type boxes[T any] struct {
	typ   unsafe.Pointer // T's type word in an interface
	free  []T
	block int // the size of the last block
}

const boxBlock = 256

// eface is the layout of an interface value without methods (any).
type eface struct {
	typ, data unsafe.Pointer
}

// box returns v in an interface. T must not be pointer-shaped (a pointer,
// map, chan or func: Go keeps those in the interface word itself).
func (b *boxes[T]) box(v T) any {
	if len(b.free) == 0 {
		if b.typ == nil {
			var zero any = *new(T)
			b.typ = (*eface)(unsafe.Pointer(&zero)).typ
		}
		b.block = min(max(2*b.block, 8), boxBlock)
		b.free = make([]T, b.block)
	}
	p := &b.free[0]
	b.free = b.free[1:]
	*p = v
	var out any
	e := (*eface)(unsafe.Pointer(&out))
	e.typ, e.data = b.typ, unsafe.Pointer(p)
	return out
}

// valueBoxes are the boxes of the column types that are not pointer-shaped.
type valueBoxes struct {
	strs   boxes[string]
	times  boxes[time.Time]
	int64s boxes[int64]
	int32s boxes[int32]
	f64s   boxes[float64]
	f32s   boxes[float32]
}
