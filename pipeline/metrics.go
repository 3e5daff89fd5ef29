package pipeline

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/logstore/logstore/internal/confkey"
	"github.com/logstore/logstore/internal/kafka/producer"
	"github.com/logstore/logstore/pipeline/fetch"
	"github.com/logstore/logstore/pipeline/worker"
	"github.com/logstore/logstore/rack"
)

// Metrics exposes the job's counters to Prometheus. Counters are read from
// worker.Stats and fetch.Stats at scrape time, so the hot path only does atomic adds.
type Metrics struct {
	reg       *prometheus.Registry
	rackInfo  *prometheus.GaugeVec
	rackMatch prometheus.Gauge
	genGauge  prometheus.Gauge
	// member is the group member id this process holds: logstore status
	// matches a member to the /metrics it reads by it, since another
	// process on the same host and port (one of several members on a
	// host, or a new one after a kill) is not that member.
	member     *prometheus.GaugeVec
	assigned   prometheus.Gauge
	rebalances prometheus.Counter
	flush      *prometheus.HistogramVec
	commit     *prometheus.HistogramVec
	retries    *prometheus.CounterVec
	starts     prometheus.Counter
	failures   prometheus.Counter
	held       prometheus.Gauge
	partitions partitionCollector
	ready      readiness
}

// watchProduce exports the bytes the member's producers wrote, by
// locality against its rack, like logstore_fetch_bytes_total.
func (m *Metrics) watchProduce(s *producer.Stats, rack string) {
	m.reg.MustRegister(&produceCollector{s: s, rack: rack})
}

// produceCollector exports produced bytes by broker, broker rack and
// locality.
type produceCollector struct {
	s    *producer.Stats
	rack string
}

var produceBytesDesc = prometheus.NewDesc("logstore_produce_bytes_total",
	"Record-batch bytes the brokers acknowledged (Kafka output and dead-letter topic), by the leader that took them; locality is same-rack or cross-rack.", []string{"broker", "broker_rack", "locality"}, nil)

func (c *produceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- produceBytesDesc }

func (c *produceCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.s.Snapshot().Brokers {
		locality := "cross-rack"
		if c.rack != "" && b.Rack == c.rack {
			locality = "same-rack"
		}
		ch <- prometheus.MustNewConstMetric(produceBytesDesc, prometheus.CounterValue, float64(b.Bytes), strconv.Itoa(int(b.ID)), b.Rack, locality)
	}
}

// NewMetrics registers the job's metrics on reg (a new registry when nil).
func NewMetrics(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		reg:        reg,
		rackInfo:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "logstore_rack_info", Help: "The rack this worker reads as (1), with the detection source."}, []string{"rack", "source"}),
		rackMatch:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "logstore_rack_matched", Help: "1 when the detected zone matches a broker rack; 0 means reading rack-blind."}),
		genGauge:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "logstore_group_generation", Help: "The consumer group generation this member is in."}),
		member:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "logstore_group_member", Help: "1 for the group member id this process holds now."}, []string{"member_id"}),
		assigned:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "logstore_assigned_partitions", Help: "Partitions assigned to this member."}),
		rebalances: prometheus.NewCounter(prometheus.CounterOpts{Name: "logstore_rebalances_total", Help: "Generations this member joined (the first join counts)."}),
		// From a small local file (ms) to a large S3 upload riding out an outage.
		flush: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "logstore_flush_duration_seconds",
			Help:    "Time to write one cut batch to a sink, encoding, upload and retries included.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 12)}, []string{"sink"}),
		commit: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "logstore_commit_duration_seconds",
			Help:    "OffsetCommit latency, retries included: step cut commits (c, \"cut:b\"), step next commits b+1.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)}, []string{"step"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "logstore_retries_total",
			Help: "Operations retried after a transient error, by operation."}, []string{"op"}),
		starts: prometheus.NewCounter(prometheus.CounterOpts{Name: "logstore_partition_starts_total",
			Help: "Partition workers started: a partition assigned to this member, or started again after a failure. A partition kept through a rebalance keeps its worker."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "logstore_partition_failures_total",
			Help: "Partition workers that ended with an error; the partition is held and started again after a backoff while the others go on."}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "logstore_partitions_held",
			Help: "Partitions waiting out the backoff after a failure."}),
	}
	// Every label value exists from the start, so a rate() over a clean
	// run is 0, not absent.
	for _, op := range []string{worker.OpFetch, worker.OpCommit, worker.OpFiles, worker.OpKafka, worker.OpIceberg, worker.OpDeadLetter} {
		m.retries.WithLabelValues(op)
	}
	for _, step := range []string{worker.StepCut, worker.StepNext} {
		m.commit.WithLabelValues(step)
	}
	reg.MustRegister(m.rackInfo, m.rackMatch, m.genGauge, m.member, m.assigned, m.rebalances, m.flush, m.commit, m.retries, m.starts, m.failures, m.held, &m.partitions,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) setRack(r rack.Result) {
	m.ready.zone.Store(true)
	m.rackInfo.WithLabelValues(r.Rack, r.Source).Set(1)
	if r.Matched {
		m.rackMatch.Set(1)
	} else {
		m.rackMatch.Set(0)
	}
}

func (m *Metrics) generation(id int32, memberID string, assigned map[string][]int) {
	m.ready.joined.Store(true)
	m.member.Reset()
	m.member.WithLabelValues(memberID).Set(1)
	m.rebalances.Inc()
	m.partitions.assign(assigned)
	m.genGauge.Set(float64(id))
	n := 0
	for _, ps := range assigned {
		n += len(ps)
	}
	m.assigned.Set(float64(n))
}

func (m *Metrics) partitionStarted() { m.starts.Inc() }

// partitionHeld counts a failed partition into (true) or out of the
// backoff it waits before starting again.
func (m *Metrics) partitionHeld(held bool) {
	if held {
		m.failures.Inc()
		m.held.Inc()
		return
	}
	m.held.Dec()
}

// watch exports the job's counters; readerRack decides what is same-rack.
func (m *Metrics) watch(s *worker.Stats, f *fetch.Stats, readerRack string) {
	counter := func(name, help string, read func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(read()) })
	}
	m.reg.MustRegister(
		counter("logstore_records_total", "Records read from Kafka.", s.Records.Load),
		counter("logstore_rows_written_total", "Rows written to every sink and committed.", s.Rows.Load),
		counter("logstore_records_filtered_total", "Records dropped by schema.where.", s.Filtered.Load),
		counter("logstore_dead_letters_total", "Records written to the dead-letter destinations.", s.DeadLetters.Load),
		counter("logstore_records_skipped_total", "Bad records dropped with dead_letter.on_error: skip.", s.Skipped.Load),
		counter("logstore_batches_total", "Batches committed.", s.Batches.Load),
		counter("logstore_budget_cuts_total", "Batches cut early because batch.memory_budget was full.", s.BudgetCuts.Load),
		counter("logstore_rows_staged_total", "Rows handed to the sinks before their batch was cut.", s.StagedRows.Load),
		counter("logstore_records_lost_total", "Records deleted by retention before they were read.", s.LostRecords.Load),
		counter("logstore_sink_refused_rows_total", "Rows a sink refused for good (too big, key too long), sent to the dead letters instead.", s.Refused.Load),
		counter("logstore_dead_letters_truncated_total", "Dead letters too big for the dead-letter topic, produced with the value cut.", s.TruncatedLetters.Load),
		counter("logstore_dead_letters_unwritable_total", "Dead letters no destination took; each is logged with its coordinates and reason.", s.UnwritableLetters.Load),
		counter("logstore_offset_resets_total", "Positions outside the log (before its start or past its end) moved by kafka.on_offset_out_of_range.", s.OffsetResets.Load),
		counter("logstore_recut_over_budget_bytes_total", "Bytes re-cuts and backfills took beyond batch.memory_budget rather than wait for it.", s.RecutOverBudget.Load),
		counter("logstore_floor_fetches_total", "Fetches of 16 KiB a partition holding almost nothing made past batch.memory_budget while records already fetched by others held it over its size.", s.FloorFetches.Load),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "logstore_backpressure_seconds_total", Help: "Time fetching waited for memory."},
			func() float64 { return time.Duration(s.BackpressureNanos.Load()).Seconds() }),
		&fetchCollector{f: f, rack: readerRack},
	)
}

// fetchCollector exports fetched bytes by broker, broker rack and locality.
type fetchCollector struct {
	f    *fetch.Stats
	rack string
}

var fetchBytesDesc = prometheus.NewDesc("logstore_fetch_bytes_total",
	"Bytes fetched, by the broker that served them; locality is same-rack or cross-rack.", []string{"broker", "broker_rack", "locality"}, nil)

var fetchRequestsDesc = prometheus.NewDesc("logstore_fetch_requests_total",
	"Fetch requests sent, by broker; one carries every partition the member reads there.", []string{"broker", "broker_rack"}, nil)

var connectionsDesc = prometheus.NewDesc("logstore_broker_connections_total",
	"Connections opened by the fetch client, by broker (seed: the configured addresses, to find the cluster).", []string{"broker"}, nil)

func (c *fetchCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- fetchBytesDesc
	ch <- fetchRequestsDesc
	ch <- connectionsDesc
}

func (c *fetchCollector) Collect(ch chan<- prometheus.Metric) {
	snap := c.f.Snapshot()
	for _, b := range snap.Brokers {
		locality := "cross-rack"
		if c.rack != "" && b.Rack == c.rack {
			locality = "same-rack"
		}
		id := strconv.Itoa(int(b.ID))
		ch <- prometheus.MustNewConstMetric(fetchBytesDesc, prometheus.CounterValue, float64(b.Bytes), id, b.Rack, locality)
		ch <- prometheus.MustNewConstMetric(fetchRequestsDesc, prometheus.CounterValue, float64(b.Fetches), id, b.Rack)
		ch <- prometheus.MustNewConstMetric(connectionsDesc, prometheus.CounterValue, float64(b.Dials), id)
	}
	ch <- prometheus.MustNewConstMetric(connectionsDesc, prometheus.CounterValue, float64(snap.SeedDials), "seed")
}

// The worker's hooks; a nil *Metrics (workers built by tests) records nothing.

func (m *Metrics) Retried(op string) {
	if m != nil {
		m.retries.WithLabelValues(op).Inc()
	}
}

func (m *Metrics) TimeCommit(step string, start time.Time) {
	if m != nil {
		m.commit.WithLabelValues(step).Observe(time.Since(start).Seconds())
	}
}

func (m *Metrics) TimeFlush(kind string, start time.Time) {
	if m != nil {
		m.flush.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	}
}

// Handler serves /metrics, /healthz (alive) and /readyz (zone found, sinks
// preflighted, group joined, not stopping).
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", healthz)
	mux.HandleFunc("/readyz", m.ready.readyz)
	return mux
}

// Stopping makes /readyz answer 503 from now on: the graceful stop began.
func (m *Metrics) Stopping() { m.ready.stopping.Store(true) }

// Serve serves Handler on addr until ctx ends.
func (m *Metrics) Serve(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return confkey.Errorf("metrics.listen", "%v", err)
	}
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the job goes on without metrics
		}
	}()
	return nil
}
