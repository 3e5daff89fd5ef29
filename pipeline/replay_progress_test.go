package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/internal/testkit"
)

// TestReplayLogsProgressByTimeNotEvery1000Records: `logstore replay` logged
// a line every 1,000 records (a thousand lines for a million-record
// capture); it logs how far it got every replayProgressEvery instead. The
// clock is the test's: one replay while it stands still logs no progress,
// one where each input line takes a second logs every fifth line.
func TestReplayLogsProgressByTimeNotEvery1000Records(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "replayed"))
	conn, err := NewClients(context.Background(), InputConfig{Brokers: c.ListenAddrs(), Topics: []string{"replayed"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const n = 5000
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, `{"value":"record %d"}`+"\n", i)
	}
	for _, tc := range []struct {
		name string
		tick time.Duration // how far the clock moves at each reading
		want int           // progress lines
	}{
		{"clock stands still", 0, 0},
		// The clock is read once at the start and once per line: line i
		// is read at i seconds, and every fifth second logs.
		{"a second a line", time.Second, n / 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
			defer func(clock func() time.Time) { replayClock = clock }(replayClock)
			replayClock = func() time.Time { at = at.Add(tc.tick); return at }
			var logs testkit.LogBuffer
			sent, err := ReplayFile(context.Background(), conn, "replayed", strings.NewReader(lines.String()), slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil || sent != n {
				t.Fatalf("replay: %d sent, %v", sent, err)
			}
			if got := strings.Count(logs.String(), "replay progress"); got != tc.want {
				t.Errorf("%d progress lines for %d records; want %d", got, n, tc.want)
			}
		})
	}
}
