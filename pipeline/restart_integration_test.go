//go:build integration

package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/internal/loggen"
	"github.com/logstore/logstore/internal/testkit"
)

// produceSteadily writes one LogGen record to each partition every 20 ms
// until stop is called; produced counts the acknowledged records.
func produceSteadily(t *testing.T, topic string, partitions int) (produced *atomic.Int64, stop func()) {
	produced = new(atomic.Int64)
	stopProducing := make(chan struct{})
	producing := make(chan struct{})
	go func() {
		defer close(producing)
		cl := testkit.Producer(t, topic)
		defer cl.Close()
		gen := loggen.New(3, time.Now(), time.Millisecond)
		for {
			select {
			case <-stopProducing:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var recs []*kgo.Record
			for p := range partitions {
				recs = append(recs, logRecord(gen, p))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
			} else {
				produced.Add(int64(len(recs)))
			}
			cancel()
		}
	}()
	return produced, sync.OnceFunc(func() {
		close(stopProducing)
		<-producing
	})
}

// outageSetup is what the broker-outage tests share: a fresh spreadRF3
// topic, a group whose coordinator avoids broker down, and a cleanup that
// starts that broker again if the test left it stopped.
func outageSetup(t *testing.T, client *kafka.Client, down int) (topic, group string, stopped *atomic.Bool) {
	t.Helper()
	topic = createGroupTopic(t, client, spreadRF3()...)
	group = groupAwayFrom(t, client, down)
	stopped = new(atomic.Bool)
	t.Cleanup(func() {
		if stopped.Load() {
			testkit.ClusterScript(t, "start-node", fmt.Sprint(down))
		}
	})
	return topic, group, stopped
}

// finishExactlyOnce waits until the store holds every record of the topic,
// at least the produced ones acknowledged, stops the members and checks
// that each record was written once.
func finishExactlyOnce(t *testing.T, client *kafka.Client, topic string, partitions int, produced int64, store *batchStore, ms []*member) {
	t.Helper()
	to := endOffsets(t, client, topic, partitions)
	from := map[int]int64{}
	total := int64(0)
	for _, end := range to {
		total += end
	}
	if total < produced {
		t.Fatalf("the topic holds %d records, but %d were acknowledged", total, produced)
	}
	waitCovered(t, store, from, to, 30*time.Second)
	stopAll(t, ms)
	store.checkExactlyOnce(t, from, to)
}

// waitWhileRunning polls ok every 50 ms until it holds, and returns when it
// did; it fails the test after limit or when a member of ms stopped.
func waitWhileRunning(t *testing.T, ms []*member, what string, limit time.Duration, ok func() bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ok() {
		requireRunning(t, ms)
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Now()
}

// byteSample is one member's fetched bytes, same-rack and cross-rack, at a
// moment.
type byteSample struct {
	at          time.Time
	same, cross int64
}

// sampleBytes records the member's fetch counters every 250 ms until stop.
func sampleBytes(m *member) (samples func() []byteSample, stop func()) {
	var mu sync.Mutex
	var out []byteSample
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			s := m.job.FetchStats().Snapshot()
			mu.Lock()
			out = append(out, byteSample{time.Now(), s.SameRackBytes, s.CrossRackBytes})
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() []byteSample {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(out)
		}, sync.OnceFunc(func() {
			close(done)
			<-stopped
		})
}

// perWindow turns the samples into the bytes fetched in each window of
// width from t0 on.
func perWindow(samples []byteSample, t0 time.Time, width time.Duration) []byteSample {
	var out []byteSample
	var prev *byteSample
	for _, s := range samples {
		if prev == nil || s.at.Before(t0) {
			prev = &s
			continue
		}
		w := int(s.at.Sub(t0) / width)
		for len(out) <= w {
			out = append(out, byteSample{at: t0.Add(time.Duration(len(out)) * width)})
		}
		out[w].same += s.same - prev.same
		out[w].cross += s.cross - prev.cross
		prev = &s
	}
	return out
}

// firstLocal is the start of the first complete window, of those from t0
// on, in which the member read in its rack and fetched no more than quiet
// bytes from other racks.
func firstLocal(samples []byteSample, t0 time.Time, width time.Duration, quiet int64) (time.Time, bool) {
	ws := perWindow(samples, t0, width)
	for i, w := range ws {
		if i < len(ws)-1 && w.same > 0 && w.cross <= quiet {
			return w.at, true
		}
	}
	return time.Time{}, false
}

// inISR says whether broker is in the ISR of every partition of topic, by a
// metadata answer.
func inISR(client *kafka.Client, topic string, broker int) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return false, err
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil {
		return false, fmt.Errorf("metadata of %s: %+v", topic, md.Topics)
	}
	for _, p := range md.Topics[0].Partitions {
		if !slices.ContainsFunc(p.Isr, func(b kafka.Broker) bool { return b.ID == broker }) {
			return false, nil
		}
	}
	return true, nil
}

// isrWatch polls, every 100 ms, whether a broker is in the ISR of every
// partition of a topic, and notes when it is back after having been out.
type isrWatch struct {
	mu   sync.Mutex
	back time.Time
	stop func()
}

func watchISR(client *kafka.Client, topic string, broker int) *isrWatch {
	w := &isrWatch{}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		out := false
		for {
			in, err := inISR(client, topic, broker)
			now := time.Now()
			w.mu.Lock()
			switch {
			case err != nil: // a broker restarting; the next poll asks again
			case !in:
				out = true
			case out && w.back.IsZero():
				w.back = now
			}
			w.mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	w.stop = sync.OnceFunc(func() {
		close(done)
		<-stopped
	})
	return w
}

// rejoined is when the broker was first seen back in every ISR, zero
// before.
func (w *isrWatch) rejoined() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.back
}

// TestGroupLocalAgainAfterBrokerRestart is a rolling restart of the az-a
// broker under the default reading settings (follower fetching auto, the
// 5-minute preferred-replica lease, the 1 s replica backoff): three members
// stream an RF 3 topic; the az-a broker stops for about 10 s and starts
// again. The az-a member keeps reading from the other racks meanwhile, and
// reads in its own rack again within 5 s of the broker rejoining the ISR of
// every partition; every record is written once. The per-second byte series
// of the az-a member is in the test log.
func TestGroupLocalAgainAfterBrokerRestart(t *testing.T) {
	client := testkit.RequireCluster(t)
	const partitions = 12
	topic, group, stopped := outageSetup(t, client, 1)

	store := newBatchStore()
	o := groupOptions{topic: topic, group: group, follower: "auto"} // the defaults
	ms := startMembers(t, o, store, Mode{}, zones...)
	a := ms[0]
	waitForBalance(t, client, group, ms, partitions/len(zones), 30*time.Second)
	produced, stopProducer := produceSteadily(t, topic, partitions)
	defer stopProducer()
	samples, stopSampling := sampleBytes(a)
	defer stopSampling()

	fetched := func() locality { return localityOf(a.job.FetchStats().Snapshot(), a.zone) }
	waitFor := func(what string, limit time.Duration, ok func() bool) time.Time {
		t.Helper()
		return waitWhileRunning(t, ms[:1], what, limit, ok)
	}
	begin := time.Now()
	start := fetched()
	waitFor("the az-a member reading in its rack", 20*time.Second, func() bool { return fetched().same-start.same > 16<<10 })

	stopAt := time.Now()
	stopped.Store(true)
	isr := watchISR(client, topic, 1)
	defer isr.stop()
	testkit.ClusterScript(t, "stop-node", "1")
	down := time.Now()
	atDown := fetched()
	waitFor("the az-a member reading from another rack", 30*time.Second, func() bool { return fetched().cross-atDown.cross > 8<<10 })
	if rest := 10*time.Second - time.Since(stopAt); rest > 0 {
		time.Sleep(rest)
	}
	startAt := time.Now()
	testkit.ClusterScript(t, "start-node", "1")
	stopped.Store(false)
	up := time.Now()
	var rejoined time.Time
	waitFor("broker 1 back in the ISR of every partition", 60*time.Second, func() bool {
		rejoined = isr.rejoined()
		return !rejoined.IsZero()
	})
	isr.stop()

	// Local again: the first half second after the rejoin in which the
	// member read in its rack and took no more than the leaders' short
	// answers naming the local replica (about 120 bytes each) from others.
	const window, quiet = 500 * time.Millisecond, 2 << 10
	var localAt time.Time
	waitFor("the az-a member reading only in its rack", 30*time.Second, func() bool {
		var ok bool
		localAt, ok = firstLocal(samples(), rejoined, window, quiet)
		return ok
	})
	atLocal := fetched()
	time.Sleep(5 * time.Second) // how it stays: the series below
	atEnd := fetched()

	stopProducer()
	stopSampling()
	finishExactlyOnce(t, client, topic, partitions, produced.Load(), store, ms)

	var series strings.Builder
	rel := func(at time.Time) string { return fmt.Sprintf("%.1fs", at.Sub(begin).Seconds()) }
	fmt.Fprintf(&series, "az-a member, bytes fetched per second (t from the start of streaming; stop-node %s..%s, start-node %s..%s, broker 1 in the ISR %s, local from %s):\n",
		rel(stopAt), rel(down), rel(startAt), rel(up), rel(rejoined), rel(localAt))
	for i, s := range perWindow(samples(), begin, time.Second) {
		fmt.Fprintf(&series, "  %3ds  same-rack %9d  cross-rack %9d\n", i, s.same, s.cross)
	}
	t.Log(series.String())

	tail := atEnd.since(atLocal)
	t.Logf("broker 1 rejoined the ISR of every partition at %s (start-node ran %s..%s); the az-a member read only in its rack from %s, %v after the rejoin; in the 5 s that followed, same-rack %d B, cross-rack %d B",
		rel(rejoined), rel(startAt), rel(up), rel(localAt), localAt.Sub(rejoined).Round(100*time.Millisecond), tail.same, tail.cross)
	if d := localAt.Sub(rejoined); d > 5*time.Second {
		t.Errorf("the az-a member read only in its rack %v after broker 1 rejoined the ISR; want within 5s", d.Round(100*time.Millisecond))
	}
	if tail.cross > 2*quiet {
		t.Errorf("%d cross-rack bytes in the 5 s after the member was local again; want only the leaders' short answers", tail.cross)
	}
}
