package iceberg

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/logstore/logstore/sink"
)

// sortOrder is sinks.iceberg.sort_by as the table's sort order, over
// schema's field ids; none is Iceberg's unsorted order.
func sortOrder(name string, by []sink.TableSort, schema *iceberg.Schema) (table.SortOrder, error) {
	if len(by) == 0 {
		return table.UnsortedSortOrder, nil
	}
	fields := make([]table.SortField, 0, len(by))
	for i, s := range by {
		f, ok := schema.FindFieldByName(s.Column)
		if !ok {
			return table.SortOrder{}, fmt.Errorf("iceberg: table %s: sinks.iceberg.sort_by[%d]: the table has no column %q", name, i, s.Column)
		}
		dir, nulls := table.SortASC, table.NullsFirst
		if s.Direction == "desc" {
			dir = table.SortDESC
		}
		if s.Nulls == "last" {
			nulls = table.NullsLast
		}
		fields = append(fields, table.SortField{SourceIDs: []int{f.ID}, Transform: iceberg.IdentityTransform{}, Direction: dir, NullOrder: nulls})
	}
	return table.NewSortOrder(table.InitialSortOrderID, fields)
}

// syncSortOrder makes the config's order the table's default one, so
// readers and compaction know how the files the job writes are sorted.
// Files written before keep the order they were written in (each data
// file names its own).
func syncSortOrder(ctx context.Context, cat catalog.Catalog, tbl *table.Table, name string, by []sink.TableSort, log *slog.Logger) (*table.Table, error) {
	for attempt := 1; ; attempt++ {
		want, err := sortOrder(name, by, tbl.Schema())
		if err != nil {
			return nil, &sink.TableConfigError{Err: err}
		}
		if sameOrder(tbl.SortOrder(), want) {
			return tbl, nil
		}
		txn := tbl.NewTransaction()
		if err = txn.ReplaceSortOrder(want); err == nil {
			var next *table.Table
			if next, err = txn.Commit(ctx); err == nil {
				log.Info("iceberg: table sort order changed to sinks.iceberg.sort_by", "table", name, "from", tbl.SortOrder().String(), "to", next.SortOrder().String())
				return next, nil
			}
		}
		if attempt == evolveAttempts || ctx.Err() != nil {
			return nil, fmt.Errorf("iceberg: table %s: setting its sort order to %s: %w", name, want.String(), err)
		}
		if tbl, err = cat.LoadTable(ctx, tbl.Identifier()); err != nil {
			return nil, fmt.Errorf("iceberg: loading table %s: %w", name, err)
		}
	}
}

func sameOrder(a, b table.SortOrder) bool {
	if a.Len() != b.Len() {
		return false
	}
	for i := range a.Len() {
		if !a.Field(i).Equals(b.Field(i)) {
			return false
		}
	}
	return true
}

// fileSortOrder is the sort order id the job's data files are written in;
// nil when they are in offset order (unsorted).
func fileSortOrder(tbl *table.Table) *int {
	o := tbl.SortOrder()
	if o.Len() == 0 {
		return nil
	}
	id := o.OrderID()
	return &id
}
