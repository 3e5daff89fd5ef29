package decode

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"unsafe"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// Records that repeat a JSON object share one map, and every record gets
// the map of its own object: with many more distinct objects than the
// cache has slots (evictions, slots shared by different texts), objects
// that differ in a byte, escapes, invalid UTF-8 and null members.
func TestMapCacheGivesEachObjectItsMap(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{{Name: "labels", Type: sink.StringMap}}})
	type object struct {
		json string
		want map[string]string
	}
	var objects []object
	for i := range 300 {
		objects = append(objects, object{
			fmt.Sprintf(`{"zone":"az-%d","v":"1.%d"}`, i%3, i),
			map[string]string{"zone": fmt.Sprintf("az-%d", i%3), "v": fmt.Sprintf("1.%d", i)},
		})
	}
	objects = append(objects,
		object{`{"a":"\u00e9\n","b":null}`, map[string]string{"a": "é\n"}},
		object{"{\"a\":\"x\xffy\",\"n\":12.5}", map[string]string{"a": "x\uFFFDy", "n": "12.5"}},
		object{`{"a":"x","a":"y"}`, map[string]string{"a": "y"}},
		object{`{}`, map[string]string{}},
	)
	rng := rand.New(rand.NewPCG(7, 7))
	first := map[string]uintptr{}
	shared := 0
	for n := range 20_000 {
		o := objects[rng.IntN(len(objects))]
		if n%2 == 0 { // repeat a few often, as logs do
			o = objects[rng.IntN(4)]
		}
		row, _, err := d.Decode(&record.Record{Value: []byte(`{"labels":` + o.json + `}`)}, nil)
		if err != nil {
			t.Fatalf("%s: %v", o.json, err)
		}
		got, _ := row[0].(map[string]string)
		if !reflect.DeepEqual(got, o.want) {
			t.Fatalf("record %d, %s: got %v, want %v", n, o.json, got, o.want)
		}
		p := reflect.ValueOf(got).Pointer()
		if first[o.json] == p {
			shared++
		}
		first[o.json] = p
	}
	t.Logf("%d of 20,000 records shared the map of an object seen before", shared)
	if shared < 5_000 {
		t.Errorf("only %d of 20,000 records shared the map of an object seen before", shared)
	}
}

// One cache serves every worker of a Decoder: goroutines decoding at once
// each get their own object's map (run with -race: entries are swapped
// atomically and never written after).
func TestMapCacheSharedByGoroutines(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{{Name: "labels", Type: sink.StringMap}}})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 5_000 {
				i := rng.IntN(400) // more objects than slots: slots change hands
				row, _, err := d.Decode(&record.Record{Value: fmt.Appendf(nil, `{"labels":{"i":"%d"}}`, i)}, nil)
				if err != nil {
					errs <- err
					return
				}
				if m := row[0].(map[string]string); len(m) != 1 || m["i"] != strconv.Itoa(i) {
					errs <- fmt.Errorf("object %d decoded to %v", i, m)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestMapCacheKeepsObjectsWhoseSlotsCollide: two objects whose first
// slots are the same both stay cached (a direct-mapped cache would make
// them evict each other at every record), and a cached map's strings are
// not cut from the rows' arena, which the cache would then pin.
func TestMapCacheKeepsObjectsWhoseSlotsCollide(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{{Name: "labels", Type: sink.StringMap}}})
	first := func(text string) uint64 { return maphash.String(mapCacheSeed, text) % mapCacheSlots }
	a := `{"zone":"az-a","v":"1"}`
	var b string
	for i := 0; b == ""; i++ {
		if c := fmt.Sprintf(`{"zone":"az-b","v":"%d"}`, i); first(c) == first(a) && maphash.String(mapCacheSeed, c)>>32%mapCacheSlots != first(a) {
			b = c
		}
	}
	s := d.NewScratch()
	decodeMap := func(text string) map[string]string {
		row, _, err := s.Decode(&record.Record{Value: []byte(`{"labels":` + text + `}`)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return row[0].(map[string]string)
	}
	ma, mb := decodeMap(a), decodeMap(b)
	for range 3 {
		if again := decodeMap(a); reflect.ValueOf(again).UnsafePointer() != reflect.ValueOf(ma).UnsafePointer() {
			t.Fatal("the first object was evicted by the second, whose first slot is the same")
		}
		if again := decodeMap(b); reflect.ValueOf(again).UnsafePointer() != reflect.ValueOf(mb).UnsafePointer() {
			t.Fatal("the second object is not cached")
		}
	}
	arena := s.st.strs[:cap(s.st.strs)]
	lo, hi := uintptr(unsafe.Pointer(unsafe.SliceData(arena))), uintptr(unsafe.Pointer(unsafe.SliceData(arena)))+uintptr(len(arena))
	for k, v := range ma {
		for _, x := range []string{k, v} {
			if p := uintptr(unsafe.Pointer(unsafe.StringData(x))); p >= lo && p < hi {
				t.Errorf("the cached map's %q is cut from the rows' arena", x)
			}
		}
	}
}
