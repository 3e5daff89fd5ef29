package start

import (
	"errors"
	"strings"
	"testing"
)

// TestDecide: where a partition starts and why, for every input alone and
// in the combinations a job meets (the cases of reconcile,
// resumed, recreated and checkCutLayout among them).
func TestDecide(t *testing.T) {
	const old, now = "b9f83c9883f442a8a19b6b7c907c4f04", "0c5e5f8d1f2a4e7b9a3c6d2e1f0a9b8c"
	long := strings.Repeat("x", 4000)
	layoutA, layoutB := `{"partition_by":["a"]}`, `{"partition_by":["b"]}`
	at := func(offset, cut int64) Position { return Position{Offset: offset, Cut: cut} }
	files := func(first, last, next int64) *Record { return &Record{First: first, Last: last, Next: next} }
	writing := func(first, last int64) *Record {
		return &Record{First: first, Last: last, Next: first, Mark: MarkOf(last, "", "")}
	}
	// kafka is the positions topic's record of group: next, of the topic
	// id ("" in a record older than ids), after a batch from from.
	kafka := func(group, id string, next int64, from *int64) []KafkaRecord {
		return []KafkaRecord{{Group: group, TopicID: id, At: at(next, -1), From: from}}
	}
	bounds := func(first, end int64) func() (int64, int64, error) {
		return func() (int64, int64, error) { return first, end, nil }
	}
	tests := []struct {
		name string
		k    Known
		// want: position, what decided, the flags, and words of the reason
		want       Position
		by         string
		commit     bool
		settle     bool
		warn       bool
		lost       int64
		inKafka    int64
		reason     []string
		stop       bool // a *Stop error
		otherError bool // an error that is not a *Stop
	}{
		// Every input alone.
		{name: "nothing known: start_offset", k: Known{Group: None, StartOffset: 17, StartSetting: "latest"},
			want: at(17, -1), by: "start_offset", inKafka: -1, reason: []string{"no committed offset", "kafka.start_offset latest"}},
		{name: "start_offset as a time", k: Known{Group: None, StartOffset: 40, StartSetting: "2026-11-29T07:00:00Z"},
			want: at(40, -1), by: "start_offset", inKafka: -1, reason: []string{"kafka.start_offset 2026-11-29T07:00:00Z"}},
		{name: "the group's offset", k: Known{Group: at(1200, -1)},
			want: at(1200, -1), by: "group", inKafka: -1, reason: []string{"the group's committed offset"}},
		{name: "the group's cut mark is re-cut", k: Known{Group: at(1100, 1199)},
			want: at(1100, 1199), by: "group", inKafka: -1, reason: []string{"cut mark", "1100-1199", "re-cutting"}},
		{name: "the files' record alone (the group's offsets expired)", k: Known{Group: None, StartOffset: 0, Files: files(30, 39, 40)},
			want: at(40, -1), by: "files", commit: true, warn: true, inKafka: -1, reason: []string{"offsets.retention.minutes", "files, 39"}},
		{name: "the table's position alone", k: Known{Group: None, Table: files(100, 199, 200)},
			want: at(200, -1), by: "table", commit: true, warn: true, inKafka: -1, reason: []string{"no committed offset", "table, 199"}},
		{name: "the transactions' offset is the Kafka output's position", k: Known{Group: at(500, -1), Transactions: true},
			want: at(500, -1), by: "group", inKafka: 500},
		{name: "transactions without a group offset", k: Known{Group: None, Transactions: true, StartOffset: 3},
			want: at(3, -1), by: "start_offset", inKafka: -1},
		{name: "a backfill reads its range, nothing else weighed", k: Known{Backfill: true, BackfillFrom: 900, Group: at(5, -1), Files: files(0, 99, 100)},
			want: at(900, -1), by: "backfill", inKafka: -1, reason: []string{"backfill", "900"}},
		{name: "a topic id with nothing recorded", k: Known{TopicID: now, Group: None, StartOffset: 0},
			want: at(0, -1), by: "start_offset", inKafka: -1},

		// The group and the files' record.
		{name: "they agree (a tie)", k: Known{Group: at(40, -1), Files: files(30, 39, 40)},
			want: at(40, -1), by: "group", inKafka: -1, reason: []string{"files hold up to 39"}},
		{name: "the group is ahead (filtered batches wrote no file)", k: Known{Group: at(90, -1), Files: files(30, 39, 40)},
			want: at(90, -1), by: "group", inKafka: -1, reason: []string{"wrote nothing"}},
		{name: "the group was reset behind the files", k: Known{Group: at(0, -1), Files: files(30, 39, 40)},
			want: at(40, -1), by: "files", commit: true, warn: true, inKafka: -1, reason: []string{"files hold up to 39", "group's committed offset 0 is behind"}},
		{name: "a pending cut not yet in the files is re-cut", k: Known{Group: at(40, 49), Files: files(30, 39, 40)},
			want: at(40, 49), by: "group", inKafka: -1, reason: []string{"re-cutting"}},
		{name: "a pending cut the files hold whole (its commit was not made)", k: Known{Group: at(40, 49), Files: files(40, 49, 50)},
			want: at(50, -1), by: "files", commit: true, inKafka: -1, reason: []string{"the pending cut is in the output whole"}},
		{name: "a batch being written, the group's offsets gone", k: Known{Group: None, Files: writing(40, 49)},
			want: at(40, 49), by: "files", commit: true, warn: true, inKafka: -1, reason: []string{"re-cutting the batch the output was writing"}},
		{name: "a batch being written, the group behind it", k: Known{Group: at(10, -1), Files: writing(40, 49)},
			want: at(40, 49), by: "files", commit: true, warn: true, inKafka: -1, reason: []string{"lost the pending cut"}},
		{name: "a batch being written, the group at it without its mark", k: Known{Group: at(40, -1), Files: writing(40, 49)},
			want: at(40, 49), by: "files", commit: true, warn: true, inKafka: -1, reason: []string{"lost the pending cut"}},
		{name: "a batch being written, the group holds its mark (a tie)", k: Known{Group: at(40, 49), Files: writing(40, 49)},
			want: at(40, 49), by: "group", inKafka: -1, reason: []string{"cut mark"}},
		{name: "a batch being written, the group past it: the record is settled", k: Known{Group: at(50, -1), Files: writing(40, 49)},
			want: at(50, -1), by: "group", settle: true, inKafka: -1, reason: []string{"40-49 is being written", "recorded as written"}},

		// The table, alone and beside exactly-once Kafka.
		{name: "the table ahead of the group", k: Known{Group: at(1100, -1), Table: files(1100, 1199, 1200)},
			want: at(1200, -1), by: "table", commit: true, warn: true, inKafka: -1, reason: []string{"the table holds up to 1199", "group's committed offset 1100 is behind"}},
		{name: "the table ahead of the Kafka output: the least advanced decides", k: Known{Group: at(1100, -1), Table: files(1100, 1199, 1200), Transactions: true},
			want: at(1100, -1), by: "group", inKafka: 1100, reason: []string{"the table holds up to 1199", "group's offset 1100", "behind it", "the table skips"}},
		{name: "the table's pending cut committed, the transaction not", k: Known{Group: at(1100, 1199), Table: files(1100, 1199, 1200), Transactions: true},
			want: at(1100, 1199), by: "group", inKafka: 1100, reason: []string{"the table holds up to 1199"}},
		{name: "the Kafka output ahead of the table (batches with no rows)", k: Known{Group: at(1300, -1), Table: files(1100, 1199, 1200), Transactions: true},
			want: at(1300, -1), by: "group", inKafka: 1300},
		// The table after the transaction (a table beside exactly-once
		// Kafka): a stop between the two leaves the group's offset ahead.
		{name: "the Kafka output ahead of the table: a stop between the transaction and the snapshot", k: Known{Group: at(1300, -1), Table: files(1100, 1199, 1200), Transactions: true, TableAfterTxn: true},
			want: at(1200, -1), by: "table", warn: true, inKafka: 1300, reason: []string{"group's offset 1300", "ahead of the table", "holds up to 1199", "Kafka output skips"}},
		{name: "the table after the transaction, both at the same place", k: Known{Group: at(1200, -1), Table: files(1100, 1199, 1200), Transactions: true, TableAfterTxn: true},
			want: at(1200, -1), by: "group", inKafka: 1200},
		{name: "a batch being written, the group past it, the table after the transaction: re-cut, not settled", k: Known{Group: at(50, -1), Files: writing(40, 49), Transactions: true, TableAfterTxn: true},
			want: at(40, 49), by: "files", warn: true, inKafka: 50, reason: []string{"past the batch 40-49", "re-cutting it", "the table skips it"}},
		{name: "the table after the transaction holds nothing yet: the Kafka output's last batch goes into it", k: Known{Group: at(100, -1), Transactions: true, TableAfterTxn: true, KafkaFrom: ptr(70)},
			want: at(70, -1), by: "table", warn: true, inKafka: 100, reason: []string{"ends a batch from 70", "holds nothing of this partition", "Kafka output skips it"}},
		{name: "the table holds nothing, the Kafka output's batch unknown (an older commit): the group decides", k: Known{Group: at(100, -1), Transactions: true, TableAfterTxn: true},
			want: at(100, -1), by: "group", inKafka: 100},
		// The group's offsets lost: the positions topic stands in for them.
		{name: "offsets lost, the Kafka output alone: its positions topic decides, and the group takes it back", k: Known{Group: None, StartOffset: 0, Transactions: true, GroupID: "g", Kafka: kafka("g", "", 300, nil)},
			want: at(300, -1), by: "positions topic", commit: true, warn: true, inKafka: 300, reason: []string{"no committed offset", "positions topic", "has 300"}},
		{name: "offsets lost, the table behind the Kafka output's positions topic: the table catches up, Kafka skips", k: Known{Group: None, Table: files(100, 199, 200), Transactions: true, TableAfterTxn: true, GroupID: "g", Kafka: kafka("g", "", 300, nil)},
			want: at(200, -1), by: "table", warn: true, inKafka: 300, reason: []string{"positions topic", "ahead of the table", "Kafka output skips"}},
		{name: "offsets lost, the table empty, the positions topic names the last batch", k: Known{Group: None, Transactions: true, TableAfterTxn: true, GroupID: "g", Kafka: kafka("g", "", 300, ptr(250))},
			want: at(250, -1), by: "table", warn: true, inKafka: 300, reason: []string{"positions topic", "ends a batch from 250"}},
		{name: "offsets lost, a files batch being written that the positions topic is past: re-cut, Kafka skips it", k: Known{Group: None, Files: writing(40, 49), Transactions: true, TableAfterTxn: true, GroupID: "g", Kafka: kafka("g", "", 50, nil)},
			want: at(40, 49), by: "files", warn: true, inKafka: 50, reason: []string{"positions topic", "re-cutting it"}},
		{name: "the positions topic is not weighed without exactly-once Kafka", k: Known{Group: None, StartOffset: 5, GroupID: "g", Kafka: kafka("g", "", 300, nil)},
			want: at(5, -1), by: "start_offset", inKafka: -1},
		{name: "the files' record is every output's: the table is not weighed", k: Known{Group: at(1100, -1), Files: files(1000, 1099, 1100), Table: files(1100, 1199, 1200), Transactions: true},
			want: at(1100, -1), by: "group", inKafka: 1100, reason: []string{"files hold up to 1099"}},

		// A re-created topic.
		{name: "the files' record is of the old topic, the group of the new", k: Known{TopicID: now, Group: at(20, -1), Files: &Record{Last: 99, Next: 100, TopicID: old}},
			want: at(20, -1), by: "group", warn: true, inKafka: -1, reason: []string{"earlier topic", "following the group's offset"}},
		{name: "recreated, earliest", k: Known{TopicID: now, Group: None, OnOutOfRange: "earliest", Log: bounds(0, 150), Files: &Record{Last: 99, Next: 100, TopicID: old}},
			want: at(0, -1), by: "recreated topic", commit: true, warn: true, inKafka: -1, reason: []string{"deleted and recreated", "next 100", "from its start"}},
		{name: "recreated, latest, counting what it skips", k: Known{TopicID: now, Group: None, OnOutOfRange: "latest", Log: bounds(0, 40), Files: &Record{Last: 99, Next: 100, TopicID: old}},
			want: at(40, -1), by: "recreated topic", commit: true, warn: true, lost: 40, inKafka: -1, reason: []string{"from its end", "40 records skipped"}},
		{name: "recreated under fail stops", k: Known{Topic: "logs", TopicID: now, Group: None, OnOutOfRange: "fail", Log: bounds(0, 150), Files: &Record{Last: 99, Next: 100, TopicID: old}},
			stop: true, reason: []string{"logs/0", "deleted and recreated", "next 100", "holds [0, 150)", "on_offset_out_of_range: earliest"}},
		{name: "the group's mark is of the old topic", k: Known{TopicID: now, Group: Position{Offset: 1000, Cut: 1069, TopicID: old}, OnOutOfRange: "earliest", Log: bounds(0, 10)},
			want: at(0, -1), by: "recreated topic", commit: true, warn: true, inKafka: -1, reason: []string{"next 1000"}},
		{name: "ids unknown on either side compare equal", k: Known{TopicID: "", Group: at(100, -1), Files: &Record{First: 30, Last: 39, Next: 40, TopicID: old}},
			want: at(100, -1), by: "group", inKafka: -1},
		{name: "the recreated topic's bounds unreadable", k: Known{TopicID: now, Group: None, OnOutOfRange: "earliest",
			Log: func() (int64, int64, error) { return 0, 0, errors.New("broker down") }, Files: &Record{Next: 100, TopicID: old}},
			otherError: true},

		// The positions topic's records name the topic they are of (issue
		// 45, defect 2): the brokers drop a deleted topic's group offsets,
		// and a record of the old topic must not stand in for them.
		{name: "recreated: the job's record in the positions topic is of the old topic, no files, fail stops", k: Known{Topic: "logs", TopicID: now, Group: None, Transactions: true, GroupID: "g",
			Kafka: kafka("g", old, 100, ptr(30)), OnOutOfRange: "fail", Log: bounds(0, 150)},
			stop: true, reason: []string{"logs/0", "deleted and recreated", "next 100", "topic id " + old, "holds [0, 150)"}},
		{name: "recreated: the job's record in the positions topic is of the old topic, earliest", k: Known{TopicID: now, Group: None, Transactions: true, TableAfterTxn: true, GroupID: "g",
			Kafka: kafka("g", old, 100, ptr(30)), OnOutOfRange: "earliest", Log: bounds(0, 150)},
			want: at(0, -1), by: "recreated topic", commit: true, warn: true, inKafka: -1, reason: []string{"deleted and recreated", "next 100", "from its start"}},
		{name: "recreated: files and the positions topic of the old topic, fail stops", k: Known{Topic: "logs", TopicID: now, Group: None, Transactions: true, GroupID: "g",
			Files: &Record{First: 70, Last: 99, Next: 100, TopicID: old}, Kafka: kafka("g", old, 100, ptr(70)), OnOutOfRange: "fail", Log: bounds(0, 150)},
			stop: true, reason: []string{"logs/0", "deleted and recreated", "next 100", "holds [0, 150)"}},
		{name: "recreated: a record older than ids, files of the old topic: which topic it is of is unknown, fail stops", k: Known{Topic: "logs", TopicID: now, Group: None, Transactions: true, GroupID: "g",
			Files: &Record{First: 70, Last: 99, Next: 100, TopicID: old}, Kafka: kafka("g", "", 100, nil), OnOutOfRange: "fail", Log: bounds(0, 150)},
			stop: true, reason: []string{"logs/0", "deleted and recreated", "holds [0, 150)"}},
		{name: "a record older than ids, nothing else recorded: taken as of the topic now", k: Known{TopicID: now, Group: None, Transactions: true, GroupID: "g", Kafka: kafka("g", "", 300, nil)},
			want: at(300, -1), by: "positions topic", commit: true, warn: true, inKafka: 300, reason: []string{"positions topic", "has 300"}},
		{name: "the job's record of the topic now, the files' of the old one: the record decides", k: Known{TopicID: now, Group: None, Transactions: true, GroupID: "g",
			Files: &Record{First: 70, Last: 99, Next: 100, TopicID: old}, Kafka: kafka("g", now, 60, nil), OnOutOfRange: "fail"},
			want: at(60, -1), by: "positions topic", commit: true, warn: true, inKafka: 60, reason: []string{"positions topic", "has 60", "earlier topic", "of the topic now"}},
		{name: "the job's record of the topic now", k: Known{TopicID: now, Group: None, Transactions: true, GroupID: "g", Kafka: kafka("g", now, 300, nil)},
			want: at(300, -1), by: "positions topic", commit: true, warn: true, inKafka: 300},
		// A record is its group's (issue 45, defect 3): two jobs writing
		// one output topic share its positions topic.
		{name: "another group's record is another job's: start_offset decides", k: Known{Group: None, StartOffset: 0, StartSetting: "earliest", Transactions: true, GroupID: "high",
			Kafka: kafka("low", now, 100, ptr(70)), TopicID: now},
			want: at(0, -1), by: "start_offset", warn: true, inKafka: -1, reason: []string{"kafka.start_offset earliest", `group "low" at 100`, "not taken", "sinks.kafka.adopt_positions_of"}},
		{name: "another group's record is not taken into a table either", k: Known{Group: None, StartOffset: 0, Transactions: true, TableAfterTxn: true, GroupID: "high",
			Kafka: kafka("low", now, 100, ptr(70)), TopicID: now},
			want: at(0, -1), by: "start_offset", warn: true, inKafka: -1, reason: []string{`group "low" at 100`}},
		{name: "the group's own record among another group's", k: Known{Group: None, Transactions: true, GroupID: "high",
			Kafka: append(kafka("low", now, 100, nil), kafka("high", now, 60, nil)...), TopicID: now},
			want: at(60, -1), by: "positions topic", commit: true, warn: true, inKafka: 60, reason: []string{"has 60"}},
		{name: "a renamed group adopts the old group's record", k: Known{Group: None, Transactions: true, GroupID: "new", AdoptFrom: "old",
			Kafka: append(kafka("other", now, 900, nil), kafka("old", now, 300, nil)...), TopicID: now},
			want: at(300, -1), by: "positions topic", commit: true, warn: true, inKafka: 300, reason: []string{"has 300", `group "old"'s record`, "adopt_positions_of"}},
		{name: "the group's own record before the adopted one", k: Known{Group: None, Transactions: true, GroupID: "new", AdoptFrom: "old",
			Kafka: append(kafka("new", now, 400, nil), kafka("old", now, 300, nil)...), TopicID: now},
			want: at(400, -1), by: "positions topic", commit: true, warn: true, inKafka: 400},

		// Positions out of range, stale or unreadable marks.
		{name: "an offset past the log's end is kept: the first fetch applies on_offset_out_of_range", k: Known{Group: at(5000, -1)},
			want: at(5000, -1), by: "group", inKafka: -1},
		{name: "a stale mark below the committed offset is dropped", k: Known{Group: at(2, 1)},
			want: at(2, -1), by: "group", inKafka: -1, reason: []string{"below it", "no re-cut"}},
		{name: "a mark by fingerprint alone of another layout stops", k: Known{Topic: "t", Group: ParseMark(MarkOf(4, "", long)).At(0), Layout: long + "y"},
			stop: true, reason: []string{"t/0", "fingerprint alone", "restore"}},
		{name: "a mark by fingerprint alone of the layout now", k: Known{Group: ParseMark(MarkOf(4, "", long)).At(0), Layout: long},
			want: Position{Offset: 0, Cut: 4, Fingerprint: Fingerprint(long)}, by: "group", inKafka: -1},
		{name: "a mark of an older version, without a layout", k: Known{Group: ParseMark("cut:4").At(0), Layout: long},
			want: at(0, 4), by: "group", inKafka: -1},
		{name: "a mark of another layout finishes with its own", k: Known{Group: ParseMark(MarkOf(9, "", layoutA)).At(0), Layout: layoutB},
			want: Position{Offset: 0, Cut: 9, Layout: layoutA, Fingerprint: Fingerprint(layoutA)}, by: "group", warn: true, inKafka: -1,
			reason: []string{"layout changed", Fingerprint(layoutA)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decide(tt.k)
			var stop *Stop
			switch {
			case tt.stop:
				if !errors.As(err, &stop) {
					t.Fatalf("err %v, want a stop", err)
				}
				for _, w := range tt.reason {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("the stop %q does not say %q", err, w)
					}
				}
				return
			case tt.otherError:
				if err == nil || errors.As(err, &stop) {
					t.Fatalf("err %v, want one that is not a stop", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if got.Position != tt.want || got.By != tt.by {
				t.Errorf("starts at %+v by %s, want %+v by %s (%s)", got.Position, got.By, tt.want, tt.by, got.Reason)
			}
			if got.Commit != tt.commit || got.Settle != tt.settle || got.Warn != tt.warn || got.Lost != tt.lost || got.InKafka != tt.inKafka {
				t.Errorf("commit %v, settle %v, warn %v, lost %d, in Kafka %d; want %v, %v, %v, %d, %d",
					got.Commit, got.Settle, got.Warn, got.Lost, got.InKafka, tt.commit, tt.settle, tt.warn, tt.lost, tt.inKafka)
			}
			if got.Recreated != (tt.by == "recreated topic") {
				t.Errorf("recreated %v by %s", got.Recreated, got.By)
			}
			if got.Reason == "" {
				t.Error("no reason")
			}
			for _, w := range tt.reason {
				if !strings.Contains(got.Reason, w) {
					t.Errorf("the reason %q does not say %q", got.Reason, w)
				}
			}
		})
	}
}

// TestOtherTopic: only two known, different ids make a position another
// topic's; a record or mark of an older version (no id), or brokers that
// keep none, compare equal, so such a record is resumed as before and the
// next batch's record names the topic.
func TestOtherTopic(t *testing.T) {
	const a, b = "b9f83c9883f442a8a19b6b7c907c4f04", "0c5e5f8d1f2a4e7b9a3c6d2e1f0a9b8c"
	for _, tt := range []struct {
		recorded, now string
		want          bool
	}{{"", a, false}, {a, "", false}, {a, a, false}, {a, b, true}} {
		if got := otherTopic(tt.recorded, tt.now); got != tt.want {
			t.Errorf("otherTopic(%q, %q) = %v, want %v", tt.recorded, tt.now, got, tt.want)
		}
	}
}

func ptr(n int64) *int64 { return &n }
