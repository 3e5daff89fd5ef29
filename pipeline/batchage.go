package pipeline

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// BatchAges knows, per partition this member works on, since when it holds
// a record it has not committed: the open batch's first record, or a cut
// batch a sink has not taken yet. A sink outage or a record no sink takes
// shows here as an age that keeps growing, long before the lag alerts.
type BatchAges struct {
	mu    sync.Mutex
	since map[ageKey]*atomic.Int64 // unix nanos; 0: nothing held
}

type ageKey struct {
	topic     string
	partition int
}

func newBatchAges() *BatchAges { return &BatchAges{since: map[ageKey]*atomic.Int64{}} }

// track starts reporting a partition; the returned func stops it (the
// partition moved to another member).
func (a *BatchAges) track(topic string, partition int) (*atomic.Int64, func()) {
	k := ageKey{topic, partition}
	v := new(atomic.Int64)
	a.mu.Lock()
	a.since[k] = v
	a.mu.Unlock()
	return v, func() {
		a.mu.Lock()
		if a.since[k] == v {
			delete(a.since, k)
		}
		a.mu.Unlock()
	}
}

// Seconds is each tracked partition's age at now, 0 when it holds nothing.
func (a *BatchAges) Seconds(now time.Time) map[string]map[int]float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]map[int]float64{}
	for k, v := range a.since {
		if out[k.topic] == nil {
			out[k.topic] = map[int]float64{}
		}
		age := 0.0
		if at := v.Load(); at != 0 {
			age = now.Sub(time.Unix(0, at)).Seconds()
		}
		out[k.topic][k.partition] = age
	}
	return out
}

var batchAgeDesc = prometheus.NewDesc("logstore_oldest_uncommitted_batch_age_seconds",
	"Per partition, how long the oldest record read but not yet committed has been held (0: none held). "+
		"Above batch.max_age plus a few flushes: a sink outage or a stall.", []string{"topic", "partition"}, nil)

type batchAgeCollector struct{ a *BatchAges }

func (c batchAgeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- batchAgeDesc }

func (c batchAgeCollector) Collect(ch chan<- prometheus.Metric) {
	for topic, ps := range c.a.Seconds(time.Now()) {
		for p, age := range ps {
			ch <- prometheus.MustNewConstMetric(batchAgeDesc, prometheus.GaugeValue, age, topic, strconv.Itoa(p))
		}
	}
}
