package iceberg

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/logstore/logstore/sink"
)

// partitionValues reads a data file's partition back from its folder, e.g.
// "level=warn/event_time_day=2026-11-29": the files sink named the folder
// from the row's values (sink.IcebergConfig.FilesConfig), one level per
// partition field, with a text that names exactly one value of the field's
// transform. The values are keyed by partition field id, as Iceberg's
// manifests want them; logical says which are dates.
func partitionValues(folder string, spec iceberg.PartitionSpec, schema *iceberg.Schema) (values map[int]any, logical map[int]string, err error) {
	if spec.NumFields() == 0 {
		return nil, nil, nil
	}
	levels := strings.Split(folder, "/")
	if len(levels) != spec.NumFields() {
		return nil, nil, fmt.Errorf("folder %q has %d levels, the partition spec %d fields", folder, len(levels), spec.NumFields())
	}
	values, logical = map[int]any{}, map[int]string{}
	for i, f := range spec.Fields() {
		_, text, ok := strings.Cut(levels[i], "=")
		if !ok {
			return nil, nil, fmt.Errorf("folder %q: level %q is not name=value", folder, levels[i])
		}
		src, _ := schema.FindFieldByID(f.SourceIDs[0])
		lit, err := sourceLiteral(text, src.Type, f.Transform)
		if err != nil {
			return nil, nil, fmt.Errorf("folder %q, partition field %s: %w", folder, f.Name, err)
		}
		if lit == nil {
			values[f.FieldID] = nil
			continue
		}
		v := f.Transform.Apply(iceberg.Optional[iceberg.Literal]{Val: lit, Valid: true})
		if !v.Valid {
			values[f.FieldID] = nil
			continue
		}
		values[f.FieldID] = v.Val.Any()
		if _, ok := f.Transform.ResultType(src.Type).(iceberg.DateType); ok {
			logical[f.FieldID] = "date"
		}
	}
	return values, logical, nil
}

// sourceLiteral is a value of the source column inside the folder's
// partition: the value itself for identity, the start of the period for a
// time transform. nil is null.
func sourceLiteral(text string, typ iceberg.Type, tr iceberg.Transform) (iceberg.Literal, error) {
	if text == sink.HiveDefaultPartition {
		return nil, nil
	}
	if _, identity := tr.(iceberg.IdentityTransform); !identity {
		t, err := time.Parse(timeFormat(tr), text)
		if err != nil {
			return nil, err
		}
		if _, ok := typ.(iceberg.DateType); ok {
			return iceberg.NewLiteral(iceberg.Date(t.Unix() / 86400)), nil
		}
		return iceberg.NewLiteral(iceberg.Timestamp(t.UnixMicro())), nil
	}
	v, err := url.PathUnescape(text)
	if err != nil {
		return nil, err
	}
	switch typ.(type) {
	case iceberg.StringType:
		return iceberg.NewLiteral(v), nil
	case iceberg.Int32Type:
		n, err := strconv.ParseInt(v, 10, 32)
		return iceberg.NewLiteral(int32(n)), err
	case iceberg.Int64Type:
		n, err := strconv.ParseInt(v, 10, 64)
		return iceberg.NewLiteral(n), err
	case iceberg.BooleanType:
		b, err := strconv.ParseBool(v)
		return iceberg.NewLiteral(b), err
	case iceberg.DateType:
		t, err := time.Parse(sink.DefaultTimeFormat, v)
		return iceberg.NewLiteral(iceberg.Date(t.Unix() / 86400)), err
	}
	return nil, fmt.Errorf("no identity partition over %s", typ)
}

// timeFormat is the folder text of a time transform (year, month, day,
// hour), as the files sink writes it.
func timeFormat(tr iceberg.Transform) string { return sink.TableFolderFormats[tr.String()] }
