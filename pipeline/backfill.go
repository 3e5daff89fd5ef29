package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/logstore/logstore/pipeline/start"
	"github.com/logstore/logstore/sink"
)

// BackfillPrefix is where a backfill of [from, to) writes, below the
// files sink's root: _backfill/{from}_{to}/. Spark, Hive, Trino and Athena
// skip folders that start with '_', so the table at the root never trips
// on it (a plain folder there would break Spark's partition discovery);
// the backfill reads as a table of its own at that folder. Re-running the
// same range writes to the same folder.
func BackfillPrefix(from, to time.Time) string {
	const f = "20060102T150405Z"
	return "_backfill/" + from.UTC().Format(f) + "_" + to.UTC().Format(f) + "/"
}

// backfillManifest is what makes a backfill repeatable: the offsets it
// covers and where it cuts, fixed by its first run. A re-run (after a
// crash, or on purpose) reads the same records and cuts them at the same
// offsets, so it overwrites the same files instead of adding others.
type backfillManifest struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Stride: batches end at offsets k·stride-1 (and at each range end).
	Stride int64 `json:"stride"`
	// Layout is the files layout's fingerprint; a re-run under another
	// layout would write other names, so it is refused.
	Layout string `json:"layout,omitempty"`
	// Ranges are each partition's [start, end) offsets.
	Ranges   map[string]map[int][2]int64 `json:"ranges"`
	Complete bool                        `json:"complete"`
	Written  time.Time                   `json:"written"`
}

const manifestName = "_manifest.json"

// backfillCost is the memory a record is assumed to hold when the stride
// is chosen: a 1 KiB log plus the row's per-column overhead.
func (j *Job) backfillCost() int64 { return int64(1024 + 48*len(j.decoder.Schema().Fields) + 96) }

// planBackfill resolves the range to offsets and chooses the stride: small
// enough that a batch of every partition fits batch.memory_budget together
// (backfill batches cannot be cut early, so they never wait for memory; see
// reserve), and at most batch.max_rows when that is set. It is never 0
// (max_rows' default): a backfill without planned cuts ends its batches
// where age, size or the budget say, and a re-run writes other names.
func (j *Job) planBackfill(ctx context.Context, mode Mode, parts map[string][]int) (*backfillManifest, error) {
	m := &backfillManifest{From: mode.From.UTC(), To: mode.To.UTC(), Ranges: map[string]map[int][2]int64{}}
	if j.layout != "" {
		m.Layout = start.Fingerprint(j.layout)
	}
	n := 0
	for topic, ps := range parts {
		starts, err := offsetsForTime(ctx, j.conn.Client, topic, ps, mode.From)
		if err != nil {
			return nil, err
		}
		ends, err := offsetsForTime(ctx, j.conn.Client, topic, ps, mode.To)
		if err != nil {
			return nil, err
		}
		m.Ranges[topic] = map[int][2]int64{}
		for _, p := range ps {
			m.Ranges[topic][p] = [2]int64{starts[p], max(starts[p], ends[p])}
			n++
		}
	}
	m.Stride = backfillStride(j.cfg.Batch, n, j.backfillCost())
	return m, nil
}

// backfillStride is the rows per backfill batch for n partitions of
// records of about cost bytes each.
func backfillStride(b BatchConfig, n int, cost int64) int64 {
	stride := max(1000, b.MemoryBudget/int64(max(n, 1))/cost)
	if b.MaxRows > 0 {
		stride = min(stride, int64(b.MaxRows))
	}
	return stride
}

// replayIntoTable refuses a backfill or replay of a job with a table,
// before it reads anything. Such a run writes beside the main output
// (Mode.Prefix) for review, and a table has no room beside itself; into
// the table itself, the records it holds (up to its positions) would be
// skipped, and the ones after them are the running job's, whose
// positions the run would race. What a user wants from one is done
// otherwise: history into a new table, or into one whose positions are
// behind the range, by the job itself with kafka.start_offset at the time
// (the table's positions win over any earlier start: what it holds is
// never written again); a range to review, by the backfill with
// sinks.files alone.
func replayIntoTable(cfg *Config) error {
	if cfg.Sinks.Iceberg == nil {
		return nil
	}
	return fmt.Errorf("a backfill or replay writes beside the output for review, and the table sinks.iceberg (%s) has no room beside itself; "+
		"run it with sinks.files only, or, to load history into the table, run the job with kafka.start_offset at the time "+
		"(the table's positions skip what it holds: no record is written twice)", cfg.Sinks.Iceberg.Table)
}

// backfillFiles is the files sink a manifest lives in; nil without one
// (a Kafka-only backfill is at least once anyway).
func (j *Job) backfillFiles() *sink.Files {
	for _, s := range j.sinks {
		if f, ok := s.(*sink.Files); ok {
			return f
		}
	}
	return nil
}

// backfillPlan is the manifest of an earlier run of the same range, or a
// new one written before any data.
func (j *Job) backfillPlan(ctx context.Context, mode Mode, parts map[string][]int) (*backfillManifest, error) {
	files := j.backfillFiles()
	if files != nil {
		raw, err := files.GetMeta(ctx, mode.Prefix+manifestName)
		switch {
		case err == nil:
			var m backfillManifest
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, fmt.Errorf("backfill %s: the manifest is not valid: %w", mode.Prefix, err)
			}
			if m.Stride <= 0 {
				return nil, fmt.Errorf("backfill %s was planned without cut points (an older version, with batch.max_rows: 0), so a re-run cannot write the same names: "+
					"delete %s to run it again", mode.Prefix, mode.Prefix)
			}
			if j.layout != "" && m.Layout != start.Fingerprint(j.layout) {
				return nil, fmt.Errorf("backfill %s was written with files layout %s and the config now gives %s (partition_by, max_file_bytes or parquet changed): "+
					"restore them to finish it, or delete %s to start it over", mode.Prefix, m.Layout, start.Fingerprint(j.layout), mode.Prefix)
			}
			j.log.Info("backfill: re-running from its manifest; the same records are cut at the same offsets and overwrite the same files",
				"prefix", mode.Prefix, "complete", m.Complete, "stride", m.Stride)
			return &m, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("backfill %s: reading its manifest: %w", mode.Prefix, err)
		}
	}
	m, err := j.planBackfill(ctx, mode, parts)
	if err != nil {
		return nil, err
	}
	return m, j.saveManifest(ctx, mode, m)
}

func (j *Job) saveManifest(ctx context.Context, mode Mode, m *backfillManifest) error {
	files := j.backfillFiles()
	if files == nil {
		return nil
	}
	m.Written = time.Now().UTC()
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := files.PutMeta(ctx, mode.Prefix+manifestName, raw); err != nil {
		return fmt.Errorf("backfill %s: writing its manifest: %w", mode.Prefix, err)
	}
	return nil
}
