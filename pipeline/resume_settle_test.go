package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline/start"
	"github.com/logstore/logstore/pipeline/worker"
)

// TestPendingResumeRecordTheGroupIsPastIsSettled: a member killed after
// its batch's commit of next (with exactly_once, after EndTxn) and before
// the resume record said the output holds the batch leaves the record
// pending. The next run finds the group past it and records it as
// written; left pending, a run after the group's offsets are lost would
// cut the batch again and produce it to Kafka a second time
// (TestE2EKafkaExactlyOnceLastBatchNotProducedAgainAfterOffsetsLost).
func TestPendingResumeRecordTheGroupIsPastIsSettled(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "logs"))
	out := t.TempDir()
	produceN(t, c.ListenAddrs(), 0, 200)
	runJobOnce(t, c.ListenAddrs(), "first", out)

	name := filepath.Join(out, filepath.FromSlash(worker.ResumeName("logs", 0)))
	read := func() worker.ResumeRecord {
		t.Helper()
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var r worker.ResumeRecord
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := read()
	if r.Mark != "" || r.Next != 200 {
		t.Fatalf("after the first run the record is %+v, want next 200 and no mark", r)
	}
	// As the kill left it: the last batch being written.
	pending := r
	pending.Next, pending.Mark = r.First, start.MarkOf(r.Last, r.TopicID, "")
	b, _ := json.Marshal(pending)
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}

	runJobOnce(t, c.ListenAddrs(), "first", out)
	if r := read(); r.Mark != "" || r.Next != 200 || r.First != pending.First || r.Last != pending.Last {
		t.Errorf("after a run whose group is past the pending cut the record is %+v, want %d-%d written (next 200, no mark)", r, pending.First, pending.Last)
	}
}
