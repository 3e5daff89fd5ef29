package pipeline

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/internal/testkit"
)

// eachValueOnce reports each of want that seen does not hold exactly once,
// and each value seen that want does not hold.
func eachValueOnce(t *testing.T, seen map[string]int, want []int) {
	t.Helper()
	bad := 0
	wanted := make(map[string]bool, len(want))
	for _, n := range want {
		v := fmt.Sprintf(`{"n":%d}`, n)
		wanted[v] = true
		if c := seen[v]; c != 1 {
			if bad++; bad <= 10 {
				t.Errorf("record %s seen %d times by read_committed, want once", v, c)
			}
		}
	}
	for v, c := range seen {
		if !wanted[v] {
			if bad++; bad <= 10 {
				t.Errorf("record %s seen %d times by read_committed, want none", v, c)
			}
		}
	}
	if bad > 10 {
		t.Errorf("... %d records in all not as wanted (%d distinct values seen)", bad, len(seen))
	}
}

// span is from, from+1, ..., from+n-1.
func span(from, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = from + i
	}
	return s
}

// TestRecreatedTopicUnderExactlyOnceIsNotResumedFromThePositionsTopic
// (issue 45, defect 2): an exactly-once job, with and without files, read
// 100 records of a topic that is then deleted and created again with 150
// new ones. The brokers drop the group's offsets with the topic; the
// positions topic's record of the old topic said next 100, stood in for
// them, and the job read the new topic from 100 on: 100 of its 150
// records in no output, none counted lost, and under
// on_offset_out_of_range: fail the job did not stop. The record names the
// topic's id: fail stops and says the topic was recreated; earliest reads
// the new topic from its start.
func TestRecreatedTopicUnderExactlyOnceIsNotResumedFromThePositionsTopic(t *testing.T) {
	for _, files := range []bool{true, false} {
		t.Run(fmt.Sprintf("files=%v", files), func(t *testing.T) {
			c := testkit.FakeCluster(t, kfake.SeedTopics(1, "logs"), kfake.SeedTopics(1, "out"))
			brokers := c.ListenAddrs()
			dir := ""
			if files {
				dir = t.TempDir()
			}
			config := func(policy string) string {
				return strings.Replace(eosConfig(brokers, "g", dir, "out", 70),
					"start_offset: earliest}", "start_offset: earliest, on_offset_out_of_range: "+policy+"}", 1)
			}
			produceN(t, brokers, 0, 100)
			runTestJob(t, config("fail"), Mode{UntilNow: true})
			recreateTopic(t, brokers, 1)
			produceN(t, brokers, 1000, 150)

			err := runTestJobErr(t, config("fail"), Mode{UntilNow: true})
			if err == nil || !strings.Contains(err.Error(), "logs/0") || !strings.Contains(err.Error(), "recreated") || !strings.Contains(err.Error(), "holds [0, 150)") {
				t.Errorf("err %v: want the job stopped, naming the partition, a recreated topic and what it holds", err)
			}
			eachValueOnce(t, testkit.ReadCommitted(t, brokers, "out", 100), span(0, 100))

			stats, err := runTestJobStats(t, config("earliest"), Mode{UntilNow: true})
			if err != nil {
				t.Fatal(err)
			}
			eachValueOnce(t, testkit.ReadCommitted(t, brokers, "out", 250), append(span(0, 100), span(1000, 150)...))
			if lost, resets := stats.LostRecords.Load(), stats.OffsetResets.Load(); lost != 0 || resets != 1 {
				t.Errorf("%d records counted lost in %d resets, want none lost in one", lost, resets)
			}
		})
	}
}

// TestTwoJobsWritingOneOutputTopicEachWriteTheirRecords (issue 45,
// defect 3): two exactly-once jobs, each its own group and its own
// schema.where, write one output topic and so one positions topic. The
// second job, with no offsets of its own, took the first job's record of
// the partition for its own position and skipped everything the first
// had read: 0 of its 50 records reached the output. A record is its
// group's: the second job reads from kafka.start_offset, and a job takes
// another group's only when sinks.kafka.adopt_positions_of names it.
func TestTwoJobsWritingOneOutputTopicEachWriteTheirRecords(t *testing.T) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "logs"), kfake.SeedTopics(1, "out"))
	brokers := c.ListenAddrs()
	job := func(group, where string) string {
		return strings.Replace(eosConfig(brokers, group, "", "out", 30),
			"required: true}]}", fmt.Sprintf("required: true}], where: %q}", where), 1)
	}
	produceN(t, brokers, 0, 100)
	runTestJob(t, job("low", "n < 50"), Mode{UntilNow: true})
	runTestJob(t, job("high", "n >= 50"), Mode{UntilNow: true})
	eachValueOnce(t, testkit.ReadCommitted(t, brokers, "out", 100), span(0, 100))

	// The first job renamed: sinks.kafka.adopt_positions_of takes the old
	// group's record, and the job produces nothing again.
	produceN(t, brokers, 100, 10)
	renamed := strings.Replace(job("low-2", "n < 50 || n >= 100"), "delivery: exactly_once,", "delivery: exactly_once, adopt_positions_of: low,", 1)
	runTestJob(t, renamed, Mode{UntilNow: true})
	eachValueOnce(t, testkit.ReadCommitted(t, brokers, "out", 110), span(0, 110))
}

// deleteGroup deletes group and its offsets, as an operator does.
func deleteGroup(t *testing.T, brokers []string, group string) {
	t.Helper()
	admin := &kafka.Client{Addr: kafka.TCP(brokers...)}
	resp, err := admin.DeleteGroups(context.Background(), &kafka.DeleteGroupsRequest{GroupIDs: []string{group}})
	if err == nil {
		err = resp.Errors[group]
	}
	if err != nil {
		t.Fatalf("deleting group %s: %v", group, err)
	}
}
