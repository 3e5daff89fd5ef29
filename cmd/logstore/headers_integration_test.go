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
)

// TestE2EEmptyHeaderValueIsKept: records with headers gid=N and, one in
// thirty, trace="" (an empty value, not a null one) are read back by
// pyarrow with both headers, trace an empty string in the headers map and
// in its own column; a header whose value is null is left out of the map
// and null in its column. Compressed batches of many records, as a
// producer sends them.
func TestE2EEmptyHeaderValueIsKept(t *testing.T) {
	const n, partitions = 10669, 3
	topic := e2eTopic(t, partitions)
	w := &kafka.Writer{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Topic: topic, RequiredAcks: kafka.RequireAll,
		BatchSize: 1000, BatchTimeout: 5 * time.Millisecond, Compression: kafka.Lz4, Balancer: &kafka.RoundRobin{}}
	type want struct {
		Headers [][2]string `json:"headers"` // sorted by key, as the file holds them
		Trace   *string     `json:"trace"`
	}
	wants := map[string]want{}
	msgs := make([]kafka.Message, n)
	empty := ""
	for i := range msgs {
		gid := fmt.Sprint(i)
		msgs[i] = kafka.Message{Value: []byte(fmt.Sprintf(`{"msg":%q}`, gid)), Headers: []kafka.Header{{Key: "gid", Value: []byte(gid)}}}
		wt := want{Headers: [][2]string{{"gid", gid}}}
		switch {
		case i%30 == 7:
			msgs[i].Headers = append(msgs[i].Headers, kafka.Header{Key: "trace", Value: []byte{}})
			wt.Headers, wt.Trace = append(wt.Headers, [2]string{"trace", ""}), &empty
		case i%30 == 8:
			msgs[i].Headers = append(msgs[i].Headers, kafka.Header{Key: "trace", Value: nil})
		case i%30 == 9:
			msgs[i].Headers = append([]kafka.Header{{Key: "a", Value: []byte{}}}, msgs[i].Headers...)
			wt.Headers = append([][2]string{{"a", ""}}, wt.Headers...)
		}
		wants[gid] = wt
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "job.yaml")
	text := `kafka:
  brokers: [` + bootstrap + `]
  topics: [` + topic + `]
  group: ` + topic + `-g
rack:
  providers: [env]
schema:
  columns:
    - {name: msg, type: string}
    - {name: headers, type: "map<string,string>", source: kafka.headers}
    - {name: trace, type: string, source: kafka.header.trace}
sinks:
  files:
    url: file://` + dir + `
dead_letter:
  on_error: fail
`
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	state, out := runLogstore(t, cfg, "LOGSTORE_RACK=az-a")
	if !state.Success() {
		t.Fatalf("the run failed: %s\n%s", state, tail(out, 30))
	}
	// pyarrow reads a map as a list of (key, value) pairs, in the file's order.
	script := `
import json, sys, pyarrow.dataset as ds
rows = ds.dataset(sys.argv[1], format="parquet").to_table().to_pylist()
print(json.dumps({r["msg"]: {"headers": r["headers"], "trace": r["trace"]} for r in rows}))
`
	got, err := exec.Command("python3", "-c", script, dir).Output()
	if err != nil {
		t.Fatalf("pyarrow: %v", err)
	}
	var rows map[string]want
	if err := json.Unmarshal(got, &rows); err != nil {
		t.Fatalf("%v: %.200s", err, got)
	}
	if len(rows) != n {
		t.Fatalf("read back %d records, produced %d", len(rows), n)
	}
	bad := 0
	for gid, wt := range wants {
		g := rows[gid]
		if mustJSON(g) != mustJSON(wt) {
			if bad++; bad <= 5 {
				t.Errorf("record gid=%s read back as %s, want %s", gid, mustJSON(g), mustJSON(wt))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d records read back with other headers", bad, n)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
