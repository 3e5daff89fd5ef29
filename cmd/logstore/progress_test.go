package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/pipeline"

	"github.com/logstore/logstore/internal/testkit"
)

// TestBoundedRunLogsProgress: a bounded run off a terminal logs a progress
// line every run.progress_interval and a last one with 0 records left —
// counted to the run's end offsets, so a --to replay that stops halfway
// through the topic ends at 0 too, not at the lag behind the high watermark.
func TestBoundedRunLogsProgress(t *testing.T) {
	base := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	msgs := make([]kafka.Message, 2000)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"n": %d}`, i), Time: base.Add(time.Duration(i) * time.Second)}
	}
	brokers := embeddedKafka(t, 2, msgs...)
	tests := []struct {
		name        string
		mode        pipeline.Mode
		wantRecords string
	}{
		{"until now", pipeline.Mode{UntilNow: true}, "records=2000"},
		{"from/to, half the topic", pipeline.Mode{From: base, To: base.Add(1000 * time.Second), Prefix: "replay/"}, "records=1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 1000 records/s makes the run last about a second or two: several intervals.
			cfg := embeddedJob(t, brokers, t.TempDir(), "  max_records_per_second: 1000", "run:\n  progress_interval: 200ms\n")
			var logs, stderr testkit.LogBuffer
			if err := runJob(t.Context(), cfg, tt.mode, pipeline.Deps{Log: slog.New(slog.NewTextHandler(&logs, nil))}, new(bytes.Buffer), &stderr); err != nil {
				t.Fatalf("run: %v\n%s", err, logs.String())
			}
			var periodic, final []string
			for _, l := range strings.Split(logs.String(), "\n") {
				switch {
				case !strings.Contains(l, "msg=progress "):
				case strings.HasSuffix(l, " final=true"):
					final = append(final, l)
				default:
					periodic = append(periodic, l)
				}
			}
			if len(periodic) == 0 {
				t.Errorf("no periodic progress line:\n%s", logs.String())
			}
			for _, l := range periodic {
				if !strings.Contains(l, "records_per_s=") {
					t.Errorf("progress line without a rate: %s", l)
				}
			}
			if len(final) != 1 || !strings.Contains(final[0], " remaining=0 ") || !strings.Contains(final[0], " "+tt.wantRecords+" ") {
				t.Errorf("want one final line with %s and remaining=0, got %q", tt.wantRecords, final)
			}
			if stderr.String() != "" {
				t.Errorf("off a terminal nothing but the log: stderr %q", stderr.String())
			}
		})
	}
}

// TestProgressLoggedAtLevelWarn: run.progress_interval asks for progress,
// so a log.level of warn (the demo's) must not hide it off a terminal; it
// showed nothing when piped.
func TestProgressLoggedAtLevelWarn(t *testing.T) {
	msgs := make([]kafka.Message, 1000)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil, `{"n": %d}`, i)}
	}
	brokers := embeddedKafka(t, 2, msgs...)
	cfg := embeddedJob(t, brokers, t.TempDir(), "  max_records_per_second: 1000", "run:\n  progress_interval: 200ms\n")
	var logs testkit.LogBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := runJob(t.Context(), cfg, pipeline.Mode{UntilNow: true}, pipeline.Deps{Log: log}, new(bytes.Buffer), new(bytes.Buffer)); err != nil {
		t.Fatalf("run: %v\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "msg=progress ") || !strings.Contains(logs.String(), " final=true") {
		t.Errorf("at log.level warn no progress was logged:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "level=INFO msg=rack") {
		t.Errorf("the level still applies to everything else:\n%s", logs.String())
	}
}
