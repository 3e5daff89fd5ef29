package worker

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestWorkerOutOfRange covers positions outside the log: past its end (a
// topic deleted and recreated, a truncated log) and before its start with
// a pending cut (retention moved the start into a batch already cut).
func TestWorkerOutOfRange(t *testing.T) {
	tests := []struct {
		name        string
		policy      string
		logStart    int64
		start       position
		wantErr     []string // every part must be in the error
		wantBatches []string
		wantLost    int64
	}{
		{name: "past the end, fail", policy: "fail", start: position{Offset: 50, Cut: -1},
			wantErr: []string{"t/0", "committed offset 50", "log end 8", "on_offset_out_of_range"}},
		{name: "past the end, earliest reads the new log", policy: "earliest", logStart: 2, start: position{Offset: 50, Cut: -1},
			wantBatches: []string{"2-3:2", "4-5:2", "6-7:2"}},
		{name: "past the end, latest", policy: "latest", logStart: 2, start: position{Offset: 50, Cut: -1}, wantLost: 6},
		{name: "past the end with a pending cut, fail", policy: "fail", start: position{Offset: 50, Cut: 60},
			wantErr: []string{"committed offset 50", "log end 8"}},
		{name: "retention inside a pending cut keeps its name", policy: "earliest", logStart: 3, start: position{Offset: 1, Cut: 4},
			wantBatches: []string{"1-4:2", "5-6:2", "7-7:1"}, wantLost: 2},
		{name: "latest too finishes the pending cut first", policy: "latest", logStart: 3, start: position{Offset: 1, Cut: 4},
			wantBatches: []string{"1-4:2", "5-6:2", "7-7:1"}, wantLost: 2},
		{name: "retention past a pending cut", policy: "earliest", logStart: 6, start: position{Offset: 1, Cut: 4},
			wantBatches: []string{"6-7:2"}, wantLost: 5},
		{name: "retention inside a pending cut, fail", policy: "fail", logStart: 3, start: position{Offset: 1, Cut: 4},
			wantErr: []string{"offset 1 is gone", "pending cut 1-4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _, s, _ := testWorker(t, &fakeLog{values: logValues(8, nil, nil), perFetch: 10, logStart: tt.logStart}, 2, "dead_letter")
			w.OnOutOfRange = tt.policy
			err := w.Run(context.Background(), tt.start)
			if tt.wantErr != nil {
				for _, part := range tt.wantErr {
					if err == nil || !strings.Contains(err.Error(), part) {
						t.Errorf("err %v; want it to say %q", err, part)
					}
				}
				if len(s.batches) != 0 {
					t.Errorf("batches %v written before a fatal error", s.batches)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(s.batches) != fmt.Sprint(tt.wantBatches) {
				t.Errorf("batches %v, want %v", s.batches, tt.wantBatches)
			}
			if got := w.Stats.LostRecords.Load(); got != tt.wantLost {
				t.Errorf("lost %d, want %d", got, tt.wantLost)
			}
			if w.Stats.OffsetResets.Load() == 0 {
				t.Error("the reset is not counted")
			}
		})
	}
}
