package pipeline

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logstore/logstore/internal/clock"
	"github.com/logstore/logstore/pipeline/group"
	"github.com/logstore/logstore/pipeline/worker"
)

// partitionSet is the member's partitions and their workers, across
// generations: the group member (pipeline/group) says which partitions
// come and go, and only those workers start or stop; a partition kept
// through a rebalance keeps its worker, its reader and its open batch.
//
// A worker that fails holds its partition alone: it is started again from
// the partition's last commit after a backoff (counted in
// logstore_partition_failures_total, held in logstore_partitions_held),
// while the member's other partitions go on. Only a fatal error (on_error:
// fail, lost records under on_offset_out_of_range: fail) stops the job.
type partitionSet struct {
	j       *Job
	ctx     context.Context // the run's; ends at the job's stop
	mode    Mode
	targets map[string]map[int]int64
	commit  worker.Committer
	done    func() // ends the run: --until now and every partition reached, or a fatal error

	mu      sync.Mutex
	running map[topicPartition]*partitionRun
	reached map[topicPartition]bool
	fatal   error
	// finishedAll: --until now, and every partition reached its end.
	finishedAll bool
	awaiting    bool // awaitGroup runs
	wg          sync.WaitGroup
}

type topicPartition struct {
	topic     string
	partition int
}

// partitionRun is one partition's time with this member.
type partitionRun struct {
	ctx     context.Context
	cancel  context.CancelFunc
	ended   chan struct{}
	release atomic.Int32 // how its worker lets go (worker.Config.Release)
}

func (j *Job) newPartitionSet(ctx context.Context, mode Mode, targets map[string]map[int]int64, done func()) *partitionSet {
	return &partitionSet{j: j, ctx: ctx, mode: mode, targets: targets, done: done,
		running: map[topicPartition]*partitionRun{}, reached: map[topicPartition]bool{}}
}

// owns says whether the member holds the partition and may commit it: its
// worker runs, or is being revoked (committing what it wrote), and was not
// lost.
func (s *partitionSet) owns(topic string, partition int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.running[topicPartition{topic, partition}]
	return ok && r.release.Load() != worker.ReleaseLost
}

// Assign starts the workers of the generation's new partitions. Their
// positions are read in one OffsetFetch; a partition whose start fails is
// started on its own after a backoff.
func (s *partitionSet) Assign(g group.Generation) {
	s.j.metrics.generation(g.ID, g.MemberID, g.Assigned)
	added := map[string][]int(g.Added)
	runs := map[topicPartition]*partitionRun{}
	s.mu.Lock()
	for t, ps := range added {
		for _, p := range ps {
			tp := topicPartition{t, p}
			ctx, cancel := context.WithCancel(s.ctx)
			r := &partitionRun{cancel: cancel, ended: make(chan struct{})}
			s.running[tp] = r
			runs[tp] = r
			r.ctx = ctx
		}
	}
	s.mu.Unlock()
	var ready map[topicPartition]readyWorker
	if len(runs) > 0 {
		starts, err := s.j.prepare(s.ctx, added, s.commit, s.targets, s.mode)
		if err != nil && s.ctx.Err() == nil {
			s.j.log.Warn("starting the new partitions failed; starting each on its own", "err", err)
		}
		ready = make(map[topicPartition]readyWorker, len(starts))
		for _, rw := range starts {
			ready[topicPartition{rw.w.Topic, rw.w.Partition}] = rw
		}
	}
	for tp, r := range runs {
		s.wg.Add(1)
		first, ok := ready[tp]
		go s.keep(tp, r, first, ok)
	}
	s.checkFinished(g.Assigned)
}

// keep runs the partition's worker until the partition leaves the member
// or the job stops; a worker that fails is started again after a backoff.
func (s *partitionSet) keep(tp topicPartition, r *partitionRun, first readyWorker, prepared bool) {
	defer s.wg.Done()
	defer close(r.ended)
	backoff := heldBackoff
	for {
		rw, err := first, error(nil)
		if !prepared {
			var starts []readyWorker
			starts, err = s.j.prepare(r.ctx, map[string][]int{tp.topic: {tp.partition}}, s.commit, s.targets, s.mode)
			if err == nil {
				rw = starts[0]
			}
		}
		prepared = false
		began := time.Now()
		if err == nil {
			rw.w.Release = &r.release
			rw.progress.from(rw.pos.Offset)
			s.j.metrics.partitionStarted()
			err = rw.w.Run(r.ctx, rw.pos)
			rw.w.Close()
			if err == nil && rw.w.Reached() {
				s.markReached(tp)
				return
			}
		}
		if r.ctx.Err() != nil || err == nil {
			return
		}
		if errors.As(err, new(worker.FatalError)) {
			s.fail(err)
			return
		}
		if time.Since(began) > heldBackoffMax {
			backoff = heldBackoff // it ran well for a while: a new fault
		}
		backoff = heldWait(err, backoff)
		s.j.log.Error("partition failed; holding it and starting it again from its last commit, the member's other partitions go on",
			"topic", tp.topic, "partition", tp.partition, "err", err, "backoff", backoff)
		s.j.metrics.partitionHeld(true)
		ok := clock.Sleep(r.ctx, backoff)
		s.j.metrics.partitionHeld(false)
		if !ok {
			return
		}
		backoff = min(2*backoff, heldBackoffMax)
	}
}

// A failed partition's wait before it starts again, doubling up to the
// maximum: a fault that lasts (a sink that refuses the partition's
// writes) is tried about once a minute, without flooding the log. A
// network error (a broker restarting, its leadership not yet moved) is
// tried at least every heldBackoffNetwork, so the partition starts
// within seconds of the broker's return, not up to a minute later.
const (
	heldBackoff        = time.Second
	heldBackoffMax     = time.Minute
	heldBackoffNetwork = 4 * time.Second
)

// heldWait is the wait before a failed partition starts again.
func heldWait(err error, backoff time.Duration) time.Duration {
	if _, ok := errors.AsType[net.Error](err); ok {
		return min(backoff, heldBackoffNetwork)
	}
	return backoff
}

// Revoke stops the partitions and waits until each worker let go: with
// kafka.revoke: write its open batch is written and committed, with
// handover dropped. At the job's stop every worker writes (the graceful
// stop's promise), whatever kafka.revoke says, and so does kafka.rebalance:
// eager, where every partition is let go at every rebalance, the moving
// and the staying alike (the baseline, as kafka-go's ConsumerGroup did).
func (s *partitionSet) Revoke(ps group.Assignment) {
	how := worker.ReleaseWrite
	k := s.j.cfg.Kafka
	if k.Revoke == RevokeHandover && k.Rebalance != RebalanceEager && s.ctx.Err() == nil {
		how = worker.ReleaseHandover
	}
	s.stopAll(ps, how)
}

// Lose stops the partitions without writing or committing anything.
func (s *partitionSet) Lose(ps group.Assignment) { s.stopAll(ps, worker.ReleaseLost) }

func (s *partitionSet) stopAll(ps group.Assignment, how int32) {
	var runs []*partitionRun
	s.mu.Lock()
	for t, ids := range ps {
		for _, p := range ids {
			tp := topicPartition{t, p}
			if r, ok := s.running[tp]; ok {
				r.release.Store(how)
				r.cancel()
				runs = append(runs, r)
			}
		}
	}
	s.mu.Unlock()
	for _, r := range runs {
		<-r.ended
	}
	s.mu.Lock()
	for t, ids := range ps {
		for _, p := range ids {
			delete(s.running, topicPartition{t, p})
		}
	}
	s.mu.Unlock()
}

func (s *partitionSet) markReached(tp topicPartition) {
	s.mu.Lock()
	s.reached[tp] = true
	owned := group.Assignment{}
	for o := range s.running {
		owned[o.topic] = append(owned[o.topic], o.partition)
	}
	s.mu.Unlock()
	s.checkFinished(owned)
}

// checkFinished starts the end of an --until now run once every partition
// the member owns reached its end offset: the run ends when the group's
// other partitions are done too (awaitGroup).
func (s *partitionSet) checkFinished(owned group.Assignment) {
	if s.targets == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for t, ps := range owned {
		for _, p := range ps {
			if !s.reached[topicPartition{t, p}] {
				return
			}
		}
	}
	if !s.awaiting {
		s.awaiting = true
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.awaitGroup()
		}()
	}
}

func (s *partitionSet) finished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finishedAll
}

func (s *partitionSet) fail(err error) {
	s.mu.Lock()
	if s.fatal == nil {
		s.fatal = err
	}
	s.mu.Unlock()
	s.done()
}

func (s *partitionSet) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

// wait waits for every worker to end.
func (s *partitionSet) wait() { s.wg.Wait() }
