package decode

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// transformColumns are the decoded columns the expressions below read.
var transformColumns = []ColumnConfig{
	{Name: "ts", Type: sink.Timestamp, Source: "timestamp", Required: true},
	{Name: "level", Type: sink.String, Required: true},
	{Name: "service", Type: sink.String},
	{Name: "host", Type: sink.String, Default: "unknown"},
	{Name: "message", Type: sink.String},
	{Name: "status", Type: sink.Int32, Source: "http.status"},
	{Name: "latency_ms", Type: sink.Float64, Source: "http.latency_ms"},
	{Name: "labels", Type: sink.StringMap},
	{Name: "sampled", Type: sink.Bool},
	{Name: "zero", Type: sink.Int64, Default: 0},
	{Name: "body", Type: sink.Bytes},
}

const transformRecord = `{"timestamp": "2026-11-29T07:00:00.250Z", "level": "WARN", "service": "checkout",
	"message": "GET /cart Timeout after 3s", "http": {"status": 503, "latency_ms": 3000.5},
	"labels": {"env": "prod"}, "body": "hi"}`

func transformMessage(value string) *record.Record {
	return &record.Record{
		Topic: "logs", Partition: 3, Offset: 42, Key: []byte("k1"), Value: []byte(value),
		Time:    time.Date(2026, 11, 29, 7, 0, 1, 0, time.UTC),
		Headers: []record.Header{{Key: "trace", Value: []byte("t-9")}},
	}
}

func TestTransformWhere(t *testing.T) {
	minimal := `{"timestamp": "2026-11-29T07:00:00Z", "level": "DEBUG"}`
	tests := []struct {
		where   string
		value   string
		keep    bool
		wantErr string
	}{
		{`level != "DEBUG"`, transformRecord, true, ""},
		{`level != "DEBUG"`, minimal, false, ""},
		{`status >= 500`, transformRecord, true, ""},
		{`status != null && status >= 500`, minimal, false, ""},
		{`status == null || status < 500`, minimal, true, ""},
		{`service != "checkout"`, minimal, true, ""}, // null is a value to == and !=
		{`status >= 500`, minimal, false, "where: no such overload: _>=_ (null: status; guard with `status != null && ...`)"},
		{`message.lowerAscii().contains("timeout")`, transformRecord, true, ""},
		{`size(message) > 100`, transformRecord, false, ""},
		{`message.matches("^GET ") && message.split(" ")[1] == "/cart"`, transformRecord, true, ""},
		{`service + "@" + host == "checkout@unknown"`, transformRecord, true, ""},
		{`ts.getHours() == 7 && ts.getHours("Asia/Seoul") == 16 && ts.getMilliseconds() == 250`, transformRecord, true, ""},
		{`ts > timestamp("2026-11-29T00:00:00Z") && kafka.timestamp - ts == duration("750ms")`, transformRecord, true, ""},
		{`latency_ms > 3000`, transformRecord, true, ""}, // double against int
		{`labels.env == "prod" && "env" in labels && has(labels.env)`, transformRecord, true, ""},
		{`"env" in labels`, minimal, false, ""}, // a missing map is {}
		{`labels.team == "x"`, transformRecord, false, `where: no such key: team`},
		{`sampled`, transformRecord, false, ""}, // null drops, as in SQL
		{`kafka.topic == "logs" && kafka.partition == 3 && kafka.offset == 42 && kafka.key == "k1"`, transformRecord, true, ""},
		{`kafka.headers["trace"] == "t-9"`, transformRecord, true, ""},
		{`body == b"hi"`, transformRecord, true, ""},
		{`10 / zero > 1`, transformRecord, false, "where: division by zero"},
		{`math.round(latency_ms) == 3001.0`, transformRecord, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.where, func(t *testing.T) {
			d := newTestDecoder(t, SchemaConfig{Columns: transformColumns, Where: tt.where})
			_, keep, err := d.Decode(transformMessage(tt.value), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || keep != tt.keep {
				t.Fatalf("keep = %v, err = %v; want keep = %v", keep, err, tt.keep)
			}
		})
	}
}

func TestTransformExpr(t *testing.T) {
	tests := []struct {
		name    string
		derived []ColumnConfig
		where   string
		value   string
		want    []any // the derived columns' values
		keep    bool
		wantErr string
	}{
		{name: "string concat", derived: []ColumnConfig{{Type: sink.String, Expr: `service + "@" + host`}},
			want: []any{"checkout@unknown"}},
		{name: "bool", derived: []ColumnConfig{{Type: sink.Bool, Expr: `status >= 500`}}, want: []any{true}},
		{name: "double", derived: []ColumnConfig{{Type: sink.Float64, Expr: `latency_ms / 1000.0`}}, want: []any{3.0005}},
		{name: "float32", derived: []ColumnConfig{{Type: sink.Float32, Expr: `latency_ms`}}, want: []any{float32(3000.5)}},
		{name: "int32 from double", derived: []ColumnConfig{{Type: sink.Int32, Expr: `int(latency_ms)`}}, want: []any{int32(3000)}},
		{name: "int64", derived: []ColumnConfig{{Type: sink.Int64, Expr: `kafka.offset * 2`}}, want: []any{int64(84)}},
		{name: "date from timestamp", derived: []ColumnConfig{{Type: sink.Date, Expr: `ts`}}, want: []any{utc("2026-11-29T00:00:00Z")}},
		{name: "timestamp us", derived: []ColumnConfig{{Type: sink.Timestamp, Unit: "us", Expr: `ts + duration("1.5us")`}},
			want: []any{utc("2026-11-29T07:00:00.250001Z")}},
		{name: "lowerAscii", derived: []ColumnConfig{{Type: sink.String, Expr: `level.lowerAscii()`}}, want: []any{"warn"}},
		{name: "map", derived: []ColumnConfig{{Type: sink.StringMap, Expr: `{"level": level, "env": labels.env}`}},
			want: []any{map[string]string{"level": "WARN", "env": "prod"}}},
		{name: "json", derived: []ColumnConfig{{Type: sink.JSON, Expr: `'{"s":' + string(status) + '}'`}}, want: []any{`{"s":503}`}},
		{name: "json invalid", derived: []ColumnConfig{{Type: sink.JSON, Expr: `level`}}, wantErr: `column "d0": expr gave a string that is not JSON`},
		{name: "bytes", derived: []ColumnConfig{{Type: sink.Bytes, Expr: `bytes(level)`}}, want: []any{[]byte("WARN")}},
		{name: "chained", derived: []ColumnConfig{
			{Type: sink.Bool, Expr: `status >= 500`},
			{Type: sink.String, Expr: `d0 ? "error" : "ok"`},
		}, want: []any{true, "error"}},
		{name: "null result", derived: []ColumnConfig{{Type: sink.String, Expr: `status < 500 ? "ok" : dyn(null)`}}, want: []any{nil}},
		{name: "null result default", derived: []ColumnConfig{{Type: sink.String, Expr: `status < 500 ? "ok" : dyn(null)`, Default: "bad"}}, want: []any{"bad"}},
		{name: "null result required", derived: []ColumnConfig{{Type: sink.String, Expr: `status < 500 ? "ok" : dyn(null)`, Required: true}},
			wantErr: `column "d0": expr gave null for a required column`},
		{name: "int32 overflow", derived: []ColumnConfig{{Type: sink.Int32, Expr: `status * 10000000`}},
			wantErr: `column "d0": expr gave 5030000000, out of the int32 range`},
		{name: "division by zero", derived: []ColumnConfig{{Type: sink.Int64, Expr: `kafka.offset / zero`}},
			wantErr: `column "d0": expr: division by zero`},
		{name: "int overflow", derived: []ColumnConfig{{Type: sink.Int64, Expr: `9223372036854775807 + kafka.offset`}},
			wantErr: `column "d0": expr: integer overflow`},
		{name: "null operand", value: `{"timestamp": "2026-11-29T07:00:00Z", "level": "INFO"}`,
			derived: []ColumnConfig{{Type: sink.Int64, Expr: `status + 1`}},
			wantErr: `column "d0": expr: no such overload: _+_ (null: status; guard with`},
		{name: "where on derived", derived: []ColumnConfig{{Type: sink.Bool, Expr: `status >= 500`}}, where: `d0`, want: []any{true}},
		{name: "where drops before later columns fail", derived: []ColumnConfig{
			{Type: sink.Bool, Expr: `status < 500`},
			{Type: sink.Int64, Expr: `kafka.offset / zero`},
		}, where: `d0`, keep: false, want: []any{false, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cols := append([]ColumnConfig(nil), transformColumns...)
			for i, c := range tt.derived {
				c.Name = "d" + string(rune('0'+i))
				cols = append(cols, c)
			}
			d := newTestDecoder(t, SchemaConfig{Columns: cols, Where: tt.where})
			value := tt.value
			if value == "" {
				value = transformRecord
			}
			row, keep, err := d.Decode(transformMessage(value), nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if wantKeep := tt.keep || tt.where == "" || tt.name == "where on derived"; keep != wantKeep {
				t.Errorf("keep = %v", keep)
			}
			if got := []any(row[len(transformColumns):]); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestTransformConfigErrors: a CEL mistake is a config error at its key.
func TestTransformConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		derived []ColumnConfig
		where   string
		key     string
		msg     string
	}{
		{"undeclared", []ColumnConfig{{Type: sink.String, Expr: `nope + "x"`}}, "", "columns[11].expr", "undeclared reference to 'nope'"},
		{"syntax", []ColumnConfig{{Type: sink.Bool, Expr: `status >=`}}, "", "columns[11].expr", "Syntax error"},
		{"no overload", []ColumnConfig{{Type: sink.String, Expr: `status + "x"`}}, "", "columns[11].expr", "found no matching overload for '_+_'"},
		{"type mismatch", []ColumnConfig{{Type: sink.String, Expr: `status + 1`}}, "", "columns[11].expr",
			`gives int, but column "d0" is string (CEL string); convert it, e.g. string(...)`},
		{"double into int", []ColumnConfig{{Type: sink.Int64, Expr: `latency_ms`}}, "", "columns[11].expr", `gives double or null, but column "d0" is int64`},
		{"string into timestamp", []ColumnConfig{{Type: sink.Timestamp, Expr: `level`}}, "", "columns[11].expr",
			`gives string, but column "d0" is timestamp (CEL google.protobuf.Timestamp); convert it, e.g. timestamp(...)`},
		{"into map", []ColumnConfig{{Type: sink.StringMap, Expr: `level`}}, "", "columns[11].expr",
			`gives string, but column "d0" is map<string,string> (CEL map(string, string))`},
		{"later column", []ColumnConfig{{Type: sink.Bool, Expr: `d1`}, {Type: sink.Bool, Expr: `true`}}, "", "columns[11].expr",
			`reads a later derived column "d1"`},
		{"itself", []ColumnConfig{{Type: sink.Bool, Expr: `!d0`}}, "", "columns[11].expr", `reads its own derived column "d0"`},
		{"where not bool", nil, `level`, "where", "gives string, not bool"},
		{"where undeclared", nil, `lvl == "x"`, "where", "undeclared reference to 'lvl'"},
		{"expr and source", []ColumnConfig{{Type: sink.Bool, Expr: `true`, Source: "x"}}, "", "columns[11].expr", "a source or an expr, not both"},
		{"kafka column", []ColumnConfig{{Name: "kafka", Type: sink.Bool, Source: "k"}}, `true`, "columns[11].name", `"kafka" is the prefix`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cols := append([]ColumnConfig(nil), transformColumns...)
			for i, c := range tt.derived {
				if c.Name == "" {
					c.Name = "d" + string(rune('0'+i))
				}
				cols = append(cols, c)
			}
			_, err := New(SchemaConfig{Columns: cols, Where: tt.where})
			wantKeyError(t, err, tt.key, tt.msg)
		})
	}
}

// TestTransformColumnNames: columns that are not CEL identifiers are
// simply not variables; the rest still work.
func TestTransformColumnNames(t *testing.T) {
	d := newTestDecoder(t, SchemaConfig{
		Columns: []ColumnConfig{
			{Name: "@timestamp", Type: sink.String},
			{Name: "in", Type: sink.String},
			{Name: "timestamp", Type: sink.Timestamp},
			{Name: "hour", Type: sink.Int32, Expr: `timestamp.getHours()`},
		},
		Where: `hour == 7`,
	})
	row, keep, err := d.Decode(&record.Record{Value: []byte(`{"@timestamp": "a", "in": "b", "timestamp": "2026-11-29T07:00:00Z"}`)}, nil)
	if err != nil || !keep || row[3] != int32(7) {
		t.Fatalf("got %v %v %v", row, keep, err)
	}
}
