package sink

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/logstore/logstore/internal/testkit"
)

// concatTestParts are files a table's cycle joins: the same schema, rows
// of different partitions, whose writers chose different encodings (a
// column of few values gets a dictionary in one, distinct text delta
// lengths in another) and made several row groups in one.
func concatTestParts(t *testing.T) (parts [][]byte, want []Row) {
	t.Helper()
	t0 := time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)
	for p, n := range []int{3, 2000, 1, 700} {
		var rows []Row
		for i := range n {
			ts := t0.Add(time.Duration(p*10000+i) * time.Millisecond)
			msg := fmt.Sprintf("partition %d record %d %x", p, i, i*7919)
			if p == 3 {
				msg = "the same line"
			}
			var level any = "info"
			if i%3 == 0 {
				level = nil
			}
			rows = append(rows, Row{ts, msg, level, int64(p*1000 + i)})
		}
		cfg := testParquetConfig()
		if p == 1 {
			cfg.RowGroupRows = 512
		}
		parts = append(parts, encodeParquet(t, concatSchema, cfg, rows))
		want = append(want, rows...)
	}
	return parts, want
}

var concatSchema = &Schema{Fields: []Field{
	{Name: "ts", Type: Timestamp, Required: true},
	{Name: "msg", Type: String},
	{Name: "level", Type: String},
	{Name: "n", Type: Int64, Required: true},
}}

// TestConcatParquetReadsBackEveryPart: the joined file holds every part's
// rows in order, its footer their row groups and counts, and its page
// index is where the footer says (parquet-go reads it back), and pyarrow
// reads it whole.
func TestConcatParquetReadsBackEveryPart(t *testing.T) {
	parts, want := concatTestParts(t)
	var in []concatPart
	groups := 0
	for _, p := range parts {
		in = append(in, concatPart{r: bytes.NewReader(p), size: int64(len(p))})
		f, err := parquet.OpenFile(bytes.NewReader(p), int64(len(p)))
		if err != nil {
			t.Fatal(err)
		}
		groups += len(f.RowGroups())
	}
	var out bytes.Buffer
	md, size, err := concatParquet(&out, in)
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(out.Len()) {
		t.Fatalf("size %d, wrote %d", size, out.Len())
	}
	if md.NumRows != int64(len(want)) || len(md.RowGroups) != groups {
		t.Fatalf("footer: %d rows in %d row groups, want %d in %d", md.NumRows, len(md.RowGroups), len(want), groups)
	}
	f, rows := decodeParquet(t, concatSchema, out.Bytes())
	sameRows(t, rows, expected(concatSchema, want))
	for g, rg := range f.RowGroups() {
		for c, chunk := range rg.ColumnChunks() {
			oi, err := chunk.OffsetIndex()
			if err != nil {
				t.Fatalf("row group %d column %d: offset index: %v", g, c, err)
			}
			if _, err := chunk.ColumnIndex(); err != nil {
				t.Fatalf("row group %d column %d: column index: %v", g, c, err)
			}
			// Each page the offset index names starts where a page header
			// is: the page's compressed size is what the header says.
			for i := range oi.NumPages() {
				if off := oi.Offset(i); off < 4 || off+oi.CompressedPageSize(i) > size {
					t.Fatalf("row group %d column %d page %d at %d..%d, outside the file", g, c, i, off, off+oi.CompressedPageSize(i))
				}
			}
		}
	}
	// Reading pages through the offset index (what a reader that skips
	// pages does) gives every value.
	var n int64
	for _, rg := range f.RowGroups() {
		pages := rg.ColumnChunks()[3].Pages()
		for {
			p, err := pages.ReadPage()
			if err != nil {
				break
			}
			n += p.NumValues()
			parquet.Release(p)
		}
		pages.Close()
	}
	if n != int64(len(want)) {
		t.Fatalf("pages hold %d values of n, want %d", n, len(want))
	}

	py := testkit.PyarrowPython(t)
	path := filepath.Join(t.TempDir(), "joined.parquet")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `import sys, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
m = pq.ParquetFile(sys.argv[1]).metadata
print(t.num_rows, m.num_row_groups, sum(t.column("n").to_pylist()), t.column("msg")[2001].as_py())`
	got, err := exec.Command(py, "-c", script, path).CombinedOutput()
	if err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, got)
	}
	var sum int64
	for _, r := range want {
		sum += r[3].(int64)
	}
	if w := fmt.Sprintf("%d %d %d %s", len(want), groups, sum, want[2001][1]); strings.TrimSpace(string(got)) != w {
		t.Fatalf("pyarrow read %q, want %q", strings.TrimSpace(string(got)), w)
	}
}

// TestConcatParquetRefusesWhatItCannotMove: a part that is not a finished
// Parquet file is an error, never a joined file missing it.
func TestConcatParquetRefusesWhatItCannotMove(t *testing.T) {
	parts, _ := concatTestParts(t)
	bad := append([]byte(nil), parts[0]...)
	bad = bad[:len(bad)-1]
	in := []concatPart{{r: bytes.NewReader(parts[1]), size: int64(len(parts[1]))}, {r: bytes.NewReader(bad), size: int64(len(bad))}}
	if _, _, err := concatParquet(&bytes.Buffer{}, in); err == nil {
		t.Fatal("a part cut short was joined")
	}
}

// TestStoreJoinedJoinsAFoldersFilesOrStoresThemAlone: the sealed files of
// three partitions' batches in one folder are stored as one file holding
// every row; with the spool full (the joined copy cannot be written) they
// are stored alone under their batches' names, every row still there.
func TestStoreJoinedJoinsAFoldersFilesOrStoresThemAlone(t *testing.T) {
	for _, full := range []bool{false, true} {
		out := t.TempDir()
		f, err := newFiles(context.Background(), testFilesConfig(t, out))
		if err != nil {
			t.Fatal(err)
		}
		var sealed []SealedFile
		var want []Row
		t0 := time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)
		for p := range 3 {
			rows := logRows(t0.Add(time.Duration(p)*time.Minute), 100+p)
			b := &Batch{Topic: "logs", Partition: p, First: 0, Last: int64(len(rows) - 1), Schema: logSchema, Rows: rows}
			s, err := f.SealFiles(context.Background(), b)
			if err != nil {
				t.Fatal(err)
			}
			sealed = append(sealed, s...)
			want = append(want, rows...)
		}
		if full {
			f.spool.fault = func(int) error { return syscall.ENOSPC }
		}
		written, err := f.StoreJoined(context.Background(), sealed, "cycle-test")
		if err != nil {
			t.Fatalf("full %v: %v", full, err)
		}
		wantFiles, joined := 1, 3
		if full {
			wantFiles, joined = 3, 0
		}
		if len(written) != wantFiles || written[0].Joined != joined {
			t.Fatalf("full %v: stored %d files (the first joining %d); want %d joining %d", full, len(written), written[0].Joined, wantFiles, joined)
		}
		var got []Row
		var rows int64
		for _, w := range written {
			got = append(got, readParquetFile(t, logSchema, filepath.Join(out, w.Key))...)
			rows += w.Rows
			if w.Footer == nil || w.Footer.NumRows != w.Rows {
				t.Fatalf("%s: footer %v for %d rows", w.Key, w.Footer, w.Rows)
			}
		}
		if rows != int64(len(want)) {
			t.Fatalf("full %v: %d rows said, want %d", full, rows, len(want))
		}
		sameRows(t, got, expected(logSchema, want))
		RemoveSealed(sealed)
		f.Close()
	}
}
