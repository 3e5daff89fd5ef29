package pipeline

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// partitionStats is one assigned partition's progress, written by its worker
// with atomic stores and read at scrape time.
type partitionStats struct {
	topic     string
	partition int
	// lag is the records between the partition's end (high watermark, or
	// last stable offset under read_committed) and the next offset to read.
	lag atomic.Int64
	// pendingSince is when the oldest record not yet committed was taken
	// (unix nanoseconds); 0 when everything taken is committed.
	pendingSince atomic.Int64
	// next is the next offset to read, valid once positioned is set; target
	// is the run's end offset, valid when bounded (progress.go reads both).
	next       atomic.Int64
	positioned atomic.Bool
	target     atomic.Int64
	bounded    atomic.Bool
}

// It is the worker's Progress (package worker).

func (p *partitionStats) SetLag(high, next int64) {
	if p != nil && high >= 0 {
		p.lag.Store(max(high-next, 0))
		p.next.Store(next)
		p.positioned.Store(true)
	}
}

func (p *partitionStats) Taken(now time.Time) {
	if p != nil {
		p.pendingSince.CompareAndSwap(0, now.UnixNano())
	}
}

func (p *partitionStats) Committed() {
	if p != nil {
		p.pendingSince.Store(0)
	}
}

// partitionCollector exports the assigned partitions' lag and the age of
// their oldest uncommitted record. A new generation replaces the set, so a
// partition that moved to another member stops being exported here.
type partitionCollector struct {
	mu    sync.Mutex
	parts map[string]*partitionStats
}

var (
	lagDesc = prometheus.NewDesc("logstore_consumer_lag",
		"Records between the partition's end (high watermark; last stable offset under read_committed) and the next offset this member fetches.",
		[]string{"topic", "partition"}, nil)
	uncommittedAgeDesc = prometheus.NewDesc("logstore_uncommitted_batch_age_seconds",
		"Age of the oldest fetched record not yet committed; 0 when everything fetched is committed.",
		[]string{"topic", "partition"}, nil)
)

func partitionKey(topic string, partition int) string {
	return topic + "/" + strconv.Itoa(partition)
}

// assign keeps the stats of partitions still assigned and adds the new ones.
func (c *partitionCollector) assign(assigned map[string][]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	parts := map[string]*partitionStats{}
	for topic, ps := range assigned {
		for _, p := range ps {
			k := partitionKey(topic, p)
			if old, ok := c.parts[k]; ok {
				parts[k] = old
			} else {
				parts[k] = &partitionStats{topic: topic, partition: p}
			}
		}
	}
	c.parts = parts
}

// stats is the partition's entry, made when a replay reads it outside a group.
func (c *partitionCollector) stats(topic string, partition int) *partitionStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := partitionKey(topic, partition)
	if c.parts == nil {
		c.parts = map[string]*partitionStats{}
	}
	if c.parts[k] == nil {
		c.parts[k] = &partitionStats{topic: topic, partition: partition}
	}
	return c.parts[k]
}

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagDesc
	ch <- uncommittedAgeDesc
}

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now().UnixNano()
	for _, p := range c.parts {
		labels := []string{p.topic, strconv.Itoa(p.partition)}
		age := 0.0
		if since := p.pendingSince.Load(); since > 0 {
			age = time.Duration(now - since).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(p.lag.Load()), labels...)
		ch <- prometheus.MustNewConstMetric(uncommittedAgeDesc, prometheus.GaugeValue, age, labels...)
	}
}
