package pipeline

import (
	"fmt"
	"time"
)

// Progress is where a bounded run (--until now, --from/--to) stands: what
// it did, what is left to its end offsets, and when it will get there at
// the rate so far.
type Progress struct {
	Records          int64   // records read
	Rows             int64   // rows written and committed
	RecordsPerSecond float64 // since the first record; 0 before it
	// Remaining is the records between the next offsets and the end
	// offsets of this member's partitions; -1 until every one was fetched.
	Remaining int64
	// ETA is Remaining at RecordsPerSecond; -1 while either is unknown.
	ETA time.Duration
}

// Bounded says the run ends by itself at a target.
func (m Mode) Bounded() bool { return m.UntilNow || m.replay() }

// aim records the run's end offset for the partition; -1 is no end.
func (p *partitionStats) aim(target int64) *partitionStats {
	if target >= 0 {
		p.target.Store(target)
		p.bounded.Store(true)
	}
	return p
}

// from records where the partition's worker begins, so a partition that
// starts at its end offset (an empty one) counts 0 left without a fetch.
func (p *partitionStats) from(next int64) {
	if p != nil {
		p.next.Store(next)
		p.positioned.Store(true)
	}
}

// remaining is the records left to the partition's end offset (the lag
// behind the high watermark when it has none); false before its worker
// began.
func (p *partitionStats) remaining() (int64, bool) {
	if !p.positioned.Load() {
		return 0, false
	}
	if p.bounded.Load() {
		return max(p.target.Load()-p.next.Load(), 0), true
	}
	return p.lag.Load(), true
}

// remaining sums the assigned partitions' records left; -1 while any is
// unknown or none is assigned yet.
func (c *partitionCollector) remaining() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.parts) == 0 {
		return -1
	}
	var sum int64
	for _, p := range c.parts {
		n, ok := p.remaining()
		if !ok {
			return -1
		}
		sum += n
	}
	return sum
}

// Progress reads the run's counters and the partitions' positions now.
func (j *Job) Progress() Progress {
	var reading time.Duration
	if t := j.stats.FirstRecord.Load(); t != 0 {
		reading = time.Since(time.Unix(0, t))
	}
	return progressFrom(j.stats.Records.Load(), j.stats.Rows.Load(), j.metrics.partitions.remaining(), reading)
}

// progressFrom is the rate and ETA arithmetic: reading is the time since the
// first record.
func progressFrom(records, rows, remaining int64, reading time.Duration) Progress {
	p := Progress{Records: records, Rows: rows, Remaining: remaining, ETA: -1}
	if reading > 0 && records > 0 {
		p.RecordsPerSecond = float64(records) / reading.Seconds()
	}
	switch {
	case remaining == 0:
		p.ETA = 0
	case remaining > 0 && p.RecordsPerSecond > 0:
		p.ETA = time.Duration(float64(remaining) / p.RecordsPerSecond * float64(time.Second)).Round(time.Second)
	}
	return p
}

// Line is the progress for a person, one line short enough for a terminal.
func (p Progress) Line() string {
	left, eta := "? left", "ETA ?"
	if p.Remaining >= 0 {
		left = fmt.Sprintf("%d left", p.Remaining)
	}
	if p.ETA >= 0 {
		eta = "ETA " + p.ETA.String()
	}
	return fmt.Sprintf("%.0f records/s, %d rows written, %s, %s", p.RecordsPerSecond, p.Rows, left, eta)
}

// LogAttrs are the progress as slog key-value pairs; unknown values are
// left out rather than logged as -1.
func (p Progress) LogAttrs() []any {
	attrs := []any{"records", p.Records, "rows", p.Rows, "records_per_s", int64(p.RecordsPerSecond)}
	if p.Remaining >= 0 {
		attrs = append(attrs, "remaining", p.Remaining)
	}
	if p.ETA >= 0 {
		attrs = append(attrs, "eta", p.ETA.String())
	}
	return attrs
}
