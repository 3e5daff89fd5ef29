//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/testkit"
)

// headerRecord is record i of the header test: value {"msg":"i"}, header
// gid=i, and one in thirty each with trace="" (an empty value, not a null
// one), with a null trace, and with a="" before gid. want is how the
// headers map reads back, sorted by key as the file holds it (a null
// value as JSON null); trace is the kafka.header.trace column.
type headerRecord struct {
	headers []kafka.Header
	want    headerRow
}

type headerRow struct {
	Headers [][2]any `json:"headers"`
	Trace   *string  `json:"trace"`
}

func headerRecords(n int) []headerRecord {
	empty := ""
	out := make([]headerRecord, n)
	for i := range out {
		gid := fmt.Sprint(i)
		r := headerRecord{headers: []kafka.Header{{Key: "gid", Value: []byte(gid)}}, want: headerRow{Headers: [][2]any{{"gid", gid}}}}
		switch i % 30 {
		case 7:
			r.headers = append(r.headers, kafka.Header{Key: "trace", Value: []byte{}})
			r.want.Headers, r.want.Trace = append(r.want.Headers, [2]any{"trace", ""}), &empty
		case 8:
			r.headers = append(r.headers, kafka.Header{Key: "trace", Value: nil})
			r.want.Headers = append(r.want.Headers, [2]any{"trace", nil})
		case 9:
			r.headers = append([]kafka.Header{{Key: "a", Value: []byte{}}}, r.headers...)
			r.want.Headers = append([][2]any{{"a", ""}}, r.want.Headers...)
		}
		out[i] = r
	}
	return out
}

// TestE2EEmptyHeaderValueIsKept: records with headers gid=N and, one in
// thirty, trace="" (an empty value, not a null one) are read back by
// pyarrow with both headers, trace an empty string in the headers map and
// in its own column; a header whose value is null keeps its name in the
// map with a null value (as Spark's Kafka source keeps it) and is null in
// its column. The records come from every codec of kafka-go's
// writer in batches of many records, and a sixth of them from Kafka's own
// Java client (kafka-console-producer, snappy); the job writes them once
// with a schema naming kafka.headers and kafka.header.trace, and once with
// the default schema (the row as Spark's Kafka source gives it, headers
// included).
func TestE2EEmptyHeaderValueIsKept(t *testing.T) {
	const n, partitions = 10669, 3
	topic := e2eTopic(t, partitions)
	recs := headerRecords(n)
	produceHeaderRecords(t, topic, recs)

	explicit := `schema:
  columns:
    - {name: msg, type: string}
    - {name: headers, type: "map<string,string>", source: kafka.headers}
    - {name: trace, type: string, source: kafka.header.trace}
`
	// pyarrow reads a map as a list of (key, value) pairs, in the file's
	// order; the default schema keeps the value whole, as JSON text, and
	// has no trace column: its trace is the map's entry.
	script := `
import json, sys, pyarrow.dataset as ds
rows = ds.dataset(sys.argv[1], format="parquet").to_table().to_pylist()
if sys.argv[2] == "explicit":
    out = {r["msg"]: {"headers": r["headers"], "trace": r["trace"]} for r in rows}
else:
    out = {json.loads(r["value"])["msg"]: {"headers": r["headers"], "trace": dict(r["headers"] or []).get("trace")} for r in rows}
print(json.dumps(out))
`
	for _, schema := range []string{"explicit", "default"} {
		t.Run(schema, func(t *testing.T) {
			dir := t.TempDir()
			text := `kafka:
  brokers: [` + bootstrap + `]
  topics: [` + topic + `]
  group: ` + topic + `-` + schema + `
rack:
  providers: [env]
sinks:
  files:
    url: file://` + dir + `
dead_letter:
  on_error: fail
`
			if schema == "explicit" {
				text += explicit
			}
			cfg := filepath.Join(t.TempDir(), "job.yaml")
			if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			state, out := runLogstore(t, cfg, "LOGSTORE_RACK=az-a")
			if !state.Success() {
				t.Fatalf("the run failed: %s\n%s", state, tail(out, 30))
			}
			got, err := exec.Command("python3", "-c", script, dir, schema).Output()
			if err != nil {
				t.Fatalf("pyarrow: %v", err)
			}
			var rows map[string]headerRow
			if err := json.Unmarshal(got, &rows); err != nil {
				t.Fatalf("%v: %.200s", err, got)
			}
			if len(rows) != n {
				t.Fatalf("read back %d records, produced %d", len(rows), n)
			}
			bad := 0
			for i, r := range recs {
				if g := rows[fmt.Sprint(i)]; mustJSON(g) != mustJSON(r.want) {
					if bad++; bad <= 5 {
						t.Errorf("record gid=%d read back as %s, want %s", i, mustJSON(g), mustJSON(r.want))
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d records read back with other headers", bad, n)
			}
		})
	}
}

// produceHeaderRecords writes recs to topic: record i by kafka-go writer
// i%6 (none, gzip, snappy, lz4, zstd), and every sixth by Kafka's Java
// client through kafka-console-producer, which reads "trace:" as an empty
// value and "trace:NULL" (its null.marker) as a null one.
func produceHeaderRecords(t *testing.T, topic string, recs []headerRecord) {
	t.Helper()
	codecs := []kafka.Compression{0, kafka.Gzip, kafka.Snappy, kafka.Lz4, kafka.Zstd}
	batches := make([][]kafka.Message, len(codecs))
	var lines strings.Builder
	for i, r := range recs {
		value := fmt.Sprintf(`{"msg":%q}`, fmt.Sprint(i))
		if w := i % (len(codecs) + 1); w < len(codecs) {
			batches[w] = append(batches[w], kafka.Message{Value: []byte(value), Headers: r.headers})
			continue
		}
		pairs := make([]string, len(r.headers))
		for j, h := range r.headers {
			v := string(h.Value)
			if h.Value == nil {
				v = "NULL"
			}
			pairs[j] = h.Key + ":" + v
		}
		fmt.Fprintf(&lines, "%s\t%s\n", strings.Join(pairs, ","), value)
	}
	for w, codec := range codecs {
		wr := &kafka.Writer{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Topic: topic, RequiredAcks: kafka.RequireAll,
			BatchSize: 1000, BatchTimeout: 5 * time.Millisecond, Compression: codec, Balancer: &kafka.RoundRobin{}}
		if err := wr.WriteMessages(context.Background(), batches[w]...); err != nil {
			t.Fatalf("kafka-go writer, codec %d: %v", codec, err)
		}
		wr.Close()
	}
	java := exec.Command(filepath.Join(testkit.RepoRoot(t), "scripts", "kafka-cluster.sh"), "tool", "org.apache.kafka.tools.ConsoleProducer",
		"--bootstrap-server", bootstrap, "--topic", topic,
		"--reader-property", "parse.headers=true", "--reader-property", "null.marker=NULL",
		"--command-property", "compression.type=snappy", "--command-property", "acks=all", "--command-property", "linger.ms=5")
	java.Stdin = strings.NewReader(lines.String())
	if out, err := java.CombinedOutput(); err != nil {
		t.Fatalf("kafka-console-producer: %v\n%s", err, out)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
