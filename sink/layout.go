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
	name := b.Name()
	if part > 0 {
		name += "-" + strconv.Itoa(part)
	}
	return joinKey(prefix, b.Prefix, folder, name+".parquet")
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
