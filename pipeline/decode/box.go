package decode

import (
	"sync"
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
// is not written again while a row may hold it, so the value behaves
// exactly as any other interface value (==, type switches, reflect).
//
// Decode's pooled states never write a slot twice: a block lives as long
// as any of its values, at most boxBlock rows' worth, and rows are dropped
// in chunks as they are staged; blocks start small and double, so a state
// the pool dropped (at every GC) leaves little unused. A Scratch's boxes
// recycle: its owner says when no row holds a value any more (Release), and
// the blocks are handed out again.
type boxes[T any] struct {
	typ   unsafe.Pointer // T's type word in an interface
	free  []T
	block int // the size of the last block
	// With recycle (a Scratch's boxes), every block is boxBlock values,
	// cur is the one being handed out, used those handed out entirely
	// since the last release, and release gives them to spare.
	recycle bool
	cur     []T
	used    [][]T
	spare   sync.Pool // *[]T of boxBlock values
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
		b.next()
	}
	p := &b.free[0]
	b.free = b.free[1:]
	*p = v
	var out any
	e := (*eface)(unsafe.Pointer(&out))
	e.typ, e.data = b.typ, unsafe.Pointer(p)
	return out
}

// next starts a new block.
func (b *boxes[T]) next() {
	if !b.recycle {
		b.block = min(max(2*b.block, 8), boxBlock)
		b.free = make([]T, b.block)
		return
	}
	if b.cur != nil {
		b.used = append(b.used, b.cur)
	}
	if p, ok := b.spare.Get().(*[]T); ok {
		b.cur = *p
	} else {
		b.cur = make([]T, boxBlock)
	}
	b.free = b.cur
}

// release makes every value handed out free to be written again: no row
// holds one any more. Values are cleared so a spare block keeps nothing
// alive (a string's text, a time's location).
func (b *boxes[T]) release() {
	for _, blk := range b.used {
		clear(blk)
		b.spare.Put(&blk)
	}
	clear(b.used)
	b.used = b.used[:0]
	if b.cur != nil {
		clear(b.cur[:len(b.cur)-len(b.free)])
		b.free = b.cur
	}
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

// recycled makes every box hand out recycled blocks (a Scratch's).
func (v *valueBoxes) recycled() {
	v.strs.recycle, v.times.recycle, v.int64s.recycle = true, true, true
	v.int32s.recycle, v.f64s.recycle, v.f32s.recycle = true, true, true
}

func (v *valueBoxes) release() {
	v.strs.release()
	v.times.release()
	v.int64s.release()
	v.int32s.release()
	v.f64s.release()
	v.f32s.release()
}
