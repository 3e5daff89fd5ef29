package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/logstore/logstore/internal/clock"
	"github.com/logstore/logstore/pipeline"
)

// terminalRefresh is how often the live line on a terminal is rewritten.
const terminalRefresh = time.Second

// showProgress reports a bounded run's progress (records/s, rows written,
// records left, ETA) until the returned function is called when the run
// ends. On a terminal it is one line on w, rewritten in place, cleared
// when the stop begins (Ctrl-C) and at the end; elsewhere a log line every
// interval and a last one at the end, so a long backfill in a container
// never looks hung. An interval of 0 shows nothing.
func showProgress(ctx context.Context, progress func() pipeline.Progress, interval time.Duration, log *slog.Logger, w io.Writer) (done func()) {
	if interval <= 0 {
		return func() {}
	}
	line, live := terminalLine(w)
	tick := interval
	if live {
		tick = terminalRefresh
	}
	stop := clock.Every(ctx, tick, func() {
		if live {
			line.show(ctx, progress().Line())
		} else {
			logProgress(log, progress().LogAttrs()...)
		}
	})
	if !live {
		return func() {
			stop()
			logProgress(log, append(progress().LogAttrs(), "final", true)...)
		}
	}
	ended := make(chan struct{})
	cleared := make(chan struct{})
	go func() {
		defer close(cleared)
		select {
		case <-ctx.Done(): // the stop began: its log lines start on a clean line
		case <-ended:
		}
		line.clear()
	}()
	return func() {
		stop()
		close(ended)
		<-cleared
	}
}

// logProgress logs at INFO whatever log.level says: run.progress_interval
// asked for these lines, and at the demo's warn they were never shown.
func logProgress(log *slog.Logger, attrs ...any) {
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "progress", 0)
	r.Add(attrs...)
	_ = log.Handler().Handle(context.Background(), r)
}

// liveLine is the one progress line a terminal shows, rewritten in place.
// The log writes to the same terminal through it, and it clears the line
// before each log line, so a warning never lands at the end of the
// progress and the progress never stays on screen under it.
type liveLine struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool
}

// terminals holds one liveLine per terminal, shared by the log and the
// progress that write to it.
var terminals = struct {
	sync.Mutex
	lines map[*os.File]*liveLine
}{lines: map[*os.File]*liveLine{}}

// terminalLine is w's liveLine when w is a terminal.
func terminalLine(w io.Writer) (*liveLine, bool) {
	if l, ok := w.(*liveLine); ok {
		return l, true
	}
	f, ok := w.(*os.File)
	if !ok || !isTerminal(f) {
		return nil, false
	}
	terminals.Lock()
	defer terminals.Unlock()
	l := terminals.lines[f]
	if l == nil {
		l = &liveLine{w: f}
		terminals.lines[f] = l
	}
	return l, true
}

func (l *liveLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clearLocked()
	return l.w.Write(p)
}

// show draws s unless the run is stopping.
func (l *liveLine) show(ctx context.Context, s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	fmt.Fprintf(l.w, "\r%s\x1b[K", s) // \x1b[K: clear what a longer line left
	l.shown = true
}

func (l *liveLine) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clearLocked()
}

func (l *liveLine) clearLocked() {
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.shown = false
	}
}
