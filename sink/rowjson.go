package sink

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendRowJSON appends r as one JSON object, keys in schema order:
// timestamps as RFC 3339 strings with nanoseconds (UTC), dates as
// "2006-01-02", bytes as base64, json columns embedded as they are (a value
// that is not valid JSON becomes a string), maps as objects with sorted
// keys, NaN and ±Inf as the strings "NaN", "Infinity", "-Infinity" (as in
// protobuf's JSON mapping), null as null.
func appendRowJSON(dst []byte, s *Schema, r Row) ([]byte, error) {
	return newRowJSON(s).append(dst, r)
}

// rowJSON writes rows of one schema as appendRowJSON does, each column's
// quoted key made once rather than for every row.
type rowJSON struct {
	s    *Schema
	keys [][]byte // `"name":`, the first with the object's `{`, the others with `,`
}

func newRowJSON(s *Schema) *rowJSON {
	e := &rowJSON{s: s, keys: make([][]byte, len(s.Fields))}
	for i, f := range s.Fields {
		sep := byte(',')
		if i == 0 {
			sep = '{'
		}
		e.keys[i] = append(appendJSONString([]byte{sep}, f.Name), ':')
	}
	return e
}

func (e *rowJSON) append(dst []byte, r Row) ([]byte, error) {
	s := e.s
	if len(r) != len(s.Fields) {
		return dst, fmt.Errorf("json: row has %d values, the schema %d columns", len(r), len(s.Fields))
	}
	if len(r) == 0 {
		return append(dst, "{}"...), nil
	}
	for i, f := range s.Fields {
		dst = append(dst, e.keys[i]...)
		var err error
		if dst, err = appendJSONValue(dst, f.Type, r[i]); err != nil {
			return dst, fmt.Errorf("json: column %q (%s): %w", f.Name, f.Type, err)
		}
	}
	return append(dst, '}'), nil
}

func appendJSONValue(dst []byte, t Type, v any) ([]byte, error) {
	if v == nil {
		return append(dst, "null"...), nil
	}
	switch x := v.(type) {
	case string:
		if t == JSON && json.Valid([]byte(x)) {
			return append(dst, x...), nil
		}
		return appendJSONString(dst, x), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case float32:
		return appendJSONFloat(dst, float64(x), 32), nil
	case float64:
		return appendJSONFloat(dst, x, 64), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case time.Time:
		dst = append(dst, '"')
		if t == Date {
			dst = x.UTC().AppendFormat(dst, time.DateOnly)
		} else {
			dst = x.UTC().AppendFormat(dst, time.RFC3339Nano)
		}
		return append(dst, '"'), nil
	case []byte:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, x)
		return append(dst, '"'), nil
	case map[string]string:
		var small [16]string // most maps are small: no allocation for their keys
		keys := small[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			if x[k] == MapNull {
				dst = append(dst, "null"...)
				continue
			}
			dst = appendJSONString(dst, x[k])
		}
		return append(dst, '}'), nil
	}
	return dst, fmt.Errorf("holds %T", v)
}

func appendJSONFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

// appendJSONString quotes s for JSON: quote, backslash and control
// characters escaped, invalid UTF-8 replaced by U+FFFD. Runs of bytes that
// need nothing are copied whole, eight bytes tested at a time.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0 // s[start:i] is copied as it is
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plain8(load8(s[i:])) {
			i += 8
			continue
		}
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
		}
		dst = append(dst, s[start:i]...)
		switch {
		case c >= utf8.RuneSelf:
			dst = append(dst, `\ufffd`...)
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// load8 is the first eight bytes of s, little-endian (one load).
func load8(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// plain8 says whether none of the eight bytes in x needs escaping or a
// UTF-8 check: each is ASCII, at least 0x20, and neither '"' nor '\\'.
func plain8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	special := x&highs | // non-ASCII
		(x-0x20*ones)&^x&highs | // a byte below 0x20
		hasZero(x^('"'*ones)) | hasZero(x^('\\'*ones))
	return special == 0
}
