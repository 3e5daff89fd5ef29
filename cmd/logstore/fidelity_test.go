package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/pipeline"
	"github.com/logstore/logstore/sink"

	"github.com/logstore/logstore/internal/testkit"
)

// embeddedKafka starts a one-broker kfake cluster with the topic "logs"
// and produces msgs to it.
func embeddedKafka(t *testing.T, partitions int, msgs ...kafka.Message) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), "logs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	if len(msgs) > 0 {
		w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "logs", Balancer: &kafka.Hash{}, BatchSize: 1000, BatchTimeout: 5 * time.Millisecond, RequiredAcks: kafka.RequireAll}
		defer w.Close()
		if err := w.WriteMessages(context.Background(), msgs...); err != nil {
			t.Fatal(err)
		}
	}
	return brokers
}

// embeddedJob is a job config for embeddedKafka's brokers writing files to
// dir; kafkaKeys adds indented keys to the kafka section, body the schema
// and anything else.
func embeddedJob(t *testing.T, brokers []string, dir, kafkaKeys, body string) *pipeline.Config {
	t.Helper()
	yaml := fmt.Sprintf(`kafka:
  brokers: [%s]
  topics: [logs]
  group: fidelity
  isolation: read_uncommitted
  start_offset: earliest
%s
rack:
  providers: [static]
sinks:
  files:
    url: file://%s
dead_letter: {files: true}
log:
  level: info
  format: text
`, strings.Join(brokers, ","), kafkaKeys, dir) + body
	cfg, err := pipeline.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	return cfg
}

// TestUntilNowStoppedEarlyExits3: `run --until now` stopped by a signal
// before it reached the end offsets exits 3, not 0, so a scheduler can
// tell it did not finish.
func TestUntilNowStoppedEarlyExits3(t *testing.T) {
	msgs := make([]kafka.Message, 200)
	for i := range msgs {
		msgs[i] = kafka.Message{Value: fmt.Appendf(nil, `{"n": %d}`, i)}
	}
	brokers := embeddedKafka(t, 1, msgs...)
	cfg := embeddedJob(t, brokers, t.TempDir(), "  max_records_per_second: 1", `schema:
  columns: [{name: n, type: int64}]
`)
	var logs testkit.LogBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runJob(ctx, cfg, pipeline.Mode{UntilNow: true}, pipeline.Deps{Log: slog.New(slog.NewTextHandler(&logs, nil))}, new(bytes.Buffer), new(bytes.Buffer))
	}()
	for !strings.Contains(logs.String(), "msg=generation") {
		select {
		case err := <-done:
			t.Fatalf("the job ended before it joined: %v\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel() // what the first SIGTERM does
	err := <-done
	var stderr bytes.Buffer
	if code := exitCode(err, &stderr); code != exitStopped {
		t.Fatalf("exit %d (%v), want %d\n%s", code, err, exitStopped, logs.String())
	}
	if !strings.Contains(stderr.String(), "stopped before reaching the end offsets") {
		t.Errorf("stderr does not say why: %s", stderr.String())
	}
}

// nastyRecord is one line of testdata/nasty.jsonl: a record and what must
// become of it.
type nastyRecord struct {
	Name      string            `json:"name"`
	Value     json.RawMessage   `json:"value"`      // the value, byte for byte as written here
	ValueText *string           `json:"value_text"` // or as text (not JSON, or expanded)
	ValueB64  *string           `json:"value_b64"`  // or as bytes (not UTF-8)
	ValueNull bool              `json:"value_null"` // or none: a tombstone
	Key       *string           `json:"key"`
	KeyB64    *string           `json:"key_b64"`
	Headers   [][]*string       `json:"headers"` // [name, value or null, "b64"?]
	KafkaMS   int64             `json:"kafka_ms"`
	Expand    map[string][2]any `json:"expand"` // placeholder → [text, times], in value_text and row
	Row       map[string]any    `json:"row"`    // columns as verify_parquet.py prints them
	Dead      string            `json:"dead"`   // a substring of the dead-letter reason
	expanded  map[string]string
}

func (r *nastyRecord) expand(s string) string {
	for k, v := range r.expanded {
		s = strings.ReplaceAll(s, k, v)
	}
	return s
}

func (r *nastyRecord) message(t *testing.T) kafka.Message {
	t.Helper()
	r.expanded = map[string]string{}
	for k, v := range r.Expand {
		n, _ := v[1].(json.Number).Int64()
		r.expanded[k] = strings.Repeat(v[0].(string), int(n))
	}
	var m kafka.Message
	switch {
	case r.Value != nil:
		m.Value = []byte(r.Value)
	case r.ValueText != nil:
		m.Value = []byte(r.expand(*r.ValueText))
	case r.ValueB64 != nil:
		m.Value = mustB64(t, *r.ValueB64)
	case !r.ValueNull:
		t.Fatalf("%s: no value", r.Name)
	}
	if r.Key != nil {
		m.Key = []byte(*r.Key)
	}
	if r.KeyB64 != nil {
		m.Key = mustB64(t, *r.KeyB64)
	}
	for _, h := range r.Headers {
		hd := kafka.Header{Key: *h[0]}
		if h[1] != nil {
			hd.Value = []byte(*h[1])
			if len(h) > 2 {
				hd.Value = mustB64(t, *h[1])
			}
		}
		m.Headers = append(m.Headers, hd)
	}
	if r.KafkaMS != 0 {
		m.Time = time.UnixMilli(r.KafkaMS)
	}
	return m
}

func mustB64(t *testing.T, s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nastySchema reads every edge the corpus has, one column per concern.
const nastySchema = `schema:
  columns:
    - {name: offset, type: int64, source: kafka.offset, required: true}
    - {name: msg, type: string}
    - {name: raw, type: bytes, source: msg}
    - {name: n, type: int64}
    - {name: i32, type: int32, source: n32}
    - {name: f, type: float64}
    - {name: f32, type: float32}
    - {name: ok, type: bool}
    - {name: t_s, type: timestamp, unit: us, time_format: epoch_s}
    - {name: t_ms, type: timestamp, unit: ms, time_format: epoch_ms}
    - {name: at, type: timestamp, unit: us}
    - {name: at_layout, type: timestamp, source: clf, time_format: "02/Jan/2006:15:04:05 -0700"}
    - {name: day, type: date}
    - {name: doc, type: json}
    - {name: labels, type: "map<string,string>"}
    - {name: deep, type: string, source: a.b.c.d}
    - {name: tag, type: string, source: "tags[1]"}
    - {name: app, type: string, source: 'labels2["k8s.io/app"]'}
    - {name: key, type: string, source: kafka.key}
    - {name: key_bytes, type: bytes, source: kafka.key}
    - {name: hdr, type: string, source: kafka.header.h}
    - {name: headers, type: "map<string,string>", source: kafka.headers}
    - {name: kts, type: timestamp, source: kafka.timestamp}
`

// TestNastyCorpus runs the job (--until now, the embedded Kafka) over a
// corpus of hostile records and reads every file back with pyarrow, after
// its full validation: each record is a row with exactly the values
// written down, or a dead letter with its reason and its key and value as
// they were (empty is not null).
func TestNastyCorpus(t *testing.T) {
	python := testkit.PyarrowPython(t)
	raw, err := os.ReadFile("testdata/nasty.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var recs []*nastyRecord
	var msgs []kafka.Message
	for i, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		r := new(nastyRecord)
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber() // 9007199254740993 stays itself
		if err := dec.Decode(r); err != nil {
			t.Fatalf("testdata/nasty.jsonl:%d: %v", i+1, err)
		}
		if (r.Row == nil) == (r.Dead == "") {
			t.Fatalf("testdata/nasty.jsonl:%d: give row or dead", i+1)
		}
		recs = append(recs, r)
		msgs = append(msgs, r.message(t))
	}
	// One partition and one producer call: offset i is line i+1.
	brokers := embeddedKafka(t, 1, msgs...)
	dir := t.TempDir()
	cfg := embeddedJob(t, brokers, dir, "", nastySchema)
	var logs testkit.LogBuffer
	if err := runJob(t.Context(), cfg, pipeline.Mode{UntilNow: true}, pipeline.Deps{Log: slog.New(slog.NewTextHandler(&logs, nil))}, new(bytes.Buffer), new(bytes.Buffer)); err != nil {
		t.Fatalf("run: %v\n%s", err, logs.String())
	}

	rows := map[int64]map[string]any{}
	dead := map[int64]map[string]any{}
	files := 0
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") && !strings.HasSuffix(path, sink.DeadLetterExt) {
			return err
		}
		files++
		out, err := exec.Command(python, filepath.Join("..", "..", "scripts", "verify_parquet.py"), path, "--rows").CombinedOutput()
		if err != nil {
			t.Fatalf("pyarrow on %s: %v\n%s", path, err, out)
		}
		var v struct{ Rows []map[string]any }
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		into := rows
		if strings.Contains(path, "_errors") {
			into = dead
		}
		for _, r := range v.Rows {
			off, _ := r["offset"].(json.Number).Int64()
			if _, dup := into[off]; dup {
				t.Errorf("offset %d is in the files twice", off)
			}
			into[off] = r
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		off := int64(i)
		row, isRow := rows[off]
		letter, isDead := dead[off]
		switch {
		case r.Dead != "":
			if !isDead || isRow {
				t.Errorf("%s (offset %d): want a dead letter %q; row %v", r.Name, off, r.Dead, row)
				continue
			}
			if reason, _ := letter["reason"].(string); !strings.Contains(reason, r.Dead) {
				t.Errorf("%s: reason %q, want %q", r.Name, reason, r.Dead)
			}
			m := msgs[i]
			for col, b := range map[string][]byte{"key": m.Key, "value": m.Value} {
				var want any
				if b != nil {
					want = base64.StdEncoding.EncodeToString(b)
				}
				if letter[col] != want {
					t.Errorf("%s: dead letter %s %v, want %v", r.Name, col, letter[col], want)
				}
			}
		case !isRow || isDead:
			t.Errorf("%s (offset %d): want a row; dead letter %v", r.Name, off, letter["reason"])
		default:
			for col, want := range r.Row {
				if s, ok := want.(string); ok {
					want = r.expand(s)
				}
				if !sameJSONValue(row[col], want) {
					t.Errorf("%s: %s = %s, want %s", r.Name, col, shorten(row[col]), shorten(want))
				}
			}
		}
	}
	t.Logf("%d records → %d rows, %d dead letters in %d files, all valid for pyarrow", len(recs), len(rows), len(dead), files)
}

// sameJSONValue compares a value pyarrow printed with one the corpus
// wrote: integers exactly, other numbers as float64 (1e308 is 1e+308).
func sameJSONValue(got, want any) bool {
	switch w := want.(type) {
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			return false
		}
		gi, gerr := g.Int64()
		wi, werr := w.Int64()
		if gerr == nil && werr == nil {
			return gi == wi
		}
		gf, gerr := g.Float64()
		wf, werr := w.Float64()
		return gerr == nil && werr == nil && gf == wf
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, v := range w {
			if !sameJSONValue(g[k], v) {
				return false
			}
		}
		return true
	}
	return got == want
}

func shorten(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
