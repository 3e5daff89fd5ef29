//go:build integration

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/loggen"
	"github.com/logstore/logstore/internal/testkit"
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
	runs []*strings.Builder // every process's output, for CHAOS_LOGS
	env  []string           // set for this member alone
}

func (m *chaosMember) start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	cmd := exec.Command(logstoreBinary(m.t), "run", "-c", m.cfg)
	cmd.Env = append(append(os.Environ(), "LOGSTORE_RACK="+m.rack), m.env...)
	m.out = &strings.Builder{}
	m.runs = append(m.runs, m.out)
	cmd.Stdout, cmd.Stderr = m.out, m.out
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	m.cmd, m.done = cmd, done
}

// saveLogs writes what every process of m printed to dir (CHAOS_LOGS), one
// file a process, to read after a failed run.
func (m *chaosMember) saveLogs(dir string, index int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, out := range m.runs {
		name := filepath.Join(dir, fmt.Sprintf("member%d-%s-run%d.log", index, m.rack, i))
		if err := os.WriteFile(name, []byte(out.String()), 0o644); err != nil {
			m.t.Errorf("saving a member's log: %v", err)
		}
	}
}

// output is what the running process printed so far.
func (m *chaosMember) output() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.out.String()
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
// records, one poison record, a flood of malformed records in one
// partition and a few records whose timestamps are microseconds written as
// milliseconds, writing to S3 through a proxy that can answer 503 and
// spooling on a small filesystem of their own, while a seeded schedule of
// faults plays out: members SIGKILLed at random moments and restarted, a
// fourth member joining and leaving (two rebalances), a broker stopped and
// started, S3 down (every request 503) and S3 flaky (a share of requests
// 503), the spool's disk full, the offsets of half the partitions deleted,
// and the group deleted with its offsets (as after
// offsets.retention.minutes). No partition may stand still for longer than
// stallSlack while no fault is under way (faults that come one after
// another add up: a partition may wait each of them out). Once everything is committed pyarrow
// checks that every good record is in the bucket exactly once with its
// values and every bad one once in _errors/, and reads every file back
// with its pages' checksums.
// CHAOS_RECORDS, CHAOS_EVENTS, CHAOS_RATE (records/s per member),
// CHAOS_FLOOD (malformed records in the flood) and CHAOS_SEED size it;
// CHAOS_LOGS=dir keeps every member process's log there;
// scripts/chaos/run.sh runs the long version. The disk-full fault mounts a
// tmpfs and so needs root; other users run without it.
func TestChaos(t *testing.T) {
	const partitions, badEvery = 6, 100
	n := envInt("CHAOS_RECORDS", 60_000) / partitions * partitions
	events := envInt("CHAOS_EVENTS", 7)
	rate := envInt("CHAOS_RATE", 200)
	flood := envInt("CHAOS_FLOOD", 3000)
	seed := uint64(envInt("CHAOS_SEED", int(time.Now().UnixNano()%1e9)))
	rng := rand.New(rand.NewPCG(seed, 1))
	spool, diskFull := "", os.Geteuid() == 0
	if diskFull {
		spool = smallDisk(t, strconv.Itoa(spoolDiskBytes))
	} else {
		t.Log("not root: the spool stays on the default disk and the disk-full fault is left out (it mounts a tmpfs)")
	}
	kinds := chaosKinds
	if !diskFull {
		kinds = slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k == "disk-full" })
	}
	plan := chaosPlan(rng, events, kinds)
	t.Logf("chaos: %d records and a flood of %d malformed, %d records/s per member, seed %d, plan %v", n, flood, rate, seed, plan)

	bucket, direct, proxy := s3BehindProxy(t)

	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, badEvery)
	w := &kafka.Writer{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Topic: topic, RequiredAcks: kafka.RequireAll,
		Balancer: kafka.BalancerFunc(func(kafka.Message, ...int) int { return 0 })}
	if err := w.WriteMessages(context.Background(), kafka.Message{Value: poisonRecord(t), Time: e2eStart}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	poisonAt := n / partitions // partition 0's next offset
	odd := produceOddRecords(t, topic, n/partitions, flood)

	out := "s3://" + bucket + "/chaos"
	group := topic + "-g"
	cfg := e2eConfig(t, topic, group, "/unused", 1500)
	text := strings.Replace(readFile(t, cfg), "url: file:///unused", "url: "+out, 1)
	text = strings.Replace(text, `{name: hour, column: ts, format: "15"}]`, `{name: hour, column: ts, format: "15"}, {name: svc, column: service}]`, 1)
	text = strings.Replace(text, "  group: ", "  max_records_per_second: "+strconv.Itoa(rate)+"\n  group: ", 1)
	// The smallest budget: the flood's dead letters fill it before max_rows.
	text = strings.Replace(text, "  max_age: 2s\n", "  max_age: 2s\n  memory_budget: 16777216\n", 1)
	if spool != "" {
		text = strings.Replace(text, "    url: "+out+"\n", "    url: "+out+"\n    spool_dir: "+spool+"\n", 1)
	}
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	var members []*chaosMember
	for _, rack := range []string{"az-a", "az-b", "az-c"} {
		m := &chaosMember{t: t, cfg: cfg, rack: rack}
		m.start()
		members = append(members, m)
	}
	var visitors []*chaosMember // the members that joined and left
	defer func() {
		for _, m := range members {
			m.stop(syscall.SIGKILL)
		}
		if dir := os.Getenv("CHAOS_LOGS"); dir != "" {
			for i, m := range append(members, visitors...) {
				m.saveLogs(dir, i)
			}
			t.Logf("the members' logs are in %s", dir)
		}
	}()
	// Faults land once batches are being committed, so that some hit a
	// pending cut.
	for deadline := time.Now().Add(90 * time.Second); committedTotal(t, group, topic, partitions) == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing committed in 90 s:\n%s", tail(members[0].out.String(), 30))
		}
	}
	end := int64(n + 1 + len(odd.offsets))
	ends := make([]int64, partitions)
	for p := range ends {
		ends[p] = int64(n / partitions)
	}
	ends[0]++ // the poison record
	for _, o := range odd.offsets {
		ends[o.partition]++
	}
	faults := &faultWindows{}
	stalls := watchStalls(t, group, topic, ends, faults)
	pause := func(min, spread int) { time.Sleep(time.Duration(min+rng.IntN(spread)) * time.Millisecond) }
	began, midRun := time.Now(), 0
	var longest time.Duration // the longest fault
	diskHits := 0             // members that met the full disk
	for i, ev := range plan {
		pause(500, 2500)
		before := committedTotal(t, group, topic, partitions)
		faultBegan := time.Now()
		if before < int64(n) {
			midRun++
		}
		switch ev {
		case "kill":
			m := members[rng.IntN(len(members))]
			m.stop(syscall.SIGKILL)
			m.start()
			ev += " " + m.rack
		case "join-leave":
			m := &chaosMember{t: t, cfg: cfg, rack: []string{"az-a", "az-b", "az-c"}[rng.IntN(3)]}
			visitors = append(visitors, m)
			m.start()
			pause(3000, 3000)
			m.stop(syscall.SIGTERM)
			ev += " " + m.rack
		case "broker":
			node := strconv.Itoa(1 + rng.IntN(3))
			testkit.ClusterScript(t, "stop-node", node)
			pause(5000, 5000)
			testkit.ClusterScript(t, "start-node", node)
			ev += " " + node
		case "s3-down":
			proxy.SetFailRate(1)
			pause(5000, 5000)
			proxy.SetFailRate(0)
		case "s3-flaky":
			proxy.SetFailRate(0.3)
			pause(8000, 4000)
			proxy.SetFailRate(0)
		case "disk-full":
			filler := fillDisk(t, spool)
			keepFull(t, filler, time.Duration(5000+rng.IntN(5000))*time.Millisecond)
			for _, m := range members {
				if strings.Contains(m.output(), "no space left on device") {
					diskHits++
				}
			}
			if err := os.Remove(filler); err != nil {
				t.Errorf("freeing the spool's disk: %v", err)
			}
		}
		longest = max(longest, time.Since(faultBegan))
		faults.add(faultBegan)
		t.Logf("%5.1fs event %d: %s (committed %d of %d before)", time.Since(began).Seconds(), i+1, ev, before, end)
		faultBegan = time.Now()
		switch i {
		case len(plan) / 4:
			withGroupStopped(t, group, members, "the offsets of partitions 0, 2, 4 deleted", func(c *kafka.Client) error {
				resp, err := c.OffsetDelete(context.Background(), &kafka.OffsetDeleteRequest{GroupID: group, Topics: map[string][]int{topic: {0, 2, 4}}})
				if err != nil {
					return err
				}
				err = resp.Error
				for _, ps := range resp.Topics {
					for _, p := range ps {
						err = errors.Join(err, p.Error)
					}
				}
				return err
			})
		case len(plan) / 2:
			withGroupStopped(t, group, members, "the group deleted with its offsets", func(c *kafka.Client) error {
				resp, err := c.DeleteGroups(context.Background(), &kafka.DeleteGroupsRequest{GroupIDs: []string{group}})
				if err == nil {
					err = resp.Errors[group]
				}
				return err
			})
		}
		longest = max(longest, time.Since(faultBegan))
		faults.add(faultBegan)
	}
	wait := max(4*time.Minute, time.Duration(3*(n+flood)/(3*rate))*time.Second)
	for deadline := time.Now().Add(wait); committedTotal(t, group, topic, partitions) < end; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stalled: committed %d of %d after %s:\n%s", committedTotal(t, group, topic, partitions), end, wait, tail(members[0].out.String(), 30))
		}
	}
	for _, m := range members {
		m.stop(syscall.SIGTERM)
	}
	worst := stalls()
	if worst.outside > stallSlack {
		t.Errorf("partition %d stood still for %s with records to read (from %.1fs into the run), %s of it while no fault was under way: "+
			"a partition may wait out a fault, not more (stallSlack %s)", worst.partition, worst.d.Round(time.Second), worst.at.Sub(began).Seconds(),
			worst.outside.Round(time.Second), stallSlack)
	}

	t.Setenv("AWS_ENDPOINT_URL_S3", direct) // pyarrow reads the bucket itself
	var sample []string
	for i := 0; i < n; i += n / 50 {
		if i%badEvery != badEvery-1 {
			sample = append(sample, strconv.Itoa(i%partitions)+":"+strconv.Itoa(i/partitions))
		}
	}
	v := verifyWithPyarrow(t, out, sample)
	good, bad := expect(n, partitions, badEvery)
	b, ok := bad["0"]
	if !ok {
		b.Min = poisonAt
	}
	b.Count, b.Distinct, b.Sum, b.Max = b.Count+1, b.Distinct+1, b.Sum+int64(poisonAt), poisonAt
	bad["0"] = b
	for _, o := range odd.offsets {
		m := good
		if o.bad {
			m = bad
		}
		s, ok := m[strconv.Itoa(o.partition)]
		if !ok {
			s.Min = int(o.offset)
		}
		s.Count, s.Distinct, s.Sum, s.Max = s.Count+1, s.Distinct+1, s.Sum+o.offset, max(s.Max, int(o.offset))
		m[strconv.Itoa(o.partition)] = s
	}
	checkCounts(t, v, good, bad)
	checkSampleValues(t, v.Sample, n, partitions, badEvery)
	checkEveryFile(t, out)
	if midRun < (len(plan)+1)/2 {
		t.Errorf("only %d of %d faults landed before the topic was read: they prove little (lower CHAOS_RATE)", midRun, len(plan))
	}
	if diskFull && diskHits == 0 {
		t.Log("note: no member wrote to the spool while its disk was full this run")
	}
	if proxy.Failed.Load() == 0 {
		// The members may be between batches through a short S3 window;
		// the counts above are the assertion, this says what was shown.
		t.Log("note: no S3 request fell in the S3 fault windows this run")
	}
	t.Logf("chaos: %d rows and %d dead letters, each once (reasons %v); %d events %v, %d S3 requests answered 503, %d members met the full disk; "+
		"the longest fault %s, the longest a partition stood still outside the faults %s (partition %d, %s in all)",
		v.Rows, v.DeadLetters, v.Reasons, len(plan), plan, proxy.Failed.Load(), diskHits, longest.Round(time.Second), worst.outside.Round(time.Second), worst.partition, worst.d.Round(time.Second))
}

// chaosKinds are the faults a chaos plan draws from.
var chaosKinds = []string{"kill", "join-leave", "broker", "s3-down", "s3-flaky", "disk-full"}

// chaosPlan is a seeded order of n faults with every kind at least once
// (when n allows) and kills for the rest, the likeliest fault in production.
func chaosPlan(rng *rand.Rand, n int, kinds []string) []string {
	plan := make([]string, 0, n)
	for i := 0; i < n; i++ {
		switch {
		case i < len(kinds):
			plan = append(plan, kinds[i])
		case rng.IntN(2) == 0:
			plan = append(plan, "kill")
		default:
			plan = append(plan, kinds[rng.IntN(len(kinds))])
		}
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	return plan
}

// withGroupStopped stops every member gracefully (they flush, commit and
// leave), runs change on the emptied group (deleting offsets or the whole
// group, as offsets.retention.minutes does), and restarts them: the
// output's resume records must carry the job on.
func withGroupStopped(t *testing.T, group string, members []*chaosMember, what string, change func(*kafka.Client) error) {
	t.Helper()
	for _, m := range members {
		m.stop(syscall.SIGTERM)
	}
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 30 * time.Second}
	// Members killed earlier stay in the group until their session ends.
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(time.Second) {
		err := change(client)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
	}
	t.Logf("group %s: %s", group, what)
	for _, m := range members {
		m.start()
	}
}
