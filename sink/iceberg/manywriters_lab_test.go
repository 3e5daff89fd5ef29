//go:build lab

package iceberg

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/sink"
)

// TestLabManyWriters is the many-writers lab (scripts/iceberg-lab.sh):
// six members (LAB_MEMBERS), each committing two partitions' batches back to back, to
// one table, for LAB_DURATION at each commit_interval, on each catalog
// LAB_CATALOGS names: sqlite (a SQLite file, a local warehouse) and rest
// (Iceberg's REST catalog test server, scripts/iceberg-rest.sh, its
// warehouse on the S3 server). It prints commits/s, retries, p99 commit
// latency and snapshots/hour.
func TestLabManyWriters(t *testing.T) {
	const partsPerMember = 2
	members := 6
	if n, err := strconv.Atoi(os.Getenv("LAB_MEMBERS")); err == nil && n > 0 {
		members = n
	}
	run := 20 * time.Second
	if d, err := time.ParseDuration(os.Getenv("LAB_DURATION")); err == nil {
		run = d
	}
	catalogs := strings.Split(cmp.Or(os.Getenv("LAB_CATALOGS"), "sqlite"), ",")
	for _, catalog := range catalogs {
		var rest string
		if catalog == "rest" {
			rest = testkit.IcebergREST(t, testkit.S3Env(t, "lab"))
		} else if catalog != "sqlite" {
			t.Fatalf("LAB_CATALOGS: %q is not sqlite or rest", catalog)
		}
		for _, interval := range []time.Duration{0, time.Second, 10 * time.Second} {
			labManyWriters(t, catalog, rest, interval, run, members, partsPerMember)
		}
	}
}

// labManyWriters is one interval's run of TestLabManyWriters, on the REST
// catalog at rest or, when it is "", a SQLite catalog of its own.
func labManyWriters(t *testing.T, catalog, rest string, interval, run time.Duration, members, partsPerMember int) {
	cfg := testConfig(t, t.TempDir())
	cfg.PartitionBy = nil
	cfg.CommitInterval = interval
	if rest != "" {
		// The server's warehouse; a table for each interval, as the
		// server keeps them.
		cfg.Catalog = sink.IcebergCatalog{Type: "rest", Name: cfg.Catalog.Name, URI: rest}
		cfg.Table = fmt.Sprintf("lab.raw_%d_%s", time.Now().UnixNano(), strings.ReplaceAll(interval.String(), ".", "_"))
	}
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
	t.Logf("LAB %s members=%d partitions=%d commit_interval=%s: %d batches in %s, %d snapshots (%.1f commits/s, %.0f snapshots/hour), %d retries, p99 batch commit %s, %d failed",
		catalog, members, members*partsPerMember, interval, batches.Load(), took.Round(time.Second), snaps, float64(snaps)/took.Seconds(), float64(snaps)/took.Hours(), retries, p99.Round(time.Millisecond), failed.Load())
	for _, tb := range tbs {
		tb.Close()
	}
}
