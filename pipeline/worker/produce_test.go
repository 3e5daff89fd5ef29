package worker

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// A static member's transactional id is the same across its restarts, so
// the restarted pod fences its predecessor and aborts what it left open;
// dynamic members, which share no name across restarts, must never share
// one (each would fence the other, over and over).
func TestTransactionalIDPerMember(t *testing.T) {
	if a, b := TransactionalID("g", "pod-0"), TransactionalID("g", "pod-0"); a != b || a != "logstore-g-pod-0" {
		t.Errorf("static member: %q then %q, want logstore-g-pod-0 both times", a, b)
	}
	if TransactionalID("g", "pod-0") == TransactionalID("g", "pod-1") {
		t.Error("two static members share a transactional id")
	}
	a, b := TransactionalID("g", ""), TransactionalID("g", "")
	if a == b || !strings.HasPrefix(a, "logstore-g-") {
		t.Errorf("dynamic members: %q and %q, want two ids under logstore-g-", a, b)
	}
}

// TestKafkaOutputSkipsWhatItHolds: a partition starts at its least
// advanced output; the exactly-once Kafka output, whose position is the
// group's offset, leaves out the rows and dead letters before it.
func TestKafkaOutputSkipsWhatItHolds(t *testing.T) {
	w := &Worker{Config: Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	for _, o := range []int64{10, 11, 12, 13} {
		w.batch.rows = append(w.batch.rows, sink.Row{o})
		w.batch.sources = append(w.batch.sources, sink.Source{Offset: o})
	}
	w.batch.first = 10
	w.batch.dead = []RejectedRecord{{Record: record.Record{Offset: 9}}, {Record: record.Record{Offset: 14}}}
	for _, c := range []struct {
		inKafka         int64
		wantRows, wantD int
	}{{-1, 4, 2}, {10, 4, 2}, {12, 2, 1}, {20, 0, 0}} {
		w.InKafka = c.inKafka
		rows, sources, dead := w.notInKafka(&w.batch)
		if len(rows) != c.wantRows || len(sources) != c.wantRows || len(dead) != c.wantD {
			t.Errorf("Kafka at %d: %d rows, %d sources, %d dead letters; want %d, %d, %d", c.inKafka, len(rows), len(sources), len(dead), c.wantRows, c.wantRows, c.wantD)
		}
		if c.wantRows > 0 && sources[0].Offset != max(10, c.inKafka) {
			t.Errorf("Kafka at %d: the first row produced is of offset %d", c.inKafka, sources[0].Offset)
		}
	}
	if len(w.batch.rows) != 4 || len(w.batch.dead) != 2 {
		t.Errorf("the batch itself changed: %d rows, %d dead letters", len(w.batch.rows), len(w.batch.dead))
	}
}
