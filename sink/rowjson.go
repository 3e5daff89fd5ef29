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
	if len(r) != len(s.Fields) {
		return dst, fmt.Errorf("json: row has %d values, the schema %d columns", len(r), len(s.Fields))
	}
	dst = append(dst, '{')
	for i, f := range s.Fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, f.Name)
		dst = append(dst, ':')
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
		keys := make([]string, 0, len(x))
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
// characters escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
