//go:build integration

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// smallDisk mounts a tmpfs of size bytes on a fresh folder, for as long as
// the test runs: a disk the test can fill and free. It needs root.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("mounting a small disk (tmpfs) for the spool needs root: run the integration tests as root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs on %s: %v\n%s", dir, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fillDisk writes a file into dir until the disk is full.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}

// TestE2ESpoolDiskFills: the spool folder is a 16 MiB disk (a tmpfs) that
// is filled for 8 s once the first batch is committed, while the other
// partitions' batches are being staged and closed there. Before, the
// failed close crashed the process (exit 2, a nil *os.File in
// stagedFolder.close). Now the partitions hold and read their lost
// batches again; once the disk has room the run finishes with every
// record once, as a row or a dead letter, and every file reads back whole
// with pyarrow: no row refused for the disk, no corrupt file, no batch
// committed without its files.
func TestE2ESpoolDiskFills(t *testing.T) {
	const n, partitions, badEvery = 60_000, 6, 100
	spool := smallDisk(t, "16m")
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, badEvery)
	group := topic + "-g"
	out := t.TempDir()
	cfg := e2eConfig(t, topic, group, out, 0)
	text := strings.Replace(readFile(t, cfg), "    url: file://"+out+"\n", "    url: file://"+out+"\n    spool_dir: "+spool+"\n", 1)
	text = strings.Replace(text, "  group: ", "  max_records_per_second: 3000\n  group: ", 1)
	text = strings.Replace(text, "max_age: 2s", "max_age: 1s", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(logstoreBinary(t), "run", "-c", cfg, "--until", "now")
	cmd.Env = append(os.Environ(), "LOGSTORE_RACK=az-a")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	for deadline := time.Now().Add(30 * time.Second); committedTotal(t, group, topic, partitions) == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing committed in 30 s:\n%s", tail(logs.String(), 20))
		}
	}
	filler := fillDisk(t, spool)
	time.Sleep(8 * time.Second)
	held := committedTotal(t, group, topic, partitions)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the run did not survive the full disk: %v\n%s", err, tail(logs.String(), 30))
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("the run did not finish within 3 min of the disk being freed:\n%s", tail(logs.String(), 30))
	}
	if !strings.Contains(logs.String(), "no space left on device") {
		t.Fatalf("the run never met the full disk; the test proves nothing:\n%s", tail(logs.String(), 20))
	}
	if strings.Contains(logs.String(), "a sink refused the row") {
		t.Errorf("a row was refused for the full disk:\n%s", tail(logs.String(), 20))
	}
	t.Logf("committed %d of %d records when the disk was freed; summary:\n%s", held, n, summaryOf(logs.String()))
	checkExactlyOnce(t, out, n, partitions, badEvery)
}
