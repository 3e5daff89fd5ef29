package decode

import (
	"hash/maphash"
	"sync/atomic"
	"unsafe"
)

// mapCache hands out the map a JSON object decodes to by the object's text,
// so records that repeat an object (Kubernetes labels, a service's tags:
// a few distinct maps for millions of records) share one map instead of
// each building its own: a map costs two allocations and a hashed insert
// per entry, the most expensive column of a log line. The map is a pure
// function of the text, so a shared map is the map the record would have
// had. Rows treat maps as read-only (nothing in the pipeline or the sinks
// writes to one), which is what makes sharing them, across partitions and
// goroutines too, safe.
//
// One cache serves a Decoder, so every partition's worker hits what
// another built. It is two-way: the text's hash picks two slots, and a miss
// replaces the entry of one of them (by another bit of the hash), so two
// frequent objects whose first slots collide still both stay (entries are
// immutable, swapped atomically). Objects that never repeat cost a hash and
// a copy of their text per record, and evict each other; no more. A cached
// map's strings and text share one allocation of their own, so an entry
// pins only itself.
type mapCache struct {
	slots [mapCacheSlots]atomic.Pointer[mapCacheEntry]
}

const mapCacheSlots = 512

// mapCacheMax is the longest object text cached: longer objects are seldom
// repeated and would pin more memory.
const mapCacheMax = 512

type mapCacheEntry struct {
	text string // the object's JSON text (a copy)
	m    map[string]string
}

var mapCacheSeed = maphash.MakeSeed()

// lookup returns the cached map of the object text raw, or else the slot
// to keep it in once built (nil for a text too long or empty to cache, or
// without a cache: a column's default value is converted before the column
// has one).
func (c *mapCache) lookup(raw []byte) (map[string]string, *atomic.Pointer[mapCacheEntry]) {
	if c == nil || len(raw) > mapCacheMax || len(raw) == 0 {
		return nil, nil
	}
	h := maphash.Bytes(mapCacheSeed, raw)
	text := unsafe.String(unsafe.SliceData(raw), len(raw))
	a, b := &c.slots[h%mapCacheSlots], &c.slots[(h>>32)%mapCacheSlots]
	if e := a.Load(); e != nil && e.text == text {
		return e.m, nil
	}
	if e := b.Load(); e != nil && e.text == text {
		return e.m, nil
	}
	switch {
	case a.Load() == nil:
		return nil, a
	case b.Load() == nil, h>>63 == 1:
		return nil, b
	}
	return nil, a
}
