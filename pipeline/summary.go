package pipeline

import (
	"fmt"
	"io"
	"sort"
	"time"
)

// Summary is what a run did, for the end-of-run report and progress lines.
type Summary struct {
	Rack             string           `json:"rack"`
	RackSource       string           `json:"rack_source"`
	Elapsed          time.Duration    `json:"elapsed_ns"`
	Started          time.Time        `json:"started"`
	FirstRecord      time.Time        `json:"first_record"` // zero until a record arrived
	Records          int64            `json:"records"`
	Rows             int64            `json:"rows"`
	Filtered         int64            `json:"filtered"`
	DeadLetters      int64            `json:"dead_letters"`
	Skipped          int64            `json:"skipped"`
	Batches          int64            `json:"batches"`
	LostRecords      int64            `json:"lost_records"`
	RecordsPerSecond float64          `json:"records_per_second"`
	WaitedForMemory  time.Duration    `json:"waited_for_memory_ns"`    // fetching paused by batch.memory_budget, summed over partitions
	FloorFetches     int64            `json:"floor_fetches,omitempty"` // fetches of 16 KiB past a budget held over its size (logstore_floor_fetches_total)
	SameRackBytes    int64            `json:"same_rack_bytes"`
	CrossRackBytes   int64            `json:"cross_rack_bytes"`
	BytesByRack      map[string]int64 `json:"bytes_by_broker_rack"`
}

// Summary reads the job's counters now.
func (j *Job) Summary() Summary {
	s, f := j.stats, j.fetch.Snapshot()
	el := time.Since(s.Started)
	sum := Summary{
		Rack: j.rack.Rack, RackSource: j.rack.Source, Elapsed: el,
		Records: s.Records.Load(), Rows: s.Rows.Load(), Filtered: s.Filtered.Load(),
		DeadLetters: s.DeadLetters.Load(), Skipped: s.Skipped.Load(), Batches: s.Batches.Load(),
		LostRecords: s.LostRecords.Load(), SameRackBytes: f.SameRackBytes, CrossRackBytes: f.CrossRackBytes,
		BytesByRack: f.ByRack(), Started: s.Started, WaitedForMemory: time.Duration(s.BackpressureNanos.Load()),
		FloorFetches: s.FloorFetches.Load(),
	}
	if t := s.FirstRecord.Load(); t != 0 {
		sum.FirstRecord = time.Unix(0, t)
	}
	if el > 0 {
		sum.RecordsPerSecond = float64(sum.Records) / el.Seconds()
	}
	return sum
}

// WriteText prints the summary for a person.
func (s Summary) WriteText(w io.Writer) {
	rack := s.Rack
	if rack == "" {
		rack = "(none: rack-blind)"
	}
	fmt.Fprintf(w, "logstore run summary\n")
	source := s.RackSource
	if source == "" {
		source = "no provider answered"
	}
	fmt.Fprintf(w, "  rack             %s (from %s)\n", rack, source)
	fmt.Fprintf(w, "  elapsed          %s\n", s.Elapsed.Round(time.Millisecond))
	if !s.FirstRecord.IsZero() {
		fmt.Fprintf(w, "  first record     %s after start (unix ms %d)\n", s.FirstRecord.Sub(s.Started).Round(time.Millisecond), s.FirstRecord.UnixMilli())
	}
	fmt.Fprintf(w, "  records read     %d (%.0f/s)\n", s.Records, s.RecordsPerSecond)
	fmt.Fprintf(w, "  rows written     %d in %d batches\n", s.Rows, s.Batches)
	fmt.Fprintf(w, "  dead letters     %d\n", s.DeadLetters)
	if s.WaitedForMemory > 0 {
		fmt.Fprintf(w, "  waited for memory %s (summed over partitions; batch.memory_budget)\n", s.WaitedForMemory.Round(time.Millisecond))
	}
	if s.FloorFetches > 0 {
		fmt.Fprintf(w, "  floor fetches     %d (16 KiB each past a budget records already fetched held over its size)\n", s.FloorFetches)
	}
	if s.Filtered+s.Skipped+s.LostRecords > 0 {
		fmt.Fprintf(w, "  filtered         %d, skipped %d, lost to retention %d\n", s.Filtered, s.Skipped, s.LostRecords)
	}
	total := s.SameRackBytes + s.CrossRackBytes
	share := 0.0
	if total > 0 {
		share = 100 * float64(s.SameRackBytes) / float64(total)
	}
	fmt.Fprintf(w, "  fetched bytes    %d same-rack, %d cross-rack (%.1f%% local)\n", s.SameRackBytes, s.CrossRackBytes, share)
	racks := make([]string, 0, len(s.BytesByRack))
	for r := range s.BytesByRack {
		racks = append(racks, r)
	}
	sort.Strings(racks)
	for _, r := range racks {
		name := r
		if name == "" {
			name = "(no rack)"
		}
		fmt.Fprintf(w, "    from %-10s %d\n", name, s.BytesByRack[r])
	}
}
