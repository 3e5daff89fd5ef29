package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// logSchema is a realistic log row.
var logSchema = &Schema{Fields: []Field{
	{Name: "event_time", Type: Timestamp, Unit: time.Millisecond, Required: true},
	{Name: "level", Type: String},
	{Name: "service", Type: String},
	{Name: "host", Type: String},
	{Name: "message", Type: String},
	{Name: "status", Type: Int32},
	{Name: "latency_ms", Type: Float64},
	{Name: "labels", Type: StringMap},
	{Name: "trace_id", Type: String},
	{Name: "payload", Type: JSON},
}}

// logRows makes n deterministic log rows starting at start, one second
// apart.
func logRows(start time.Time, n int) []Row {
	levels := []string{"INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG"}
	services := []string{"checkout", "cart", "search", "auth", "payments"}
	rows := make([]Row, n)
	for i := range rows {
		svc := services[i%len(services)]
		rows[i] = Row{
			start.Add(time.Duration(i) * time.Second),
			levels[i%len(levels)],
			svc,
			fmt.Sprintf("ip-10-0-%d-%d.ap-northeast-2.compute.internal", i%4, i%50),
			fmt.Sprintf("request %d handled for user u%06d: GET /api/v2/%s/items?page=%d&size=50 completed after retries=%d with upstream cache miss on shard %d", i, i*7919%1000000, svc, i%97, i%3, i%16),
			int32([]int{200, 200, 200, 201, 204, 301, 404, 500}[i%8]),
			float64(i%1000) * 0.731,
			map[string]string{"env": "prod", "region": "ap-northeast-2", "az": fmt.Sprintf("apne2-az%d", i%3+1), "pod": fmt.Sprintf("%s-%d", svc, i%12)},
			fmt.Sprintf("%016x%016x", uint64(i)*0x9e3779b97f4a7c15, uint64(i)*0xbf58476d1ce4e5b9),
			fmt.Sprintf(`{"user":"u%06d","cart":%d}`, i*7919%1000000, i%40),
		}
	}
	return rows
}

func testFilesConfig(t testing.TB, url string) *FilesConfig {
	c := &Config{Files: &FilesConfig{URL: url, SpoolDir: t.TempDir()}}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c.Files
}

func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(out)
	return out
}

func readParquetFile(t *testing.T, s *Schema, path string) []Row {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := readDataFile(bytes.NewReader(data), int64(len(data)), filepath.ToSlash(path), s)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestFilesWritesOneFilePerFolder(t *testing.T) {
	out := t.TempDir()
	cfg := testFilesConfig(t, "file://"+out)
	cfg.PartitionBy = []PartitionColumn{{Name: "dt", Column: "event_time"}, {Name: "hour", Column: "event_time", Format: "15"}}
	f, err := newFiles(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 2 hours of rows, the last one a late record from the day before.
	rows := logRows(time.Date(2026, 11, 29, 6, 30, 0, 0, time.UTC), 7200)
	rows = append(rows, logRows(time.Date(2026, 11, 28, 23, 59, 0, 0, time.UTC), 1)...)
	b := &Batch{Topic: "logs", Partition: 2, First: 1000, Last: 8200, Schema: logSchema, Rows: rows, Prefix: "main"}
	for range 2 { // a second write of the same batch overwrites
		if err := f.Write(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"main/dt=2026-11-28/hour=23/logs-2-1000-8200.parquet",
		"main/dt=2026-11-29/hour=06/logs-2-1000-8200.parquet",
		"main/dt=2026-11-29/hour=07/logs-2-1000-8200.parquet",
		"main/dt=2026-11-29/hour=08/logs-2-1000-8200.parquet",
	}
	if got := listFiles(t, out); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	// Every row is in exactly one file, in batch order within it.
	var got []Row
	for _, name := range want {
		got = append(got, readParquetFile(t, logSchema, filepath.Join(out, name))...)
	}
	late := rows[len(rows)-1]
	sameRows(t, got, append([]Row{late}, rows[:len(rows)-1]...))
	if n := len(listFiles(t, cfg.SpoolDir)); n != 0 {
		t.Errorf("%d spool files left behind", n)
	}
}

// TestFilesRowsThatAlternateFolders: rows whose folders alternate, in runs
// of every length, each land in their folder's file, in batch order,
// staged in chunks that end anywhere in a run.
func TestFilesRowsThatAlternateFolders(t *testing.T) {
	out := t.TempDir()
	cfg := testFilesConfig(t, "file://"+out)
	cfg.PartitionBy = []PartitionColumn{{Name: "hour", Column: "event_time", Format: "15"}}
	f, err := newFiles(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	hours := [][]Row{
		logRows(time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC), 1000),
		logRows(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC), 1000),
		logRows(time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), 1000),
	}
	rnd := rand.New(rand.NewPCG(3, 5))
	var rows []Row
	want := make([][]Row, len(hours))
	for len(rows) < 1500 {
		h, run := rnd.IntN(len(hours)), min(1+rnd.IntN(4), 1500-len(rows))
		for range run {
			r := hours[h][0]
			hours[h] = hours[h][1:]
			rows = append(rows, r)
			want[h] = append(want[h], r)
		}
	}
	b := &Batch{Topic: "logs", Partition: 2, First: 0, Last: int64(len(rows)) - 1, Schema: logSchema, Prefix: "main"}
	for staged := 0; staged < len(rows); {
		n := min(1+rnd.IntN(50), len(rows)-staged)
		b.Rows, b.Staged = rows[staged:staged+n], staged
		if _, err := f.Stage(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		staged += n
	}
	b.Rows, b.Staged = nil, len(rows)
	if err := f.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	for h, hour := range []string{"06", "07", "08"} {
		got := readParquetFile(t, logSchema, filepath.Join(out, "main/hour="+hour, "logs-2-0-1499.parquet"))
		sameRows(t, got, want[h])
	}
}

func TestFilesSplitsAtMaxFileBytes(t *testing.T) {
	out := t.TempDir()
	cfg := testFilesConfig(t, out)
	cfg.MaxFileBytes = 256 << 10 // below the config minimum, to keep the test small
	cfg.Parquet.RowGroupBytes = 64 << 10
	f, err := newFiles(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rows := logRows(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), 8000)
	b := &Batch{Topic: "logs", Partition: 0, First: 0, Last: 7999, Schema: logSchema, Rows: rows}
	if err := f.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	files := listFiles(t, out)
	if len(files) < 3 || files[0] != "logs-0-0-7999-1.parquet" || !slices.Contains(files, "logs-0-0-7999.parquet") {
		t.Fatalf("files %v: want logs-0-0-7999.parquet, then -1, -2, …", files)
	}
	var got []Row
	for n := range files {
		name := "logs-0-0-7999.parquet"
		if n > 0 {
			name = fmt.Sprintf("logs-0-0-7999-%d.parquet", n)
		}
		info, _ := os.Stat(filepath.Join(out, name))
		if info.Size() > cfg.MaxFileBytes {
			t.Errorf("%s is %d bytes, over the cap of %d", name, info.Size(), cfg.MaxFileBytes)
		}
		got = append(got, readParquetFile(t, logSchema, filepath.Join(out, name))...)
	}
	sameRows(t, got, rows)
}

func TestFilesRowErrorNamesTheRecord(t *testing.T) {
	cfg := testFilesConfig(t, t.TempDir())
	f, err := newFiles(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rows := logRows(time.Now(), 3)
	rows[1][5] = 200 // int, not int32
	b := &Batch{Topic: "logs", Partition: 1, First: 10, Last: 12, Schema: logSchema, Rows: rows,
		Sources: []Source{{Offset: 10}, {Offset: 11}, {Offset: 12}}}
	err = f.Write(context.Background(), b)
	var re *RowError
	if !errors.As(err, &re) || re.Offset != 11 || re.Index != 1 || !strings.Contains(err.Error(), `"status"`) {
		t.Errorf("Write = %v, want a RowError for offset 11 naming status", err)
	}
}

func TestFilesDeadLetters(t *testing.T) {
	out := t.TempDir()
	f, err := newFiles(context.Background(), testFilesConfig(t, out))
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	b := NewDeadLetterBatch("logs", 4, 500, 599, []DeadLetterRow{
		{Reason: "json: invalid character 'x'", Source: Source{Offset: 507, Key: []byte("k"), Value: []byte("x{"), Timestamp: ts}},
		{Reason: "missing event_time", Source: Source{Offset: 590, Value: []byte(`{}`)}},
	})
	b.Prefix = "replay/r1"
	if err := f.WriteDeadLetters(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	name := "replay/r1/_errors/logs-4-500-599" + DeadLetterExt
	if got := listFiles(t, out); !slices.Equal(got, []string{name}) {
		t.Fatalf("files %v, want %s", got, name)
	}
	got := readParquetFile(t, deadLetterSchema, filepath.Join(out, name))
	sameRows(t, got, []Row{
		{"json: invalid character 'x'", "logs", int32(4), int64(507), ts, []byte("k"), []byte("x{")},
		{"missing event_time", "logs", int32(4), int64(590), nil, nil, []byte("{}")},
	})
}
