//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"

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
