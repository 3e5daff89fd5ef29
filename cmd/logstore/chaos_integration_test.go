//go:build integration

package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/loggen"
)

// chaosMember is one `logstore run` process in a rack, restarted at will.
type chaosMember struct {
	t    *testing.T
	cfg  string
	rack string
	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *strings.Builder
	done chan struct{}
}

func (m *chaosMember) start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	cmd := exec.Command(logstoreBinary(m.t), "run", "-c", m.cfg)
	cmd.Env = append(os.Environ(), "LOGSTORE_RACK="+m.rack)
	m.out = &strings.Builder{}
	cmd.Stdout, cmd.Stderr = m.out, m.out
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	m.cmd, m.done = cmd, done
}

// stop sends sig and waits for the process to end.
func (m *chaosMember) stop(sig syscall.Signal) {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.mu.Unlock()
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		m.t.Errorf("member %s did not stop on %v within 60 s:\n%s", m.rack, sig, tail(m.out.String(), 20))
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// poisonRecord is a valid log no sink can store: its service, a partition
// folder, makes a path element over 255 bytes. It must land once in the
// dead letters and hold nothing up.
func poisonRecord(t *testing.T) []byte {
	gen := loggen.New(99, e2eStart, time.Millisecond)
	_, value, _ := gen.Next()
	var m map[string]any
	if err := json.Unmarshal(value, &m); err != nil {
		t.Fatal(err)
	}
	m["service"] = strings.Repeat("poison-", 50)
	b, _ := json.Marshal(m)
	return b
}

// TestChaos runs three members (one per rack) over a topic with malformed
// records and one poison record, SIGKILLs random members at random moments
// and restarts them, stops them all half way and deletes the group (its
// offsets are gone, as after offsets.retention.minutes), restarts them, and
// once everything is committed checks with pyarrow that every good record
// is in the files exactly once and every bad one once in _errors/.
// CHAOS_RECORDS, CHAOS_KILLS and CHAOS_SEED size it; scripts/chaos/run.sh
// runs the long version.
func TestChaos(t *testing.T) {
	const partitions, badEvery = 6, 100
	n := envInt("CHAOS_RECORDS", 60_000) / partitions * partitions
	kills := envInt("CHAOS_KILLS", 4)
	seed := uint64(envInt("CHAOS_SEED", int(time.Now().UnixNano()%1e9)))
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("chaos: %d records, %d kills, seed %d", n, kills, seed)

	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, badEvery)
	w := &kafka.Writer{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Topic: topic, RequiredAcks: kafka.RequireAll,
		Balancer: kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 })}
	if err := w.WriteMessages(context.Background(), kafka.Message{Value: poisonRecord(t), Time: e2eStart}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	poisonAt := n / partitions // partition 0's next offset

	dir := t.TempDir()
	group := topic + "-g"
	cfg := e2eConfig(t, topic, group, dir, 1500)
	text := strings.Replace(readFile(t, cfg), `{name: hour, column: ts, format: "15"}]`, `{name: hour, column: ts, format: "15"}, {name: svc, column: service}]`, 1)
	text = strings.Replace(text, "  group: ", "  max_records_per_second: 1000\n  group: ", 1)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	var members []*chaosMember
	for _, rack := range []string{"az-a", "az-b", "az-c"} {
		m := &chaosMember{t: t, cfg: cfg, rack: rack}
		m.start()
		members = append(members, m)
	}
	defer func() {
		for _, m := range members {
			m.stop(syscall.SIGKILL)
		}
	}()
	// Kills land once batches are being committed, so that some hit a
	// pending cut.
	for deadline := time.Now().Add(90 * time.Second); committedTotal(t, group, topic, partitions) == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing committed in 90 s:\n%s", tail(members[0].out.String(), 30))
		}
	}
	for k := 0; k < kills; k++ {
		time.Sleep(time.Duration(500+rng.IntN(2500)) * time.Millisecond)
		m := members[rng.IntN(len(members))]
		m.stop(syscall.SIGKILL)
		t.Logf("kill %d: %s (committed %d)", k+1, m.rack, committedTotal(t, group, topic, partitions))
		m.start()
		if k == kills/2 {
			deleteGroup(t, group, members)
		}
	}
	end := int64(n + 1)
	for deadline := time.Now().Add(4 * time.Minute); committedTotal(t, group, topic, partitions) < end; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("committed %d of %d after 4 minutes:\n%s", committedTotal(t, group, topic, partitions), end, tail(members[0].out.String(), 30))
		}
	}
	for _, m := range members {
		m.stop(syscall.SIGTERM)
	}

	var sample []string
	for i := 0; i < n; i += n / 50 {
		if i%badEvery != badEvery-1 {
			sample = append(sample, strconv.Itoa(i%partitions)+":"+strconv.Itoa(i/partitions))
		}
	}
	v := verifyWithPyarrow(t, dir, sample)
	good, bad := expect(n, partitions, badEvery)
	b, ok := bad["0"]
	if !ok {
		b.Min = poisonAt
	}
	b.Count, b.Distinct, b.Sum, b.Max = b.Count+1, b.Distinct+1, b.Sum+int64(poisonAt), poisonAt
	bad["0"] = b
	checkCounts(t, v, good, bad)
	checkSampleValues(t, v.Sample, n, partitions, badEvery)
	t.Logf("chaos: %d rows, %d dead letters (reasons %v); %d kills, the group deleted once", v.Rows, v.DeadLetters, v.Reasons, kills)
}

// deleteGroup stops every member gracefully (they flush, commit and
// leave), deletes the group with its offsets, and restarts them: the
// output's resume records must carry the job on.
func deleteGroup(t *testing.T, group string, members []*chaosMember) {
	t.Helper()
	for _, m := range members {
		m.stop(syscall.SIGTERM)
	}
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 30 * time.Second}
	// Members killed earlier stay in the group until their session ends.
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(time.Second) {
		resp, err := client.DeleteGroups(context.Background(), &kafka.DeleteGroupsRequest{GroupIDs: []string{group}})
		if err == nil && resp.Errors[group] == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deleting group %s: %v %v", group, err, resp)
		}
	}
	t.Logf("group %s deleted with its offsets", group)
	for _, m := range members {
		m.start()
	}
}
