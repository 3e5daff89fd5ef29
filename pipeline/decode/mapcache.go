package decode

import (
	"hash/maphash"
	"unsafe"
)

// mapCache hands out the map a JSON object decodes to by the object's text,
// so records that repeat an object (Kubernetes labels, a service's tags:
// a few distinct maps for millions of records) share one map instead of
// each building its own: a map costs two allocations and a hashed insert
// per entry, the most expensive column of a log line. The map is a pure
// function of the text, so a shared map is the map the record would have
// had. Rows treat maps as read-only (nothing in the pipeline or the sinks
// writes to one), which is what makes sharing them safe.
//
// It is direct-mapped: the text's hash picks one slot, and a miss
// replaces what the slot held. Objects that never repeat cost a hash and a
// copy of their text per record, and evict each other; no more.
type mapCache struct {
	slots [mapCacheSlots]mapCacheSlot
}

const mapCacheSlots = 64

// mapCacheMax is the longest object text cached: longer objects are seldom
// repeated and would pin their text.
const mapCacheMax = 512

type mapCacheSlot struct {
	text string // the object's JSON text (a copy); "" for an empty slot
	m    map[string]string
}

var mapCacheSeed = maphash.MakeSeed()

// slot is where the map of the object text raw is kept: its map if the
// slot's text is raw (a hit), else the slot to keep it in once built (see
// keep). nil for a text too long or empty to cache.
func (c *mapCache) slot(raw []byte) *mapCacheSlot {
	if len(raw) > mapCacheMax || len(raw) == 0 {
		return nil
	}
	return &c.slots[maphash.Bytes(mapCacheSeed, raw)%mapCacheSlots]
}

// hit reports whether s holds the map of raw.
func (s *mapCacheSlot) hit(raw []byte) bool {
	return s.text == unsafe.String(unsafe.SliceData(raw), len(raw))
}
