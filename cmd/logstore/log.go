package main

import (
	"io"
	"log/slog"
	"os"

	"golang.org/x/term"

	"github.com/logstore/logstore/pipeline"
)

// newLogger makes the job's structured log on w (stderr): log.level, and
// log.format json, text, or auto, which is text when w is a terminal and
// JSON otherwise (a container's log collector, a file, a pipe).
func newLogger(c pipeline.LogConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	text := logsText(c.Format, w)
	if line, ok := terminalLine(w); ok {
		w = line // a log line first clears a bounded run's live progress line
	}
	var log *slog.Logger
	if text {
		log = slog.New(slog.NewTextHandler(w, opts))
	} else {
		log = slog.New(slog.NewJSONHandler(w, opts))
	}
	slog.SetDefault(log) // for the libraries' own warnings (S3 retries)
	return log
}

func logsText(format string, w io.Writer) bool {
	switch format {
	case "text":
		return true
	case "json":
		return false
	}
	return isTerminal(w)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
