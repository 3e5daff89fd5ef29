package sink

import (
	"encoding/binary"
	"maps"
	"slices"
	"time"
	"unicode/utf8"
)

// The values a file can hold. Every writer keeps the same two rules, so a
// file passes a full validation (pyarrow's validate(full=True)) and every
// reader sees the same values:
//
//   - Text is UTF-8: Parquet's STRING logical type means UTF-8, and Spark,
//     Trino, Athena and pyarrow fail on or corrupt anything else. Invalid
//     bytes in every STRING written (string and json columns, map keys and
//     values, dead-letter reasons) are replaced by U+FFFD, one per invalid
//     byte, as encoding/json does. Valid text is never touched, so
//     text that was valid UTF-8 keeps every byte. bytes columns keep bytes.
//   - Instants lie between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z,
//     the range of SQL's TIMESTAMP, Python's datetime and Java's Instant
//     in ISO format. Outside it a microsecond count may not even fit in an
//     int64, and readers overflow.

// MinTime and MaxTime bound the instants a timestamp or date column holds.
var (
	MinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// minUnix and maxUnix are MinTime's and MaxTime's seconds since the
// epoch: MinTime is a whole second and MaxTime the last instant of its
// second, so a time is in range exactly when its seconds are.
const minUnix, maxUnix = -62135596800, 253402300799

// TimeInRange reports whether t lies between MinTime and MaxTime. It is on
// every timestamp's way (the decoder's and the writer's check), so it
// compares seconds rather than two Times.
func TimeInRange(t time.Time) bool {
	s := t.Unix()
	return s >= minUnix && s <= maxUnix
}

// ValidText returns s with every invalid UTF-8 sequence replaced by U+FFFD;
// valid text comes back as it is, without a copy.
func ValidText(s string) string {
	if isASCIIOrValid(s) {
		return s
	}
	return string(AppendValidText(nil, []byte(s)))
}

// AppendValidText appends b to dst with every invalid UTF-8 sequence
// replaced by U+FFFD.
func AppendValidText(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, b[i:i+size]...)
		}
		i += size
	}
	return dst
}

// MapNull is the value of a map entry whose value is null: a Kafka header
// sent without a value (length -1) is kept in the kafka.headers column with
// its name and a null value, as Spark's Kafka source keeps it. It is one
// byte no text can hold once made valid UTF-8 (every value in a row is),
// so it never stands for a real value; files hold a null there, JSON null.
const MapNull = "\xff"

// ValidMap returns m, or a copy with its keys and values made valid UTF-8
// when any is not (MapNull stays null). Keys that become equal keep the
// value of the one that sorts last, so the same map always gives the same
// copy.
func ValidMap(m map[string]string) map[string]string {
	clean := true
	for k, v := range m {
		if !isASCIIOrValid(k) || (v != MapNull && !isASCIIOrValid(v)) {
			clean = false
			break
		}
	}
	if clean {
		return m
	}
	keys := slices.Sorted(maps.Keys(m))
	out := make(map[string]string, len(m))
	for _, k := range keys {
		v := m[k]
		if v != MapNull {
			v = ValidText(v)
		}
		out[ValidText(k)] = v
	}
	return out
}

// ValidUTF8 reports whether b is valid UTF-8; eight bytes at a time while
// they are ASCII, as most of a log's text is. The decoder's check too.
func ValidUTF8(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return utf8.Valid(b)
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return utf8.Valid(b)
		}
	}
	return true
}

// isASCIIOrValid is ValidUTF8 for a string.
func isASCIIOrValid(s string) bool { return ValidUTF8(stringBytes(s)) }
