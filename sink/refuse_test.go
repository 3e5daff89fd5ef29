package sink

import (
	"context"
	"strings"
	"testing"
	"time"
)

// offsetsOf lists the offsets of refused rows.
func offsetsOf(errs []*RowError) []int64 {
	var out []int64
	for _, e := range errs {
		out = append(out, e.Offset)
	}
	return out
}

func TestCheckRowsNamesWhatNoRetryCanWrite(t *testing.T) {
	long := strings.Repeat("é", 200) // 400 bytes, 1,200 escaped
	rows := logRows(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC), 4)
	rows[1][2], rows[3][2] = long, long
	b := &Batch{Topic: "logs", Partition: 2, First: 10, Last: 13, Schema: logSchema, Rows: rows,
		Sources: []Source{{Offset: 10}, {Offset: 11}, {Offset: 12}, {Offset: 13}}}

	cfg := testFilesConfig(t, t.TempDir())
	cfg.PartitionBy = []PartitionColumn{{Name: "service", Column: "service"}}
	files, err := newFiles(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := offsetsOf(files.CheckRows(b)); len(got) != 2 || got[0] != 11 || got[1] != 13 {
		t.Errorf("files: refused %v, want [11 13] (a folder element over 255 bytes)", got)
	}
	s3 := &S3Store{}
	if err := s3.CheckKey(strings.Repeat(strings.Repeat("k", 255)+"/", 4)[:1024]); err != nil {
		t.Errorf("a key of 1,024 bytes: %v", err)
	}
	// S3-compatible stores on a file system (MinIO, versitygw, Ceph's
	// posix backends) answer 400 KeyTooLongError for a path element over
	// 255 bytes; retried, it would hold the partition for ever.
	if err := s3.CheckKey("raw/svc=" + strings.Repeat("p", 300) + "/t-0-0-9.parquet"); err == nil || !strings.Contains(err.Error(), "255") {
		t.Errorf("a key with a 308-byte element: %v, want an error naming the limit", err)
	}
	if err := s3.CheckKey(strings.Repeat("k", 1025)); err == nil || !strings.Contains(err.Error(), "1024") {
		t.Errorf("a key of 1,025 bytes: %v, want an error naming the limit", err)
	}

	good, _ := appendRowJSON(nil, logSchema, rows[0])
	kc := &KafkaOutputConfig{Topic: "out", BatchBytes: int64(len(good)) + 300}
	kc.setDefaults()
	k := &Kafka{cfg: kc}
	if got := offsetsOf(k.CheckRows(b)); len(got) != 2 || got[0] != 11 || got[1] != 13 {
		t.Errorf("kafka: refused %v, want [11 13] (JSON over batch_bytes)", got)
	}
	rows[1][2], rows[3][2] = "ok", "ok"
	if got := files.CheckRows(b); got != nil {
		t.Errorf("files: refused %v of a good batch", offsetsOf(got))
	}
	if got := k.CheckRows(b); got != nil {
		t.Errorf("kafka: refused %v of a good batch", offsetsOf(got))
	}
}

func TestFilesWithLayoutWritesTheRecordedNames(t *testing.T) {
	out := t.TempDir()
	cfg := testFilesConfig(t, out)
	cfg.PartitionBy = []PartitionColumn{{Name: "level", Column: "level"}}
	old, err := newFiles(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	recorded := old.Layout()
	cfg2 := *cfg
	cfg2.PartitionBy = nil
	now, err := newFilesOn(old.Store(), "", &cfg2)
	if err != nil {
		t.Fatal(err)
	}
	if now.Layout() == recorded {
		t.Fatal("a changed partition_by gives the same layout")
	}
	cfg3 := *cfg
	cfg3.TargetFileBytes *= 2
	bigger, err := newFilesOn(old.Store(), "", &cfg3)
	if err != nil {
		t.Fatal(err)
	}
	if bigger.Layout() == recorded {
		t.Error("a changed target_file_bytes gives the same layout")
	}
	if l, err := old.WithLayout(bigger.Layout()); err != nil || l.Layout() != bigger.Layout() {
		t.Errorf("WithLayout(target_file_bytes doubled): %v, layout %s", err, l.Layout())
	}
	back, err := now.WithLayout(recorded)
	if err != nil || back.Layout() != recorded {
		t.Fatalf("WithLayout: %v, layout %s, want %s", err, back.Layout(), recorded)
	}
	b := &Batch{Topic: "logs", Partition: 0, First: 0, Last: 1, Schema: logSchema, Rows: logRows(time.Now(), 2)}
	if err := back.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	got := listFiles(t, out)
	if len(got) != 1 || !strings.HasPrefix(got[0], "level=INFO/") {
		t.Errorf("files %v, want them under the recorded level= folders", got)
	}
}

func TestRowJSONBoundIsAnUpperBound(t *testing.T) {
	rows := append(logRows(time.Now(), 20), allTypesRows()...)
	rows[3][4] = "\x01\xff\"\\\n" + strings.Repeat("\x00", 100)
	for i, r := range rows {
		s := logSchema
		if i >= 20 {
			s = allTypes
		}
		j, err := appendRowJSON(nil, s, r)
		if err != nil {
			t.Fatal(err)
		}
		if bound := rowJSONBound(s, r); bound < len(j) {
			t.Errorf("row %d: bound %d under the JSON's %d bytes", i, bound, len(j))
		}
	}
}
