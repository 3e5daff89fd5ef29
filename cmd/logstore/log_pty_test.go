//go:build linux

package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logstore/logstore/pipeline"
)

// TestLogFormatAutoOnTerminal: with log.format auto, a terminal (a pseudo
// terminal's slave end here) gets text lines.
func TestLogFormatAutoOnTerminal(t *testing.T) {
	ptmx, tty := openPTY(t)

	newLogger(pipeline.LogConfig{Level: "info", Format: "auto"}, tty).Info("on a terminal", "rack", "az-a")
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 4096)
		n, _ := ptmx.Read(buf)
		got <- string(buf[:n])
	}()
	select {
	case line := <-got:
		if !strings.Contains(line, `level=INFO msg="on a terminal" rack=az-a`) {
			t.Errorf("auto on a terminal wrote %q, want a text line", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing reached the terminal")
	}
}

// openPTY opens a pseudo terminal: its master end, and the slave end a
// program sees as its terminal. Both close with the test.
func openPTY(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening a pseudo terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return ptmx, tty
}
