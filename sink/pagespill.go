package sink

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/parquet-go/parquet-go"
)

// pageSpill is the page buffer pool of the files a batch spools. parquet-go
// keeps a column chunk's encoded pages apart until its row group is written
// (a chunk's pages must be contiguous in the file); with its default pool
// they stay on the heap, so a row group costs its compressed size in memory.
// Here a chunk's pages stay in memory up to spillAfter bytes, then move to a
// file in the spool folder: a row group of any size costs at most
// spillAfter bytes per column, and small files never touch the disk twice.
type pageSpill struct {
	spool      *Spool
	spillAfter int
	mem        sync.Pool // *[]byte of cap spillAfter, reused between chunks
}

func newPageSpill(spool *Spool, spillAfter int) *pageSpill {
	return &pageSpill{spool: spool, spillAfter: spillAfter}
}

func (p *pageSpill) GetBuffer() io.ReadWriteSeeker {
	b := &spillBuffer{pool: p}
	if m, ok := p.mem.Get().(*[]byte); ok {
		b.mem = (*m)[:0]
	}
	return b
}

func (p *pageSpill) PutBuffer(rw io.ReadWriteSeeker) {
	b, ok := rw.(*spillBuffer)
	if !ok {
		return
	}
	if b.file != nil {
		b.file.Close()
		os.Remove(b.file.Name())
		b.file = nil
	}
	if b.mem != nil && cap(b.mem) <= p.spillAfter {
		m := b.mem[:0]
		p.mem.Put(&m)
	}
	b.mem = nil
}

// spillBuffer is one column chunk's pages: bytes in mem until they would
// pass spillAfter, then everything in file.
type spillBuffer struct {
	pool *pageSpill
	mem  []byte
	off  int // read/write position in mem
	file *os.File
}

func (b *spillBuffer) Write(p []byte) (int, error) {
	if b.file == nil && b.off+len(p) > b.pool.spillAfter {
		if err := b.spill(); err != nil {
			return 0, err
		}
	}
	if b.file != nil {
		if err := b.pool.spool.check(len(p)); err != nil {
			return 0, fmt.Errorf("spool: %w", err)
		}
		return b.file.Write(p)
	}
	if end := b.off + len(p); end > len(b.mem) {
		b.mem = append(b.mem[:b.off], p...)
	} else {
		copy(b.mem[b.off:], p)
	}
	b.off += len(p)
	return len(p), nil
}

func (b *spillBuffer) spill() error {
	f, err := os.CreateTemp(b.pool.spool.dir, spoolPrefix+"pages-*"+spoolSuffix)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	err = b.pool.spool.check(len(b.mem))
	if err == nil {
		_, err = f.Write(b.mem)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("spool: %w", err)
	}
	if _, err := f.Seek(int64(b.off), io.SeekStart); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("spool: %w", err)
	}
	b.file = f
	b.pool.PutBuffer(&spillBuffer{pool: b.pool, mem: b.mem})
	b.mem = nil
	return nil
}

func (b *spillBuffer) Read(p []byte) (int, error) {
	if b.file != nil {
		return b.file.Read(p)
	}
	if b.off >= len(b.mem) {
		return 0, io.EOF
	}
	n := copy(p, b.mem[b.off:])
	b.off += n
	return n, nil
}

func (b *spillBuffer) Seek(offset int64, whence int) (int64, error) {
	if b.file != nil {
		return b.file.Seek(offset, whence)
	}
	switch whence {
	case io.SeekCurrent:
		offset += int64(b.off)
	case io.SeekEnd:
		offset += int64(len(b.mem))
	}
	if offset < 0 || offset > int64(len(b.mem)) {
		return 0, errors.New("spool: page buffer seek out of range")
	}
	b.off = int(offset)
	return offset, nil
}

var _ parquet.BufferPool = (*pageSpill)(nil)
