package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/logstore/logstore/internal/clock"
	"github.com/logstore/logstore/pipeline"
)

// terminalRefresh is how often the live line on a terminal is rewritten.
const terminalRefresh = time.Second

// showProgress reports a bounded run's progress (records/s, rows written,
// records left, ETA) until the returned function is called when the run
// ends. On a terminal it is one line on w, rewritten in place and cleared
// at the end; elsewhere a log line every interval and a last one at the
// end, so a long backfill in a container never looks hung. An interval of
// 0 shows nothing.
func showProgress(ctx context.Context, job *pipeline.Job, interval time.Duration, log *slog.Logger, w io.Writer) (done func()) {
	if interval <= 0 {
		return func() {}
	}
	live := isTerminal(w)
	tick := interval
	if live {
		tick = terminalRefresh
	}
	stop := clock.Every(ctx, tick, func() {
		p := job.Progress()
		if live {
			fmt.Fprintf(w, "\r%s\x1b[K", p.Line()) // \x1b[K: clear what a longer line left
		} else {
			log.Info("progress", p.LogAttrs()...)
		}
	})
	return func() {
		stop()
		if live {
			fmt.Fprint(w, "\r\x1b[K")
			return
		}
		log.Info("progress", append(job.Progress().LogAttrs(), "final", true)...)
	}
}
