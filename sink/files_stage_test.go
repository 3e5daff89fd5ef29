package sink

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

// stageInChunks stages rows chunk rows at a time (Rows only: the worker
// drops what it staged) and writes the rest at the cut, as the pipeline
// does.
func stageInChunks(t testing.TB, f *Files, b *Batch, chunk int) (fullAt int) {
	t.Helper()
	ctx := context.Background()
	rows, fullAt := b.Rows, -1
	staged := 0
	for len(rows) > chunk {
		full, err := f.Stage(ctx, &Batch{Topic: b.Topic, Partition: b.Partition, First: b.First, Schema: b.Schema, Rows: rows[:chunk], Prefix: b.Prefix, Staged: staged})
		if err != nil {
			t.Fatal(err)
		}
		staged += chunk
		if full && fullAt < 0 {
			fullAt = staged
		}
		rows = rows[chunk:]
	}
	cut := *b
	cut.Rows, cut.Staged = rows, staged
	if err := f.Write(ctx, &cut); err != nil {
		t.Fatal(err)
	}
	return fullAt
}

// writeInChunks writes b through a Files sink of cfg, at once (chunk 0)
// or staged chunk rows at a time, and checks the spool is left empty.
func writeInChunks(t *testing.T, cfg *FilesConfig, b *Batch, chunk int) {
	t.Helper()
	f, err := newFiles(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if chunk == 0 {
		if err := f.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	} else {
		stageInChunks(t, f, b, chunk)
	}
	if n := len(listFiles(t, cfg.SpoolDir)); n != 0 {
		t.Errorf("chunks of %d: %d spool files left behind", chunk, n)
	}
}

// TestFilesStagedIsTheWholeBatch: a batch staged in chunks, with its pages
// spilled to the spool folder, gives byte for byte the files of the same
// batch written at once, so a re-cut at the same offsets overwrites with
// the same files however memory pressure staged it the first time.
func TestFilesStagedIsTheWholeBatch(t *testing.T) {
	rows := logRows(time.Date(2026, 11, 29, 6, 50, 0, 0, time.UTC), 20000) // 06:50 .. 12:23, six folders
	write := func(chunk int) (string, *FilesConfig) {
		out := t.TempDir()
		cfg := testFilesConfig(t, out)
		cfg.PartitionBy = []PartitionColumn{{Name: "hour", Column: "event_time", Format: "15"}}
		cfg.MaxFileBytes = 512 << 10 // below the config minimum: several parts per folder
		cfg.Parquet.RowGroupBytes = 128 << 10
		writeInChunks(t, cfg, &Batch{Topic: "logs", Partition: 3, First: 100, Last: 20099, Schema: logSchema, Rows: rows}, chunk)
		return out, cfg
	}
	whole, _ := write(0)
	names := listFiles(t, whole)
	if len(names) < 7 {
		t.Fatalf("files %v: want several parts in several folders", names)
	}
	var got []Row
	for _, n := range names {
		got = append(got, readParquetFile(t, logSchema, filepath.Join(whole, n))...)
	}
	if len(got) != len(rows) {
		t.Fatalf("read back %d rows, wrote %d", len(got), len(rows))
	}
	for _, chunk := range []int{1, 333, 4096} {
		staged, _ := write(chunk)
		if got := listFiles(t, staged); !slices.Equal(got, names) {
			t.Fatalf("chunks of %d: files %v, want %v", chunk, got, names)
		}
		for _, n := range names {
			a, _ := os.ReadFile(filepath.Join(whole, n))
			b, _ := os.ReadFile(filepath.Join(staged, n))
			if !bytes.Equal(a, b) {
				t.Errorf("chunks of %d: %s differs from the batch written at once", chunk, n)
			}
		}
	}
}

// TestFilesStageSaysFullAtTarget: Stage asks for the cut once a file
// reaches target_file_bytes, not before.
func TestFilesStageSaysFullAtTarget(t *testing.T) {
	cfg := testFilesConfig(t, t.TempDir())
	cfg.TargetFileBytes = 256 << 10
	cfg.Parquet.RowGroupBytes = 64 << 10
	f, err := newFiles(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rows := logRows(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), 20000)
	fullAt := stageInChunks(t, f, &Batch{Topic: "logs", First: 0, Last: 19999, Schema: logSchema, Rows: rows}, 500)
	if fullAt < 0 {
		t.Fatal("Stage never said full")
	}
	var size int64
	for _, n := range listFiles(t, f.store.(*FileStore).dir) {
		info, _ := os.Stat(filepath.Join(f.store.(*FileStore).dir, n))
		size += info.Size()
	}
	// The file holds all 20000 rows; full came when about target/size of them were in.
	share := float64(fullAt) / float64(len(rows))
	if want := float64(cfg.TargetFileBytes) / float64(size); share < want*0.8 || share > want*1.5 {
		t.Errorf("full after %d of %d rows (%.2f), want about %.2f of them (target %d of %d bytes)", fullAt, len(rows), share, want, cfg.TargetFileBytes, size)
	}
}

// TestFilesDiscardDropsTheSpool: a batch given up leaves nothing behind, and
// a batch staged again from the same offset starts afresh.
func TestFilesDiscardDropsTheSpool(t *testing.T) {
	out := t.TempDir()
	cfg := testFilesConfig(t, out)
	f, err := newFiles(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rows := logRows(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), 1000)
	b := &Batch{Topic: "logs", First: 0, Schema: logSchema, Rows: rows[:600]}
	if _, err := f.Stage(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if len(listFiles(t, cfg.SpoolDir)) == 0 {
		t.Fatal("nothing spooled")
	}
	f.Discard("logs", 0, "")
	if n := listFiles(t, cfg.SpoolDir); len(n) != 0 {
		t.Fatalf("left behind %v", n)
	}
	stageInChunks(t, f, &Batch{Topic: "logs", First: 0, Last: 999, Schema: logSchema, Rows: rows}, 300)
	if got := readParquetFile(t, logSchema, filepath.Join(out, "logs-0-0-999.parquet")); len(got) != len(rows) {
		t.Errorf("read back %d rows, want %d", len(got), len(rows))
	}
}

// BenchmarkFilesStageBigBatch writes one partition's batch of 200,000 log
// rows (~120 MiB of decoded rows, more than a 64 MiB row group) into one
// file, two ways: "staged", 2,000 rows at a time, each chunk dropped once
// staged, as the pipeline does; "held", every row kept until one Write at
// the cut, as before staging. peak-heap-MiB is the largest live heap seen
// (after a GC, every 20,000 rows), file-MiB the file's size.
func BenchmarkFilesStageBigBatch(b *testing.B) {
	const n, chunk = 200_000, 2000
	start := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	peakHeap := func(peak *uint64) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		*peak = max(*peak, ms.HeapAlloc)
	}
	for _, held := range []bool{false, true} {
		name := map[bool]string{false: "staged", true: "held"}[held]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var peak uint64
			var size int64
			for b.Loop() {
				out := b.TempDir()
				f, err := newFiles(context.Background(), testFilesConfig(b, out))
				if err != nil {
					b.Fatal(err)
				}
				var all []Row
				for i := 0; i < n; i += chunk {
					rows := logRows(start.Add(time.Duration(i)*time.Second), chunk)
					if held {
						all = append(all, rows...)
					} else if _, err := f.Stage(context.Background(), &Batch{Topic: "logs", First: 0, Schema: logSchema, Rows: rows, Staged: i}); err != nil {
						b.Fatal(err)
					}
					if i%(10*chunk) == 0 {
						peakHeap(&peak)
					}
				}
				last := &Batch{Topic: "logs", First: 0, Last: n - 1, Schema: logSchema, Staged: n}
				if held {
					last.Rows, last.Staged = all, 0
					peakHeap(&peak)
				}
				if err := f.Write(context.Background(), last); err != nil {
					b.Fatal(err)
				}
				info, err := os.Stat(filepath.Join(out, "logs-0-0-199999.parquet"))
				if err != nil {
					b.Fatal(err)
				}
				size = info.Size()
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(size)/(1<<20), "file-MiB")
		})
	}
}

// TestFilesStageRepeatedAfterAnError: a Stage that failed part-way and is
// called again with the same rows (the pipeline retries) does not write the
// rows it already took a second time.
func TestFilesStageRepeatedAfterAnError(t *testing.T) {
	out := t.TempDir()
	f, err := newFiles(context.Background(), testFilesConfig(t, out))
	if err != nil {
		t.Fatal(err)
	}
	rows := logRows(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), 10)
	bad := slices.Clone(rows)
	bad[6] = slices.Clone(rows[6])
	bad[6][5] = "not an int32" // status: the writer refuses the row
	b := &Batch{Topic: "logs", First: 0, Schema: logSchema, Rows: bad}
	var rowErr *RowError
	if _, err := f.Stage(context.Background(), b); !errors.As(err, &rowErr) || rowErr.Index != 6 {
		t.Fatalf("Stage returned %v, want a RowError at index 6", err)
	}
	b.Rows = rows // the same rows, the failure gone
	if _, err := f.Stage(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(context.Background(), &Batch{Topic: "logs", First: 0, Last: 9, Schema: logSchema, Staged: 10}); err != nil {
		t.Fatal(err)
	}
	sameRows(t, readParquetFile(t, logSchema, filepath.Join(out, "logs-0-0-9.parquet")), rows)
}
