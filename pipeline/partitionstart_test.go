package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/twmb/franz-go/pkg/kfake"
)

// startLine is one "partition starts" log line.
type startLine struct {
	Level     string `json:"level"`
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	By        string `json:"by"`
	Reason    string `json:"reason"`
}

// runLoggedJob runs an `--until now` job of group to its end and returns
// its "partition starts" lines.
func runLoggedJob(t *testing.T, brokers []string, group, out string) []startLine {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(fmt.Sprintf(`kafka: {brokers: ["%s"], topics: [logs], group: %s, start_offset: earliest}
rack: {providers: [static]}
schema: {columns: [{name: n, type: int64, required: true}]}
batch: {max_rows: 70}
sinks: {files: {url: %q, file: {fsync: false}}}
dead_letter: {on_error: skip}
`, strings.Join(brokers, `", "`), group, out)))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer // the handler writes one line at a time
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	j, err := NewJob(ctx, cfg, Deps{Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Run(ctx, Mode{UntilNow: true}); err != nil {
		t.Fatal(err)
	}
	var lines []startLine
	for _, raw := range bytes.Split(logs.Bytes(), []byte("\n")) {
		var l struct {
			Msg string `json:"msg"`
			startLine
		}
		if json.Unmarshal(raw, &l) == nil && l.Msg == "partition starts" {
			lines = append(lines, l.startLine)
		}
	}
	return lines
}

// TestEachPartitionStartIsLoggedOnceWithItsReason: a job logs one line
// per partition it starts, saying where and why: from start_offset for a
// new group, after the output's last batch (a warning) when the group's
// offsets are gone, from the group's offset once it has one.
func TestEachPartitionStartIsLoggedOnceWithItsReason(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(2, "logs"))
	out := t.TempDir()
	produceN(t, c.ListenAddrs(), 0, 300)
	for _, run := range []struct {
		group, level, by string
		offset           int64
		reason           string
	}{
		{"first", "INFO", "start_offset", 0, "kafka.start_offset earliest"},
		{"second", "WARN", "files", 150, "no committed offset"}, // a new group: as if the first one's offsets expired
		{"second", "INFO", "group", 150, "the group's committed offset; the files hold up to 149"},
	} {
		lines := runLoggedJob(t, c.ListenAddrs(), run.group, out)
		seen := map[int]int{}
		for _, l := range lines {
			seen[l.Partition]++
			if l.Topic != "logs" || l.Offset != run.offset || l.By != run.by || l.Level != run.level || !strings.Contains(l.Reason, run.reason) {
				t.Errorf("group %s: %+v; want %s/%d at %d by %s (%s), saying %q", run.group, l, "logs", l.Partition, run.offset, run.by, run.level, run.reason)
			}
		}
		if len(lines) != 2 || seen[0] != 1 || seen[1] != 1 {
			t.Errorf("group %s: %d start lines %+v, want one for each of the 2 partitions", run.group, len(lines), lines)
		}
	}
}
