package decode

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

func newTestDecoder(t *testing.T, cfg SchemaConfig) *Decoder {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d
}

func decodeOne(t *testing.T, d *Decoder, msg *record.Record) (sink.Row, bool, error) {
	t.Helper()
	return d.Decode(msg, nil)
}

// TestDecodeTypes converts one JSON field `v` into each column type.
func TestDecodeTypes(t *testing.T) {
	tests := []struct {
		name    string
		col     ColumnConfig // Name and Source are filled in
		json    string       // the value of field v
		want    any
		wantErr string
	}{
		{"string", ColumnConfig{Type: sink.String}, `"hello"`, "hello", ""},
		{"string empty", ColumnConfig{Type: sink.String}, `""`, "", ""},
		{"string from number", ColumnConfig{Type: sink.String}, `200`, "200", ""},
		{"string from bool", ColumnConfig{Type: sink.String}, `true`, "true", ""},
		{"string from object", ColumnConfig{Type: sink.String}, `{"a": 1}`, `{"a": 1}`, ""},
		{"string escapes", ColumnConfig{Type: sink.String}, `"a\"b\\c\/d\n\t\r\b\f"`, "a\"b\\c/d\n\t\r\b\f", ""},
		{"string unicode", ColumnConfig{Type: sink.String}, `"héllo 世界 🎉"`, "héllo 世界 🎉", ""},
		{"string \\u escapes", ColumnConfig{Type: sink.String}, `"\u00e9\u4e16\ud83c\udf89"`, "é世🎉", ""},
		{"string lone surrogate", ColumnConfig{Type: sink.String}, `"a\ud83cb"`, "a\uFFFDb", ""},
		{"string invalid utf-8", ColumnConfig{Type: sink.String}, "\"a\xffb\"", "a\uFFFDb", ""},
		{"string null", ColumnConfig{Type: sink.String}, `null`, nil, ""},

		{"int32", ColumnConfig{Type: sink.Int32}, `200`, int32(200), ""},
		{"int32 negative", ColumnConfig{Type: sink.Int32}, `-7`, int32(-7), ""},
		{"int32 from string", ColumnConfig{Type: sink.Int32}, `"200"`, int32(200), ""},
		{"int32 integral float", ColumnConfig{Type: sink.Int32}, `200.0`, int32(200), ""},
		{"int32 exponent", ColumnConfig{Type: sink.Int32}, `2e3`, int32(2000), ""},
		{"int32 fraction", ColumnConfig{Type: sink.Int32}, `200.5`, nil, `column "v": 200.5 is not an int32`},
		{"int32 word", ColumnConfig{Type: sink.Int32}, `"abc"`, nil, `column "v": "abc" is not an int32`},
		{"int32 overflow", ColumnConfig{Type: sink.Int32}, `2147483648`, nil, `is not an int32`},
		{"int32 bool", ColumnConfig{Type: sink.Int32}, `true`, nil, `true is not an int32`},
		{"int32 string with space", ColumnConfig{Type: sink.Int32}, `" 2"`, nil, `is not an int32`},
		{"int64 max", ColumnConfig{Type: sink.Int64}, `9223372036854775807`, int64(math.MaxInt64), ""},
		{"int64 min", ColumnConfig{Type: sink.Int64}, `-9223372036854775808`, int64(math.MinInt64), ""},
		{"int64 overflow", ColumnConfig{Type: sink.Int64}, `9223372036854775808`, nil, `is not an int64`},
		{"int64 object", ColumnConfig{Type: sink.Int64}, `{}`, nil, `{} is not an int64`},
		{"int64 beyond 2^53 decimal", ColumnConfig{Type: sink.Int64}, `9007199254740993.0`, int64(9007199254740993), ""},
		{"int64 beyond 2^53 exponent", ColumnConfig{Type: sink.Int64}, `1234567890123456789e0`, int64(1234567890123456789), ""},
		{"int64 beyond 2^53 string", ColumnConfig{Type: sink.Int64}, `"9.007199254740993e15"`, int64(9007199254740993), ""},
		{"int64 max exponent", ColumnConfig{Type: sink.Int64}, `9.223372036854775807e18`, int64(math.MaxInt64), ""},
		{"int64 just past max exponent", ColumnConfig{Type: sink.Int64}, `9.223372036854775808e18`, nil, `column "v": 9.223372036854775808e18 is not an int64`},
		{"int64 tiny fraction", ColumnConfig{Type: sink.Int64}, `9007199254740993.0000001`, nil, `is not an int64`},
		{"int64 huge exponent", ColumnConfig{Type: sink.Int64}, `1e400`, nil, `column "v": 1e400 is not an int64`},
		{"int32 exponent past range", ColumnConfig{Type: sink.Int32}, `2.147483648e9`, nil, `is not an int32`},

		{"float64", ColumnConfig{Type: sink.Float64}, `12.75`, 12.75, ""},
		{"float64 int", ColumnConfig{Type: sink.Float64}, `12`, 12.0, ""},
		{"float64 exponent", ColumnConfig{Type: sink.Float64}, `-1.5E-3`, -0.0015, ""},
		{"float64 from string", ColumnConfig{Type: sink.Float64}, `"12.75"`, 12.75, ""},
		{"float64 word", ColumnConfig{Type: sink.Float64}, `"fast"`, nil, `column "v": "fast" is not a float64`},
		{"float32", ColumnConfig{Type: sink.Float32}, `0.5`, float32(0.5), ""},
		{"float32 overflow", ColumnConfig{Type: sink.Float32}, `1e39`, nil, `is not a float32`},
		{"float64 Infinity string", ColumnConfig{Type: sink.Float64}, `"-Infinity"`, math.Inf(-1), ""},
		{"float64 hex", ColumnConfig{Type: sink.Float64}, `"0x1p3"`, nil, `"0x1p3" is not a float64`},
		{"float64 plus", ColumnConfig{Type: sink.Float64}, `"+1.5"`, nil, `is not a float64`},
		{"float64 underscore", ColumnConfig{Type: sink.Float64}, `"1_000"`, nil, `is not a float64`},
		{"float64 inf word", ColumnConfig{Type: sink.Float64}, `"inf"`, nil, `is not a float64`},
		{"float64 overflow", ColumnConfig{Type: sink.Float64}, `1e309`, nil, `is not a float64`},
		{"float64 nearest", ColumnConfig{Type: sink.Float64}, `9007199254740993`, 9007199254740992.0, ""},

		{"bool true", ColumnConfig{Type: sink.Bool}, `true`, true, ""},
		{"bool false", ColumnConfig{Type: sink.Bool}, `false`, false, ""},
		{"bool from string", ColumnConfig{Type: sink.Bool}, `"true"`, true, ""},
		{"bool number", ColumnConfig{Type: sink.Bool}, `1`, nil, `column "v": 1 is not a bool`},

		{"timestamp rfc3339", ColumnConfig{Type: sink.Timestamp}, `"2026-11-29T07:00:00Z"`, utc("2026-11-29T07:00:00Z"), ""},
		{"timestamp ms truncates", ColumnConfig{Type: sink.Timestamp}, `"2026-11-29T07:00:00.123456789Z"`, utc("2026-11-29T07:00:00.123Z"), ""},
		{"timestamp us", ColumnConfig{Type: sink.Timestamp, Unit: "us"}, `"2026-11-29T07:00:00.123456789Z"`, utc("2026-11-29T07:00:00.123456Z"), ""},
		{"timestamp offset", ColumnConfig{Type: sink.Timestamp}, `"2026-11-29T16:00:00+09:00"`, utc("2026-11-29T07:00:00Z"), ""},
		{"timestamp not rfc3339", ColumnConfig{Type: sink.Timestamp}, `"29/11/2026"`, nil, `column "v": "29/11/2026" is not an RFC 3339 timestamp`},
		{"timestamp number for rfc3339", ColumnConfig{Type: sink.Timestamp}, `1764399600`, nil, `is not an RFC 3339 timestamp`},
		{"timestamp epoch_ms", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_ms"}, `1764399600123`, utc("2025-11-29T07:00:00.123Z"), ""},
		{"timestamp epoch_ms string", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_ms"}, `"1764399600123"`, utc("2025-11-29T07:00:00.123Z"), ""},
		{"timestamp epoch_ms fraction", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_ms", Unit: "us"}, `1764399600123.456`, utc("2025-11-29T07:00:00.123456Z"), ""},
		{"timestamp epoch_s", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_s"}, `1764399600`, utc("2025-11-29T07:00:00Z"), ""},
		{"timestamp epoch_s fraction", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_s", Unit: "us"}, `1764399600.654321`, utc("2025-11-29T07:00:00.654321Z"), ""},
		{"timestamp epoch_s exponent", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_s"}, `1.7643996e9`, utc("2025-11-29T07:00:00Z"), ""},
		{"timestamp epoch_s negative", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_s"}, `-1.5`, utc("1969-12-31T23:59:58.5Z"), ""},
		{"timestamp epoch word", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_s"}, `"soon"`, nil, `"soon" is not a number for time_format epoch_s`},
		{"timestamp epoch_us", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_us", Unit: "us"}, `1764399600123456`, utc("2025-11-29T07:00:00.123456Z"), ""},
		{"timestamp epoch_s out of range us", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_s", Unit: "us"}, `9300000000000`, nil,
			`column "v": 9300000000000 is out of the timestamp range 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z`},
		{"timestamp epoch_s beyond 10^12 s", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_s"}, `"1e30"`, nil, `column "v": "1e30" is out of the timestamp range`},
		{"timestamp epoch_ms year 10000", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_ms"}, `253402300800000`, nil, `is out of the timestamp range`},
		{"timestamp epoch_ms year 9999", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_ms"}, `253402300799999`, utc("9999-12-31T23:59:59.999Z"), ""},
		{"timestamp epoch_s before year 1", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_s"}, `-62135596801`, nil, `is out of the timestamp range`},
		{"timestamp epoch_s year 1", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_s"}, `-62135596800`, utc("0001-01-01T00:00:00Z"), ""},
		{"timestamp epoch_ns exact beyond 2^53", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_ns", Unit: "us"}, `1.764399600123456789e18`, utc("2025-11-29T07:00:00.123456Z"), ""},
		{"timestamp rfc3339 year 0", ColumnConfig{Type: sink.Timestamp}, `"0000-01-01T00:00:00Z"`, nil, `column "v": "0000-01-01T00:00:00Z" is out of the timestamp range`},
		{"date epoch_s out of range", ColumnConfig{Type: sink.Date, TimeFormat: "epoch_s"}, `9300000000000`, nil, `is out of the date range`},
		{"timestamp epoch_ns", ColumnConfig{Type: sink.Timestamp, TimeFormat: "epoch_ns", Unit: "us"}, `1764399600123456789`, utc("2025-11-29T07:00:00.123456Z"), ""},
		{"timestamp layout", ColumnConfig{Type: sink.Timestamp, TimeFormat: "2006-01-02 15:04:05"}, `"2026-11-29 07:00:00"`, utc("2026-11-29T07:00:00Z"), ""},
		{"timestamp layout zone", ColumnConfig{Type: sink.Timestamp, TimeFormat: "02/Jan/2006:15:04:05 -0700"}, `"29/Nov/2026:16:00:00 +0900"`, utc("2026-11-29T07:00:00Z"), ""},
		{"timestamp layout mismatch", ColumnConfig{Type: sink.Timestamp, TimeFormat: "2006-01-02 15:04:05"}, `"2026-11-29T07:00:00Z"`, nil, `is not a time in the layout "2006-01-02 15:04:05"`},

		{"date", ColumnConfig{Type: sink.Date}, `"2026-11-29"`, utc("2026-11-29T00:00:00Z"), ""},
		{"date from rfc3339", ColumnConfig{Type: sink.Date, TimeFormat: "rfc3339"}, `"2026-11-29T23:30:00-02:00"`, utc("2026-11-30T00:00:00Z"), ""},
		{"date from epoch_ms", ColumnConfig{Type: sink.Date, TimeFormat: "epoch_ms"}, `1764399600123`, utc("2025-11-29T00:00:00Z"), ""},
		{"date bad", ColumnConfig{Type: sink.Date}, `"2026-02-30"`, nil, `is not a time in the layout "2006-01-02"`},

		{"bytes", ColumnConfig{Type: sink.Bytes}, `"a\u00e9"`, []byte("aé"), ""},
		{"bytes from number", ColumnConfig{Type: sink.Bytes}, `12`, []byte("12"), ""},

		{"json object", ColumnConfig{Type: sink.JSON}, `{"a": [1, "x", null], "b": {"c": true}}`, `{"a": [1, "x", null], "b": {"c": true}}`, ""},
		{"json array", ColumnConfig{Type: sink.JSON}, `[1,2]`, `[1,2]`, ""},
		{"json string keeps quotes", ColumnConfig{Type: sink.JSON}, `"a\"b"`, `"a\"b"`, ""},
		{"json number", ColumnConfig{Type: sink.JSON}, `1.5e3`, `1.5e3`, ""},
		{"json null", ColumnConfig{Type: sink.JSON}, `null`, nil, ""},

		{"map", ColumnConfig{Type: sink.StringMap}, `{"env": "prod", "n": 3, "ok": true, "o": {"x": [1]}, "gone": null, "e\u0301": "caf\u00e9"}`,
			map[string]string{"env": "prod", "n": "3", "ok": "true", "o": `{"x": [1]}`, "e\u0301": "café"}, ""},
		{"map empty", ColumnConfig{Type: sink.StringMap}, `{}`, map[string]string{}, ""},
		{"map not object", ColumnConfig{Type: sink.StringMap}, `["a"]`, nil, `column "v": ["a"] is not a JSON object for a map<string,string>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			col := tt.col
			col.Name = "v"
			d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{col}})
			row, keep, err := decodeOne(t, d, &record.Record{Value: []byte(`{"other": 1, "v": ` + tt.json + `, "after": [true]}`)})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !keep {
				t.Fatalf("Decode: keep=%v err=%v", keep, err)
			}
			if !reflect.DeepEqual(row[0], tt.want) {
				t.Errorf("got %#v (%T), want %#v (%T)", row[0], row[0], tt.want, tt.want)
			}
		})
	}
}

func TestDecodeKafkaFields(t *testing.T) {
	when := time.Date(2026, 11, 29, 16, 0, 0, 123456789, time.FixedZone("KST", 9*3600))
	msg := &record.Record{
		Topic: "logs", Partition: 7, Offset: 4_000_000_001, Key: []byte("user-42"), Time: when,
		Value: []byte(`{"a": 1}`),
		Headers: []record.Header{
			{Key: "trace", Value: []byte("t-1")},
			{Key: "retries", Value: []byte("3")},
			{Key: "trace", Value: []byte("t-2")},
		},
	}
	tests := []struct {
		col  ColumnConfig
		want any
	}{
		{ColumnConfig{Type: sink.String, Source: "kafka.key"}, "user-42"},
		{ColumnConfig{Type: sink.Bytes, Source: "kafka.key"}, []byte("user-42")},
		{ColumnConfig{Type: sink.String, Source: "kafka.topic"}, "logs"},
		{ColumnConfig{Type: sink.Int32, Source: "kafka.partition"}, int32(7)},
		{ColumnConfig{Type: sink.Int64, Source: "kafka.partition"}, int64(7)},
		{ColumnConfig{Type: sink.Int64, Source: "kafka.offset"}, int64(4_000_000_001)},
		{ColumnConfig{Type: sink.String, Source: "kafka.offset"}, "4000000001"},
		{ColumnConfig{Type: sink.Timestamp, Source: "kafka.timestamp"}, utc("2026-11-29T07:00:00.123Z")},
		{ColumnConfig{Type: sink.Timestamp, Source: "kafka.timestamp", Unit: "us"}, utc("2026-11-29T07:00:00.123456Z")},
		{ColumnConfig{Type: sink.Date, Source: "kafka.timestamp"}, utc("2026-11-29T00:00:00Z")},
		{ColumnConfig{Type: sink.Int64, Source: "kafka.timestamp"}, when.UnixMilli()},
		{ColumnConfig{Type: sink.String, Source: "kafka.timestamp"}, "2026-11-29T07:00:00.123456789Z"},
		{ColumnConfig{Type: sink.String, Source: "kafka.header.trace"}, "t-2"}, // the last one wins
		{ColumnConfig{Type: sink.Int32, Source: "kafka.header.retries"}, int32(3)},
		{ColumnConfig{Type: sink.String, Source: "kafka.header.absent"}, nil},
		{ColumnConfig{Type: sink.StringMap, Source: "kafka.headers"}, map[string]string{"trace": "t-2", "retries": "3"}},
		{ColumnConfig{Type: sink.String, Source: "kafka.value"}, `{"a": 1}`},
		{ColumnConfig{Type: sink.JSON, Source: "kafka.value"}, `{"a": 1}`},
		{ColumnConfig{Type: sink.Int32, Source: `["kafka"].x`}, nil}, // a JSON field named kafka
	}
	for _, tt := range tests {
		t.Run(tt.col.Source+" as "+string(tt.col.Type), func(t *testing.T) {
			col := tt.col
			col.Name = "c"
			d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{col}})
			row, _, err := decodeOne(t, d, msg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(row[0], tt.want) {
				t.Errorf("got %#v, want %#v", row[0], tt.want)
			}
		})
	}

	t.Run("null key and no timestamp are null", func(t *testing.T) {
		d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{
			{Name: "k", Type: sink.String, Source: "kafka.key"},
			{Name: "ts", Type: sink.Timestamp, Source: "kafka.timestamp"},
			{Name: "h", Type: sink.StringMap, Source: "kafka.headers"},
		}})
		row, _, err := decodeOne(t, d, &record.Record{Value: []byte(`{}`)})
		if err != nil || row[0] != nil || row[1] != nil || row[2] != nil {
			t.Fatalf("got %v, %v", row, err)
		}
	})
}

func TestDecodeTextFormat(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Format: "text", Columns: []ColumnConfig{
		{Name: "line", Type: sink.String},
		{Name: "raw", Type: sink.Bytes, Source: "value"},
		{Name: "key", Type: sink.String, Source: "kafka.key"},
	}})
	row, _, err := decodeOne(t, d, &record.Record{Key: []byte("k"), Value: []byte("GET /x 200 \xff")})
	if err != nil {
		t.Fatal(err)
	}
	want := sink.Row{"GET /x 200 \uFFFD", []byte("GET /x 200 \xff"), "k"}
	if !reflect.DeepEqual(row, want) {
		t.Errorf("got %q, want %q", row, want)
	}

	num := newTestDecoder(t, SchemaConfig{Format: "text", Columns: []ColumnConfig{{Name: "n", Type: sink.Int64}}})
	if row, _, err := decodeOne(t, num, &record.Record{Value: []byte("42")}); err != nil || row[0] != int64(42) {
		t.Errorf("text int: %v %v", row, err)
	}
	if _, _, err := decodeOne(t, num, &record.Record{Value: []byte("4 2")}); err == nil || err.Error() != `column "n": "4 2" is not an int64` {
		t.Errorf("text int error = %v", err)
	}
}

func TestDecodeRequiredAndDefaults(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{
		{Name: "level", Type: sink.String, Required: true},
		{Name: "status", Type: sink.Int32, Source: "http.status", Required: true},
		{Name: "env", Type: sink.String, Source: "labels.env", Default: "dev"},
		{Name: "retries", Type: sink.Int64, Default: 0},
		{Name: "ratio", Type: sink.Float64, Default: 1.5},
		{Name: "sampled", Type: sink.Bool, Default: true},
		{Name: "day", Type: sink.Date, Default: "2026-01-01"},
		{Name: "ts", Type: sink.Timestamp, Default: "1970-01-01T00:00:00Z"},
		{Name: "meta", Type: sink.JSON, Default: map[string]any{"a": 1}},
		{Name: "tags", Type: sink.StringMap, Default: map[string]any{"x": "y"}},
		{Name: "note", Type: sink.String},
	}})
	tests := []struct {
		name    string
		json    string
		want    sink.Row
		wantErr string
	}{
		{"all defaults", `{"level": "INFO", "http": {"status": 200}}`,
			sink.Row{"INFO", int32(200), "dev", int64(0), 1.5, true, utc("2026-01-01T00:00:00Z"), utc("1970-01-01T00:00:00Z"), `{"a":1}`, map[string]string{"x": "y"}, nil}, ""},
		{"null takes the default", `{"level": "INFO", "http": {"status": 200}, "labels": {"env": null}, "note": null}`,
			sink.Row{"INFO", int32(200), "dev", int64(0), 1.5, true, utc("2026-01-01T00:00:00Z"), utc("1970-01-01T00:00:00Z"), `{"a":1}`, map[string]string{"x": "y"}, nil}, ""},
		{"values win", `{"level": "INFO", "http": {"status": 200}, "labels": {"env": "prod"}, "retries": 2, "note": "n"}`,
			sink.Row{"INFO", int32(200), "prod", int64(2), 1.5, true, utc("2026-01-01T00:00:00Z"), utc("1970-01-01T00:00:00Z"), `{"a":1}`, map[string]string{"x": "y"}, "n"}, ""},
		{"missing required", `{"level": "INFO", "http": {}}`, nil, `column "status": required field http.status is missing or null`},
		{"missing parent", `{"level": "INFO"}`, nil, `column "status": required field http.status is missing or null`},
		{"null required", `{"level": null, "http": {"status": 200}}`, nil, `column "level": required field level is missing or null`},
		{"parent not an object", `{"level": "INFO", "http": "down"}`, nil, `column "status": required field http.status is missing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row, _, err := decodeOne(t, d, &record.Record{Value: []byte(tt.json)})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(row, tt.want) {
				t.Errorf("got  %#v\nwant %#v", row, tt.want)
			}
		})
	}
	fields := d.Schema().Fields
	if !fields[0].Required || !fields[2].Required || fields[10].Required {
		t.Errorf("a column is not null when required or defaulted: %+v", fields)
	}
}

func TestDecodeMalformed(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{{Name: "level", Type: sink.String}}})
	tests := []struct{ value, wantErr string }{
		{``, "the value is empty"},
		{`{"level": "INFO"`, "the value is not JSON: unexpected end of input at byte 16"},
		{`{"level": "INFO",}`, `expected a string key, found '}' at byte 17`},
		{`{"level": 'INFO'}`, `the value is not JSON: expected a value, found '\'' at byte 10`},
		{`{"level": "INFO"} x`, "unexpected data after the document"},
		{`{"level": "IN` + "\n" + `FO"}`, "control character in a string"},
		{`{"level": "\x"}`, "bad escape"},
		{`{"level": "\u12"}`, `bad \u escape`},
		{`{"n": 01}`, "expected ',' or '}' in an object"},
		{`{"n": -}`, "expected a digit"},
		{`{"n": 1.}`, "expected a digit after '.'"},
		{`{"n": 1e}`, "expected a digit in the exponent"},
		{`{"n": tru}`, "expected true"},
		{`{"a": [1 2]}`, "expected ',' or ']' in an array"},
		{`{"a" 1}`, "expected ':' after an object key"},
		{strings.Repeat("[", maxJSONDepth+1), "nested too deep"},
		{`["level", "INFO"]`, "the value is JSON but not an object"},
		{`"INFO"`, "the value is JSON but not an object"},
	}
	for _, tt := range tests {
		_, keep, err := decodeOne(t, d, &record.Record{Value: []byte(tt.value)})
		if err == nil || keep || !strings.Contains(err.Error(), tt.wantErr) {
			name := tt.value
			if len(name) > 40 {
				name = name[:40]
			}
			t.Errorf("%s: keep=%v error = %v, want %q", name, keep, err, tt.wantErr)
		}
	}
}

func TestDecodeNestedPaths(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{
		{Name: "deep", Type: sink.String, Source: "a.b.c"},
		{Name: "first_tag", Type: sink.String, Source: "tags[0]"},
		{Name: "second_user", Type: sink.Int64, Source: "users[1].id"},
		{Name: "dotted", Type: sink.String, Source: `labels["k8s.io/app"]`},
		{Name: "http", Type: sink.JSON},
		{Name: "status", Type: sink.Int32, Source: "http.status"},
		{Name: "status_again", Type: sink.String, Source: "http.status"},
		{Name: "escaped_key", Type: sink.String, Source: "naïve"},
		{Name: "dup", Type: sink.String},
	}})
	value := `{
		"x": {"a": {"b": {"c": "wrong"}}},
		"a": {"b": {"c": "right", "d": [1, {"e": 2}]}},
		"tags": ["t0", "t1"],
		"users": [{"id": 1}, {"id": 2, "name": "b"}, {"id": 3}],
		"labels": {"k8s.io/app": "web", "k8s": {"io/app": "no"}},
		"http": {"status": 503, "path": "/x"},
		"na\u00efve": "yes",
		"dup": "first", "dup": "last"
	}`
	row, _, err := decodeOne(t, d, &record.Record{Value: []byte(value)})
	if err != nil {
		t.Fatal(err)
	}
	want := sink.Row{"right", "t0", int64(2), "web", `{"status": 503, "path": "/x"}`, int32(503), "503", "yes", "last"}
	if !reflect.DeepEqual(row, want) {
		t.Errorf("got  %#v\nwant %#v", row, want)
	}
}

func TestDecodeReusesRow(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.String}, {Name: "b", Type: sink.Int64}}})
	dst := make(sink.Row, 0, 8)
	row, _, err := d.Decode(&record.Record{Value: []byte(`{"a": "x", "b": 1}`)}, dst)
	if err != nil || &row[0] != &dst[:1][0] || len(row) != 2 {
		t.Fatalf("row not in dst: %v %v", row, err)
	}
	// A second record over the same storage leaves no trace of the first.
	row, _, _ = d.Decode(&record.Record{Value: []byte(`{}`)}, row)
	if row[0] != nil || row[1] != nil {
		t.Errorf("stale values: %v", row)
	}
}

// TestDecodeStringsOutliveTheRecord checks that strings from the row arena
// survive the message buffer being reused.
func TestDecodeStringsOutliveTheRecord(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{
		{Name: "a", Type: sink.String}, {Name: "m", Type: sink.StringMap}, {Name: "j", Type: sink.JSON},
	}})
	buf := []byte(`{"a": "hello", "m": {"k": "v"}, "j": [1]}`)
	row1, _, _ := d.Decode(&record.Record{Value: buf}, nil)
	for i := range buf {
		buf[i] = ' '
	}
	copy(buf, `{"a": "HELLO", "m": {"K": "V"}, "j": [2]}`)
	row2, _, _ := d.Decode(&record.Record{Value: buf}, nil)
	if !reflect.DeepEqual(row1, sink.Row{"hello", map[string]string{"k": "v"}, "[1]"}) ||
		!reflect.DeepEqual(row2, sink.Row{"HELLO", map[string]string{"K": "V"}, "[2]"}) {
		t.Errorf("rows share memory: %q %q", row1, row2)
	}
}

// FuzzDecodeJSON holds the scanner to encoding/json: it accepts exactly the
// valid documents and reads strings the same way.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"s": "x"}`, `{"s": "\u00e9\ud83d\ude00"}`, `{"s": "\ud800"}`, "{\"s\": \"\xff\xfe\"}", `{"s": 1}`,
		`{"s": [1, 2.5e-3, true, null, {"a": {}}]}`, `{"s": "a\"\\\/\b\f\n\r\t"}`, `{"s": "x",}`, `{"s": 01}`,
		` {"s" : "y" } `, `{"s": "\u00"}`, `[]`, `{"a": [[[[]]]]}`, `{"s": -0.0E+1}`, `{"s": "\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	d, err := New(SchemaConfig{Columns: []ColumnConfig{{Name: "s", Type: sink.String}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		row, _, err := d.Decode(&record.Record{Value: value}, nil)
		var doc any
		stdErr := json.Unmarshal(value, &doc)
		if (err == nil) != (stdErr == nil) {
			if _, isObject := doc.(map[string]any); stdErr == nil && !isObject {
				return // valid JSON but not an object: ours rejects, rightly
			}
			t.Fatalf("ours: %v, encoding/json: %v", err, stdErr)
		}
		if err != nil {
			return
		}
		if s, ok := doc.(map[string]any)["s"].(string); ok && row[0] != s {
			t.Fatalf("string %q, encoding/json %q", row[0], s)
		}
	})
}

// TestDecodeFloatNaN: "NaN", the spelling JSON writers use, is NaN.
func TestDecodeFloatNaN(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{{Name: "v", Type: sink.Float64}}})
	row, _, err := d.Decode(&record.Record{Value: []byte(`{"v": "NaN"}`)}, nil)
	if f, ok := row[0].(float64); err != nil || !ok || !math.IsNaN(f) {
		t.Fatalf("got %#v, %v; want NaN", row[0], err)
	}
}

// TestDecodeKafkaTimestampOutOfRange: a record timestamp past year 9999 is
// a dead letter naming the column and the value.
func TestDecodeKafkaTimestampOutOfRange(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Format: "text", Columns: []ColumnConfig{
		{Name: "value", Type: sink.String}, {Name: "ts", Type: sink.Timestamp, Source: "kafka.timestamp", Unit: "us"},
	}})
	_, _, err := d.Decode(&record.Record{Value: []byte("x"), Time: time.UnixMilli(9300000000000000)}, nil)
	if want := `column "ts": the record's timestamp 9300000000000000 ms is out of the timestamp range`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

// TestDecodeConcurrent: one Decoder serves every partition worker.
func TestDecodeConcurrent(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Columns: transformColumns, Where: `level != "DEBUG"`})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			level := []string{"INFO", "WARN", "ERROR", "FATAL"}[g]
			value := strings.Replace(transformRecord, "WARN", level, 1)
			for range 200 {
				row, keep, err := d.Decode(transformMessage(value), nil)
				if err != nil || !keep || row[1] != level || row[4] != "GET /cart Timeout after 3s" {
					t.Errorf("goroutine %d: %v %v %v", g, row, keep, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
