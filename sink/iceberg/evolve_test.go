package iceberg

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/logstore/logstore/sink"
)

// TestConfigEvolvesTheTable: a column added to schema.columns becomes a
// new optional field with a new id, int -> long and float -> double are
// promoted in place, and pyiceberg reads the files written before (null
// for the new column, their values widened) with the files written after.
func TestConfigEvolvesTheTable(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	ctx := context.Background()
	old := openTestTable(t, cfg)
	b0 := testBatch(0, 0, 9)
	if err := old.Write(ctx, b0); err != nil {
		t.Fatal(err)
	}
	before := tableOf(t, old)
	old.Close()
	maxID := before.Schema().HighestFieldID()

	// The config now: code int64, ratio32 float64 and a new column.
	evolved := &sink.Schema{Fields: append([]sink.Field(nil), testSchema.Fields...)}
	evolved.Fields[evolved.Index("code")].Type = sink.Int64
	evolved.Fields[evolved.Index("ratio32")].Type = sink.Float64
	evolved.Fields = append(evolved.Fields, sink.Field{Name: "trace_id", Type: sink.String, Required: true})
	tb, err := New(ctx, cfg, evolved, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	b1 := testBatch(0, 10, 19)
	b1.Schema = evolved
	for i, r := range b1.Rows {
		r[evolved.Index("code")] = int64(r[evolved.Index("code")].(int32)) + 1<<40 // beyond int
		r[evolved.Index("ratio32")] = float64(r[evolved.Index("ratio32")].(float32))
		b1.Rows[i] = append(r, fmt.Sprintf("trace-%d", b1.First+int64(i)))
	}
	if err := tb.Write(ctx, b1); err != nil {
		t.Fatal(err)
	}

	after := tableOf(t, tb).Schema()
	f, ok := after.FindFieldByName("trace_id")
	if !ok || f.Required || f.ID != maxID+1 {
		t.Errorf("trace_id: %+v (found %v), want an optional field with id %d", f, ok, maxID+1)
	}
	r := readTable(t, cfg)
	for col, typ := range map[string]string{"code": "long", "ratio32": "double", "trace_id": "string"} {
		if r.Types[col] != typ {
			t.Errorf("column %s is %q, want %q", col, r.Types[col], typ)
		}
	}
	wantOnce(t, r, b0, b1)
	for _, row := range r.Rows {
		off := int64(row["seq"].(float64))
		wantTrace, wantCode, wantRatio := any(nil), float64(off), float64(off)/2
		if off >= 10 {
			wantTrace, wantCode = fmt.Sprintf("trace-%d", off), float64(off+1<<40)
		}
		if row["trace_id"] != wantTrace || row["code"] != wantCode || row["ratio32"] != wantRatio {
			t.Errorf("offset %d: trace_id %v, code %v, ratio32 %v; want %v, %v, %v", off, row["trace_id"], row["code"], row["ratio32"], wantTrace, wantCode, wantRatio)
		}
	}
	// A filter on the promoted column prunes by the old files' int bounds
	// and the new files' long ones together.
	if n := readTable(t, cfg, "--count-only", "--where", "code >= 5").Count; n != 15 {
		t.Errorf("code >= 5: %d rows, want 15", n)
	}
	if n := readTable(t, cfg, "--count-only", "--where", "trace_id is null").Count; n != 10 {
		t.Errorf("trace_id is null: %d rows, want the 10 written before the column", n)
	}
}

func tableOf(t *testing.T, tb *Table) *table.Table {
	t.Helper()
	tbl, err := tb.cat.LoadTable(context.Background(), tb.ident)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
