//go:build lab

package iceberg

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLabManyWriters is the many-writers lab (scripts/iceberg-lab.sh):
// six members, each committing two partitions' batches back to back, to
// one table on a SQLite catalog, for LAB_SECONDS at each commit_interval.
// It prints commits/s, retries, p99 commit latency and snapshots/hour.
func TestLabManyWriters(t *testing.T) {
	const members, partsPerMember = 6, 2
	run := 20 * time.Second
	if d, err := time.ParseDuration(os.Getenv("LAB_DURATION")); err == nil {
		run = d
	}
	for _, interval := range []time.Duration{0, time.Second, 10 * time.Second} {
		cfg := testConfig(t, t.TempDir())
		cfg.PartitionBy = nil
		cfg.CommitInterval = interval
		tbs := make([]*Table, members)
		for i := range tbs {
			c := *cfg
			c.SpoolDir = fmt.Sprintf("%s-%d", cfg.SpoolDir, i)
			tbs[i] = openTestTable(t, &c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), run)
		var mu sync.Mutex
		var lat []time.Duration
		var batches, failed atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for m, tb := range tbs {
			for p := range partsPerMember {
				part := m*partsPerMember + p
				wg.Go(func() {
					for off := int64(0); ctx.Err() == nil; off += 10 {
						t0 := time.Now()
						if err := tb.Write(ctx, testBatch(part, off, off+9)); err != nil {
							if ctx.Err() == nil {
								failed.Add(1)
								t.Logf("member %d partition %d: %v", m, part, err)
							}
							return
						}
						mu.Lock()
						lat = append(lat, time.Since(t0))
						mu.Unlock()
						batches.Add(1)
					}
				})
			}
		}
		wg.Wait()
		cancel()
		took := time.Since(start)
		var retries int64
		for _, tb := range tbs {
			retries += tb.retries.Load()
		}
		snaps := len(tableOf(t, tbs[0]).Metadata().Snapshots())
		slices.Sort(lat)
		p99 := time.Duration(0)
		if len(lat) > 0 {
			p99 = lat[len(lat)*99/100]
		}
		t.Logf("LAB sqlite members=%d partitions=%d commit_interval=%s: %d batches in %s, %d snapshots (%.1f commits/s, %.0f snapshots/hour), %d retries, p99 batch commit %s, %d failed",
			members, members*partsPerMember, interval, batches.Load(), took.Round(time.Second), snaps, float64(snaps)/took.Seconds(), float64(snaps)/took.Hours(), retries, p99.Round(time.Millisecond), failed.Load())
		for _, tb := range tbs {
			tb.Close()
		}
	}
}
