//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/pipeline"

	"github.com/logstore/logstore/internal/testkit"
)

// TestBoundedRunLiveLineOnTerminal: on a terminal a bounded run rewrites
// one line in place (\r, then clear to the end of the line) and clears it
// at the end, logging no progress lines.
func TestBoundedRunLiveLineOnTerminal(t *testing.T) {
	msgs := make([]kafka.Message, 2500)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil, `{"n": %d}`, i)}
	}
	brokers := embeddedKafka(t, 2, msgs...)
	// 1000 records/s in fetches of about 100 records: the run lasts over
	// two of the terminal's one-second refreshes, and the count moves.
	cfg := embeddedJob(t, brokers, t.TempDir(), "  max_records_per_second: 1000\n  fetch: {max_bytes: 2048}", "run:\n  progress_interval: 200ms\n")
	ptmx, tty := openPTY(t)
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		io.Copy(&screen, ptmx) // ends with EIO once the slave end is closed
	}()
	var logs testkit.LogBuffer
	err := runJob(t.Context(), cfg, pipeline.Mode{UntilNow: true}, pipeline.Deps{Log: slog.New(slog.NewTextHandler(&logs, nil))}, new(bytes.Buffer), tty)
	tty.Close()
	<-read
	if err != nil {
		t.Fatalf("run: %v\n%s", err, logs.String())
	}
	out := screen.String()
	t.Logf("the terminal got %q", out)
	live := regexp.MustCompile(`\r\d+ records/s, \d+ rows written, (\d+|\?) left, ETA [^\r\n\x1b]+\x1b\[K`)
	lines := live.FindAllStringSubmatch(out, -1)
	if len(lines) == 0 {
		t.Errorf("no live progress line on the terminal: %q", out)
	}
	if known := lines[len(lines)-1]; len(lines) > 0 && (strings.HasPrefix(known[0], "\r0 records/s") || known[1] == "?") {
		t.Errorf("the last live line before the end knows no rate or no records left: %q", known[0])
	}
	if !strings.HasSuffix(out, "\r\x1b[K") || strings.Contains(out, "\n") {
		t.Errorf("the terminal should end cleared, on the same line: %q", out)
	}
	if strings.Contains(logs.String(), "msg=progress") {
		t.Errorf("progress logged as well as shown:\n%s", logs.String())
	}
}

// TestLiveLineClearedWhenStopped: Ctrl-C during a bounded run on a
// terminal left the live line on screen, with the stop's log lines
// written after it on the same line. The line is cleared once the stop
// begins, and a log line never follows a live line on the same line.
func TestLiveLineClearedWhenStopped(t *testing.T) {
	msgs := make([]kafka.Message, 5000)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil, `{"n": %d}`, i)}
	}
	brokers := embeddedKafka(t, 2, msgs...)
	cfg := embeddedJob(t, brokers, t.TempDir(), "  max_records_per_second: 500\n  fetch: {max_bytes: 2048}", "run:\n  progress_interval: 200ms\n")
	ptmx, tty := openPTY(t)
	var mu sync.Mutex
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	log := newLogger(pipeline.LogConfig{Level: "info", Format: "text"}, tty)
	ctx, stop := context.WithCancel(t.Context())
	go func() {
		// Once the live line is on screen, a warning (as the job logs
		// one) and the stop (as Ctrl-C does).
		for ctx.Err() == nil {
			mu.Lock()
			shown := strings.Contains(screen.String(), " records/s, ")
			mu.Unlock()
			if shown {
				time.Sleep(300 * time.Millisecond)
				log.Warn("a warning while the live line is shown")
				time.Sleep(300 * time.Millisecond)
				stop()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	err := runJob(ctx, cfg, pipeline.Mode{UntilNow: true}, pipeline.Deps{Log: log}, new(bytes.Buffer), tty)
	stop()
	tty.Close()
	<-read
	out := screen.String()
	if !errors.Is(err, pipeline.ErrStoppedEarly) {
		t.Fatalf("run: %v\n%q", err, out)
	}
	t.Logf("the terminal got %q", out)
	// After a live line comes a redraw or a clear (\r), never other text.
	live := regexp.MustCompile(`\d+ records/s, \d+ rows written, [^\r\n\x1b]+\x1b\[K([^\r]|$)`)
	if m := live.FindString(out); m != "" {
		t.Errorf("a live line was left on screen, followed by other text: %q", m)
	}
	if strings.LastIndex(out, "records/s") > strings.LastIndex(out, "\r\x1b[K") {
		t.Errorf("the live line was not cleared at the end: %q", out)
	}
	if !strings.Contains(out, "\r\x1b[Ktime=") {
		t.Errorf("the warning did not start on a cleared line: %q", out)
	}
}
