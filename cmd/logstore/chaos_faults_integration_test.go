//go:build integration

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/loggen"
)

// spoolDiskBytes is the size of the filesystem the chaos members spool on:
// room for every open batch's files (the flood's dead letters compress to
// little), small enough to fill in a moment.
const spoolDiskBytes = 16 << 20

// stallSlack is how much longer than the longest fault a partition may
// stand still: a killed member's session timeout (10 s) and the rebalance
// after it, and a retry's backoff that began during the fault.
const stallSlack = 45 * time.Second

// smallDisk mounts a tmpfs of size bytes for the members' spool folder and
// says whether it could: mounting needs root (CAP_SYS_ADMIN), and the
// disk-full fault is left out for other users. As root, a mount that fails
// fails the test.
func smallDisk(t *testing.T, size int) (string, bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Log("not root: the spool stays on the default disk and the disk-full fault is left out (it mounts a tmpfs)")
		return "", false
	}
	dir := filepath.Join(t.TempDir(), "spool")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+strconv.Itoa(size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mounting a %d-byte tmpfs for the spool at %s: %v\n%s", size, dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("unmounting the spool's tmpfs %s: %v\n%s", dir, err, out)
		}
	})
	return dir, true
}

// fillDisk writes a file into dir until its filesystem has no room left
// (ENOSPC), and returns what frees it again.
func fillDisk(t *testing.T, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("filling the spool's disk: %v", err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the spool's disk ended with %v, want ENOSPC", err)
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Errorf("freeing the spool's disk: %v", err)
		}
	}
}

// oddRecord is where a record produceOddRecords added landed.
type oddRecord struct {
	partition int
	offset    int64
	bad       bool // malformed: a dead letter
}

type oddRecords struct{ offsets []oddRecord }

// microsAsMillis is a record timestamp written in microseconds by a
// producer that meant milliseconds: the year 58,000 or so, outside what a
// Parquet timestamp of a dead letter can hold. Kafka before 4.0 accepts it;
// 4.0 only with message.timestamp.after.max.ms raised on the topic.
var microsAsMillis = time.UnixMilli(e2eStart.UnixMicro())

// produceOddRecords appends, after the perPartition records each partition
// holds: a flood of flood malformed records of about 12 KiB in partition 1
// (together more than a member's memory budget), and five records stamped
// in microseconds as milliseconds in partition 2, three malformed, two good.
func produceOddRecords(t *testing.T, topic string, perPartition, flood int) oddRecords {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 30 * time.Second}
	resp, err := client.IncrementalAlterConfigs(context.Background(), &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic,
		Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "message.timestamp.after.max.ms", Value: "9223372036854775807", ConfigOperation: kafka.ConfigOperationSet}},
	}}})
	if err == nil && len(resp.Resources) > 0 {
		err = resp.Resources[0].Error
	}
	if err != nil {
		t.Fatalf("letting %s take timestamps far in the future: %v", topic, err)
	}
	var odd oddRecords
	to := func(p int) kafka.Balancer {
		return kafka.BalancerFunc(func(kafka.Message, ...int) int { return p })
	}
	w := &kafka.Writer{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Topic: topic, RequiredAcks: kafka.RequireAll,
		BatchSize: 500, BatchBytes: 16 << 20, BatchTimeout: 5 * time.Millisecond, Balancer: to(1)}
	filler := strings.Repeat("truncated ", 1200)
	msgs := make([]kafka.Message, flood)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil, `{"level": "info", "msg": "flood %d %s`, i, filler), Time: e2eStart}
		odd.offsets = append(odd.offsets, oddRecord{partition: 1, offset: int64(perPartition + i), bad: true})
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatalf("producing the flood: %v", err)
	}
	w.Close()

	gen := loggen.New(5, e2eStart, time.Millisecond)
	w = &kafka.Writer{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Topic: topic, RequiredAcks: kafka.RequireAll, Balancer: to(2)}
	defer w.Close()
	msgs = msgs[:0]
	for i := range 5 {
		bad := i%2 == 0
		value := []byte(`{"level": "warn", "ts": 17`)
		if !bad {
			_, v, _ := gen.Next()
			value = append([]byte(nil), v...)
		}
		msgs = append(msgs, kafka.Message{Value: value, Time: microsAsMillis})
		odd.offsets = append(odd.offsets, oddRecord{partition: 2, offset: int64(perPartition + i), bad: bad})
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatalf("producing records stamped in microseconds: %v", err)
	}
	return odd
}

// stall is the longest a partition stood still with records left to read.
type stall struct {
	partition int
	d         time.Duration
	at        time.Time // when it began
}

// watchStalls polls the group's committed offsets until stop is called and
// returns the longest time a partition's offset stayed where it was below
// its end. A partition with no committed offset (deleted by the test) is
// left as it stood: its resume record carries it on, and a new commit ends
// the wait.
func watchStalls(t *testing.T, group, topic string, ends []int64) (stop func() stall) {
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 10 * time.Second}
	parts := make([]int, len(ends))
	for p := range parts {
		parts[p] = p
	}
	last := make([]int64, len(ends))
	since := make([]time.Time, len(ends))
	for p := range since {
		since[p] = time.Now()
	}
	var (
		mu    sync.Mutex
		worst stall
	)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-time.After(500 * time.Millisecond):
			}
			resp, err := client.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
			if err != nil {
				continue // a broker stopped by the test: the next poll sees it
			}
			now := time.Now()
			mu.Lock()
			for _, po := range resp.Topics[topic] {
				p, o := po.Partition, po.CommittedOffset
				switch {
				case o < 0:
				case o != last[p]:
					last[p], since[p] = o, now
				case o < ends[p] && now.Sub(since[p]) > worst.d:
					worst = stall{partition: p, d: now.Sub(since[p]), at: since[p]}
				}
			}
			mu.Unlock()
		}
	}()
	return func() stall {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return worst
	}
}

// checkEveryFile reads every Parquet file below out (rows, dead letters,
// everything) with pyarrow, verifying each page's checksum: a file that
// does not read back whole is a corrupt one (scripts/chaos/checkfiles.py).
func checkEveryFile(t *testing.T, out string) {
	t.Helper()
	res, err := exec.Command("python3", filepath.Join("..", "..", "scripts", "chaos", "checkfiles.py"), out).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("checking every file: %v\n%s", err, msg)
	}
	var v struct {
		Files   int               `json:"files"`
		Rows    int               `json:"rows"`
		Corrupt map[string]string `json:"corrupt"`
	}
	if err := json.Unmarshal(res, &v); err != nil {
		t.Fatalf("checkfiles.py said %s: %v", res, err)
	}
	for f, why := range v.Corrupt {
		t.Errorf("%s does not read back: %s", f, why)
	}
	if v.Files == 0 {
		t.Error("no file read back")
	}
	t.Logf("every file read back with its checksums: %d files, %d rows", v.Files, v.Rows)
}
