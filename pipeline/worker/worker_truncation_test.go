package worker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/logstore/logstore/pipeline/fetch"
	"github.com/logstore/logstore/pipeline/record"
)

// truncatingLog is a fakeLog whose tail from `at` is replaced by new records
// (an unclean election) once the reader has read past it; it ends the run
// once it served the new tail.
type truncatingLog struct {
	*fakeLog
	at    int64
	fresh [][]byte
	done  bool
	end   context.CancelFunc
}

func (l *truncatingLog) Fetch(ctx context.Context) ([]record.Record, int64, error) {
	if !l.done && l.pos > l.at {
		l.done = true
		l.values = append(l.values[:l.at:l.at], l.fresh...)
		return nil, 0, &fetch.OffsetOutOfRangeError{Offset: l.pos, LogStart: 0, LogEnd: l.at, Truncated: true}
	}
	if l.done && l.pos == int64(len(l.values)) {
		l.end()
	}
	return l.fakeLog.Fetch(ctx)
}

// TestWorkerLogTruncated: on a truncated log, policy fail stops and says
// what was lost and what to set; earliest goes on from where the logs part,
// with the new leader's records.
func TestWorkerLogTruncated(t *testing.T) {
	for _, policy := range []string{"fail", "earliest"} {
		t.Run(policy, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			log := &truncatingLog{fakeLog: &fakeLog{values: logValues(6, nil, nil), perFetch: 10}, at: 2, fresh: logValues(3, nil, nil), end: cancel}
			w, _, s, _ := testWorker(t, log.fakeLog, 10, "dead_letter")
			w.Reader, w.Target, w.OnOutOfRange = log, -1, policy
			err := w.Run(ctx, position{Offset: 0, Cut: -1})
			switch policy {
			case "fail":
				if err == nil || !strings.Contains(err.Error(), "log truncated at 2") || !strings.Contains(err.Error(), "on_offset_out_of_range: earliest") {
					t.Errorf("err %v; want a fatal error naming the truncation and what to set", err)
				}
			case "earliest":
				if fmt.Sprint(s.batches) != "[0-5:6 2-4:3]" || w.Stats.LostRecords.Load() != 0 {
					t.Errorf("err %v, batches %v, lost %d; want 0-5, then the new records 2-4", err, s.batches, w.Stats.LostRecords.Load())
				}
			}
		})
	}
}
