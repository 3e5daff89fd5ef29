package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/logstore/logstore/sink"
)

// visible reads topic under read_committed, as a consumer of an exactly
// once output does, and measures how long each record took from its
// input's timestamp to being readable here. The input's offsets are kept
// as one bit each, so a record seen twice is counted once in distinct.
func visible(ctx context.Context, brokers []string, topic, column, progress string, from int64) error {
	ctx, cancel := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer cancel()
	pf, err := os.OpenFile(progress, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer pf.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	var (
		key      = []byte(`"` + column + `":"`)
		seen     = map[int][]uint64{} // input partition -> offsets, a bit each
		records  atomic.Int64
		distinct atomic.Int64
		latency  []int32 // ms, of the records from -from on
	)
	// From its own ticker: a poll waits as long as nothing new is
	// committed, and the lab waits for the last count.
	report := func() { fmt.Fprintf(pf, "%d %d %d\n", time.Now().UnixMilli(), records.Load(), distinct.Load()) }
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				report()
			}
		}
	}()
	for ctx.Err() == nil {
		fetches := cl.PollFetches(ctx)
		at := time.Now()
		if ctx.Err() != nil {
			break
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("reading %s[%d]: %w", t, p, err) })
		if ferr != nil {
			return ferr
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			records.Add(1)
			part, off, ok := source(r)
			if !ok {
				return fmt.Errorf("%s[%d] offset %d: no %s/%s headers; is it logstore's output?", r.Topic, r.Partition, r.Offset, sink.HeaderSourcePartition, sink.HeaderSourceOffset)
			}
			bits := seen[part]
			if need := int(off/64) + 1; need > len(bits) {
				bits = append(bits, make([]uint64, need-len(bits))...)
				seen[part] = bits
			}
			if bits[off/64]&(1<<(off%64)) == 0 {
				bits[off/64] |= 1 << (off % 64)
				distinct.Add(1)
			}
			i := bytes.Index(r.Value, key)
			if i < 0 {
				return fmt.Errorf("%s[%d] offset %d: no %q in the value", r.Topic, r.Partition, r.Offset, column)
			}
			v := r.Value[i+len(key):]
			if j := bytes.IndexByte(v, '"'); j >= 0 {
				v = v[:j]
			}
			produced, err := time.Parse(time.RFC3339Nano, string(v))
			if err != nil {
				return fmt.Errorf("%s[%d] offset %d: column %s: %w", r.Topic, r.Partition, r.Offset, column, err)
			}
			if produced.UnixMilli() >= from {
				latency = append(latency, int32(at.Sub(produced).Milliseconds()))
			}
		}
	}
	cancel()
	report()
	slices.Sort(latency)
	pct := func(q float64) int32 {
		if len(latency) == 0 {
			return -1
		}
		return latency[min(len(latency)-1, int(q*float64(len(latency))))]
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	return json.NewEncoder(out).Encode(map[string]int64{
		"records": records.Load(), "distinct": distinct.Load(), "measured": int64(len(latency)),
		"p50_ms": int64(pct(0.50)), "p99_ms": int64(pct(0.99)), "max_ms": int64(pct(1)),
	})
}

// source is the input record an output record was made from.
func source(r *kgo.Record) (partition int, offset int64, ok bool) {
	var hp, ho bool
	for _, h := range r.Headers {
		var err error
		switch h.Key {
		case sink.HeaderSourcePartition:
			partition, err = strconv.Atoi(string(h.Value))
			hp = err == nil
		case sink.HeaderSourceOffset:
			offset, err = strconv.ParseInt(string(h.Value), 10, 64)
			ho = err == nil && offset >= 0
		}
	}
	return partition, offset, hp && ho
}
