// Package loggen makes the demo's input: realistic JSON application logs.
// It is for the demo, the benchmarks and the tests, never the job itself.
package loggen

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// Gen makes realistic JSON application logs (about 300 bytes each), with a
// given share of malformed ones, for the demo, the benchmarks and the
// integration tests. The same seed gives the same records.
type Gen struct {
	rng       *rand.Rand
	start     time.Time
	step      time.Duration
	n         int
	BadEvery  int // every BadEvery-th record is malformed; 0 never
	buf       []byte
	key       []byte
	malformed int
}

// New starts at start, one record every step.
func New(seed uint64, start time.Time, step time.Duration) *Gen {
	return &Gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), start: start, step: step}
}

var (
	genServices = []string{"checkout", "cart", "payments", "search", "auth", "catalog", "shipping", "gateway"}
	genLevels   = []string{"INFO", "INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG"}
	genPaths    = []string{"/api/v1/cart", "/api/v1/checkout", "/api/v2/search", "/healthz", "/api/v1/orders/{id}", "/login"}
	genMethods  = []string{"GET", "GET", "POST", "PUT", "DELETE"}
	genStatus   = []int{200, 200, 200, 200, 201, 204, 301, 400, 404, 500, 503}
	genMessages = []string{
		"request completed",
		"upstream responded slowly; retrying with backoff",
		"cache miss for product listing, loading from database",
		"payment authorised by provider",
		"user session refreshed",
		"rate limit close to threshold for tenant",
		"failed to reach inventory service: connection reset by peer",
	}
	genZones = []string{"az-a", "az-b", "az-c"}
)

// Malformed counts the malformed records made so far.
func (g *Gen) Malformed() int { return g.malformed }

// Next returns the key and value of the next record and its event time.
// Both are only valid until the next call. The key is the service and host
// ("checkout/ip-10-0-12-34"), as a log shipper keys by source: with the
// service alone (8 keys) a hash partitioner left partitions empty.
func (g *Gen) Next() (key, value []byte, at time.Time) {
	i := g.n
	g.n++
	at = g.start.Add(time.Duration(i) * g.step).UTC()
	svc := genServices[g.rng.IntN(len(genServices))]
	if g.BadEvery > 0 && i%g.BadEvery == g.BadEvery-1 {
		g.malformed++
		switch g.rng.IntN(3) {
		case 0:
			g.buf = fmt.Appendf(g.buf[:0], `{"ts":"%s","level":"INFO","service":"%s","message":"truncated`, at.Format(time.RFC3339Nano), svc)
		case 1:
			g.buf = fmt.Appendf(g.buf[:0], `{"ts":"%s","level":"INFO","service":"%s","http":{"status":"teapot"}}`, at.Format(time.RFC3339Nano), svc)
		default:
			g.buf = append(g.buf[:0], "plain text line from a misconfigured logger"...)
		}
		g.key = append(append(g.key[:0], svc...), "/record-"...)
		g.key = strconv.AppendInt(g.key, int64(i), 10)
		return g.key, g.buf, at
	}
	b := g.buf[:0]
	b = append(b, `{"ts":"`...)
	b = at.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"`...)
	b = append(b, genLevels[g.rng.IntN(len(genLevels))]...)
	b = append(b, `","service":"`...)
	b = append(b, svc...)
	b = append(b, `","host":"`...)
	host := len(b)
	b = append(b, "ip-10-0-"...)
	b = strconv.AppendInt(b, int64(g.rng.IntN(256)), 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(g.rng.IntN(256)), 10)
	g.key = append(append(append(g.key[:0], svc...), '/'), b[host:]...)
	b = append(b, `","message":"`...)
	b = append(b, genMessages[g.rng.IntN(len(genMessages))]...)
	b = append(b, `","http":{"method":"`...)
	b = append(b, genMethods[g.rng.IntN(len(genMethods))]...)
	b = append(b, `","path":"`...)
	b = append(b, genPaths[g.rng.IntN(len(genPaths))]...)
	b = append(b, `","status":`...)
	b = strconv.AppendInt(b, int64(genStatus[g.rng.IntN(len(genStatus))]), 10)
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendFloat(b, float64(g.rng.IntN(200000))/100, 'f', 2, 64)
	b = append(b, `},"labels":{"zone":"`...)
	b = append(b, genZones[g.rng.IntN(len(genZones))]...)
	b = append(b, `","version":"v1.`...)
	b = strconv.AppendInt(b, int64(g.rng.IntN(20)), 10)
	b = append(b, `"},"trace_id":"`...)
	b = fmt.Appendf(b, "%016x%016x", g.rng.Uint64(), g.rng.Uint64())
	b = append(b, `"}`...)
	g.buf = b
	return g.key, b, at
}
