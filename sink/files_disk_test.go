package sink

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// fullDisk stands in for the spool folder's disk: writes take room while
// there is some, and fail with ENOSPC once it is used up, as on a full
// disk, until the test frees it. room < 0 is a disk that never fills.
type fullDisk struct {
	room   atomic.Int64
	failed atomic.Int64
}

func (d *fullDisk) write(n int) error {
	if d.room.Load() < 0 {
		return nil
	}
	if d.room.Add(-int64(n)) < 0 {
		d.room.Store(0)
		d.failed.Add(1)
		return syscall.ENOSPC
	}
	return nil
}

// filesOnDisk is a Files sink into out whose spool folder is on disk,
// which starts with room to spare.
func filesOnDisk(t *testing.T, out string, partitionBy []PartitionColumn) (*Files, *FilesConfig, *fullDisk) {
	t.Helper()
	cfg := testFilesConfig(t, out)
	cfg.PartitionBy = partitionBy
	cfg.MaxFileBytes = 256 << 10 // below the config minimum: several parts per folder
	cfg.Parquet.RowGroupBytes = 64 << 10
	f, err := newFiles(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	disk := &fullDisk{}
	disk.room.Store(-1)
	f.spool.fault = disk.write
	return f, cfg, disk
}

// readAll reads every file under dir, by name, with parquet-go.
func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, n := range listFiles(t, dir) {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		files[n] = data
	}
	return files
}

// wholeBatchFiles is what a batch of rows makes when nothing goes wrong.
func wholeBatchFiles(t *testing.T, b *Batch, partitionBy []PartitionColumn) map[string][]byte {
	t.Helper()
	out := t.TempDir()
	f, _, _ := filesOnDisk(t, out, partitionBy)
	whole := *b
	if err := f.Write(context.Background(), &whole); err != nil {
		t.Fatal(err)
	}
	return readAll(t, out)
}

func sameFiles(t *testing.T, got, want map[string][]byte) {
	t.Helper()
	names := func(m map[string][]byte) []string {
		return slices.Sorted(func(y func(string) bool) {
			for k := range m {
				if !y(k) {
					return
				}
			}
		})
	}
	if !slices.Equal(names(got), names(want)) {
		t.Fatalf("files %v, want %v", names(got), names(want))
	}
	for n, data := range want {
		if !bytes.Equal(got[n], data) {
			t.Errorf("%s differs from the batch written on a disk with room", n)
		}
	}
}

var hourly = []PartitionColumn{{Name: "hour", Column: "event_time", Format: "15"}}

// TestFilesFailedCloseLeavesTheBatchUnwritten: the disk fills while a
// batch's files are closed at the cut (their last row group and footer).
// Before, the failed close crashed the process (sf.Remove, then sf.Name),
// and the retried Write found nothing open, uploaded nothing and returned
// nil: a committed batch in no file. Now Write says the staged rows are
// lost (RestageError), every retry says so too, nothing is stored and no
// spool file is left; the batch staged again once the disk has room makes
// the same files as on a disk that never filled.
func TestFilesFailedCloseLeavesTheBatchUnwritten(t *testing.T) {
	rows := logRows(time.Date(2026, 11, 29, 6, 50, 0, 0, time.UTC), 6000)
	b := &Batch{Topic: "logs", Partition: 3, First: 100, Last: 6099, Schema: logSchema, Rows: rows}
	want := wholeBatchFiles(t, b, hourly)

	out := t.TempDir()
	f, cfg, disk := filesOnDisk(t, out, hourly)
	ctx := context.Background()
	for i := 0; i < len(rows); i += 1000 {
		if _, err := f.Stage(ctx, &Batch{Topic: "logs", Partition: 3, First: 100, Schema: logSchema, Rows: rows[i : i+1000], Staged: i}); err != nil {
			t.Fatal(err)
		}
	}
	disk.room.Store(0) // full before the footers
	cut := &Batch{Topic: "logs", Partition: 3, First: 100, Last: 6099, Schema: logSchema, Staged: len(rows)}
	for attempt := 1; attempt <= 2; attempt++ {
		err := f.Write(ctx, cut)
		var lost *RestageError
		if !errors.As(err, &lost) || lost.First != 100 || (attempt == 1 && !errors.Is(err, syscall.ENOSPC)) {
			t.Fatalf("Write #%d on a full disk returned %v, want a RestageError from 100 (for ENOSPC)", attempt, err)
		}
		if AsRowErrors(err) != nil {
			t.Fatalf("a full disk refused rows: %v", err)
		}
	}
	if disk.failed.Load() == 0 {
		t.Fatal("the disk never filled: the test proves nothing")
	}
	if got := listFiles(t, out); len(got) != 0 {
		t.Fatalf("stored %v from a batch whose files could not be finished", got)
	}
	if left := listFiles(t, cfg.SpoolDir); len(left) != 0 {
		t.Errorf("spool files left behind on the full disk: %v", left)
	}
	disk.room.Store(-1) // freed: the worker reads the batch again
	stageInChunks(t, f, b, 1000)
	sameFiles(t, readAll(t, out), want)
}

// TestFilesSpoolWriteErrorIsNotARowError: the disk fills while rows are
// staged. Before, the ENOSPC was a RowError (a good row dead-lettered,
// dropped under skip, the job stopped under fail) and the half-written
// file was used again: once the disk had room, the stored file was
// corrupt. Now no row is refused: a call that holds every row of the batch
// is retried as it is; one after rows were staged says they are lost
// (RestageError). Either way the half-written files are gone, and once
// the disk has room the batch makes the same files as on a disk that never
// filled.
func TestFilesSpoolWriteErrorIsNotARowError(t *testing.T) {
	rows := logRows(time.Date(2026, 11, 29, 6, 50, 0, 0, time.UTC), 6000)
	b := &Batch{Topic: "logs", Partition: 3, First: 100, Last: 6099, Schema: logSchema, Rows: rows}
	want := wholeBatchFiles(t, b, hourly)
	for _, tc := range []struct {
		name   string
		room   int64 // bytes written before the disk is full
		staged int   // rows staged before the chunk that fills it
	}{
		{"first chunk", 100 << 10, 0},
		{"later chunk", 100 << 10, 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			f, cfg, disk := filesOnDisk(t, out, hourly)
			ctx := context.Background()
			if tc.staged > 0 {
				if _, err := f.Stage(ctx, &Batch{Topic: "logs", Partition: 3, First: 100, Schema: logSchema, Rows: rows[:tc.staged]}); err != nil {
					t.Fatal(err)
				}
			}
			disk.room.Store(tc.room)
			chunk := &Batch{Topic: "logs", Partition: 3, First: 100, Schema: logSchema, Rows: rows[tc.staged:], Staged: tc.staged}
			_, err := f.Stage(ctx, chunk)
			if disk.failed.Load() == 0 {
				t.Fatal("the disk never filled: the test proves nothing")
			}
			if AsRowErrors(err) != nil {
				t.Fatalf("a full disk refused rows: %v", err)
			}
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "spool_dir") {
				t.Fatalf("Stage returned %v, want the ENOSPC, naming sinks.files.spool_dir", err)
			}
			var lost *RestageError
			if gotLost := errors.As(err, &lost); gotLost != (tc.staged > 0) {
				t.Fatalf("Stage after %d staged rows returned %v: a RestageError is for rows staged before the call", tc.staged, err)
			}
			if left := listFiles(t, cfg.SpoolDir); len(left) != 0 {
				t.Errorf("half-written spool files kept: %v", left)
			}
			disk.room.Store(-1)
			if tc.staged == 0 {
				// The call had every row: the same call again.
				if _, err := f.Stage(ctx, chunk); err != nil {
					t.Fatal(err)
				}
				if err := f.Write(ctx, &Batch{Topic: "logs", Partition: 3, First: 100, Last: 6099, Schema: logSchema, Staged: len(rows)}); err != nil {
					t.Fatal(err)
				}
			} else {
				stageInChunks(t, f, b, 1000) // read again from the batch's first offset
			}
			got := readAll(t, out)
			sameFiles(t, got, want)
			var n int
			for name := range got {
				n += len(readParquetFile(t, logSchema, filepath.Join(out, name)))
			}
			if n != len(rows) {
				t.Errorf("read back %d rows, wrote %d", n, len(rows))
			}
		})
	}
}

// TestFilesDeadLettersOnAFullDisk: dead letters, held whole by the caller,
// fail on a full disk with an error to retry (not a refusal), leave no
// spool file, and are written once the disk has room.
func TestFilesDeadLettersOnAFullDisk(t *testing.T) {
	out := t.TempDir()
	f, cfg, disk := filesOnDisk(t, out, nil)
	letters := make([]DeadLetterRow, 2000)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range letters {
		value := make([]byte, 500)
		for j := range value {
			value[j] = byte(rnd.Uint32())
		}
		letters[i] = DeadLetterRow{Reason: "not json", Source: Source{Offset: int64(i), Value: value}}
	}
	b := NewDeadLetterBatch("logs", 0, 0, 1999, letters)
	disk.room.Store(64 << 10)
	err := f.WriteDeadLetters(context.Background(), b)
	if err == nil || AsRowErrors(err) != nil || errors.As(err, new(*RestageError)) {
		t.Fatalf("WriteDeadLetters on a full disk returned %v, want an error to retry", err)
	}
	if left := listFiles(t, cfg.SpoolDir); len(left) != 0 {
		t.Errorf("spool files left behind: %v", left)
	}
	disk.room.Store(-1)
	if err := f.WriteDeadLetters(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	var n int
	for _, name := range listFiles(t, out) {
		n += len(readParquetFile(t, deadLetterSchema, filepath.Join(out, name)))
	}
	if n != len(letters) {
		t.Errorf("read back %d dead letters, wrote %d", n, len(letters))
	}
}

// TestFilesRowAfterARefusedRowKeepsItsFolder: a row the writer refuses
// (08:05, its status not an int32) between two rows of 07:xx. Before, the
// "last folder" was left pointing at the refused row's hour=08, and the
// 07:20 row after it, staged again without the refused one, landed there.
// Now it is in hour=07 with its neighbour, and the refused row leaves no
// file behind.
func TestFilesRowAfterARefusedRowKeepsItsFolder(t *testing.T) {
	out := t.TempDir()
	f, _, _ := filesOnDisk(t, out, hourly)
	at := func(h, m int) Row {
		return logRows(time.Date(2026, 11, 29, h, m, 0, 0, time.UTC), 1)[0]
	}
	before, refused, after := at(7, 10), at(8, 5), at(7, 20)
	refused[5] = "not an int32"
	ctx := context.Background()
	b := &Batch{Topic: "logs", First: 0, Schema: logSchema, Rows: []Row{before, refused, after}}
	var rowErr *RowError
	if _, err := f.Stage(ctx, b); !errors.As(err, &rowErr) || rowErr.Index != 1 {
		t.Fatalf("Stage returned %v, want a RowError at index 1", err)
	}
	b.Rows = []Row{before, after} // as the worker asks again, without the refused row
	if _, err := f.Stage(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(ctx, &Batch{Topic: "logs", First: 0, Last: 2, Schema: logSchema, Staged: 2}); err != nil {
		t.Fatal(err)
	}
	sameRows(t, readParquetFile(t, logSchema, filepath.Join(out, "hour=07/logs-0-0-2.parquet")), []Row{before, after})
	if got, want := listFiles(t, out), []string{"hour=07/logs-0-0-2.parquet"}; !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
}
