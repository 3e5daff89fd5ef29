package pipeline

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/parser"
)

// TestTypeErrorsNameTheKeyAndWhatItTakes: a value of the wrong kind is
// reported with its key path and what the key expects, in the config's words:
// no Go type, struct field or decoder wording.
func TestTypeErrorsNameTheKeyAndWhatItTakes(t *testing.T) {
	tests := []struct {
		name, yaml string
		line       int
		want       []string
	}{
		{"int for a list (the issue's wrongtype.yaml)", strings.Replace(minimalConfig, "[127.0.0.1:19092]", "5", 1), 2,
			[]string{"kafka.brokers", "expected a list", "the number 5"}},
		{"text for a list", strings.Replace(minimalConfig, "[logs]", "logs", 1), 3,
			[]string{"kafka.topics", "expected a list", `"logs"`, "[logs]"}},
		{"int for a section", minimalConfig + "batch: 5\n", 10, []string{"batch", "expected a mapping"}},
		{"text for a number", minimalConfig + "batch:\n  max_rows: lots\n", 11,
			[]string{"batch.max_rows", "expected a whole number", `"lots"`}},
		{"a size in words", minimalConfig + "batch:\n  memory_budget: 128 megs\n", 11,
			[]string{"batch.memory_budget", "a whole number of bytes, or one with a unit", "128MiB", `"128 megs"`}},
		{"number too big", minimalConfig + "batch:\n  max_rows: 99999999999999999999999\n", 11,
			[]string{"batch.max_rows", "expected a whole number"}},
		{"list for a duration", minimalConfig + "batch:\n  max_age: [1]\n", 11,
			[]string{"batch.max_age", "expected a duration", "found a list"}},
		{"duration without a unit", minimalConfig + "run:\n  progress_interval: 10\n", 11,
			[]string{"run.progress_interval", "expected a duration", "30s", "write 10s for seconds"}},
		{"duration in words", minimalConfig + "batch:\n  max_age: 10 minutes\n", 11,
			[]string{"batch.max_age", "expected a duration", `"10 minutes"`}},
		{"text for a bool", strings.Replace(minimalConfig, "files: true", "files: yes please", 1), 9,
			[]string{"dead_letter.files", "expected true or false", `"yes please"`}},
		{"list for a string", strings.Replace(minimalConfig, "group: g", "group: [a]", 1), 4,
			[]string{"kafka.group", "expected a string", "found a list"}},
		{"mapping for a string", minimalConfig + "rack:\n  static: {x: 1}\n", 11,
			[]string{"rack.static", "expected a string", "found a mapping"}},
		{"in a list element", minimalConfig + "schema:\n  columns:\n    - {name: ts, type: timestamp, required: maybe}\n", 12,
			[]string{"schema.columns[0].required", "expected true or false", `"maybe"`}},
		{"list for a partition format", strings.Replace(minimalConfig, "    url: file:///tmp/out\n", "    url: file:///tmp/out\n    partition_by:\n      - {name: dt, column: ts, format: [x]}\n", 1), 9,
			[]string{"sinks.files.partition_by[0].format", "expected a string", "found a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tt.yaml))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("want *ConfigError, got %v", err)
			}
			msg := err.Error()
			if ce.Line != tt.line {
				t.Errorf("line %d, want %d: %s", ce.Line, tt.line, msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q does not say %q", msg, w)
				}
			}
			for _, internal := range []string{"Go ", "struct", "interface {}", "uint64", "int64", "time.", "Config.", "unmarshal"} {
				if strings.Contains(msg, internal) {
					t.Errorf("%q shows the Go internals %q", msg, internal)
				}
			}
		})
	}
}

func TestUnknownKeySuggestsTheClosest(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"swapped letters", strings.Replace(minimalConfig, "  group: g", "  gruop: g", 1), `unknown key "gruop" in kafka; did you mean "group"?`},
		{"top level", strings.Replace(minimalConfig, "dead_letter:", "dead_leter:", 1), `unknown key "dead_leter"; did you mean "dead_letter"?`},
		{"in a list element", minimalConfig + "schema:\n  columns:\n    - {name: ts, typ: timestamp}\n", `unknown key "typ" in schema.columns[0]; did you mean "type"?`},
		{"nothing close", strings.Replace(minimalConfig, "  group: g", "  partitions: 6", 1), `unknown key "partitions" in kafka; it takes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v\nwant it to say %s", err, tt.want)
			}
		})
	}
}

// mebibytes reads "128MiB": a key type that decodes itself.
type mebibytes int64

func (m *mebibytes) UnmarshalText(b []byte) error {
	n, ok := strings.CutSuffix(string(b), "MiB")
	v, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil {
		return fmt.Errorf("%q is not a size like 128MiB", b)
	}
	*m = mebibytes(v << 20)
	return nil
}

// TestTypeCheckLeavesSelfDecodingTypesToThemselves: a key whose type reads
// its own text (a size, a secret) is not judged by its Go kind; its own
// error is reported under its key.
func TestTypeCheckLeavesSelfDecodingTypesToThemselves(t *testing.T) {
	type section struct {
		Budget mebibytes `yaml:"budget"`
	}
	type config struct {
		Batch section `yaml:"batch"`
	}
	check := func(text string) error {
		file, err := parser.ParseBytes([]byte(text), 0)
		if err != nil {
			t.Fatal(err)
		}
		return checkTypes("t.yaml", file, reflect.TypeFor[config]())
	}
	if err := check("batch:\n  budget: 128MiB\n"); err != nil {
		t.Errorf("a size its type reads was refused: %v", err)
	}
	err := check("batch:\n  budget: lots\n")
	if err == nil || !strings.Contains(err.Error(), "t.yaml:2:11: batch.budget:") || !strings.Contains(err.Error(), `"lots" is not a size like 128MiB`) {
		t.Errorf("got %v, want the type's own error under batch.budget", err)
	}
}

func TestTabIndentationIsNamed(t *testing.T) {
	_, err := Parse("t.yaml", []byte("kafka:\n\tbrokers: [a:1]\n"))
	if err == nil || !strings.Contains(err.Error(), "t.yaml:2:1:") || !strings.Contains(err.Error(), "not tabs") || strings.Contains(err.Error(), "\t") {
		t.Errorf("got %q, want line 2 and advice to indent with spaces, without a raw tab", err)
	}
}

// TestTypeCheckAcceptsWhatTheDecoderAccepts: the check is no stricter than
// the decoder it stands in front of (1e3 and 50000.0 are whole numbers).
func TestTypeCheckAcceptsWhatTheDecoderAccepts(t *testing.T) {
	for text, want := range map[string]int{"1e3": 1000, "50000.0": 50000, "0x10": 16, "1_000": 1000} {
		c, err := Parse("t.yaml", []byte(minimalConfig+"batch:\n  max_rows: "+text+"\n"))
		if err != nil {
			t.Errorf("max_rows: %s refused: %v", text, err)
		} else if c.Batch.MaxRows != want {
			t.Errorf("max_rows: %s read as %d, want %d", text, c.Batch.MaxRows, want)
		}
	}
}
