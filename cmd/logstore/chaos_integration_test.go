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
	"regexp"
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
	"github.com/logstore/logstore/sink"
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
	// stopping: stop was called for the running process, which must not
	// be started again when it ends.
	stopping bool
	fired    []string // the failpoints its processes killed themselves at
	// killed is told of a process killed at a failpoint: its output and
	// when it died.
	killed func(output string, at time.Time)
}

func (m *chaosMember) start() { m.startAt("") }

// startAt starts the member with LOGSTORE_FAILPOINT=fp ("" for none): the
// process kills itself there and is started again at once without it, as
// a crashed pod is.
func (m *chaosMember) startAt(fp string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.spawn(fp); err != nil {
		m.t.Fatal(err)
	}
}

// spawn starts a process; the caller holds mu.
func (m *chaosMember) spawn(fp string) error {
	cmd := exec.Command(logstoreBinary(m.t), "run", "-c", m.cfg)
	cmd.Env = append(append(os.Environ(), "LOGSTORE_RACK="+m.rack), m.env...)
	if fp != "" {
		cmd.Env = append(cmd.Env, "LOGSTORE_FAILPOINT="+fp)
	}
	m.out = &strings.Builder{}
	m.runs = append(m.runs, m.out)
	cmd.Stdout, cmd.Stderr = m.out, m.out
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
		if fp == "" {
			return
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if m.cmd == cmd && !m.stopping && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			m.fired = append(m.fired, fp)
			if m.killed != nil {
				m.killed(m.out.String(), time.Now())
			}
			if err := m.spawn(""); err != nil {
				m.t.Errorf("restarting member %s after its failpoint %s: %v", m.rack, fp, err)
			}
		}
	}()
	m.cmd, m.done, m.stopping = cmd, done, false
	return nil
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

// logs is what every process of m printed.
func (m *chaosMember) logs() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, out := range m.runs {
		b.WriteString(out.String())
	}
	return b.String()
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
	m.stopping = true
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
// offsets.retention.minutes). With CHAOS_EXACTLY_ONCE=1 (scripts/chaos/run.sh
// sets it) the members also commit every batch to an Iceberg table (SQLite
// catalog) and write every row and dead letter to Kafka with
// sinks.kafka.delivery: exactly_once, to an output topic led in every
// zone; members come back from the kills and the group's restarts with a
// failpoint that kills them again at a step of the table's or the
// transaction's protocol (table files stored; committed to the table;
// every sink's files stored; rows in the transaction; the transaction
// whole, not ended; ended, the resume record not written), and the broker
// restarts and rebalances land on open transactions. No partition may stand still for longer than
// stallSlack while no fault is under way (faults that come one after
// another add up: a partition may wait each of them out). Once everything is committed pyarrow
// checks that every good record is in the bucket exactly once with its
// values and every bad one once in _errors/, and reads every file back
// with its pages' checksums; with CHAOS_EXACTLY_ONCE, pyiceberg finds
// every good record once in the table's current snapshot and no data file
// referenced twice, a read_committed consumer every good record once in
// the output topic and every bad one once in the dead-letter topic, by
// their source headers, and every failpoint fired. A final clean run
// (finalCleanRun) must leave no temporary file or unfinished upload.
// CHAOS_OUTPUT=file writes the files to a local folder instead of S3;
// CHAOS_RECORDS, CHAOS_EVENTS, CHAOS_RATE (records/s per member),
// CHAOS_FLOOD (malformed records in the flood), CHAOS_BUDGET (the members'
// memory_budget, 16 MiB) and CHAOS_SEED size it;
// CHAOS_OUTPUTS=table,kafka runs exactly once without the files sink
// (the table is the resume store), CHAOS_OUTPUTS=files,table the files
// and the table without Kafka (members killed at the table's and the
// files' steps); CHAOS_PLAN replays a plan (kinds separated by commas, e.g. kill,kill);
// CHAOS_LOGS=dir keeps every member process's log there; a stall prints
// the coordinator's and the members' lines around it;
// scripts/chaos/run.sh runs the long version. The disk-full fault mounts a
// tmpfs and so needs root; other users run without it.
func TestChaos(t *testing.T) {
	const partitions, badEvery = 6, 100
	n := envInt("CHAOS_RECORDS", 60_000) / partitions * partitions
	events := envInt("CHAOS_EVENTS", 7)
	rate := envInt("CHAOS_RATE", 200)
	flood := envInt("CHAOS_FLOOD", 3000)
	budget := envInt("CHAOS_BUDGET", 16<<20)
	exactlyOnce := os.Getenv("CHAOS_EXACTLY_ONCE") != ""
	// CHAOS_OUTPUTS=table,kafka leaves the files sink out: the table is
	// then the resume store beside exactly-once Kafka.
	withoutFiles, withTable := false, exactlyOnce
	switch outputs := os.Getenv("CHAOS_OUTPUTS"); outputs {
	case "", "files,table,kafka":
	case "table,kafka":
		withoutFiles, exactlyOnce, withTable = true, true, true
	case "files,table":
		// The table at least once beside the files, no Kafka output: the
		// partition reads on while its batch waits for the snapshot.
		if exactlyOnce {
			t.Fatal("CHAOS_OUTPUTS=files,table has no Kafka output: unset CHAOS_EXACTLY_ONCE")
		}
		withTable = true
	default:
		t.Fatalf("CHAOS_OUTPUTS=%q: choose files,table,kafka (the default under CHAOS_EXACTLY_ONCE), table,kafka or files,table", outputs)
	}
	seed := uint64(envInt("CHAOS_SEED", int(time.Now().UnixNano()%1e9)))
	rng := rand.New(rand.NewPCG(seed, 1))
	spool, diskFull := "", os.Geteuid() == 0 && !withoutFiles // the spool is the files sink's
	if diskFull {
		spool = smallDisk(t, strconv.Itoa(spoolDiskBytes))
	} else {
		t.Log("not root, or no files sink: the spool stays on the default disk and the disk-full fault is left out (it mounts a tmpfs)")
	}
	kinds := chaosKinds
	if !diskFull {
		kinds = slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k == "disk-full" })
	}
	plan := chaosPlan(rng, events, kinds)
	if fixed := os.Getenv("CHAOS_PLAN"); fixed != "" {
		// A plan to replay, e.g. CHAOS_PLAN=kill,kill: the faults in this
		// order, their moments and members still drawn from the seed.
		plan = strings.Split(fixed, ",")
		for _, ev := range plan {
			if !slices.Contains(kinds, ev) {
				t.Fatalf("CHAOS_PLAN: %q is not a fault this run can play; choose from %v", ev, kinds)
			}
		}
	}
	// Failpoints draw from a generator of their own: the plan and its
	// timing stay what the seed made them before failpoints came.
	failpoints := func() string { return "" }
	steps := chaosFailpoints
	if !exactlyOnce {
		steps = tableFailpoints
	}
	if withTable {
		failpoints = failpointCycle(rand.New(rand.NewPCG(seed, 2)), steps)
	}
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

	out := "s3://" + bucket + "/chaos" // where the files go, for the judges
	url := out
	if os.Getenv("CHAOS_OUTPUT") == "file" {
		// A local folder: the file store's temporary files and locks, the
		// same faults (S3's then reach the table alone).
		out = t.TempDir()
		url = "file://" + out
	}
	group := topic + "-g"
	cfg := e2eConfig(t, topic, group, "/unused", 1500)
	text := strings.Replace(readFile(t, cfg), "url: file:///unused", "url: "+url, 1)
	var outTopic, dlqTopic, catalog, table string
	if exactlyOnce {
		outTopic, dlqTopic = e2eTopic(t, partitions), e2eTopic(t, 3)
		checkLeadersInEveryZone(t, outTopic)
		// The rows and dead letters also go to Kafka, exactly once: a
		// dynamic member killed mid-transaction holds its partitions'
		// offsets until the brokers abort its transaction,
		// transaction_timeout later.
		text = strings.Replace(text, "dead_letter:\n  files: true\n", fmt.Sprintf(
			"  kafka: {topic: %s, delivery: exactly_once, transaction_timeout: 5s}\ndead_letter:\n  files: true\n  topic: %s\n", outTopic, dlqTopic), 1)
	}
	if withTable {
		// And to an Iceberg table: its catalog a SQLite file every member
		// shares, its data and metadata in the bucket behind the proxy.
		catalog, table = filepath.Join(t.TempDir(), "catalog.db"), "logs."+strings.ReplaceAll(topic, "-", "_")
		text = strings.Replace(text, "dead_letter:\n", fmt.Sprintf("  iceberg:\n    table: %s\n    catalog: {type: sql, uri: %s, warehouse: \"s3://%s/warehouse\"}\n"+
			"    partition_by: [{column: ts, transform: hour}, {column: level}]\n", table, catalog, bucket)+"dead_letter:\n", 1)
	}
	text = strings.Replace(text, `{name: hour, column: ts, format: "15"}]`, `{name: hour, column: ts, format: "15"}, {name: svc, column: service}]`, 1)
	text = strings.Replace(text, "  group: ", "  max_records_per_second: "+strconv.Itoa(rate)+"\n  group: ", 1)
	// The smallest budget: the flood's dead letters fill it before max_rows.
	text = strings.Replace(text, "  max_age: 2s\n", "  max_age: 2s\n  memory_budget: "+strconv.Itoa(budget)+"\n", 1)
	if spool != "" {
		text = strings.Replace(text, "    url: "+url+"\n", "    url: "+url+"\n    spool_dir: "+spool+"\n", 1)
	}
	if withoutFiles {
		text = regexp.MustCompile(`(?m)^  files:\n(    .*\n)+`).ReplaceAllString(text, "")
		text = strings.Replace(text, "dead_letter:\n  files: true\n", "dead_letter:\n  files: false\n", 1)
	}
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	faults := &faultWindows{}
	// A killed member's fault lasts while the dead member is in the group:
	// the coordinator's time (untilDropped), not the job's.
	var dropped sync.WaitGroup
	killed := func(output string, at time.Time) {
		if id := memberID(output); id != "" {
			dropped.Add(1)
			go func() {
				defer dropped.Done()
				faults.addUntil(at, func() { untilDropped(group, id, 2*time.Minute) })
			}()
		}
	}
	var members []*chaosMember
	for _, rack := range []string{"az-a", "az-b", "az-c"} {
		m := &chaosMember{t: t, cfg: cfg, rack: rack, killed: killed}
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
			killed(m.output(), faultBegan)
			fp := failpoints()
			m.startAt(fp)
			ev += " " + m.rack
			if fp != "" {
				ev += ", back with failpoint " + fp
			}
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
			withGroupStopped(t, group, members, failpoints, "the offsets of partitions 0, 2, 4 deleted", func(c *kafka.Client) error {
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
			withGroupStopped(t, group, members, failpoints, "the group deleted with its offsets", func(c *kafka.Client) error {
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
	// Every partition moves on after the last fault: each commits past
	// where it stood when the faults ended, or stands at its end. The
	// members' rate, which lets the faults land mid-run, would take
	// minutes more over what is left; they stop gracefully instead (a
	// rolling restart's stop), and the final clean run below, without the
	// rate, reads the rest.
	wait := max(4*time.Minute, time.Duration(3*(n+flood)/(3*rate))*time.Second)
	after := groupOffsets(t, group, topic, partitions)
	for deadline := time.Now().Add(wait); !movedOn(groupOffsets(t, group, topic, partitions), after, ends); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			// SIGQUIT: each member's goroutines, in its log (CHAOS_LOGS),
			// say where it waits.
			for _, m := range members {
				m.stop(syscall.SIGQUIT)
			}
			t.Fatalf("stalled: a partition committed nothing in %s after the last fault (committed %d of %d):\n%s", wait, committedTotal(t, group, topic, partitions), end, tail(members[0].out.String(), 30))
		}
	}
	t.Logf("every partition committed after the last fault (%d of %d committed); the members stop and the final clean run reads the rest", committedTotal(t, group, topic, partitions), end)
	for _, m := range members {
		m.stop(syscall.SIGTERM)
	}
	unlimited := filepath.Join(t.TempDir(), "final.yaml")
	if err := os.WriteFile(unlimited, []byte(strings.Replace(readFile(t, cfg), "  max_records_per_second: "+strconv.Itoa(rate)+"\n", "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	final := &chaosMember{rack: "az-a, the final clean run", runs: []*strings.Builder{{}}}
	final.runs[0].WriteString(finalCleanRun(t, unlimited, url, "s3://"+bucket))
	if got := committedTotal(t, group, topic, partitions); got < end {
		t.Errorf("after the final clean run the group committed %d of %d", got, end)
	}
	fired := map[string]int{}
	for _, m := range append(members, visitors...) {
		for _, fp := range m.fired {
			name, _, _ := strings.Cut(fp, ":")
			fired[name]++
		}
	}
	dropped.Wait()
	worst := stalls()
	if worst.outside > stallSlack {
		t.Errorf("partition %d stood still for %s with records to read (from %.1fs into the run), %s of it while no fault was under way: "+
			"a partition may wait out a fault, not more (stallSlack %s)", worst.partition, worst.d.Round(time.Second), worst.at.Sub(began).Seconds(),
			worst.outside.Round(time.Second), stallSlack)
		t.Log(stallTimeline(t, group, worst, append(append(members, visitors...), final)))
	}

	t.Setenv("AWS_ENDPOINT_URL_S3", direct) // pyarrow reads the bucket itself
	var sample []string
	for i := 0; i < n; i += n / 50 {
		if i%badEvery != badEvery-1 {
			sample = append(sample, strconv.Itoa(i%partitions)+":"+strconv.Itoa(i/partitions))
		}
	}
	good, bad := expect(n, partitions, badEvery)
	// The poison record is poison to the files sink (its service, a
	// partition column, makes a path too long); without files it is a row.
	poisoned := bad
	if withoutFiles {
		poisoned = good
	}
	b, ok := poisoned["0"]
	if !ok {
		b.Min = poisonAt
	}
	b.Count, b.Distinct, b.Sum, b.Max = b.Count+1, b.Distinct+1, b.Sum+int64(poisonAt), poisonAt
	poisoned["0"] = b
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
	goodStats := good
	var v verified
	if !withoutFiles {
		v = verifyWithPyarrow(t, out, sample)
		checkCounts(t, v, good, bad)
		checkSampleValues(t, v.Sample, n, partitions, badEvery)
		checkEveryFile(t, out)
	}

	if exactlyOnce {
		good, bad := sourcePositions(n, partitions, badEvery, poisonAt, !withoutFiles, odd)
		checkExactlyOnceOutputs(t, topic, outTopic, dlqTopic, catalog, table, goodStats, good, bad, fired, append(members, visitors...))
	} else if withTable {
		checkTable(t, catalog, table, goodStats)
		checkFailpointsMet(t, fired, steps)
		t.Logf("the table at least once beside the files: killed at failpoints %v", fired)
	}
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
	files := fmt.Sprintf("%d rows and %d dead letters in files, each once (reasons %v)", v.Rows, v.DeadLetters, v.Reasons)
	if withoutFiles {
		files = "no files sink (the table and the topics judged)"
	}
	t.Logf("chaos: %s; %d events %v, %d S3 requests answered 503, %d members met the full disk; "+
		"the longest fault %s, the longest a partition stood still outside the faults %s (partition %d, %s in all)",
		files, len(plan), plan, proxy.Failed.Load(), diskHits, longest.Round(time.Second), worst.outside.Round(time.Second), worst.partition, worst.d.Round(time.Second))
}

// chaosKinds are the faults a chaos plan draws from.
var chaosKinds = []string{"kill", "join-leave", "broker", "s3-down", "s3-flaky", "disk-full"}

// movedOn says every partition committed past where it stood at was, or
// stands at its end.
func movedOn(now, was []kafka.OffsetFetchPartition, ends []int64) bool {
	before := map[int]int64{}
	for _, p := range was {
		before[p.Partition] = p.CommittedOffset
	}
	for _, p := range now {
		if p.CommittedOffset < ends[p.Partition] && p.CommittedOffset <= before[p.Partition] {
			return false
		}
	}
	return len(now) == len(ends)
}

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
// group, as offsets.retention.minutes does), and restarts them, each with
// the next of failpoints: the output's resume records must carry the job
// on, through kills at the failpoints.
func withGroupStopped(t *testing.T, group string, members []*chaosMember, failpoints func() string, what string, change func(*kafka.Client) error) {
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
	var fps []string
	for _, m := range members {
		fp := failpoints()
		if fp != "" {
			fps = append(fps, m.rack+" "+fp)
		}
		m.startAt(fp)
	}
	if len(fps) > 0 {
		what += "; back with failpoints " + strings.Join(fps, ", ")
	}
	t.Logf("group %s: %s", group, what)
}

// chaosFailpoints are the steps of the exactly-once protocols a member is
// killed at: a batch's table files stored, committed to the table, every
// sink's files stored, its rows in the open transaction, the transaction
// whole but not ended, and ended before the resume record.
var chaosFailpoints = []string{sink.FailTableFiles, sink.FailTableCommitted, sink.FailDelivered, sink.FailInTxn, sink.FailTxnEnding, sink.FailTxnCommitted}

// tableFailpoints are the steps a member beside a table without Kafka is
// killed at: its cut mark committed, the table's data files stored (the
// partition reading on), the snapshot committed, and every sink holding
// the batch before its offset is committed.
var tableFailpoints = []string{sink.FailMarked, sink.FailTableFiles, sink.FailTableCommitted, sink.FailDelivered}

// failpointCycle returns steps in a seeded order, again and again, each
// as NAME:N for the first or second time the point is passed.
func failpointCycle(rng *rand.Rand, steps []string) func() string {
	order := slices.Clone(steps)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	next := 0
	return func() string {
		fp := order[next%len(order)] + ":" + strconv.Itoa(1+rng.IntN(2))
		next++
		return fp
	}
}

// sourcePositions are the source records the chaos topic holds, as
// "partition:offset": the good ones (rows) and the bad ones (dead letters).
func sourcePositions(n, partitions, badEvery, poisonAt int, poisonBad bool, odd oddRecords) (good, bad map[string]bool) {
	good, bad = map[string]bool{}, map[string]bool{}
	for i := 0; i < n; i++ {
		m := good
		if i%badEvery == badEvery-1 {
			m = bad
		}
		m[fmt.Sprintf("%d:%d", i%partitions, i/partitions)] = true
	}
	if poisonBad {
		bad[fmt.Sprintf("0:%d", poisonAt)] = true
	} else {
		good[fmt.Sprintf("0:%d", poisonAt)] = true
	}
	for _, o := range odd.offsets {
		m := good
		if o.bad {
			m = bad
		}
		m[fmt.Sprintf("%d:%d", o.partition, o.offset)] = true
	}
	return good, bad
}

// checkOnceInKafka reads topic with read_committed and checks that it
// holds every source record of want exactly once, by its source headers,
// and nothing else; it returns how many records it read.
func checkOnceInKafka(t *testing.T, source, topic string, want map[string]bool, what string) int {
	t.Helper()
	recs := readIsolated(t, topic, true, len(want))
	seen := map[string]int{}
	for _, r := range recs {
		for _, h := range r.Headers {
			if h.Key == sink.HeaderSourceTopic && string(h.Value) != source {
				t.Errorf("%s %s names source topic %q, want %q", what, sourceOf(r), h.Value, source)
			}
		}
		seen[sourceOf(r)]++
	}
	var twice, stray, missing []string
	for pos, c := range seen {
		switch {
		case !want[pos]:
			stray = append(stray, pos)
		case c > 1:
			twice = append(twice, fmt.Sprintf("%s (%d times)", pos, c))
		}
	}
	for pos := range want {
		if seen[pos] == 0 {
			missing = append(missing, pos)
		}
	}
	for _, l := range []struct {
		list []string
		say  string
	}{{twice, "read more than once"}, {missing, "missing"}, {stray, "not expected here"}} {
		if len(l.list) > 0 {
			slices.Sort(l.list)
			t.Errorf("%s: %d source records %s as a %s with read_committed, e.g. %v", topic, len(l.list), l.say, what, l.list[:min(10, len(l.list))])
		}
	}
	return len(recs)
}

// checkLeadersInEveryZone fails unless topic's partitions are led in
// every rack, so the Kafka output produces to every zone.
func checkLeadersInEveryZone(t *testing.T, topic string) {
	t.Helper()
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 30 * time.Second}
	md, err := client.Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	racks := map[string]int{}
	for _, p := range md.Topics[0].Partitions {
		racks[p.Leader.Rack]++
	}
	if len(racks) < 3 {
		t.Fatalf("the output topic %s is led in racks %v only: a broker is not back yet", topic, racks)
	}
}

// checkTable reads the chaos run's Iceberg table with pyiceberg
// (scripts/chaos/checktable.py): its current snapshot must hold every good
// record once, and reference no data file twice.
func checkTable(t *testing.T, catalog, table string, good map[string]partStats) {
	t.Helper()
	out, err := exec.Command(testkit.PyarrowPython(t), filepath.Join("..", "..", "scripts", "chaos", "checktable.py"), "--catalog", catalog, "--table", table).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("pyiceberg reading %s: %v\n%s", table, err, msg)
	}
	var r struct {
		Snapshots  int                  `json:"snapshots"`
		Files      int                  `json:"files"`
		FilesTwice []string             `json:"files_twice"`
		Rows       int                  `json:"rows"`
		Partitions map[string]partStats `json:"partitions"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("checktable.py said %.300s: %v", out, err)
	}
	for p, want := range good {
		if got := r.Partitions[p]; got != want {
			t.Errorf("table %s, partition %s: got %+v, want %+v (count ≠ distinct means duplicates; a lower count, missing rows)", table, p, got, want)
		}
	}
	if len(r.FilesTwice) > 0 {
		t.Errorf("table %s: the current snapshot references %d data files more than once, e.g. %v", table, len(r.FilesTwice), r.FilesTwice[:min(5, len(r.FilesTwice))])
	}
	t.Logf("the Iceberg table: %d rows in %d data files, each once, %d snapshots", r.Rows, r.Files, r.Snapshots)
}

// checkExactlyOnceOutputs judges a CHAOS_EXACTLY_ONCE run's other
// outputs: the Iceberg table (every good record once, no data file
// twice), the output topic and the dead-letter topic read with
// read_committed (every good record once as a row, every bad one once as
// a dead letter, by source position), and that every failpoint killed a
// member.
func checkExactlyOnceOutputs(t *testing.T, topic, outTopic, dlqTopic, catalog, table string, goodStats map[string]partStats,
	good, bad map[string]bool, fired map[string]int, members []*chaosMember) {
	t.Helper()
	checkTable(t, catalog, table, goodStats)
	rows := checkOnceInKafka(t, topic, outTopic, good, "row")
	letters := checkOnceInKafka(t, topic, dlqTopic, bad, "dead letter")
	checkFailpointsMet(t, fired, chaosFailpoints)
	var logs strings.Builder
	for _, m := range members {
		logs.WriteString(m.logs())
	}
	t.Logf("exactly once into Kafka: %d rows and %d dead letters read_committed, each once; killed at failpoints %v; "+
		"%d transactions retried, %d fenced by a rebalance, %d waits for a dead member's transaction",
		rows, letters, fired, strings.Count(logs.String(), "in a transaction failed; retrying"),
		strings.Count(logs.String(), "fenced by the group"), strings.Count(logs.String(), "the open transaction ended"))
}

// checkFailpointsMet: a member given a failpoint may be stopped (a kill,
// the group's restart, a slow broker restart) before it reaches it; seeds
// differ in which, so a run must kill members at two steps at least, and
// the log says which it missed. Half the steps was asked before: seeds
// 404105235 and 260636877 met two of the exactly-once run's six (every
// record once in every output through their seven faults), their later
// failpoints armed behind a group's deletion and two kills.
func checkFailpointsMet(t *testing.T, fired map[string]int, steps []string) {
	t.Helper()
	var missed []string
	for _, fp := range steps {
		if fired[fp] == 0 {
			missed = append(missed, fp)
		}
	}
	if len(steps)-len(missed) < min(2, len(steps)) {
		t.Errorf("no member was killed at failpoints %v (fired: %v): the run met too few steps of the protocols", missed, fired)
	} else if len(missed) > 0 {
		t.Logf("note: no member reached failpoints %v this run (a kill or the group's restart came first)", missed)
	}
}
