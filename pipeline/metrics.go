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
	"github.com/logstore/logstore/pipeline/fetch"
	"github.com/logstore/logstore/rack"
)

// Metrics exposes the job's counters to Prometheus. Counters are read from
// Stats and fetch.Stats at scrape time, so the hot path only does atomic adds.
type Metrics struct {
	reg       *prometheus.Registry
	rackInfo  *prometheus.GaugeVec
	rackMatch prometheus.Gauge
	genGauge  prometheus.Gauge
	assigned  prometheus.Gauge
}

// NewMetrics registers the job's metrics on reg (a new registry when nil).
func NewMetrics(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		reg:       reg,
		rackInfo:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "logstore_rack_info", Help: "The rack this worker reads as (1), with the detection source."}, []string{"rack", "source"}),
		rackMatch: prometheus.NewGauge(prometheus.GaugeOpts{Name: "logstore_rack_matched", Help: "1 when the detected zone matches a broker rack; 0 means reading rack-blind."}),
		genGauge:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "logstore_group_generation", Help: "The consumer group generation this member is in."}),
		assigned:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "logstore_assigned_partitions", Help: "Partitions assigned to this member."}),
	}
	reg.MustRegister(m.rackInfo, m.rackMatch, m.genGauge, m.assigned,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) setRack(r rack.Result) {
	m.rackInfo.WithLabelValues(r.Rack, r.Source).Set(1)
	if r.Matched {
		m.rackMatch.Set(1)
	} else {
		m.rackMatch.Set(0)
	}
}

func (m *Metrics) generation(id int32, assigned map[string][]int) {
	m.genGauge.Set(float64(id))
	n := 0
	for _, ps := range assigned {
		n += len(ps)
	}
	m.assigned.Set(float64(n))
}

// watch exports the job's counters; readerRack decides what is same-rack.
func (m *Metrics) watch(s *Stats, f *fetch.Stats, readerRack string) {
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

func (c *fetchCollector) Describe(ch chan<- *prometheus.Desc) { ch <- fetchBytesDesc }

func (c *fetchCollector) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.f.Snapshot().Brokers {
		locality := "cross-rack"
		if c.rack != "" && b.Rack == c.rack {
			locality = "same-rack"
		}
		ch <- prometheus.MustNewConstMetric(fetchBytesDesc, prometheus.CounterValue, float64(b.Bytes), strconv.Itoa(int(b.ID)), b.Rack, locality)
	}
}

// Serve serves /metrics on addr until ctx ends.
func (m *Metrics) Serve(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return confkey.Errorf("metrics.listen", "%v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
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
