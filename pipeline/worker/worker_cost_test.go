package worker

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/loggen"
	"github.com/logstore/logstore/pipeline/decode"
	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// TestRecordCostCoversTheHeap keeps batch.memory_budget honest: the
// per-record estimate must cover what a decoded row really holds on the heap,
// without overstating it so much that the budget wastes memory. Rows that
// repeat a map share it (the decoder's map cache: the bench's logs hold
// 519 B a row that way); the budget must hold when no map repeats, so every
// record's labels here are its own.
func TestRecordCostCoversTheHeap(t *testing.T) {
	schema := benchSchema(t)
	schema.SetDefaults()
	dec, err := decode.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{Config: Config{Columns: len(dec.Schema().Fields)}}
	gen := loggen.New(1, time.Now(), time.Millisecond)
	const n = 200000
	rows := make([]sink.Row, 0, n)
	srcs := make([]sink.Source, 0, n)
	var cost int64
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		_, v, at := gen.Next()
		v = bytes.Replace(v, []byte(`"labels":{`), fmt.Appendf(nil, `"labels":{"n":"%d",`, i), 1)
		m := record.Record{Value: append([]byte(nil), v...), Offset: int64(i), Time: at}
		r, _, err := dec.Decode(&m, nil)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
		srcs = append(srcs, sink.Source{Offset: m.Offset, Timestamp: m.Time})
		cost += w.recordCost(&m)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("heap held %d B/record, estimate %d B/record", held, cost/n)
	if est := cost / n; est < held || est > 3*held/2 {
		t.Errorf("the estimate %d B/record should be between the held %d B and 1.5× that", est, held)
	}
	runtime.KeepAlive(rows)
	runtime.KeepAlive(srcs)
}
