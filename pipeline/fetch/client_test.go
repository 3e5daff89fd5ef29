package fetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceSpread writes records from..to-1 to each of partitions, values
// "p<partition>-<n>".
func produceSpread(t testing.TB, addrs []string, partitions, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for p := range partitions {
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Partition: int32(p), Value: []byte(partValue(p, i))})
		}
	}
	produce(t, addrs, nil, recs...)
}

func partValue(p, i int) string { return "p" + strconv.Itoa(p) + "-" + strconv.Itoa(i) }

// readGeneration reads partitions 0..n-1 through readers sharing client, as
// one group generation of a member does: each reader reads its partition
// from `from` to `to`, then fetches idle more times, then closes.
func readGeneration(t *testing.T, client *Client, n int, from, to int64, idle int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for p := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := NewPartitionReader(ReaderConfig{Client: client, Topic: testTopic, Partition: p})
			defer r.Close()
			r.SetOffset(from)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			next := from
			for calls := 0; next < to || calls < idle; {
				msgs, _, err := r.Fetch(ctx)
				if err != nil {
					errs <- fmt.Errorf("partition %d at %d: %w", p, r.Offset(), err)
					return
				}
				if next >= to {
					calls++
				}
				for _, m := range msgs {
					if want := partValue(p, int(next)); string(m.Value) != want || m.Partition != p {
						errs <- fmt.Errorf("partition %d: record %d is %q of partition %d, want %q", p, m.Offset, m.Value, m.Partition, want)
						return
					}
					next++
				}
			}
			if next != to {
				errs <- fmt.Errorf("partition %d: read to %d, want %d", p, next, to)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestClientFetchesOncePerBroker: readers sharing a Client send one Fetch per
// broker for all their partitions, in an incremental fetch session whose
// idle rounds name no partition, over one control and one fetch connection
// per broker that a second generation of readers reuses.
func TestClientFetchesOncePerBroker(t *testing.T) {
	const parts, idle = 12, 5
	c := testkit.FakeCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(parts, testTopic))
	addrs := c.ListenAddrs()
	produceSpread(t, addrs, parts, 0, 10)
	spy := spyFetches(c)
	stats := &Stats{}
	client := NewClient(ClientConfig{Brokers: addrs, MaxWait: 50 * time.Millisecond, Stats: stats, Log: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { client.Close() })

	led := map[int32]int{}
	for p := range parts {
		led[c.LeaderFor(testTopic, int32(p))]++
	}

	readGeneration(t, client, parts, 0, 10, idle)
	sessions := spy.fetchSessions()
	// Fetching each partition on its own takes at least one Fetch per
	// reader call: parts*(1+idle).
	if len(sessions) >= parts*(1+idle)/2 {
		t.Errorf("%d fetches for %d partitions and %d idle calls each; want about one per broker per round", len(sessions), parts, idle)
	}
	// What each broker's session holds after each fetch: the partitions
	// a full fetch names, then those an incremental one adds, less those
	// it forgets.
	held := map[int32]map[int32]bool{}
	most := map[int32]int{}
	idleRounds := 0
	for _, s := range sessions {
		if s.epoch <= 0 || held[s.node] == nil {
			held[s.node] = map[int32]bool{}
		}
		for _, p := range s.named {
			held[s.node][p] = true
		}
		for _, p := range s.forgot {
			delete(held[s.node], p)
		}
		most[s.node] = max(most[s.node], len(held[s.node]))
		if s.id != 0 && s.epoch > 0 && s.parts == 0 && s.forgotten == 0 {
			idleRounds++
		}
	}
	for node, n := range led {
		if most[node] != n {
			t.Errorf("broker %d leads %d partitions; its fetches carried at most %d", node, n, most[node])
		}
	}
	if idleRounds == 0 {
		t.Errorf("no incremental fetch that names no partition while idle: %+v", sessions)
	}

	// The next generation: new readers, the same connections.
	produceSpread(t, addrs, parts, 10, 20)
	readGeneration(t, client, parts, 10, 20, 1)
	snap := stats.Snapshot()
	for _, b := range snap.Brokers {
		if b.Dials > 2 {
			t.Errorf("broker %d: %d connections over two generations of %d readers; want one control and one fetch session connection", b.ID, b.Dials, parts)
		}
	}
	if snap.SeedDials != 1 {
		t.Errorf("%d connections to seed brokers; want 1, for the first metadata", snap.SeedDials)
	}
}

// TestClientStartsSessionAgain: a broker that lost the session, or got an
// epoch out of step, answers with a top-level error; the next Fetch opens a
// new full session (same id, epoch 0: the broker closes the old one), and a
// broker out of session slots is fetched from without one. No reader sees
// the error.
func TestClientStartsSessionAgain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		code   int16
		inject func(req *kmsg.FetchRequest) bool
		next   func(injected, next spiedSession) bool
	}{
		{"session id not found", 70,
			func(req *kmsg.FetchRequest) bool { return req.SessionEpoch > 0 },
			func(injected, next spiedSession) bool {
				return next.id == injected.id && next.epoch == 0 && next.forgotten == 0
			}},
		{"invalid session epoch", 71,
			func(req *kmsg.FetchRequest) bool { return req.SessionEpoch > 0 },
			func(injected, next spiedSession) bool {
				return next.id == injected.id && next.epoch == 0 && next.forgotten == 0
			}},
		{"no session slot", 70,
			func(req *kmsg.FetchRequest) bool { return req.SessionEpoch == 0 },
			func(injected, next spiedSession) bool {
				return next.id == 0 && next.epoch == -1 && next.parts == injected.parts
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const parts = 4
			c := testkit.FakeCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(parts, testTopic))
			addrs := c.ListenAddrs()
			produceSpread(t, addrs, parts, 0, 10)
			spy := spyFetches(c)
			var injected atomic.Int32
			injected.Store(-1)
			spy.setAnswer(func(_ int32, req *kmsg.FetchRequest) (kmsg.Response, error, bool) {
				if injected.Load() >= 0 || !tc.inject(req) {
					return nil, nil, false
				}
				injected.Store(int32(len(spy.fetchSessions()) - 1))
				resp := req.ResponseKind().(*kmsg.FetchResponse)
				resp.ErrorCode = tc.code
				return resp, nil, true
			})
			client := NewClient(ClientConfig{Brokers: addrs, MaxWait: 50 * time.Millisecond, Log: slog.New(slog.DiscardHandler)})
			t.Cleanup(func() { client.Close() })

			readGeneration(t, client, parts, 0, 10, 3)
			i := int(injected.Load())
			sessions := spy.fetchSessions()
			if i < 0 || i+1 >= len(sessions) {
				t.Fatalf("the error was not injected, or no fetch followed: %+v", sessions)
			}
			if !tc.next(sessions[i], sessions[i+1]) {
				t.Errorf("after %+v answered %d, the next fetch was %+v", sessions[i], tc.code, sessions[i+1])
			}
			produceSpread(t, addrs, parts, 10, 20)
			readGeneration(t, client, parts, 10, 20, 0)
		})
	}
}

// TestClientReaderCloseLeavesOthers: closing one reader ends its Fetch at
// once and takes its partition out of the session; the others read on.
func TestClientReaderCloseLeavesOthers(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(2, testTopic))
	addrs := c.ListenAddrs()
	spy := spyFetches(c)
	client := NewClient(ClientConfig{Brokers: addrs, MaxWait: 2 * time.Second, Log: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { client.Close() })
	r0 := NewPartitionReader(ReaderConfig{Client: client, Topic: testTopic, Partition: 0})
	r1 := NewPartitionReader(ReaderConfig{Client: client, Topic: testTopic, Partition: 1})
	defer r1.Close()
	r0.SetOffset(0)
	r1.SetOffset(0)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	produceSpread(t, addrs, 2, 0, 1)
	for _, r := range []*PartitionReader{r0, r1} {
		for r.Offset() < 1 {
			if _, _, err := r.Fetch(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := r0.Fetch(ctx)
		done <- err
	}()
	got1 := make(chan []string, 1)
	go func() {
		var vals []string
		for r1.Offset() < 4 && ctx.Err() == nil {
			msgs, _, err := r1.Fetch(ctx)
			if err != nil {
				t.Error(err)
				break
			}
			vals = append(vals, values(msgs)...)
		}
		got1 <- vals
	}()
	time.Sleep(300 * time.Millisecond) // both wait in the broker's long poll
	closed := time.Now()
	r0.Close()
	if err := <-done; !errors.Is(err, errPoolClosed) {
		t.Fatalf("Fetch of the closed reader returned %v", err)
	}
	if d := time.Since(closed); d > time.Second {
		t.Errorf("Close ended the Fetch after %v; want at once", d)
	}
	var recs []*kgo.Record
	for i := 1; i < 4; i++ {
		recs = append(recs, &kgo.Record{Partition: 1, Value: []byte(partValue(1, i))})
	}
	produce(t, addrs, nil, recs...)
	if vals := <-got1; fmt.Sprint(vals) != fmt.Sprint([]string{"p1-1", "p1-2", "p1-3"}) {
		t.Fatalf("partition 1 read %q", vals)
	}
	forgot := false
	for _, s := range spy.fetchSessions() {
		forgot = forgot || fmt.Sprint(s.forgot) == "[0]"
	}
	if !forgot {
		t.Errorf("the closed reader's partition was never forgotten: %+v", spy.fetchSessions())
	}
}

// TestClientBusyReaderNotHeldByLongPoll: a reader still decoding its last
// records misses the next round; the round it comes back to must not be a
// long poll of max_wait for the idle partitions, or a busy partition among
// idle ones would get one fetch per max_wait.
func TestClientBusyReaderNotHeldByLongPoll(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(2, testTopic))
	addrs := c.ListenAddrs()
	const batches = 5
	for i := range batches {
		produce(t, addrs, nil, numbered(10*i, 10*i+10)...) // partition 0, a batch each
	}
	const maxWait = 3 * time.Second
	client := NewClient(ClientConfig{Brokers: addrs, MaxWait: maxWait, Log: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { client.Close() })
	busy := NewPartitionReader(ReaderConfig{Client: client, Topic: testTopic, Partition: 0, MaxBytes: 1})
	idle := NewPartitionReader(ReaderConfig{Client: client, Topic: testTopic, Partition: 1})
	defer busy.Close()
	defer idle.Close()
	busy.SetOffset(0)
	idle.SetOffset(0)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			idle.Fetch(ctx)
		}
	}()
	var msgs []string
	for busy.Offset() < 10*batches {
		began := time.Now()
		got, _, err := busy.Fetch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); len(msgs) > 0 && took > maxWait/3 {
			t.Fatalf("a Fetch of the busy partition at %d took %v: held behind the idle partition's long poll (max_wait %v)", busy.Offset(), took, maxWait)
		}
		msgs = append(msgs, values(got)...)
		time.Sleep(50 * time.Millisecond) // the worker decodes and stages them
	}
	if fmt.Sprint(msgs) != fmt.Sprint(valueRange(0, 10*batches)) {
		t.Fatalf("read %q", msgs)
	}
}

// TestSessionGathersReadersBack: a reader that asks again is no longer
// waited for, also the first one to come back to an empty session; the
// session is woken by the first reader and by the last one it expects, not
// by every one.
func TestSessionGathersReadersBack(t *testing.T) {
	tp := func(p int32) topicPartition { return topicPartition{testTopic, p} }
	s := newFetchSession(NewClient(ClientConfig{}), sessionKey{broker: 1})
	s.expect = map[topicPartition]bool{tp(0): true, tp(1): true, tp(2): true}
	woken := func() bool {
		select {
		case <-s.wake:
			return true
		default:
			return false
		}
	}
	for _, step := range []struct {
		add       int32
		wantWake  bool
		wantAwait int
	}{
		{0, true, 2},  // the first reader waiting wakes the session
		{1, false, 1}, // neither first nor last
		{7, false, 1}, // a reader not expected
		{2, true, 0},  // the last one expected
	} {
		s.add(newFetchWant(tp(step.add), 0, -1, 1, ""))
		if got := woken(); got != step.wantWake {
			t.Errorf("add partition %d: woken %v, want %v", step.add, got, step.wantWake)
		}
		if len(s.expect) != step.wantAwait || s.expect[tp(step.add)] {
			t.Errorf("add partition %d: still expects %v", step.add, s.expect)
		}
	}
}

// TestIdleReadersNotWokenWhileABusyReaderIsAway: while a reader answered
// with records stays away (its worker waits for the memory budget), the
// session's rounds are short (busyWait), and each one answered every idle
// reader with nothing: hundreds of idle partitions' workers went round
// their loops fifty times a second, giving their fetch's memory back and
// taking it again, and the member burned its CPU while its partitions
// waited for memory (issue 44). An idle reader is answered once it has
// waited max_wait, as by a long poll, however short the rounds are.
func TestIdleReadersNotWokenWhileABusyReaderIsAway(t *testing.T) {
	const idle = 20
	c := testkit.FakeCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(idle+1, testTopic))
	addrs := c.ListenAddrs()
	produce(t, addrs, nil, numbered(0, 10)...) // partition 0
	const maxWait = time.Second
	client := NewClient(ClientConfig{Brokers: addrs, MaxWait: maxWait, Log: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var answers [idle]atomic.Int64
	var counting atomic.Bool
	for p := 1; p <= idle; p++ {
		r := NewPartitionReader(ReaderConfig{Client: client, Topic: testTopic, Partition: p})
		t.Cleanup(func() { r.Close() })
		r.SetOffset(0)
		go func() {
			for ctx.Err() == nil {
				if _, _, err := r.Fetch(ctx); err == nil && counting.Load() {
					answers[p-1].Add(1)
				}
			}
		}()
	}
	busy := NewPartitionReader(ReaderConfig{Client: client, Topic: testTopic, Partition: 0})
	defer busy.Close()
	busy.SetOffset(0)
	for busy.Offset() < 10 {
		if _, _, err := busy.Fetch(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The busy reader stays away for a max_wait and a half: its session
	// polls for it all that while.
	counting.Store(true)
	time.Sleep(maxWait * 3 / 2)
	counting.Store(false)
	for p := range answers {
		// A long poll answers an idle reader about once a max_wait: two in
		// the while, and one more for a round that began before it.
		if n := answers[p].Load(); n > 4 {
			t.Errorf("idle partition %d was answered %d times in %v (max_wait %v): woken by every short round", p+1, n, maxWait*3/2, maxWait)
		}
	}
}
