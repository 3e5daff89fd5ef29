package pipeline

import (
	"errors"
	"strings"
	"testing"
)

const minimalConfig = `kafka:
  brokers: [127.0.0.1:19092]
  topics: [logs]
  group: g
sinks:
  files:
    url: file:///tmp/out
dead_letter:
  files: true
`

func TestParseAppliesDefaults(t *testing.T) {
	c, err := Parse("t.yaml", []byte(minimalConfig))
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.StartOffset != "earliest" || c.Rack.Match != "auto" || c.Run.ShutdownTimeout.Seconds() != 25 {
		t.Errorf("defaults not applied: %+v", c.Kafka)
	}
}

func TestParseErrorsNameKeyAndLine(t *testing.T) {
	tests := []struct {
		name, yaml       string
		line             int
		keyPart, msgPart string
	}{
		{"misspelt key", strings.Replace(minimalConfig, "  group: g", "  gruop: g", 1), 4, "gruop", "unknown key"},
		{"bad enum", minimalConfig + "rack:\n  match: zone\n", 11, "rack.match", "auto, name, id, as-is"},
		{"missing value points at parent", strings.Replace(minimalConfig, "  group: g\n", "", 1), 1, "kafka.group", "consumer group"},
		{"list element", strings.Replace(minimalConfig, "[127.0.0.1:19092]", "[127.0.0.1:19092, nohost]", 1), 2, "kafka.brokers[1]", "no port"},
		{"backoff max below backoff", strings.Replace(minimalConfig, "  group: g\n", "  group: g\n  fetch:\n    replica_backoff: 10s\n    replica_backoff_max: 5s\n", 1), 7, "kafka.fetch.replica_backoff_max", "shorter than replica_backoff"},
		{"unknown rack mode", minimalConfig + "rack:\n  mode: half\n", 11, "rack.mode", "aware, blind"},
		{"blind with the rack-aware balancer", minimalConfig + "rack:\n  mode: blind\n  balancer: rack-aware\n", 12, "rack.balancer", "range or round-robin"},
		{"type mismatch", minimalConfig + "batch:\n  max_rows: many\n", 11, "", "many"},
		{"bad duration", minimalConfig + "batch:\n  max_age: soon\n", 11, "batch.max_age", "expected a duration"},
		{"unset env", strings.Replace(minimalConfig, "group: g", "group: ${LOGSTORE_TEST_UNSET_VAR}", 1), 4, "LOGSTORE_TEST_UNSET_VAR", "export it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tt.yaml))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("want *ConfigError, got %v", err)
			}
			if ce.Line != tt.line {
				t.Errorf("line %d, want %d (%v)", ce.Line, tt.line, err)
			}
			if !strings.Contains(err.Error(), tt.keyPart) || !strings.Contains(err.Error(), tt.msgPart) {
				t.Errorf("error %q should name %q and say %q", err, tt.keyPart, tt.msgPart)
			}
			if !strings.HasPrefix(err.Error(), "t.yaml:") {
				t.Errorf("error %q does not start with the file name", err)
			}
		})
	}
}

func TestExpandEnv(t *testing.T) {
	t.Setenv("LOGSTORE_TEST_GROUP", "from-env")
	y := strings.Replace(minimalConfig, "group: g", "group: ${LOGSTORE_TEST_GROUP}", 1)
	y = strings.Replace(y, "topics: [logs]", "topics: [${LOGSTORE_TEST_TOPIC:-fallback}]", 1)
	c, err := Parse("t.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.Group != "from-env" || c.Kafka.Topics[0] != "fallback" {
		t.Errorf("got group %q topics %v", c.Kafka.Group, c.Kafka.Topics)
	}
}

func TestSecretNeverPrints(t *testing.T) {
	s := Secret("hunter2")
	if v, _ := s.MarshalYAML(); v == "hunter2" || s.String() == "hunter2" {
		t.Fatal("secret printed")
	}
}

// TestSchemaErrorsPointAtTheLine: through the config loader, a schema
// mistake (a CEL one too) is reported at its file:line.
func TestSchemaErrorsPointAtTheLine(t *testing.T) {
	head := minimalConfig + `schema:
  columns:
    - name: level
      type: string
    - name: status
`
	base := strings.Count(head, "\n") // the line of `- name: status`
	tests := []struct {
		name, rest string
		line       int // below `- name: status`
		key, msg   string
	}{
		{"bad type", "      type: int\n", 1, "schema.columns[1].type", `"int" is not one of`},
		{"cel expr", "      type: bool\n      expr: 'level >= 500'\n", 2, "schema.columns[1].expr", "at 1:7: found no matching overload for '_>=_'"},
		{"cel where", "      type: int32\n  where: 'lvl == \"x\"'\n", 2, "schema.where", "undeclared reference to 'lvl'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(head+tt.rest))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("want a *ConfigError, got %v", err)
			}
			if ce.Line != base+tt.line || ce.Key != tt.key || !strings.Contains(ce.Msg, tt.msg) {
				t.Errorf("got line %d key %s: %s\nwant line %d key %s: ...%s...", ce.Line, ce.Key, ce.Msg, base+tt.line, tt.key, tt.msg)
			}
		})
	}
}

// TestIcebergSortByErrorsPointAtTheLine: a sort_by the table cannot take
// is reported at its file:line and key, with what to write instead.
func TestIcebergSortByErrorsPointAtTheLine(t *testing.T) {
	head := strings.Replace(minimalConfig, "  files:\n    url: file:///tmp/out\n",
		"  files:\n    url: file:///tmp/out\n  iceberg:\n    table: logs.raw\n    catalog: {uri: /tmp/c.db, warehouse: file:///tmp/w}\n    sort_by:\n", 1)
	base := 11 // the line of `sort_by:`
	for _, tt := range []struct {
		name, entry string
		key, msg    string
	}{
		{"direction", "      - {column: service, direction: up}\n", "sinks.iceberg.sort_by[0].direction", `"up" is not one of asc, desc`},
		{"nulls", "      - {column: service, nulls: never}\n", "sinks.iceberg.sort_by[0].nulls", `"never" is not one of first, last`},
		{"no column", "      - {direction: desc}\n", "sinks.iceberg.sort_by[0].column", "required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			y := strings.Replace(head, "    sort_by:\n", "    sort_by:\n"+tt.entry, 1)
			_, err := Parse("t.yaml", []byte(y))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("want a *ConfigError, got %v", err)
			}
			if ce.Line != base+1 || ce.Key != tt.key || !strings.Contains(ce.Msg, tt.msg) {
				t.Errorf("got line %d key %s: %s\nwant line %d key %s: ...%s...", ce.Line, ce.Key, ce.Msg, base+1, tt.key, tt.msg)
			}
		})
	}
	c, err := Parse("t.yaml", []byte(strings.Replace(head, "    sort_by:\n", "    sort_by:\n      - {column: service, direction: desc}\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Sinks.Iceberg.SortBy[0]; s.Nulls != "last" {
		t.Errorf("desc defaults to nulls %q; Iceberg's default for desc is last", s.Nulls)
	}
}
