package sink

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/logstore/logstore/internal/confkey"
)

// HiveDefaultPartition is the folder value Hive, Spark and Trino read as
// null; an empty string lands there too, as in Hive.
const HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// DefaultTimeFormat is the folder format of a timestamp or date column
// when partition_by gives none.
const DefaultTimeFormat = "2006-01-02"

// Layout places rows in Hive-style folders by their own column values, so a
// late record lands in its event-time folder, not in the folder of the hour
// it arrived. A Layout is not safe for concurrent use (each staged batch
// has its own).
type Layout struct {
	levels []layoutLevel
	// keep is the output columns a data file holds, in order, when the
	// folders hold some of them whole (dropFolderColumns); nil: all.
	keep []int
	file *Schema // the data files' schema: the output's, less the folder columns
}

type layoutLevel struct {
	name   string
	col    int
	typ    Type
	format string
	// A time format that prints nothing finer than the hour (or minute)
	// gives the same text for a whole hour (minute): the last text is kept
	// for the rows of the same span, which is most rows.
	span  int64 // seconds; 0 formats every row
	last  int64 // the span (Unix seconds / span) of text
	text  []byte
	valid bool
	// emptyOwn names an empty string's folder name= (a table's: ""
	// is its own partition value), not Hive's null folder.
	emptyOwn bool
}

// newLayout resolves partition_by against the output schema.
func newLayout(by []PartitionColumn, s *Schema) (*Layout, error) {
	l := &Layout{}
	for i, p := range by {
		c := s.Index(p.Column)
		if c < 0 {
			return nil, confkey.Errorf(fmt.Sprintf("files.partition_by[%d].column", i), "%q is not an output column", p.Column)
		}
		lv := layoutLevel{name: p.Name, col: c, typ: s.Fields[c].Type, format: p.Format}
		if lv.name == "" {
			lv.name = p.Column
		}
		switch lv.typ {
		case Timestamp, Date:
			if lv.format == "" {
				lv.format = DefaultTimeFormat
			}
			lv.span = formatSpan(lv.format)
		case String, Int32, Int64, Bool:
		default:
			return nil, confkey.Errorf(fmt.Sprintf("files.partition_by[%d].column", i), "column %q is %s; partition by a string, integer, bool, timestamp or date column", p.Column, lv.typ)
		}
		l.levels = append(l.levels, lv)
	}
	return l, nil
}

// newLayout is the layout of the sink's files for rows of schema s: the
// folders of partition_by and, unless the config keeps them
// (keep_partition_columns; a table's data files always do), the data
// files' columns less those the folders hold whole.
func (f *Files) newLayout(s *Schema) (*Layout, error) {
	l, err := newLayout(f.cfg.PartitionBy, s)
	if err != nil {
		return nil, err
	}
	for i := range l.levels {
		l.levels[i].emptyOwn = f.cfg.table
	}
	if !f.cfg.KeepPartitionColumns && !f.cfg.table {
		l.dropFolderColumns(f.cfg.PartitionBy, s)
	}
	return l, nil
}

// FolderColumn says which output column partition_by entry p puts in its
// folder name: the index of the column named p.Name (-1 when none), and
// whole, that the folder's text gives that column's value back (p is an
// identity level of a string, integer or bool column named after itself,
// or a date column in the default format). A reader of Hive-style folders
// (Spark, Trino, pyarrow, DuckDB) takes the folder for a column of its
// name: a data file that holds the column too is refused (Spark), fails
// to merge (pyarrow) or is read with the folder's value. So a column held
// whole is left out of the data files, and a folder named after a column
// whose value it does not hold is a config error (CheckFolderNames).
func FolderColumn(p PartitionColumn, s *Schema) (col int, whole bool) {
	name := p.Name
	if name == "" {
		name = p.Column
	}
	col = s.Index(name)
	if col < 0 || name != p.Column {
		return col, false
	}
	switch s.Fields[col].Type {
	case String, Int32, Int64, Bool:
		return col, p.Format == ""
	case Date:
		return col, p.Format == "" || p.Format == DefaultTimeFormat
	}
	return col, false
}

// CheckFolderNames refuses a partition_by level named after an output
// column whose value its folder does not hold whole (a timestamp's day in
// a folder named after the timestamp, a folder named after another
// column): readers would take the folder's text for the column. key is
// the config's prefix, e.g. "files.partition_by". keep
// (keep_partition_columns) writes such files anyway.
func CheckFolderNames(key string, by []PartitionColumn, s *Schema, keep bool) error {
	if keep {
		return nil
	}
	for i, p := range by {
		col, whole := FolderColumn(p, s)
		if col < 0 || whole {
			continue
		}
		name := s.Fields[col].Name
		what := fmt.Sprintf("the folder holds %s formatted as %q", p.Column, p.Format)
		if p.Format == "" {
			what = fmt.Sprintf("the folder holds %s's %s", p.Column, DefaultTimeFormat)
		}
		if p.Column != name {
			what = fmt.Sprintf("the folder holds column %q", p.Column)
		}
		return confkey.Errorf(fmt.Sprintf("%s[%d].name", key, i),
			"folder %q is also the name of output column %q, and %s, not %s's value: Spark, Trino, pyarrow and DuckDB read the folder as the column "+
				"(Spark refuses the duplicate, pyarrow fails, DuckDB reads the folder's text); give the folder another name (e.g. name: dt), "+
				"or set keep_partition_columns: true to write it so anyway", name, name, what, name)
	}
	return nil
}

// dropFolderColumns leaves the columns the folders hold whole
// (FolderColumn) out of the data files.
func (l *Layout) dropFolderColumns(by []PartitionColumn, s *Schema) {
	drop := map[int]bool{}
	for _, p := range by {
		if col, whole := FolderColumn(p, s); whole {
			drop[col] = true
		}
	}
	if len(drop) == 0 || len(drop) == len(s.Fields) {
		return // a file of no columns is no Parquet file: keep them
	}
	l.file = &Schema{}
	for i, fd := range s.Fields {
		if !drop[i] {
			l.keep = append(l.keep, i)
			l.file.Fields = append(l.file.Fields, fd)
		}
	}
}

// FileSchema is the schema of the data files of rows of schema s.
func (l *Layout) FileSchema(s *Schema) *Schema {
	if l.file == nil {
		return s
	}
	return l.file
}

// fileRow is the part of r the batch's data files hold.
func (st *stagedBatch) fileRow(r Row) Row {
	if st.cols == nil {
		return r
	}
	st.row = st.cols.fileRow(st.row, r)
	return st.row
}

// fileRow is the part of r a data file holds, in scratch's memory.
func (l *Layout) fileRow(scratch, r Row) Row {
	if l.keep == nil {
		return r
	}
	scratch = scratch[:0]
	for _, i := range l.keep {
		scratch = append(scratch, r[i])
	}
	return scratch
}

// AppendFolder appends the row's folder path to dst, e.g.
// "dt=2026-11-29/hour=07" (nothing without partition columns); without an
// allocation once dst has room, for the per-row lookup of a row's file.
func (l *Layout) AppendFolder(dst []byte, r Row) []byte {
	for i := range l.levels {
		lv := &l.levels[i]
		if i > 0 {
			dst = append(dst, '/')
		}
		dst = append(dst, lv.name...)
		dst = append(dst, '=')
		if t, ok := r[lv.col].(time.Time); ok && lv.span > 0 {
			dst = append(dst, lv.timeText(t)...)
			continue
		}
		start := len(dst)
		dst = lv.appendValue(dst, r[lv.col])
		if lv.emptyOwn && len(dst) == start && r[lv.col] == "" {
			continue
		}
		dst = appendFolderEscaped(dst, start)
	}
	return dst
}

// SameFolder reports, without formatting either, that row b's folder is
// row a's: every level is a time whose text is fixed over a span (see
// formatSpan) and both rows' times fall in the same span, or there are no
// levels. false says nothing: the folders may still be the same.
func (l *Layout) SameFolder(a, b Row) bool {
	for i := range l.levels {
		lv := &l.levels[i]
		if lv.span == 0 {
			return false
		}
		ta, ok := a[lv.col].(time.Time)
		if !ok {
			return false
		}
		tb, ok := b[lv.col].(time.Time)
		if !ok || spanOf(ta, lv.span) != spanOf(tb, lv.span) {
			return false
		}
	}
	return true
}

// spanOf numbers t's span of span seconds since the Unix epoch.
func spanOf(t time.Time, span int64) int64 {
	s := t.Unix()
	n := s / span
	if s%span < 0 {
		n--
	}
	return n
}

// timeText is the escaped folder text of t, formatted once per span.
func (lv *layoutLevel) timeText(t time.Time) []byte {
	span := spanOf(t, lv.span)
	if !lv.valid || span != lv.last {
		lv.text = appendFolderEscaped(lv.appendValue(lv.text[:0], t), 0)
		lv.last, lv.valid = span, true
	}
	return lv.text
}

// formatSpan is the longest span, an hour or a minute, over which the
// layout prints the same text for every instant (in UTC), or 0. Go's
// layouts print minutes, seconds and fractions only through tokens that
// tell the start of a span from its last nanosecond.
func formatSpan(layout string) int64 {
	start := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	for _, span := range []time.Duration{time.Hour, time.Minute} {
		if start.Format(layout) == start.Add(span-1).Format(layout) {
			return int64(span / time.Second)
		}
	}
	return 0
}

func (lv layoutLevel) appendValue(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return dst
	case time.Time:
		return x.UTC().AppendFormat(dst, lv.format)
	case string:
		return append(dst, x...)
	case int32:
		return strconv.AppendInt(dst, int64(x), 10)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case bool:
		return strconv.AppendBool(dst, x)
	}
	// A value of the wrong Go type fails in the Parquet writer, which names
	// the column; here it only must not panic.
	return fmt.Append(dst, v)
}

// appendFolderEscaped escapes the folder value dst[start:] in place (see
// escapeFolderValue).
func appendFolderEscaped(dst []byte, start int) []byte {
	v := dst[start:]
	if len(v) == 0 {
		return append(dst, HiveDefaultPartition...)
	}
	for _, c := range v {
		if !folderSafe(c) {
			esc := escapeFolderValue(string(v))
			return append(dst[:start], esc...)
		}
	}
	return dst
}

// escapeFolderValue keeps letters, digits, '-', '_' and '.', and writes
// every other byte as %XX: safe in S3 keys and URLs, and Hive, Spark and
// Trino unescape %XX when they read partition values back.
func escapeFolderValue(s string) string {
	if s == "" {
		return HiveDefaultPartition
	}
	const hex = "0123456789ABCDEF"
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if folderSafe(c) {
			if b != nil {
				b = append(b, c)
			}
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, len(s)+8), s[:i]...)
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	if b == nil {
		return s
	}
	return string(b)
}

func folderSafe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
}

// objectKey is a file's key below the sink's root:
// {prefix}/{folder}/{topic}-{partition}-{first}-{last}[-{n}].parquet, where
// part n > 0 numbers the files a folder splits into at max_file_bytes.
// Empty parts are left out.
func objectKey(prefix, folder string, b *Batch, part int) string {
	return fileKey(prefix, folder, b, part, ".parquet")
}

// fileKey is objectKey with the file's extension: .parquet for data,
// DeadLetterExt for dead letters.
func fileKey(prefix, folder string, b *Batch, part int, ext string) string {
	name := b.Name()
	if part > 0 {
		name += "-" + strconv.Itoa(part)
	}
	return joinKey(prefix, b.Prefix, folder, name+ext)
}

// outputFile says that key names a file the sink writes: data (.parquet)
// or dead letters (DeadLetterExt).
func outputFile(key string) bool {
	return strings.HasSuffix(key, ".parquet") || strings.HasSuffix(key, DeadLetterExt)
}

// joinKey joins key parts with single slashes, skipping empty ones.
func joinKey(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		p = strings.Trim(p, "/")
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString(p)
	}
	return b.String()
}
