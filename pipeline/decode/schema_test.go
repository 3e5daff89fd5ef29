package decode

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/logstore/logstore/internal/confkey"
	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

func TestSchemaValidate(t *testing.T) {
	col := func(name string, typ sink.Type) ColumnConfig { return ColumnConfig{Name: name, Type: typ} }
	tests := []struct {
		name string
		cfg  SchemaConfig
		key  string
		msg  string
	}{
		{"format", SchemaConfig{Format: "csv"}, "format", `"csv" is not json or text`},
		{"no name", SchemaConfig{Columns: []ColumnConfig{col("a", sink.String), {Type: sink.String}}}, "columns[1].name", "missing"},
		{"duplicate", SchemaConfig{Columns: []ColumnConfig{col("a", sink.String), col("a", sink.Int64)}}, "columns[1].name", `"a" is also the name of columns[0]`},
		{"bad type", SchemaConfig{Columns: []ColumnConfig{col("a", sink.String), col("b", "int")}}, "columns[1].type",
			`"int" is not one of string, int32, int64, float32, float64, bool, timestamp, date, bytes, json, map<string,string>`},
		{"no type", SchemaConfig{Columns: []ColumnConfig{{Name: "a"}}}, "columns[0].type", "missing; one of string"},
		{"unit", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.Timestamp, Unit: "ns"}}}, "columns[0].unit", `"ns" is not ms or us`},
		{"unit on string", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.String, Unit: "ms"}}}, "columns[0].unit", "only a timestamp column"},
		{"time format", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.Timestamp, TimeFormat: "iso8601"}}}, "columns[0].time_format", `"iso8601" is not rfc3339`},
		{"time format on int", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.Int64, TimeFormat: "epoch_ms"}}}, "columns[0].time_format", "only a timestamp or date column"},
		{"bad path", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.String, Source: "http..status"}}}, "columns[0].source", "empty key"},
		{"bad kafka field", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.String, Source: "kafka.ts"}}}, "columns[0].source", `"kafka.ts" is not one of kafka.key`},
		{"empty header", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.String, Source: "kafka.header."}}}, "columns[0].source", "names no header"},
		{"text path", SchemaConfig{Format: "text", Columns: []ColumnConfig{{Name: "a", Type: sink.String, Source: "http.status"}}}, "columns[0].source", "in text format"},
		{"kafka type", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.Bool, Source: "kafka.offset"}}}, "columns[0].type", "source kafka.offset gives int64, float64, string, not bool"},
		{"headers type", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.String, Source: "kafka.headers"}}}, "columns[0].type", "gives map<string,string>"},
		{"json value type", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.Int64, Source: "kafka.value"}}}, "columns[0].type", "gives string, bytes, json"},
		{"required default", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.String, Required: true, Default: "x"}}}, "columns[0].default", "a required column has no default"},
		{"bad default", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.Int32, Default: "many"}}}, "columns[0].default", `"many" is not an int32`},
		{"bad json default", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.JSON, Default: "{"}}}, "columns[0].default", "is not JSON"},
		{"bad time default", SchemaConfig{Columns: []ColumnConfig{{Name: "a", Type: sink.Date, Default: "today"}}}, "columns[0].default", `"today" is not a time in the layout "2006-01-02"`},
		{"cel", SchemaConfig{Columns: []ColumnConfig{col("a", sink.String)}, Where: `a ==`}, "where", "Syntax error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.SetDefaults()
			wantKeyError(t, cfg.Validate(), tt.key, tt.msg)
		})
	}
}

// wantKeyError checks that err is a config error at key saying msg.
func wantKeyError(t *testing.T, err error, key, msg string) {
	t.Helper()
	var ke *confkey.Error
	if !errors.As(err, &ke) {
		t.Fatalf("want a *confkey.Error, got %v", err)
	}
	if ke.Key != key || !strings.Contains(ke.Msg, msg) {
		t.Errorf("got %s: %s\nwant %s: ...%s...", ke.Key, ke.Msg, key, msg)
	}
}

// TestSchemaDefaultColumns: without columns a row is the Kafka record, as
// Spark's rowKafkaDF.
func TestSchemaDefaultColumns(t *testing.T) {
	var cfg SchemaConfig
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d := newTestDecoder(t, cfg)
	row, _, err := d.Decode(transformMessage(`{"a": 1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := sink.Row{"k1", `{"a": 1}`, "logs", int32(3), int64(42), utc("2026-11-29T07:00:01Z"), map[string]string{"trace": "t-9"}}
	if !reflect.DeepEqual(row, want) {
		t.Errorf("got  %#v\nwant %#v", row, want)
	}
	if _, _, err := d.Decode(&record.Record{Value: []byte("not json")}, nil); err == nil {
		t.Error("format json takes a value that is not JSON")
	}
}

// TestReferenceSchema keeps pipeline/decode/reference-schema.yaml true: it loads
// strictly, validates, and decodes as it says.
func TestReferenceSchema(t *testing.T) {
	text, err := os.ReadFile("reference-schema.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema SchemaConfig `yaml:"schema"`
	}
	if err := yaml.UnmarshalWithOptions(text, &doc, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	doc.Schema.SetDefaults()
	if err := doc.Schema.Validate(); err != nil {
		t.Fatal(err)
	}
	d := newTestDecoder(t, doc.Schema)
	row, keep, err := d.Decode(&record.Record{Topic: "logs", Value: []byte(
		`{"timestamp": "2026-11-29T07:00:00.123Z", "level": "ERROR", "http": {"status": "503"}, "labels": {"env": "prod", "n": 1}}`)}, nil)
	want := sink.Row{utc("2026-11-29T07:00:00.123Z"), "ERROR", int32(503), map[string]string{"env": "prod", "n": "1"}, true}
	if err != nil || !keep || !reflect.DeepEqual(row, want) {
		t.Errorf("got %#v %v %v", row, keep, err)
	}
	if _, keep, _ := d.Decode(&record.Record{Value: []byte(`{"timestamp": "2026-11-29T07:00:00Z", "level": "DEBUG"}`)}, nil); keep {
		t.Error("where kept a DEBUG record")
	}
}
