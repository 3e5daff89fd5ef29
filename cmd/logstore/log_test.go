package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"testing"

	"github.com/logstore/logstore/pipeline"
)

// TestLogFormat: json and text as asked; auto is JSON off a terminal (a
// pipe or a buffer: what a container's stderr is) and text on one
// (TestLogFormatAutoOnTerminal); log.level filters.
func TestLogFormat(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	lines := bufio.NewReader(pr)
	var buf bytes.Buffer
	tests := []struct {
		format string
		w      io.Writer
		json   bool
	}{
		{"json", pw, true},
		{"text", pw, false},
		{"auto", pw, true},
		{"auto", &buf, true},
		{"text", &buf, false},
	}
	for _, tt := range tests {
		log := newLogger(pipeline.LogConfig{Level: "warn", Format: tt.format}, tt.w)
		log.Info("dropped by the level")
		log.Warn("kept", "partition", 3)
		var line string
		if tt.w == pw {
			line, _ = lines.ReadString('\n')
		} else {
			line, _ = buf.ReadString('\n')
		}
		var m map[string]any
		isJSON := json.Unmarshal([]byte(line), &m) == nil
		if isJSON != tt.json || (isJSON && m["msg"] != "kept") || (!isJSON && !bytes.Contains([]byte(line), []byte("msg=kept partition=3"))) {
			t.Errorf("format %s on %T wrote %q; want JSON %v, only the warning", tt.format, tt.w, line, tt.json)
		}
	}
	if buf.Len() > 0 {
		t.Errorf("the info line got through log.level warn: %q", buf.String())
	}
}
