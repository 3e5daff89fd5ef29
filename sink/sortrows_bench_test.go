//go:build unix

package sink

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// BenchmarkFilesSortBy writes one 200,000-row file through the Files sink,
// staged 2,000 rows at a time as the pipeline does, unsorted and with
// sort_by, and reports what a reader filtering on one value skips:
// rg-read is the share of row groups whose bounds (the footer's
// statistics) may hold it, page-rows-read the share of rows in pages whose
// bounds (the page index) may hold it, for service = one of 12 services
// and level = ERROR. file-MiB is the file's size. row_group_bytes is 8 MiB
// so that the file has several row groups, as a 128 MiB data file has at
// the default 64 MiB... and more. The variants run one after the other in
// the same process: compare them, not across runs.
func BenchmarkFilesSortBy(b *testing.B) {
	const n, chunk = 200_000, 2000
	services := make([]string, 12)
	for i := range services {
		services[i] = fmt.Sprintf("svc-%02d", i)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	rows := logRows(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), n)
	for _, r := range rows {
		r[2] = services[min(int(rnd.ExpFloat64()*3), 11)] // a few services log most
		r[1] = []string{"INFO", "INFO", "INFO", "INFO", "WARN", "DEBUG", "DEBUG", "ERROR"}[rnd.IntN(8)]
	}
	for _, v := range []struct {
		name string
		keys []SortKey
	}{
		{"unsorted", nil},
		{"service", []SortKey{{Column: "service"}}},
		{"service,level", []SortKey{{Column: "service"}, {Column: "level"}}},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			var path string
			cpu0 := cpuTime()
			for b.Loop() {
				out := b.TempDir()
				cfg := testFilesConfig(b, out)
				cfg.Parquet.RowGroupBytes = 8 << 20
				cfg.SortBy = v.keys
				f, err := newFiles(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < n; i += chunk {
					if _, err := f.Stage(context.Background(), &Batch{Topic: "logs", First: 0, Schema: logSchema, Rows: rows[i : i+chunk], Staged: i}); err != nil {
						b.Fatal(err)
					}
				}
				if err := f.Write(context.Background(), &Batch{Topic: "logs", First: 0, Last: n - 1, Schema: logSchema, Staged: n}); err != nil {
					b.Fatal(err)
				}
				path = filepath.Join(out, "logs-0-0-199999.parquet")
			}
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "CPU-s/op")
			data, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(data))/(1<<20), "file-MiB")
			rg, pages := pruning(b, data, 2, services[5])
			b.ReportMetric(rg, "svc-rg-read")
			b.ReportMetric(pages, "svc-page-rows-read")
			rg, pages = pruning(b, data, 1, "ERROR")
			b.ReportMetric(rg, "level-rg-read")
			b.ReportMetric(pages, "level-page-rows-read")
		})
	}
}

// pruning is the share of row groups, and of rows by pages, whose bounds
// on leaf column leaf may hold value: what a reader must read for
// column = value.
func pruning(b *testing.B, data []byte, leaf int, value string) (groups, rows float64) {
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.Fatal(err)
	}
	v := []byte(value)
	may := func(lo, hi []byte) bool { return bytes.Compare(lo, v) <= 0 && bytes.Compare(v, hi) <= 0 }
	var readGroups, readRows, total int64
	for i, g := range f.RowGroups() {
		st := f.Metadata().RowGroups[i].Columns[leaf].MetaData.Statistics
		if may(st.MinValue, st.MaxValue) {
			readGroups++
		}
		cc := g.ColumnChunks()[leaf]
		ci, err := cc.ColumnIndex()
		if err != nil {
			b.Fatal(err)
		}
		oi, err := cc.OffsetIndex()
		if err != nil {
			b.Fatal(err)
		}
		for p := range ci.NumPages() {
			end := g.NumRows()
			if p+1 < oi.NumPages() {
				end = oi.FirstRowIndex(p + 1)
			}
			if !ci.NullPage(p) && may(ci.MinValue(p).ByteArray(), ci.MaxValue(p).ByteArray()) {
				readRows += end - oi.FirstRowIndex(p)
			}
		}
		total += g.NumRows()
	}
	return float64(readGroups) / float64(len(f.RowGroups())), float64(readRows) / float64(total)
}
