package pipeline

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestProgressRateETAAndLine(t *testing.T) {
	tests := []struct {
		name                     string
		records, rows, remaining int64
		reading                  time.Duration
		wantRate                 float64
		wantETA                  time.Duration
		wantLine                 string
	}{
		{"before the first record", 0, 0, -1, 0, 0, -1, "0 records/s, 0 rows written, ? left, ETA ?"},
		{"partitions not all fetched yet", 5000, 0, -1, 2 * time.Second, 2500, -1, "2500 records/s, 0 rows written, ? left, ETA ?"},
		{"ten-minute backfill, a minute in", 600_000, 590_000, 5_400_000, time.Minute, 10_000, 9 * time.Minute, "10000 records/s, 590000 rows written, 5400000 left, ETA 9m0s"},
		{"ETA rounds to the second", 1000, 900, 1501, time.Second, 1000, 2 * time.Second, "1000 records/s, 900 rows written, 1501 left, ETA 2s"},
		{"fetched but nothing read: no rate, no ETA", 0, 0, 700, 0, 0, -1, "0 records/s, 0 rows written, 700 left, ETA ?"},
		{"done", 300_000, 297_000, 0, 30 * time.Second, 10_000, 0, "10000 records/s, 297000 rows written, 0 left, ETA 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := progressFrom(tt.records, tt.rows, tt.remaining, tt.reading)
			if p.RecordsPerSecond != tt.wantRate || p.ETA != tt.wantETA {
				t.Errorf("rate %v, ETA %v; want %v, %v", p.RecordsPerSecond, p.ETA, tt.wantRate, tt.wantETA)
			}
			if got := p.Line(); got != tt.wantLine {
				t.Errorf("line %q\n want %q", got, tt.wantLine)
			}
		})
	}
}

func TestProgressLogAttrsLeaveOutUnknowns(t *testing.T) {
	got := progressFrom(10, 9, -1, time.Second).LogAttrs()
	want := []any{"records", int64(10), "rows", int64(9), "records_per_s", int64(10)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("attrs %v, want %v", got, want)
	}
	got = progressFrom(10, 9, 20, time.Second).LogAttrs()
	want = append(want, "remaining", int64(20), "eta", "2s")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("attrs %v, want %v", got, want)
	}
}

// TestRemainingCountsToTheTarget: a bounded partition counts to its end
// offset, not the high watermark (a --to replay ends well before it); a
// streaming one counts its lag; one whose worker has not begun makes the sum unknown.
func TestRemainingCountsToTheTarget(t *testing.T) {
	var c partitionCollector
	if got := c.remaining(); got != -1 {
		t.Errorf("nothing assigned: remaining %d, want -1", got)
	}
	c.stats("t", 0).aim(100).SetLag(1000, 40) // replay to 100, high watermark 1000
	c.stats("t", 1).aim(-1).SetLag(50, 45)    // no target: the lag
	c.stats("t", 2).aim(10)                   // its worker not begun yet
	if got := c.remaining(); got != -1 {
		t.Errorf("a partition not begun yet: remaining %d, want -1", got)
	}
	c.stats("t", 2).from(10) // begins at its end: empty, or done before
	if got := c.remaining(); got != 60+5+0 {
		t.Errorf("remaining %d, want 65", got)
	}
	c.stats("t", 0).SetLag(1000, 100)
	c.stats("t", 1).SetLag(50, 50)
	if got := c.remaining(); got != 0 {
		t.Errorf("every target reached: remaining %d, want 0", got)
	}
}

func TestProgressIntervalZeroTurnsItOff(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       time.Duration
		err        string
	}{
		{"absent", minimalConfig, DefaultProgressInterval, ""},
		{"run section without it", minimalConfig + "run:\n  shutdown_timeout: 5s\n", DefaultProgressInterval, ""},
		{"set", minimalConfig + "run:\n  progress_interval: 10s\n", 10 * time.Second, ""},
		{"zero", minimalConfig + "run:\n  progress_interval: 0s\n", 0, ""},
		{"negative", minimalConfig + "run:\n  progress_interval: -1s\n", 0, "run.progress_interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("t.yaml", []byte(tt.yaml))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Run.ProgressInterval != tt.want {
				t.Errorf("progress_interval %s, want %s", c.Run.ProgressInterval, tt.want)
			}
		})
	}
}
