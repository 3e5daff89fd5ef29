package decode

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// TestDecodeEmptyIsNotNull: an empty key, header or string is "", a
// missing one null; a header without a value keeps its name in
// kafka.headers with a null value (sink.MapNull), as Spark's Kafka source
// keeps it.
func TestDecodeEmptyIsNotNull(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{
		{Name: "key", Type: sink.String, Source: "kafka.key"},
		{Name: "key_bytes", Type: sink.Bytes, Source: "kafka.key"},
		{Name: "h", Type: sink.String, Source: "kafka.header.h"},
		{Name: "headers", Type: sink.StringMap, Source: "kafka.headers"},
		{Name: "s", Type: sink.String},
		{Name: "b", Type: sink.Bytes, Source: "s"},
	}})
	empty := []byte{}
	for _, tc := range []struct {
		msg  record.Record
		want sink.Row
	}{
		{record.Record{Key: empty, Value: []byte(`{"s": ""}`), Headers: []record.Header{{Key: "h", Value: empty}, {Key: "n"}}},
			sink.Row{"", []byte{}, "", map[string]string{"h": "", "n": sink.MapNull}, "", []byte{}}},
		{record.Record{Value: []byte(`{"s": null}`), Headers: []record.Header{{Key: "h"}}},
			sink.Row{nil, nil, nil, map[string]string{"h": sink.MapNull}, nil, nil}},
	} {
		row, _, err := d.Decode(&tc.msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range row {
			if !reflect.DeepEqual(row[i], tc.want[i]) {
				t.Errorf("%s: got %#v, want %#v", d.Schema().Fields[i].Name, row[i], tc.want[i])
			}
		}
	}
}

// TestDecodeStringsAreUTF8: every string a row holds is valid UTF-8, each
// invalid byte replaced by U+FFFD, wherever it came from; bytes keep bytes.
func TestDecodeStringsAreUTF8(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{
		{Name: "s", Type: sink.String},
		{Name: "obj_as_string", Type: sink.String, Source: "o"},
		{Name: "doc", Type: sink.JSON, Source: "o"},
		{Name: "m", Type: sink.StringMap},
		{Name: "key", Type: sink.String, Source: "kafka.key"},
		{Name: "key_json", Type: sink.JSON, Source: "kafka.key"},
		{Name: "key_bytes", Type: sink.Bytes, Source: "kafka.key"},
		{Name: "h", Type: sink.String, Source: "kafka.header.h"},
		{Name: "headers", Type: sink.StringMap, Source: "kafka.headers"},
		{Name: "upper", Type: sink.String, Expr: "kafka.key.upperAscii()"},
	}})
	msg := &record.Record{
		Key:     []byte("\"k\xff\""),
		Value:   []byte("{\"s\": \"a\xffb\xc3\", \"o\": {\"x\": \"\xfe\"}, \"m\": {\"k\xff\": \"v\xed\xa0\x80\", \"n\": [\"\xc0\"]}}"),
		Headers: []record.Header{{Key: "h\xff", Value: []byte("\xff")}, {Key: "h", Value: []byte("\xe2\x82")}},
	}
	row, _, err := d.Decode(msg, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := sink.Row{
		"a\uFFFDb\uFFFD", "{\"x\": \"\uFFFD\"}", "{\"x\": \"\uFFFD\"}",
		map[string]string{"k\uFFFD": "v\uFFFD\uFFFD\uFFFD", "n": "[\"\uFFFD\"]"},
		"\"k\uFFFD\"", "\"k\uFFFD\"", []byte("\"k\xff\""), "\uFFFD\uFFFD",
		map[string]string{"h\uFFFD": "\uFFFD", "h": "\uFFFD\uFFFD"},
		"\"K\uFFFD\"",
	}
	for i := range row {
		if !reflect.DeepEqual(row[i], want[i]) {
			t.Errorf("%s: got %#v, want %#v", d.Schema().Fields[i].Name, row[i], want[i])
		}
	}
}

// TestDecodeReasons: a tombstone has its own reason, and reasons name
// characters, not their bytes, and are valid UTF-8 however they are cut.
func TestDecodeReasons(t *testing.T) {
	jsonDec := newTestDecoder(t, SchemaConfig{Columns: []ColumnConfig{{Name: "n", Type: sink.Int64}}})
	textDec := newTestDecoder(t, SchemaConfig{Format: "text", Columns: []ColumnConfig{{Name: "line", Type: sink.String, Required: true}}})
	long := strings.Repeat("a", 61) + "éé" + strings.Repeat("b", 10)
	for _, tc := range []struct {
		d     *Decoder
		value []byte
		want  string
	}{
		{jsonDec, nil, "the value is null (a tombstone)"},
		{textDec, nil, "the value is null (a tombstone)"},
		{jsonDec, []byte{}, "the value is empty, not a JSON object"},
		{jsonDec, []byte(`{"n": ï}`), `the value is not JSON: expected a value, found 'ï' at byte 6`},
		{jsonDec, []byte(`{"n": 世界}`), `expected a value, found '世' at byte 6`},
		{jsonDec, []byte("{\"n\": \xff}"), `expected a value, found byte 0xff at byte 6`},
		{jsonDec, []byte(`{"n": "` + long + `"}`), `column "n": "` + strings.Repeat("a", 61) + `é… is not an int64`},
		{jsonDec, []byte("{\"n\": [\"\xff\", \"ï\"]}"), "column \"n\": [\"\uFFFD\", \"ï\"] is not an int64"},
	} {
		_, _, err := tc.d.Decode(&record.Record{Value: tc.value}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !utf8.ValidString(err.Error()) {
			t.Errorf("%q: got %v, want %q", tc.value, err, tc.want)
		}
	}
}
