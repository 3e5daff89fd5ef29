package pipeline

import (
	"fmt"
	"time"
)

// advisedFilesPerHour is the rate of Parquet files above which the job
// says what its layout costs: one a second. Each file is a write (an S3
// PUT) and a resume record; and a file of a few hundred rows compresses
// and reads worse than one of many thousands.
const advisedFilesPerHour = 3600

// FilesAdvice says what the files sink's layout costs for an input of
// partitions partitions: it writes a file per Kafka partition (per
// partition_by folder) for each batch, and a batch is cut at
// batch.max_age at the latest, so a job whose partitions all have rows
// writes up to partitions × (1h / max_age) files an hour, however few
// rows each holds. Over one a second it says so and names the max_age
// that keeps it under (a partition's rows wait longer in the spool, not
// in memory: staged rows are on disk). "" when the job writes no files
// or the rate is lower. A table (sinks.iceberg) is not counted: a
// member's cycle stores its data files one per table partition, whatever
// the Kafka partitions.
func FilesAdvice(partitions int, cfg *Config) string {
	if partitions <= 0 || cfg.Sinks.Files == nil {
		return ""
	}
	maxAge := cfg.Batch.MaxAge
	if maxAge <= 0 {
		return ""
	}
	perHour := int64(partitions) * int64((time.Hour+maxAge-1)/maxAge)
	if perHour <= advisedFilesPerHour {
		return ""
	}
	// partitions seconds keeps the rate at one a second; whole minutes.
	advised := (time.Duration(partitions)*time.Second + time.Minute - 1).Truncate(time.Minute)
	return fmt.Sprintf("%d input partitions with batch.max_age %s: up to %d Parquet files an hour "+
		"(one per Kafka partition and folder at least every max_age while it has rows, however few), "+
		"each a write and a resume record; "+
		"batch.max_age: %s keeps it at one a second or fewer (files then hold more rows and read faster; "+
		"rows wait in the spool on disk, not in memory)",
		partitions, maxAge, perHour, fmtMinutes(advised))
}

// fmtMinutes writes a whole number of minutes as YAML takes it: 10m, 1h30m.
func fmtMinutes(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	if d > time.Hour {
		return fmt.Sprintf("%dh%dm", d/time.Hour, d%time.Hour/time.Minute)
	}
	return fmt.Sprintf("%dm", d/time.Minute)
}
