package sink

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestDeadLettersKeepEmptyApartFromNull: a dead letter's empty key or value
// is an empty byte array in the file, a missing one null; its reason is
// valid UTF-8.
func TestDeadLettersKeepEmptyApartFromNull(t *testing.T) {
	ts := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	b := NewDeadLetterBatch("logs", 3, 10, 11, []DeadLetterRow{
		{Reason: "the value is empty", Source: Source{Offset: 10, Key: []byte{}, Value: []byte{}, Timestamp: ts}},
		{Reason: "a tombstone \xff", Source: Source{Offset: 11}},
	})
	_, got := decodeParquet(t, b.Schema, encodeParquet(t, b.Schema, testParquetConfig(), b.Rows))
	sameRows(t, got, []Row{
		{"the value is empty", "logs", int32(3), int64(10), ts, []byte{}, []byte{}},
		{"a tombstone \uFFFD", "logs", int32(3), int64(11), nil, nil, nil},
	})
}

// TestDeadLetterWithATimeOutsideTheYearsIsWritten: a record whose
// timestamp is outside years 1-9999 (microseconds sent as milliseconds,
// which Kafka before 4.0 accepts) is a dead letter that must be written.
// Before, its timestamp column got the time, the writer refused it, and the
// partition's flush failed for ever. Now the column is null and the reason
// keeps the raw value.
func TestDeadLetterWithATimeOutsideTheYearsIsWritten(t *testing.T) {
	out := t.TempDir()
	f, err := newFiles(context.Background(), testFilesConfig(t, out))
	if err != nil {
		t.Fatal(err)
	}
	micros := time.UnixMilli(1_764_400_000_000_000) // 2025-11-29 in µs, read as ms: year 57,880
	early := time.UnixMilli(-62_135_596_800_001)    // a millisecond before 0001-01-01
	ok := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	b := NewDeadLetterBatch("logs", 0, 5, 7, []DeadLetterRow{
		{Reason: "the timestamp is out of range", Source: Source{Offset: 5, Timestamp: micros, Value: []byte("{}")}},
		{Reason: "the timestamp is out of range", Source: Source{Offset: 6, Timestamp: early, Value: []byte("{}")}},
		{Reason: "not json", Source: Source{Offset: 7, Timestamp: ok, Value: []byte("x")}},
	})
	if err := f.WriteDeadLetters(context.Background(), b); err != nil {
		t.Fatalf("a dead letter could not be written: %v", err)
	}
	got := readParquetFile(t, deadLetterSchema, filepath.Join(out, "_errors", "logs-0-5-7"+DeadLetterExt))
	sameRows(t, got, []Row{
		{"the timestamp is out of range (the record's timestamp, 1764400000000000 ms since the epoch, is outside 0001-01-01..9999-12-31; the timestamp column is null)",
			"logs", int32(0), int64(5), nil, nil, []byte("{}")},
		{"the timestamp is out of range (the record's timestamp, -62135596800001 ms since the epoch, is outside 0001-01-01..9999-12-31; the timestamp column is null)",
			"logs", int32(0), int64(6), nil, nil, []byte("{}")},
		{"not json", "logs", int32(0), int64(7), ok, nil, []byte("x")},
	})
}
