package sink

import (
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
