package worker

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/pipeline/start"
)

// TestNextOffsetCommitCarriesItsTime: a commit of the next offset carried
// empty metadata, so nothing could say how long ago a partition last moved
// (OffsetFetch returns no time); it now carries "at:<Unix ms>", which the
// mark reader takes as no mark, as it took the empty metadata.
func TestNextOffsetCommitCarriesItsTime(t *testing.T) {
	c, err := kfake.NewCluster(kfake.SeedTopics(1, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	client := &kafka.Client{Addr: kafka.TCP(c.ListenAddrs()...)}
	g := &GroupCommitter{client: client, group: "g", generation: -1}
	before := time.Now().Add(-time.Millisecond)
	if err := g.Commit(context.Background(), "logs", 0, 42, ""); err != nil {
		t.Fatal(err)
	}
	resp, err := client.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: "g", Topics: map[string][]int{"logs": {0}}})
	if err != nil {
		t.Fatal(err)
	}
	meta := resp.Topics["logs"][0].Metadata
	if p := start.ParseMark(meta).At(resp.Topics["logs"][0].CommittedOffset); p.Offset != 42 || p.Cut != -1 {
		t.Errorf("position %+v; want offset 42 and no pending cut", p)
	}
	at, ok := CommitTime(meta)
	if !ok || at.Before(before) || at.After(time.Now()) {
		t.Errorf("the commit's metadata %q holds no time of the commit", meta)
	}
	// A cut mark keeps its own format, with no time.
	if _, ok := CommitTime(start.MarkOf(7, "id", "")); ok || start.ParseMark(commitTimeMeta(time.Now())).Last != -1 {
		t.Error("a mark and a commit time are told apart wrongly")
	}
}
