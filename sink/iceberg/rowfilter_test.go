package iceberg

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestRowFilterReadsThroughIcebergGo: a table the sink wrote reads back
// through iceberg-go with a filter on a column that is not a partition
// column, which iceberg-go evaluates row by row as a substrait expression.
// The project's copy of iceberg-go loads substrait's extension collection
// on the first such read instead of at package init
// (third_party/iceberg-go/PATCHES.md); this is that first read.
func TestRowFilterReadsThroughIcebergGo(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	tb := openTestTable(t, cfg)
	if err := tb.Write(context.Background(), testBatch(0, 0, 11)); err != nil {
		t.Fatal(err)
	}
	tbl, err := tb.cat.LoadTable(context.Background(), tb.ident)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tbl.Scan(table.WithRowFilter(iceberg.GreaterThanEqual(iceberg.Reference("seq"), int64(9)))).ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Release()
	if rows.NumRows() != 3 {
		t.Errorf("seq >= 9: %d rows, want 3 (seq 9, 10, 11)", rows.NumRows())
	}
}
