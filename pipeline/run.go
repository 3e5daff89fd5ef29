package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"github.com/logstore/logstore/internal/clock"
	"github.com/logstore/logstore/pipeline/decode"
	"github.com/logstore/logstore/pipeline/fetch"
	"github.com/logstore/logstore/pipeline/group"
	"github.com/logstore/logstore/pipeline/start"
	"github.com/logstore/logstore/pipeline/worker"
	"github.com/logstore/logstore/rack"
	"github.com/logstore/logstore/sink"
)

// Mode says when a run ends.
type Mode struct {
	// UntilNow reads to the end offsets seen at start, flushes, commits and
	// returns (Spark's trigger(availableNow)).
	UntilNow bool
	// From and To, when set, replay that time range outside the group: no
	// offsets are committed and output goes under Prefix.
	From, To time.Time
	// Prefix is put before every output name (replays); BackfillPrefix.
	Prefix string

	plan *backfillManifest // a backfill's offsets and stride
}

func (m Mode) replay() bool { return !m.From.IsZero() }

// Job is one logstore run: config, connections and the sinks.
type Job struct {
	cfg      *Config
	conn     *Clients
	log      *slog.Logger
	stats    *worker.Stats
	fetch    *fetch.Stats
	client   *fetch.Client // every reader's connections, across generations
	metrics  *Metrics
	sinks    []sink.Sink
	dead     []worker.DeadLetterWriter
	closers  []func() error
	budget   *worker.Budget
	limiter  *rate.Limiter
	rack     rack.Result
	follower bool
	decoder  *decode.Decoder
	layout   string              // the files sink's layout, recorded in cut marks
	resume   worker.ResumeStore  // nil without a files sink
	eos      *worker.ExactlyOnce // nil unless sinks.kafka.delivery is exactly_once
}

// Deps are what the caller may supply instead of building from config.
type Deps struct {
	Log     *slog.Logger
	Metrics *Metrics // nil: a private registry
	// Sinks replaces the configured sinks (tests, the demo).
	Sinks []sink.Sink
}

// NewJob connects (lazily), detects the rack, matches it with the brokers'
// racks and opens the sinks (their preflight checks run here, so a missing
// bucket fails at start, not at the first flush).
func NewJob(ctx context.Context, cfg *Config, deps Deps) (*Job, error) {
	log := deps.Log
	if log == nil {
		log = slog.Default()
	}
	conn, err := NewClients(ctx, cfg.Kafka)
	if err != nil {
		return nil, err
	}
	j := &Job{cfg: cfg, conn: conn, log: log, stats: worker.NewStats(), fetch: &fetch.Stats{}, metrics: deps.Metrics, budget: worker.NewBudget(cfg.Batch.MemoryBudget)}
	if j.metrics == nil {
		j.metrics = NewMetrics(nil)
	}
	if r := cfg.Kafka.MaxRecordsPerSecond; r > 0 {
		j.limiter = rate.NewLimiter(rate.Limit(r), max(r/10, 1))
	}
	brokerRacks, partitions, err := brokerRacks(ctx, conn, cfg.Kafka)
	if err != nil {
		return nil, err
	}
	if advice := FilesAdvice(partitions, cfg); advice != "" {
		log.Warn("many small files: " + advice)
	}
	if j.rack, err = rack.Resolve(ctx, cfg.Rack, brokerRacks, log); err != nil {
		return nil, err
	}
	j.metrics.setRack(j.rack)
	j.metrics.watch(j.stats, j.fetch, j.rack.Rack)
	log.Info("rack", "rack", j.rack.Rack, "source", j.rack.Source, "candidates", j.rack.Candidates, "broker_racks", brokerRacks)
	k := cfg.Kafka
	j.client = fetch.NewClient(fetch.ClientConfig{
		Brokers: k.Brokers, Dialer: conn.Dialer, Isolation: k.Isolation,
		MinBytes: k.Fetch.MinBytes, MaxWait: k.Fetch.MaxWait, RequestMaxBytes: k.Fetch.RequestMaxBytes,
		Stats: j.fetch, Log: log,
	})
	j.closers = append(j.closers, j.client.Close)
	if cfg.Rack.Mode == rack.ModeBlind {
		log.Info("rack-blind mode: no rack in fetches, every fetch from the leader; bytes are still counted by rack", "balancer", cfg.Rack.Balancer)
	} else {
		j.follower = followerFetching(ctx, conn, cfg.Rack.FollowerFetching, log)
	}
	if err := j.openSinks(ctx, deps); err != nil {
		j.Close()
		return nil, err
	}
	j.metrics.ready.sinks.Store(true)
	return j, nil
}

// Stats is the live counters of the job.
func (j *Job) Stats() *worker.Stats { return j.stats }

// FetchStats is the live byte counts by broker rack.
func (j *Job) FetchStats() *fetch.Stats { return j.fetch }

// Rack is the detection result the job runs with.
func (j *Job) Rack() rack.Result { return j.rack }

// Close closes the sinks and connections.
func (j *Job) Close() error {
	var errs []error
	for _, s := range j.sinks {
		errs = append(errs, s.Close())
	}
	for _, c := range j.closers {
		errs = append(errs, c())
	}
	j.conn.Close()
	return errors.Join(errs...)
}

// BrokerRacks asks the cluster for its brokers' racks, sorted and distinct.
func BrokerRacks(ctx context.Context, k InputConfig) ([]string, error) {
	conn, err := NewClients(ctx, k)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	racks, _, err := brokerRacks(ctx, conn, k)
	return racks, err
}

// brokerRacks reads the brokers' racks, sorted and distinct, and how many
// partitions the input topics have.
func brokerRacks(ctx context.Context, conn *Clients, k InputConfig) (racks []string, partitions int, err error) {
	md, err := conn.Client.Metadata(ctx, &kafka.MetadataRequest{Topics: k.Topics})
	if err != nil {
		return nil, 0, fmt.Errorf("reading cluster metadata from %s: %w (check kafka.brokers, TLS and SASL)", strings.Join(k.Brokers, ","), err)
	}
	for _, t := range md.Topics {
		if t.Error != nil {
			return nil, 0, fmt.Errorf("topic %s: %w", t.Name, t.Error)
		}
		partitions += len(t.Partitions)
	}
	seen := map[string]bool{}
	for _, b := range md.Brokers {
		if b.Rack != "" && !seen[b.Rack] {
			seen[b.Rack] = true
			racks = append(racks, b.Rack)
		}
	}
	sort.Strings(racks)
	return racks, partitions, nil
}

// followerFetching resolves `rack.follower_fetching`: auto asks a broker for
// replica.selector.class; a broker that won't say is taken as leader-only,
// with a warning, because every partition led in another zone then reads
// across zones.
func followerFetching(ctx context.Context, conn *Clients, setting string, log *slog.Logger) bool {
	switch setting {
	case "on":
		return true
	case "off":
		return false
	}
	md, err := conn.Client.Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil || len(md.Brokers) == 0 {
		log.Warn("follower fetching: no broker answered metadata to ask for replica.selector.class; reading from leaders only (set rack.follower_fetching: on to override)", "err", err)
		return false
	}
	resp, err := conn.Client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeBroker, ResourceName: fmt.Sprint(md.Brokers[0].ID), ConfigNames: []string{"replica.selector.class"},
	}}})
	if err == nil && len(resp.Resources) == 0 {
		err = errors.New("empty DescribeConfigs answer")
	}
	if err == nil {
		err = resp.Resources[0].Error
	}
	if errors.Is(err, kafka.ClusterAuthorizationFailed) || errors.Is(err, kafka.TopicAuthorizationFailed) {
		log.Warn("follower fetching: not allowed to read the brokers' replica.selector.class, so reading from leaders only: every partition led in another zone is read across zones. "+
			"Grant DescribeConfigs on the cluster (Amazon MSK with IAM: the action "+mskDescribeConfigsAction+"), "+
			"or set rack.follower_fetching: on if the brokers set replica.selector.class", "permission", mskDescribeConfigsAction, "err", err)
		return false
	}
	if err != nil {
		log.Warn("follower fetching: the broker's replica.selector.class is not readable; reading from leaders only (set rack.follower_fetching: on to override)", "err", err)
		return false
	}
	for _, e := range resp.Resources[0].ConfigEntries {
		// LeaderSelector is the broker default: leader-only, like no selector.
		if e.ConfigName == "replica.selector.class" && e.ConfigValue != "" && !strings.HasSuffix(e.ConfigValue, ".LeaderSelector") {
			log.Info("follower fetching on", "replica.selector.class", e.ConfigValue)
			return true
		}
	}
	log.Info("follower fetching off: the brokers set no replica.selector.class, so they serve leaders only")
	return false
}

// mskDescribeConfigsAction is the IAM action Amazon MSK checks for
// DescribeConfigs on a broker.
const mskDescribeConfigsAction = "kafka-cluster:DescribeClusterDynamicConfiguration"

// Run runs the job until ctx ends or, in UntilNow and replay modes, until
// the end offsets are reached. ctx's end is the graceful stop: fetching stops,
// open batches are flushed and committed within run.shutdown_timeout, and
// the member leaves the group.
func (j *Job) Run(ctx context.Context, mode Mode) error {
	if !mode.Bounded() && j.cfg.Run.ProgressInterval > 0 { // bounded runs: Job.Progress, progress.go
		defer j.progress(ctx)()
	}
	defer context.AfterFunc(ctx, j.metrics.Stopping)()
	if mode.replay() {
		if err := replayIntoTable(j.cfg); err != nil {
			return err
		}
		return j.runReplay(ctx, mode)
	}
	return j.runGroup(ctx, mode)
}

func (j *Job) runGroup(ctx context.Context, mode Mode) error {
	var targets map[string]map[int]int64
	if mode.UntilNow {
		var err error
		if targets, err = j.endOffsets(ctx); err != nil {
			return err
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	set := j.newPartitionSet(runCtx, mode, targets, stop)
	member := j.groupMember(set)
	err := member.Run(runCtx, set)
	set.wait()
	if err := set.failure(); err != nil {
		return err
	}
	if errors.Is(err, group.ErrFencedInstance) {
		return fmt.Errorf("%w: %w", ErrFencedInstance, err)
	}
	if err != nil {
		return err
	}
	if mode.UntilNow && set.finished() {
		return nil
	}
	return stoppedEarly(mode)
}

// ErrFencedInstance ends a static member whose kafka.group_instance_id
// another process joined with. The CLI exits with its own code: running
// it again would fence the other one in turn.
var ErrFencedInstance = errors.New("stopped: fenced by another member with the same kafka.group_instance_id")

// runPartitions runs one worker per partition until ctx ends or every
// worker reached its target (reached says which); the first error stops
// them all. A replay's, outside the group.
func (j *Job) runPartitions(ctx context.Context, assigned map[string][]int, commit worker.Committer, targets map[string]map[int]int64, mode Mode) (reached bool, err error) {
	starts, err := j.prepare(ctx, assigned, commit, targets, mode)
	if err != nil {
		return false, err
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, s := range starts {
		s.progress.from(s.pos.Offset)
		g.Go(func() error {
			defer s.w.Close()
			return s.w.Run(gctx, s.pos)
		})
	}
	if err := g.Wait(); err != nil {
		return false, err
	}
	for _, s := range starts {
		if !s.w.Reached() {
			return false, nil
		}
	}
	return true, nil
}

// readyWorker is a worker, where it begins, and its progress in the
// metrics.
type readyWorker struct {
	w        *worker.Worker
	pos      position
	progress *partitionStats
}

// prepare reads what is known of the partitions (the group's positions
// in one request, start_offset and the topic's id per topic), decides
// where each starts (startOf) and makes its worker. Each start is logged
// once, when every partition's is decided: a prepare that fails is tried
// again, partition by partition.
func (j *Job) prepare(ctx context.Context, assigned map[string][]int, commit worker.Committer, targets map[string]map[int]int64, mode Mode) ([]readyWorker, error) {
	var positions map[string]map[int]position
	var froms map[string]map[int]*int64
	if _, ok := commit.(worker.NoCommit); !ok {
		var err error
		if positions, froms, err = j.fetchPositions(ctx, assigned); err != nil {
			return nil, err
		}
	}
	own, err := j.lostPositions(ctx, positions)
	if err != nil {
		return nil, err
	}
	var ready []readyWorker
	var starts []start.Start
	fail := func(err error) ([]readyWorker, error) {
		for _, s := range ready {
			s.w.Close()
		}
		return nil, err
	}
	for topic, ps := range assigned {
		offsets, err := j.uncommittedStarts(ctx, topic, ps, positions[topic], mode)
		var topicID string
		if err == nil {
			topicID, err = j.topicID(ctx, topic)
		}
		if err != nil {
			return fail(err)
		}
		for _, p := range ps {
			s := start.Start{}
			if positions == nil {
				s, _ = start.Decide(start.Known{Topic: topic, Partition: p, Backfill: true, BackfillFrom: offsets[p]})
			} else {
				j.removeLeftovers(ctx, topic, p)
				if s, err = j.startOf(ctx, topic, p, positions[topic][p], own[topic][p], froms[topic][p], offsets[p], topicID, commit); err != nil {
					return fail(err)
				}
			}
			target := int64(-1)
			if targets != nil {
				target = targets[topic][p]
			}
			c := worker.Config{Topic: topic, Partition: p, Commit: commit, Target: target, Prefix: mode.Prefix, TopicID: topicID, InKafka: s.InKafka}
			if mode.plan != nil {
				c.Stride = mode.plan.Stride
			}
			w, progress := j.newWorker(c)
			ready = append(ready, readyWorker{w, s.Position, progress})
			starts = append(starts, s)
		}
	}
	for i, s := range starts {
		j.logStart(ctx, ready[i].w.Topic, ready[i].w.Partition, s)
	}
	return ready, nil
}

// uncommittedStarts resolves where partitions with no commit begin.
func (j *Job) uncommittedStarts(ctx context.Context, topic string, ps []int, committed map[int]position, mode Mode) (map[int]int64, error) {
	if mode.replay() {
		if mode.plan != nil {
			starts := map[int]int64{}
			for _, p := range ps {
				starts[p] = mode.plan.Ranges[topic][p][0]
			}
			return starts, nil
		}
		return offsetsForTime(ctx, j.conn.Client, topic, ps, mode.From)
	}
	var fresh []int
	for _, p := range ps {
		if c, ok := committed[p]; !ok || c.Offset < 0 {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) == 0 {
		return map[int]int64{}, nil
	}
	return resolveStartOffset(ctx, j.conn.Client, topic, fresh, j.cfg.Kafka.StartOffset)
}

// endOffsets are the UntilNow targets: each partition's end (the last stable
// offset under read_committed) when the run starts.
func (j *Job) endOffsets(ctx context.Context) (map[string]map[int]int64, error) {
	parts, err := j.partitions(ctx)
	if err != nil {
		return nil, err
	}
	iso := kafka.ReadUncommitted
	if j.cfg.Kafka.Isolation == "read_committed" {
		iso = kafka.ReadCommitted
	}
	out := map[string]map[int]int64{}
	for topic, ps := range parts {
		if out[topic], err = listOffsets(ctx, j.conn.Client, topic, ps, iso, kafka.LastOffsetOf); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// partitions lists every partition of the configured topics.
func (j *Job) partitions(ctx context.Context) (map[string][]int, error) {
	md, err := j.conn.Client.Metadata(ctx, &kafka.MetadataRequest{Topics: j.cfg.Kafka.Topics})
	if err != nil {
		return nil, fmt.Errorf("reading topic metadata: %w", err)
	}
	out := map[string][]int{}
	for _, t := range md.Topics {
		if t.Error != nil {
			return nil, fmt.Errorf("topic %s: %w", t.Name, t.Error)
		}
		for _, p := range t.Partitions {
			out[t.Name] = append(out[t.Name], p.ID)
		}
		sort.Ints(out[t.Name])
	}
	return out, nil
}

// runReplay reads a time range of every partition without the group.
func (j *Job) runReplay(ctx context.Context, mode Mode) error {
	parts, err := j.partitions(ctx)
	if err != nil {
		return err
	}
	if mode.plan, err = j.backfillPlan(ctx, mode, parts); err != nil {
		return err
	}
	targets := map[string]map[int]int64{}
	for topic, ps := range parts {
		targets[topic] = map[int]int64{}
		for _, p := range ps {
			r, ok := mode.plan.Ranges[topic][p]
			if !ok {
				return fmt.Errorf("backfill %s: %s/%d is not in its manifest (partitions added since its first run); delete %s to start it over", mode.Prefix, topic, p, mode.Prefix)
			}
			targets[topic][p] = r[1]
		}
	}
	j.metrics.ready.joined.Store(true) // no group to join: reading is ready
	reached, err := j.runPartitions(ctx, parts, worker.NoCommit{}, targets, mode)
	if err != nil {
		return err
	}
	if !reached {
		return stoppedEarly(mode)
	}
	mode.plan.Complete = true
	return j.saveManifest(ctx, mode, mode.plan)
}

// ErrStoppedEarly is the end of a run with a target (--until now, a
// replay) that was stopped (SIGTERM) before every partition reached it.
// What was done is committed; running it again continues. The CLI exits
// with its own code, so a scheduler can tell it from success.
var ErrStoppedEarly = errors.New("stopped before reaching the end offsets; what was written is committed, run again to continue")

// stoppedEarly is how a run that was stopped ends: ErrStoppedEarly when
// the mode has a target, else a clean stop.
func stoppedEarly(mode Mode) error {
	if mode.UntilNow || mode.replay() {
		return ErrStoppedEarly
	}
	return nil
}

// newWorker makes the worker of one partition: c names the partition and
// what is particular to this run of it, the job gives the rest. progress
// is the partition's in the metrics.
func (j *Job) newWorker(c worker.Config) (w *worker.Worker, progress *partitionStats) {
	k := j.cfg.Kafka
	c.Reader = fetch.NewPartitionReader(fetch.ReaderConfig{
		Client:            j.client,
		Topic:             c.Topic,
		Partition:         c.Partition,
		Rack:              j.rack.Rack,
		LeaderOnly:        !j.follower,
		MaxBytes:          k.Fetch.MaxBytes,
		PreferredLease:    k.Fetch.PreferredReplicaLease,
		ReplicaBackoff:    k.Fetch.ReplicaBackoff,
		ReplicaBackoffMax: k.Fetch.ReplicaBackoffMax,
		Log:               j.log, // the reader names its topic and partition
	})
	progress = j.metrics.partitions.stats(c.Topic, c.Partition).aim(c.Target)
	c.Log = j.log.With("topic", c.Topic, "partition", c.Partition)
	c.Decoder, c.Sinks, c.Dead, c.Layout, c.Resume, c.EOS = j.decoder, j.sinks, j.dead, j.layout, j.resume, j.eos
	c.OnError, c.OnOutOfRange = j.cfg.DeadLetter.OnError, k.OnOffsetOutOfRange
	c.Limits = worker.Limits{MaxRows: j.cfg.Batch.MaxRows, MaxBytes: j.cfg.Batch.MaxBytes, MaxAge: j.cfg.Batch.MaxAge}
	c.Budget, c.Limiter, c.Stats, c.Metrics, c.Progress = j.budget, j.limiter, j.stats, j.metrics, progress
	c.FlushWait, c.FetchMax = j.cfg.Run.ShutdownTimeout, int64(k.Fetch.MaxBytes)
	c.Originals = j.cfg.Sinks.Kafka != nil && j.cfg.Sinks.Kafka.Value == "original"
	c.Columns = len(j.decoder.Schema().Fields)
	return worker.New(c), progress
}

// progress logs a line every run.progress_interval.
func (j *Job) progress(ctx context.Context) func() {
	return clock.Every(ctx, j.cfg.Run.ProgressInterval, func() {
		s := j.Summary()
		j.log.Info("progress", "records", s.Records, "rows", s.Rows, "dead_letters", s.DeadLetters,
			"records_per_s", int64(s.RecordsPerSecond), "same_rack_bytes", s.SameRackBytes, "cross_rack_bytes", s.CrossRackBytes)
	})
}

// Metrics is the job's Prometheus registry.
func (j *Job) Metrics() *Metrics { return j.metrics }
