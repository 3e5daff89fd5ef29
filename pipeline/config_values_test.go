package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/logstore/logstore/pipeline/fetch"
)

// TestNegativeLimitsNameTheKey: kafka.fetch.max_bytes: -1 and max_wait: -1s
// passed `check`, then the reader silently fetched 8 MiB a partition; a
// negative batch limit failed as "batch: limits must be positive", naming
// no key and no line.
func TestNegativeLimitsNameTheKey(t *testing.T) {
	fetch := func(kv string) string {
		return strings.Replace(minimalConfig, "  group: g\n", "  group: g\n  fetch:\n    "+kv+"\n", 1)
	}
	batch := func(kv string) string { return minimalConfig + "batch:\n  " + kv + "\n" }
	tests := []struct {
		name, yaml, key string
		line            int
	}{
		{"fetch max_bytes", fetch("max_bytes: -1"), "kafka.fetch.max_bytes", 6},
		{"fetch max_wait", fetch("max_wait: -1s"), "kafka.fetch.max_wait", 6},
		{"fetch min_bytes", fetch("min_bytes: -1"), "kafka.fetch.min_bytes", 6},
		{"fetch request_max_bytes", fetch("request_max_bytes: -5"), "kafka.fetch.request_max_bytes", 6},
		{"fetch preferred_replica_lease", fetch("preferred_replica_lease: -1m"), "kafka.fetch.preferred_replica_lease", 6},
		{"fetch replica_backoff", fetch("replica_backoff: -1s"), "kafka.fetch.replica_backoff", 6},
		{"batch max_rows", batch("max_rows: -5"), "batch.max_rows", 11},
		{"batch max_bytes", batch("max_bytes: -5"), "batch.max_bytes", 11},
		{"batch max_age", batch("max_age: -1m"), "batch.max_age", 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tt.yaml))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("accepted (or not a config error: %v)", err)
			}
			if ce.Key != tt.key || ce.Line != tt.line || !strings.Contains(ce.Msg, "negative") {
				t.Errorf("%v: want key %s at line %d saying it is negative", err, tt.key, tt.line)
			}
		})
	}
}

// TestFetchMaxBytesDefaultIsTheDocumentedOne: configs/reference.yaml says
// 1 MiB, as Java's max.partition.fetch.bytes; the reader's own default was
// 8 MiB, which a value the config did not default (-1) fell through to.
func TestFetchMaxBytesDefaultIsTheDocumentedOne(t *testing.T) {
	c, err := Parse("t.yaml", []byte(minimalConfig))
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.Fetch.MaxBytes != 1<<20 {
		t.Errorf("kafka.fetch.max_bytes defaults to %d, want 1048576 (1 MiB) as documented", c.Kafka.Fetch.MaxBytes)
	}
	if fetch.DefaultFetchMaxBytes != 1<<20 {
		t.Errorf("the reader's own default is %d, want the documented 1048576", fetch.DefaultFetchMaxBytes)
	}
}

// TestSecondDocumentIsAnError: a `---` and more keys after the config were
// silently ignored (a second job pasted into the file, or a config split in
// two, ran with half its keys).
func TestSecondDocumentIsAnError(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		line       int
	}{
		{"second config", minimalConfig + "---\nbatch:\n  max_rows: 5\n", 11},
		{"after a leading marker", "---\n" + minimalConfig + "---\nkafka: {}\n", 12},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tt.yaml))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("accepted (or not a config error: %v)", err)
			}
			if ce.Line != tt.line || !strings.Contains(ce.Msg, "second YAML document") {
				t.Errorf("%v: want line %d naming the second YAML document", err, tt.line)
			}
		})
	}
	// A lone marker before the config, or an empty document after it, holds
	// no keys to lose.
	for _, ok := range []string{"---\n" + minimalConfig, minimalConfig + "---\n", minimalConfig + "...\n"} {
		if _, err := Parse("t.yaml", []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// TestSizesTakeUnits: memory_budget: 128MiB was refused (bytes only); every
// size key takes a whole number of bytes or a number with a unit.
func TestSizesTakeUnits(t *testing.T) {
	c, err := Parse("t.yaml", []byte(strings.Replace(minimalConfig, "  group: g\n", "  group: g\n  fetch:\n    max_bytes: 2MiB\n    request_max_bytes: 50 MiB\n", 1)+
		"batch:\n  memory_budget: 128MiB\n  max_bytes: 1GB\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Batch.MemoryBudget != 128<<20 || c.Batch.MaxBytes != 1e9 || c.Kafka.Fetch.MaxBytes != 2<<20 || c.Kafka.Fetch.RequestMaxBytes != 50<<20 {
		t.Errorf("memory_budget %d, batch.max_bytes %d, fetch.max_bytes %d, request_max_bytes %d",
			c.Batch.MemoryBudget, c.Batch.MaxBytes, c.Kafka.Fetch.MaxBytes, c.Kafka.Fetch.RequestMaxBytes)
	}
	// The sinks' sizes are read by the same rule.
	c, err = Parse("t.yaml", []byte(strings.Replace(minimalConfig, "    url: file:///tmp/out\n", "    url: file:///tmp/out\n    target_file_bytes: 64MiB\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sinks.Files.TargetFileBytes != 64<<20 {
		t.Errorf("sinks.files.target_file_bytes %d, want %d", c.Sinks.Files.TargetFileBytes, 64<<20)
	}
	for _, tt := range []struct{ value, want string }{
		{"128 MB of it", "a size"},
		{"1.5GiB", "a size"},
		{"128mib", "a size"},
		{"-5MiB", "a size"},
		{"99999999TiB", "too large"},
	} {
		_, err := Parse("t.yaml", []byte(minimalConfig+"batch:\n  memory_budget: "+tt.value+"\n"))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != "batch.memory_budget" || ce.Line != 11 || !strings.Contains(ce.Msg, tt.want) {
			t.Errorf("memory_budget: %s: %v; want batch.memory_budget at line 11 saying %q", tt.value, err, tt.want)
		}
	}
}
