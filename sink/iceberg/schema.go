package iceberg

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/logstore/logstore/sink"
)

// tableSchema is the Iceberg schema of the output columns. Ids are given
// as Iceberg gives fresh ones (the columns 1..n, then each map's key and
// value), so the table a catalog creates has these ids.
func tableSchema(s *sink.Schema) (*iceberg.Schema, error) {
	fields := make([]iceberg.NestedField, len(s.Fields))
	next := len(s.Fields) + 1
	for i, f := range s.Fields {
		t, err := columnType(f, &next)
		if err != nil {
			return nil, err
		}
		fields[i] = iceberg.NestedField{ID: i + 1, Name: f.Name, Type: t, Required: f.Required}
	}
	return iceberg.NewSchema(0, fields...), nil
}

// columnType is the Iceberg type of a column; next gives ids to a map's
// key and value.
func columnType(f sink.Field, next *int) (iceberg.Type, error) {
	switch f.Type {
	case sink.String, sink.JSON:
		return iceberg.PrimitiveTypes.String, nil
	case sink.Int32:
		return iceberg.PrimitiveTypes.Int32, nil
	case sink.Int64:
		return iceberg.PrimitiveTypes.Int64, nil
	case sink.Float32:
		return iceberg.PrimitiveTypes.Float32, nil
	case sink.Float64:
		return iceberg.PrimitiveTypes.Float64, nil
	case sink.Bool:
		return iceberg.PrimitiveTypes.Bool, nil
	case sink.Timestamp:
		return iceberg.PrimitiveTypes.TimestampTz, nil // written in microseconds whatever the unit (inMicros)
	case sink.Date:
		return iceberg.PrimitiveTypes.Date, nil
	case sink.Bytes:
		return iceberg.PrimitiveTypes.Binary, nil
	case sink.StringMap:
		m := &iceberg.MapType{KeyID: *next, KeyType: iceberg.PrimitiveTypes.String, ValueID: *next + 1, ValueType: iceberg.PrimitiveTypes.String}
		*next += 2
		return m, nil
	}
	return nil, fmt.Errorf("column %q: type %s has no Iceberg type", f.Name, f.Type)
}

// transforms are the Iceberg transforms of partition_by's names.
var transforms = map[string]iceberg.Transform{
	"identity": iceberg.IdentityTransform{}, "year": iceberg.YearTransform{}, "month": iceberg.MonthTransform{},
	"day": iceberg.DayTransform{}, "hour": iceberg.HourTransform{},
}

// partitionName is the partition field's name: the column for identity,
// column_transform otherwise, as Spark names them.
func partitionName(p sink.TablePartition) string {
	if p.Transform == "identity" {
		return p.Column
	}
	return p.Column + "_" + p.Transform
}

// tableSpec is the partition spec of partition_by over schema.
func tableSpec(by []sink.TablePartition, schema *iceberg.Schema) (iceberg.PartitionSpec, error) {
	fields := make([]iceberg.PartitionField, len(by))
	for i, p := range by {
		col, ok := schema.FindFieldByName(p.Column)
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("partition_by[%d]: %q is not an output column", i, p.Column)
		}
		fields[i] = iceberg.PartitionField{SourceIDs: []int{col.ID}, FieldID: 1000 + i, Name: partitionName(p), Transform: transforms[p.Transform]}
	}
	return iceberg.NewPartitionSpec(fields...), nil
}

// evolution is how an existing table's schema must change to take what
// the config writes: columns to add and columns to widen.
type evolution struct {
	adds    []iceberg.NestedField
	promote []iceberg.NestedField // the column with its new type
}

func (e evolution) empty() bool { return len(e.adds) == 0 && len(e.promote) == 0 }

// planEvolution compares an existing table's schema with what the config
// writes. A column the table lacks is added (optional, with a new id, as
// Iceberg adds columns: the files written before read it as null); a
// column the output writes wider is promoted where Iceberg allows it (int
// to long, float to double, a decimal's precision wider); any other
// difference is an error that names the column and both types, since
// files written for one shape cannot be registered in another.
func planEvolution(name string, have, want *iceberg.Schema) (evolution, error) {
	var e evolution
	for _, w := range want.Fields() {
		h, ok := have.FindFieldByName(w.Name)
		if !ok {
			add := w
			add.Required = false // the table's earlier files have no value for it
			e.adds = append(e.adds, add)
			continue
		}
		if h.Type.String() != w.Type.String() { // ids aside: a map's key and value ids are the table's own
			if !promotable(h.Type, w.Type) {
				return evolution{}, fmt.Errorf("table %s: column %q is %s, the output writes %s: Iceberg changes a column in place only from int to long, float to double or to a wider decimal; "+
					"change schema.columns back to %s or write to another table", name, w.Name, h.Type, w.Type, h.Type)
			}
			p := h
			p.Type = w.Type
			e.promote = append(e.promote, p)
		}
		if h.Required && !w.Required {
			return evolution{}, fmt.Errorf("table %s: column %q is required, the output may write null: mark the column required in schema.columns", name, w.Name)
		}
	}
	for _, h := range have.Fields() {
		if _, ok := want.FindFieldByName(h.Name); !ok && h.Required {
			return evolution{}, fmt.Errorf("table %s: required column %q is not in the output: add it to schema.columns", name, h.Name)
		}
	}
	return e, nil
}

// promotable says Iceberg's spec lets a column of type from become to
// with the files written before read as they are.
func promotable(from, to iceberg.Type) bool {
	switch f := from.(type) {
	case iceberg.Int32Type:
		_, ok := to.(iceberg.Int64Type)
		return ok
	case iceberg.Float32Type:
		_, ok := to.(iceberg.Float64Type)
		return ok
	case iceberg.DecimalType:
		t, ok := to.(iceberg.DecimalType)
		return ok && t.Scale() == f.Scale() && t.Precision() > f.Precision()
	}
	return false
}

// specChange is how an existing table's partition spec must change to be
// partition_by: fields to remove (by name) and fields to add, at the end.
// Iceberg evolves a spec for new files only: the files written before keep
// theirs, and a reader plans each file by its own spec.
type specChange struct {
	remove []string
	add    []sink.TablePartition
}

func (c specChange) empty() bool { return len(c.remove) == 0 && len(c.add) == 0 }

// planSpec compares an existing table's partition spec with partition_by.
// A field partition_by no longer has is removed and a new one added; the
// fields kept stay in their places and the new ones come after them, so
// partition_by must list them in that order (the files' folders follow
// its order): when it does not, the error says which order evolves.
func planSpec(name string, have *iceberg.Schema, spec iceberg.PartitionSpec, by []sink.TablePartition) (specChange, error) {
	same := func(f iceberg.PartitionField, p sink.TablePartition) bool {
		src, _ := have.FindFieldByID(f.SourceIDs[0])
		return src.Name == p.Column && f.Transform.String() == transforms[p.Transform].String()
	}
	var c specChange
	var kept []sink.TablePartition
	for i := range spec.NumFields() {
		f := spec.Field(i)
		j := slices.IndexFunc(by, func(p sink.TablePartition) bool { return same(f, p) })
		if j < 0 {
			c.remove = append(c.remove, f.Name)
			continue
		}
		kept = append(kept, by[j])
	}
	for _, p := range by {
		if !slices.Contains(kept, p) {
			c.add = append(c.add, p)
		}
	}
	if want := append(slices.Clone(kept), c.add...); !slices.Equal(want, by) {
		return c, fmt.Errorf("table %s is partitioned by %s; sinks.iceberg.partition_by lists the same fields in another order, which Iceberg cannot evolve to (a kept field keeps its place, new ones come last): list them as %s",
			name, spec, partitionList(want))
	}
	return c, nil
}

func partitionList(by []sink.TablePartition) string {
	out := make([]string, len(by))
	for i, p := range by {
		out[i] = fmt.Sprintf("{column: %s, transform: %s}", p.Column, p.Transform)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// inMicros is s with its timestamp columns in microseconds: Iceberg's
// timestamps are microseconds in Parquet, and a reader takes a millisecond
// column's numbers as microseconds. A millisecond value is a whole number
// of microseconds, so nothing is lost.
func inMicros(s *sink.Schema) *sink.Schema {
	out := &sink.Schema{Fields: slices.Clone(s.Fields)}
	for i := range out.Fields {
		if out.Fields[i].Type == sink.Timestamp {
			out.Fields[i].Unit = time.Microsecond
		}
	}
	return out
}
