package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/start"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestMarkByFingerprintOnlyIsComparedWithTheLayout: a mark whose layout
// was too long to record whole names it by fingerprint alone; it was never
// compared with the current layout, so a re-cut after a layout change
// wrote the batch under the new layout's names beside the files already
// stored (issue 26). A fingerprint of another layout stops the job, before
// any file is written, saying what to restore.
func TestMarkByFingerprintOnlyIsComparedWithTheLayout(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "logs"))
	produceN(t, c.ListenAddrs(), 0, 10)
	other := start.Fingerprint(`{"partition_by":["a long layout of another config"]}`)
	client := &kafka.Client{Addr: kafka.TCP(c.ListenAddrs()...)}
	resp, err := client.OffsetCommit(context.Background(), &kafka.OffsetCommitRequest{GroupID: "g", GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{"logs": {{Partition: 0, Offset: 0, Metadata: "cut:4 layout:" + other}}}})
	if err != nil || resp.Topics["logs"][0].Error != nil {
		t.Fatalf("committing the mark: %v %+v", err, resp)
	}
	out := t.TempDir()
	err = runTestJobErr(t, fmt.Sprintf(`kafka: {brokers: ["%s"], topics: [logs], group: g}
rack: {providers: [static]}
schema: {columns: [{name: n, type: int64, required: true}]}
sinks: {files: {url: %q, file: {fsync: false}}}
dead_letter: {on_error: skip}
`, strings.Join(c.ListenAddrs(), `", "`), out), Mode{UntilNow: true})
	if err == nil || !strings.Contains(err.Error(), "logs/0") || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), "restore") {
		t.Errorf("err %v: want the job stopped, naming the partition, the mark's layout and what to restore", err)
	}
	if files := testkit.FilesUnder(t, out); len(files) != 0 {
		t.Errorf("files %v: want none written under another layout", files)
	}
}
