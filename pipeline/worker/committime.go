package worker

import (
	"strconv"
	"strings"
	"time"
)

// A commit of the next offset (b+1, the batch is in the outputs) carries
// the time it was made as its metadata, "at:<Unix ms>", so `logstore
// status` can say how long ago each partition moved: Kafka's OffsetFetch
// returns no commit time. The metadata of such a commit was empty, and
// every reader of marks takes anything not starting "cut:" as no mark, so
// a binary before this one reads these commits as it read the empty ones.
// A cut mark carries no time: its fields are read by position, and an
// older binary would misread a mark with one more.
const commitTimePrefix = "at:"

// commitTimeMeta is the metadata of a commit of the next offset made at t.
func commitTimeMeta(t time.Time) string {
	return commitTimePrefix + strconv.FormatInt(t.UnixMilli(), 10)
}

// CommitTime is the time in a commit's metadata; false when it holds none
// (a cut mark, or a commit by an older binary).
func CommitTime(meta string) (time.Time, bool) {
	ms, ok := strings.CutPrefix(meta, commitTimePrefix)
	if !ok {
		return time.Time{}, false
	}
	ms, _, _ = strings.Cut(ms, " ") // a transaction's commit: " from:<first>" follows
	v, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(v), true
}
