package sink

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
)

// ParquetRoundTrip writes rows as one Parquet file in memory, with the
// default Parquet settings, and reads them back as a reader of the files
// would see them, so a test outside this package can check that what was
// written is what was meant (the decoder's fuzz round trip does). A row
// the writer refuses is an error, as it would be a dead letter.
func ParquetRoundTrip(s *Schema, rows []Row) ([]Row, error) {
	cfg := &ParquetConfig{}
	cfg.setDefaults()
	var buf bytes.Buffer
	w, err := newParquetWriter(&buf, s, cfg, nil)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if err := w.WriteRow(r); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return readParquet(bytes.NewReader(buf.Bytes()), int64(buf.Len()), s)
}

// readParquet reads back every row of a file ParquetWriter wrote with
// schema s, as the Go values a Row holds.
func readParquet(r io.ReaderAt, size int64, s *Schema) ([]Row, error) {
	return readDataFile(r, size, "", s)
}

// readDataFile reads back a data file the Files sink stored under key,
// written for rows of schema s: a column the file does not hold (one its
// folders hold whole, FolderColumn) takes its value from the key's folder
// of its name, as readers of Hive-style folders do.
func readDataFile(r io.ReaderAt, size int64, key string, s *Schema) ([]Row, error) {
	f, err := parquet.OpenFile(r, size)
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	in := map[string]bool{}
	for _, fd := range f.Schema().Fields() {
		in[fd.Name()] = true
	}
	fileSchema := &Schema{}
	var fromFolder []int // s's columns the file lacks
	for i, fd := range s.Fields {
		if in[fd.Name] {
			fileSchema.Fields = append(fileSchema.Fields, fd)
		} else {
			fromFolder = append(fromFolder, i)
		}
	}
	folderValues := make(map[int]any, len(fromFolder))
	for _, i := range fromFolder {
		v, err := folderValue(key, s.Fields[i])
		if err != nil {
			return nil, err
		}
		folderValues[i] = v
	}
	rows, err := readFileRows(f, fileSchema)
	if err != nil || len(fromFolder) == 0 {
		return rows, err
	}
	for j, fr := range rows {
		r := make(Row, len(s.Fields))
		k := 0
		for i := range r {
			if v, ok := folderValues[i]; ok {
				r[i] = v
				continue
			}
			r[i] = fr[k]
			k++
		}
		rows[j] = r
	}
	return rows, nil
}

// folderValue is column fd's value in the folder of its name in key
// (name=value/...): Hive's null folder is null, %XX is unescaped.
func folderValue(key string, fd Field) (any, error) {
	for _, level := range strings.Split(key, "/") {
		name, text, ok := strings.Cut(level, "=")
		if !ok || name != fd.Name {
			continue
		}
		if text == HiveDefaultPartition {
			return nil, nil
		}
		v, err := url.PathUnescape(text)
		if err != nil {
			return nil, fmt.Errorf("parquet: %s: folder %q: %w", key, level, err)
		}
		switch fd.Type {
		case String:
			return v, nil
		case Int32:
			n, err := strconv.ParseInt(v, 10, 32)
			return int32(n), err
		case Int64:
			return strconv.ParseInt(v, 10, 64)
		case Bool:
			return strconv.ParseBool(v)
		case Date:
			return time.Parse(DefaultTimeFormat, v)
		}
		return nil, fmt.Errorf("parquet: %s: column %q (%s) cannot come from a folder", key, fd.Name, fd.Type)
	}
	return nil, fmt.Errorf("parquet: %s holds no column %q, and no folder of its name", key, fd.Name)
}

// readFileRows reads every row of f, whose columns are s's.
func readFileRows(f *parquet.File, s *Schema) ([]Row, error) {
	_, cols, err := parquetColumns(s, false, nil)
	if err != nil {
		return nil, err
	}
	var out []Row
	buf := make([]parquet.Row, 16)
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, pr := range buf[:n] {
				out = append(out, readRow(cols, pr))
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("parquet: %w", err)
			}
		}
		rows.Close()
	}
	return out, nil
}

// readRow turns a file row back into a Row: the inverse of WriteRow.
func readRow(cols []parquetColumn, pr parquet.Row) Row {
	byCol := map[int][]parquet.Value{}
	for _, v := range pr {
		byCol[v.Column()] = append(byCol[v.Column()], v)
	}
	r := make(Row, len(cols))
	for i, c := range cols {
		vs := byCol[c.leaf]
		if c.field.Type == StringMap {
			vals := byCol[c.leaf+1]
			if vs[0].IsNull() {
				if vs[0].DefinitionLevel() == 0 && c.optional {
					r[i] = nil
				} else {
					r[i] = map[string]string{}
				}
				continue
			}
			m := map[string]string{}
			for j := range vs {
				v := MapNull
				if !vals[j].IsNull() {
					v = string(vals[j].ByteArray())
				}
				m[string(vs[j].ByteArray())] = v
			}
			r[i] = m
			continue
		}
		v := vs[0]
		if v.IsNull() {
			continue
		}
		switch c.field.Type {
		case String, JSON:
			r[i] = string(v.ByteArray())
		case Int32:
			r[i] = v.Int32()
		case Int64:
			r[i] = v.Int64()
		case Float32:
			r[i] = v.Float()
		case Float64:
			r[i] = v.Double()
		case Bool:
			r[i] = v.Boolean()
		case Timestamp:
			if c.micros {
				r[i] = time.UnixMicro(v.Int64()).UTC()
			} else {
				r[i] = time.UnixMilli(v.Int64()).UTC()
			}
		case Date:
			r[i] = time.Unix(int64(v.Int32())*86400, 0).UTC()
		case Bytes:
			r[i] = append([]byte{}, v.ByteArray()...)
		}
	}
	return r
}
