package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/logstore/logstore/internal/confkey"
	"github.com/logstore/logstore/pipeline/record"

	"github.com/logstore/logstore/sink"
)

// The fuzz targets of the decoding surfaces. Their seeds run with every
// `go test`; `go test -fuzz FuzzX -fuzztime 30s ./pipeline/decode` explores.

// fuzzSchema has a column of every type, all reading the same few fields.
var fuzzSchema = SchemaConfig{Columns: []ColumnConfig{
	{Name: "s", Type: sink.String},
	{Name: "i", Type: sink.Int64, Source: "n"},
	{Name: "i32", Type: sink.Int32, Source: "n"},
	{Name: "f", Type: sink.Float64, Source: "n"},
	{Name: "b", Type: sink.Bool},
	{Name: "t", Type: sink.Timestamp, Source: "n", TimeFormat: "epoch_ms", Unit: "us"},
	{Name: "d", Type: sink.Date, Source: "s"},
	{Name: "raw", Type: sink.Bytes, Source: "s"},
	{Name: "doc", Type: sink.JSON, Source: "o"},
	{Name: "m", Type: sink.StringMap, Source: "o"},
	{Name: "key", Type: sink.String, Source: "kafka.key"},
}}

// FuzzDecodeSchema holds every column type to encoding/json where the two
// overlap (which documents are valid, what a string and a number are), to
// the written rules (UTF-8, exact integers, the time range), and sends the
// row through the Parquet writer and back, which must give the same values.
func FuzzDecodeSchema(f *testing.F) {
	for _, s := range []string{
		`{"s": "x", "n": 1, "b": true, "o": {"a": "b"}}`,
		`{"s": "2026-11-29", "n": 9007199254740993.0, "b": "t", "o": {"a": 1, "b": null, "c": [1]}}`,
		`{"n": 1234567890123456789e0}`, `{"n": -9223372036854775808}`, `{"n": 9223372036854775808}`,
		`{"n": 1e400}`, `{"n": -0.0}`, `{"n": "NaN"}`, `{"n": 9300000000000000}`, `{"n": 2.5e-7}`,
		`{"s": "\ud83d\ude00\u00e9", "o": {"\u00e9": "\ud800"}}`, "{\"s\": \"\xff\", \"o\": {\"\xfe\": \"\xc3\"}}",
		`{"o": [1, {"x": "y"}]}`, `{"s": null, "n": null, "o": null}`, `{"s": "", "o": {}}`, `{}`, `[]`, ``,
	} {
		f.Add([]byte(s), []byte("k"))
	}
	f.Add([]byte(`{"s": "a"}`), []byte{})
	f.Add([]byte(`{"s": "a"}`), []byte("\xff\xfe"))
	d, err := New(fuzzSchema)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, value, key []byte) {
		row, _, err := d.Decode(&record.Record{Value: value, Key: key}, nil)
		var doc any
		dec := json.NewDecoder(bytes.NewReader(value))
		dec.UseNumber()
		stdErr := dec.Decode(&doc)
		// More is false before a stray '}' or ']': what follows the
		// document must be JSON whitespace only.
		if stdErr == nil && len(bytes.Trim(value[dec.InputOffset():], " \t\r\n")) > 0 {
			stdErr = errors.New("data after the document")
		}
		obj, isObject := doc.(map[string]any)
		if err == nil && (stdErr != nil || !isObject) {
			t.Fatalf("accepted what encoding/json does not: %v (%T)", stdErr, doc)
		}
		if err != nil {
			if stdErr == nil && isObject && (strings.Contains(err.Error(), "not JSON") || strings.Contains(err.Error(), "is empty")) {
				t.Fatalf("refused a valid object: %v", err)
			}
			// Every dead-letter reason is valid UTF-8, and names its column.
			if !utf8.ValidString(err.Error()) {
				t.Fatalf("reason is not UTF-8: %q", err)
			}
			return
		}
		checkAgainstJSON(t, obj, row, key)
		checkRoundTrip(t, d.Schema(), row)
	})
}

// checkAgainstJSON compares the columns of a decoded row with what
// encoding/json read from the same record.
func checkAgainstJSON(t *testing.T, obj map[string]any, row sink.Row, key []byte) {
	t.Helper()
	for i, v := range row {
		if s, ok := v.(string); ok && !utf8.ValidString(s) {
			t.Fatalf("column %d: %q is not UTF-8", i, s)
		}
		if m, ok := v.(map[string]string); ok {
			for k, x := range m {
				if !utf8.ValidString(k) || !utf8.ValidString(x) {
					t.Fatalf("map %q: %q not UTF-8", k, x)
				}
			}
		}
		if ts, ok := v.(time.Time); ok && !sink.TimeInRange(ts) {
			t.Fatalf("column %d: %v is out of range", i, ts)
		}
	}
	if s, ok := obj["s"].(string); ok && row[0] != s {
		t.Fatalf("string %q, encoding/json %q", row[0], s)
	}
	if row[10] != nil && row[10] != sink.ValidText(string(key)) {
		t.Fatalf("key %q from %q", row[10], key)
	}
	n, ok := obj["n"].(json.Number)
	if !ok {
		return
	}
	// An int column takes a number exactly when it is an integer in range.
	r, ok := new(big.Rat).SetString(string(n))
	if !ok { // an exponent past math/big's limit: no int64 but zero
		if d, _ := parseDecimal([]byte(n)); (row[1] != nil) != d.zero() {
			t.Fatalf("int64 of %s: got %#v", n, row[1])
		}
		return
	}
	exact := r.IsInt() && r.Num().IsInt64()
	if got, isInt := row[1].(int64); isInt != exact || exact && got != r.Num().Int64() {
		t.Fatalf("int64 of %s: got %#v, exact %v", n, row[1], exact)
	}
	if f, err := strconv.ParseFloat(string(n), 64); err == nil {
		if got, _ := row[3].(float64); got != f && !(math.IsNaN(got) && math.IsNaN(f)) {
			t.Fatalf("float64 of %s: got %v, want %v", n, got, f)
		}
	}
}

// checkRoundTrip writes the row as Parquet and reads it back.
func checkRoundTrip(t *testing.T, s *sink.Schema, row sink.Row) {
	t.Helper()
	back, err := sink.ParquetRoundTrip(s, []sink.Row{row})
	if err != nil || len(back) != 1 {
		t.Fatalf("the writer refused or lost a decoded row: %d rows, %v", len(back), err)
	}
	for i, want := range row {
		got := back[0][i]
		if f, ok := want.(float64); ok && math.IsNaN(f) {
			if g, _ := got.(float64); math.IsNaN(g) {
				continue
			}
		}
		if tw, ok := want.(time.Time); ok {
			if tg, _ := got.(time.Time); tg.Equal(tw) {
				continue
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("column %s: wrote %#v, read %#v", s.Fields[i].Name, want, got)
		}
	}
}

// FuzzCELFromConfig: whatever `where` and `expr` say, compiling either
// fails with a config error or gives programs that run on records without
// panicking, a row of the column's type or a dead letter.
func FuzzCELFromConfig(f *testing.F) {
	for _, s := range []string{
		`level != "DEBUG"`, `status >= 500`, `status != null && status >= 500`, `kafka.key.startsWith("a")`,
		`size(labels) > 0 && labels["env"] == "prod"`, `ts > timestamp("2026-01-01T00:00:00Z")`,
		`dyn(null)`, `1/0 == 1`, `"x".matches("[")`, `string(b"\xff") == ""`, `kafka.headers["h"] == "v"`,
		`level.lowerAscii().split(" ").size() > 1`, `math.round(latency) > 1.0`, `int(status) * 9223372036854775807 > 0`,
	} {
		f.Add(s)
	}
	records := [][]byte{
		[]byte(`{"level": "INFO", "status": 503, "latency": 1.5, "labels": {"env": "prod"}, "ts": "2026-11-29T07:00:00Z"}`),
		[]byte(`{"level": null}`),
		[]byte("{\"level\": \"\xff\"}"),
	}
	f.Fuzz(func(t *testing.T, expr string) {
		cols := []ColumnConfig{
			{Name: "level", Type: sink.String},
			{Name: "status", Type: sink.Int32},
			{Name: "latency", Type: sink.Float64},
			{Name: "labels", Type: sink.StringMap},
			{Name: "ts", Type: sink.Timestamp},
		}
		for _, cfg := range []SchemaConfig{
			{Columns: cols, Where: expr},
			{Columns: append(cols[:len(cols):len(cols)], ColumnConfig{Name: "x", Type: sink.String, Expr: expr})},
		} {
			d, err := New(cfg)
			if err != nil {
				var ke *confkey.Error
				if !errors.As(err, &ke) {
					t.Fatalf("compile error %T is not a config error: %v", err, err)
				}
				continue
			}
			for _, rec := range records {
				row, keep, err := d.Decode(&record.Record{Value: rec, Key: []byte("k\xff")}, nil)
				if err != nil || !keep {
					continue
				}
				if x, ok := row[len(row)-1].(string); ok && !utf8.ValidString(x) {
					t.Fatalf("expr gave %q, not UTF-8", x)
				}
			}
		}
	})
}

// FuzzParseRFC3339 holds the allocation-free parser to time.Parse: where
// time.Parse reads an RFC 3339 time, ours reads the same instant, and ours
// reads nothing time.Parse calls invalid (but the 't', 'z' and ' ' RFC 3339
// allows).
func FuzzParseRFC3339(f *testing.F) {
	for _, s := range []string{
		"2026-11-29T07:00:00Z", "2026-11-29T07:00:00.123456789+09:00", "2024-02-29T23:59:59-23:59",
		"0000-01-01T00:00:00Z", "9999-12-31T23:59:59.9999999999Z", "2026-11-29t07:00:00z", "2026-11-29 07:00:00Z",
		"2026-13-01T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T07:00:60Z", "2026-11-29T07:00:00+24:00",
		"2026-11-29T07:00:00.Z", "2026-11-29T07:00:00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ours, ok := parseRFC3339([]byte(s))
		norm := strings.NewReplacer("t", "T", "z", "Z").Replace(s)
		if len(norm) > 10 && norm[10] == ' ' {
			norm = norm[:10] + "T" + norm[11:]
		}
		std, err := time.Parse(time.RFC3339Nano, norm)
		if ok && err != nil {
			t.Fatalf("%q: ours %v, time.Parse: %v", s, ours, err)
		}
		if ok && !ours.Equal(std) {
			t.Fatalf("%q: ours %v, time.Parse %v", s, ours, std)
		}
	})
}

// FuzzParseEpoch holds the epoch reader to math/big: the instant is the
// number's exact value, cut below a nanosecond, and what is refused is
// not a number or beyond 10^12 s.
func FuzzParseEpoch(f *testing.F) {
	for _, s := range []string{"0", "-1.5", "1764399600123.456", "1.7643996e9", "9300000000000", "1e400", "-0.0000000001",
		"99999999999999999999", "1" + strings.Repeat("0", 30) + "e-30", "1.", "0x10", "+1", "1e", "007"} {
		f.Add(s, uint8(timeEpochS))
	}
	f.Fuzz(func(t *testing.T, s string, unit uint8) {
		k := timeEpochS + timeKind(unit%4)
		got, ok := parseEpoch([]byte(s), k)
		_, isDecimal := parseDecimal([]byte(s))
		if !isDecimal {
			if ok {
				t.Fatalf("%q read as %v", s, got)
			}
			return
		}
		r, okBig := new(big.Rat).SetString(s)
		if !okBig {
			// math/big refuses exponents past its own limit: 1e10000000
			// is no time (unless it is zero), 1e-2000000 is 1970 (what
			// lies below a nanosecond is dropped).
			d, _ := parseDecimal([]byte(s))
			want := d.zero() || d.scale < 0
			if ok != want || ok && !got.Equal(time.Unix(0, 0)) {
				t.Fatalf("%q: read %v %v", s, got, ok)
			}
			return
		}
		ns := new(big.Rat).Mul(r, new(big.Rat).SetInt64(int64(math.Pow10(epochScale[k].fracDigits))))
		whole := new(big.Int).Quo(ns.Num(), ns.Denom()) // toward zero, as documented
		limit := new(big.Int).Mul(big.NewInt(1e12), big.NewInt(1e9))
		if new(big.Int).Abs(whole).Cmp(limit) >= 0 {
			if ok && !(new(big.Int).Abs(whole).Cmp(new(big.Int).Mul(limit, big.NewInt(10))) < 0) {
				t.Fatalf("%q: read %v beyond 10^12 s", s, got)
			}
			return
		}
		if !ok {
			t.Fatalf("%q (%v) refused", s, k)
		}
		want := new(big.Int).Add(new(big.Int).Mul(big.NewInt(got.Unix()), big.NewInt(1e9)), big.NewInt(int64(got.Nanosecond())))
		if want.Cmp(whole) != 0 {
			t.Fatalf("%q (%v): got %v (%s ns), want %s ns", s, k, got, want, whole)
		}
	})
}
