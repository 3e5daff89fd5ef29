package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"
	"time"

	"github.com/logstore/logstore/internal/kafka/producer"
)

// capturedRecord is one line of a capture file:
// {"key": "...", "value": ..., "timestamp": ..., "headers": ..., "partition": N}.
// value is a string, or any JSON value (kept as its JSON text); timestamp is
// RFC 3339 or epoch milliseconds; headers is an object or a list of
// {"key", "value"}; a missing partition (or one the topic does not have) is
// chosen as for any record: by murmur2 of the key, as the Java client does,
// or the sticky partition for a record without one.
type capturedRecord struct {
	Key       *string         `json:"key"`
	Value     json.RawMessage `json:"value"`
	Timestamp json.RawMessage `json:"timestamp"`
	Headers   json.RawMessage `json:"headers"`
	Partition *int            `json:"partition"`
}

// replayProgressEvery is how often a replay logs how far it got; the
// clock is replaced in tests.
var (
	replayProgressEvery = 5 * time.Second
	replayClock         = time.Now
)

// ReplayFile produces a capture file (one JSON record a line) into topic,
// keeping each record's partition and timestamp: the way to replay
// production samples against a local cluster. It returns the records sent.
// Each record is written once: the producer is idempotent, so a produce it
// retries after a timeout is dropped by the broker if the first attempt
// landed. A replay that fails and is run again writes again what the failed
// run had written. Every replayProgressEvery it logs the records sent so
// far, the input line it is at, and the rate.
func ReplayFile(ctx context.Context, conn *Clients, topic string, in io.Reader, log *slog.Logger) (int, error) {
	w, err := newProducer(conn, producer.Config{BatchRecords: 1000, Linger: 10 * time.Millisecond, Log: log})
	if err != nil {
		return 0, err
	}
	defer w.Close()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	batch := make([]producer.Record, 0, 1000)
	sent, line := 0, 0
	began := replayClock()
	last := began
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := w.Produce(ctx, topic, batch); err != nil {
			return fmt.Errorf("producing to %s: %w", topic, err)
		}
		sent += len(batch)
		batch = batch[:0]
		return nil
	}
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		m, err := parseCaptured(sc.Bytes())
		if err != nil {
			return sent, fmt.Errorf("line %d: %w", line, err)
		}
		batch = append(batch, m)
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return sent, err
			}
		}
		if now := replayClock(); now.Sub(last) >= replayProgressEvery {
			last = now
			log.Info("replay progress", "records_sent", sent, "line", line,
				"records_per_second", math.Round(float64(sent)/now.Sub(began).Seconds()))
		}
	}
	if err := sc.Err(); err != nil {
		return sent, err
	}
	return sent, flush()
}

func parseCaptured(b []byte) (producer.Record, error) {
	var r capturedRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return producer.Record{}, fmt.Errorf("not a JSON record: %w", err)
	}
	var m producer.Record
	if r.Partition != nil && *r.Partition >= 0 && *r.Partition <= math.MaxInt32 {
		m.Partition, m.Pinned = int32(*r.Partition), true
	}
	if r.Key != nil {
		m.Key = []byte(*r.Key)
	}
	var s string
	switch {
	case len(r.Value) == 0 || string(r.Value) == "null":
	case json.Unmarshal(r.Value, &s) == nil:
		m.Value = []byte(s)
	default:
		m.Value = append([]byte(nil), r.Value...)
	}
	if len(r.Timestamp) > 0 && string(r.Timestamp) != "null" {
		var ms int64
		if err := json.Unmarshal(r.Timestamp, &ms); err == nil {
			m.Time = time.UnixMilli(ms)
		} else if err := json.Unmarshal(r.Timestamp, &s); err == nil {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return m, fmt.Errorf("timestamp %q is neither RFC 3339 nor epoch milliseconds", s)
			}
			m.Time = t
		}
	}
	headers, err := parseHeaders(r.Headers)
	m.Headers = headers
	return m, err
}

func parseHeaders(raw json.RawMessage) ([]producer.Header, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []struct{ Key, Value string }
	if err := json.Unmarshal(raw, &list); err == nil {
		hs := make([]producer.Header, len(list))
		for i, h := range list {
			hs[i] = producer.Header{Key: h.Key, Value: []byte(h.Value)}
		}
		return hs, nil
	}
	var obj map[string]string
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("headers must be an object of strings or a list of {key, value}")
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a JSON object has no order; make the replay's deterministic
	hs := make([]producer.Header, len(keys))
	for i, k := range keys {
		hs[i] = producer.Header{Key: k, Value: []byte(obj[k])}
	}
	return hs, nil
}
