package sink

import (
	"testing"
	"time"
)

var layoutSchema = &Schema{Fields: []Field{
	{Name: "event_time", Type: Timestamp, Unit: time.Millisecond},
	{Name: "service", Type: String},
	{Name: "status", Type: Int32},
	{Name: "day", Type: Date},
}}

func TestLayoutFolder(t *testing.T) {
	ts := time.Date(2026, 11, 29, 7, 45, 0, 0, time.FixedZone("KST", 9*3600)) // 2026-11-28 22:45 UTC
	for _, tc := range []struct {
		name string
		by   []PartitionColumn
		row  Row
		want string
	}{
		{"none", nil, Row{ts, "api", int32(200), nil}, ""},
		{"date and hour from one timestamp, in UTC",
			[]PartitionColumn{{Name: "dt", Column: "event_time", Format: "2006-01-02"}, {Name: "hour", Column: "event_time", Format: "15"}},
			Row{ts, "api", int32(200), nil}, "dt=2026-11-28/hour=22"},
		{"default time format", []PartitionColumn{{Name: "dt", Column: "event_time"}}, Row{ts, nil, nil, nil}, "dt=2026-11-28"},
		{"date column", []PartitionColumn{{Name: "d", Column: "day"}}, Row{nil, nil, nil, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}, "d=2026-01-02"},
		{"plain values", []PartitionColumn{{Name: "service", Column: "service"}, {Name: "status", Column: "status"}},
			Row{ts, "api-v2.1_x", int32(-1), nil}, "service=api-v2.1_x/status=-1"},
		{"escaped", []PartitionColumn{{Name: "service", Column: "service"}},
			Row{ts, "a/b=c d%é", nil, nil}, "service=a%2Fb%3Dc%20d%25%C3%A9"},
		{"time format with a colon", []PartitionColumn{{Name: "t", Column: "event_time", Format: "15:04"}},
			Row{ts, nil, nil, nil}, "t=22%3A45"},
		{"null and empty", []PartitionColumn{{Name: "service", Column: "service"}, {Name: "status", Column: "status"}, {Name: "dt", Column: "event_time"}},
			Row{nil, "", nil, nil}, "service=__HIVE_DEFAULT_PARTITION__/status=__HIVE_DEFAULT_PARTITION__/dt=__HIVE_DEFAULT_PARTITION__"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := newLayout(tc.by, layoutSchema)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(l.AppendFolder(nil, tc.row)); got != tc.want {
				t.Errorf("Folder = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLayoutRefuses(t *testing.T) {
	s := &Schema{Fields: []Field{{Name: "f", Type: Float64}}}
	for _, by := range [][]PartitionColumn{
		{{Name: "x", Column: "missing"}},
		{{Name: "f", Column: "f"}},
	} {
		if _, err := newLayout(by, s); err == nil {
			t.Errorf("newLayout(%v) took it", by)
		}
	}
}

func TestObjectKey(t *testing.T) {
	b := &Batch{Topic: "logs", Partition: 3, First: 100, Last: 199}
	for _, tc := range []struct {
		prefix, batchPrefix, folder string
		part                        int
		want                        string
	}{
		{"", "", "", 0, "logs-3-100-199.parquet"},
		{"warehouse/logs", "", "dt=2026-11-29/hour=07", 0, "warehouse/logs/dt=2026-11-29/hour=07/logs-3-100-199.parquet"},
		{"warehouse/logs/", "/replay/r1/", "dt=2026-11-29", 2, "warehouse/logs/replay/r1/dt=2026-11-29/logs-3-100-199-2.parquet"},
		{"p", "", "_errors", 0, "p/_errors/logs-3-100-199.parquet"},
	} {
		b.Prefix = tc.batchPrefix
		if got := objectKey(tc.prefix, tc.folder, b, tc.part); got != tc.want {
			t.Errorf("objectKey(%q, %q, %q, %d) = %q, want %q", tc.prefix, tc.batchPrefix, tc.folder, tc.part, got, tc.want)
		}
	}
}

// TestLayoutTimeSpans: a time folder is formatted once per hour or minute
// when its layout prints nothing finer, and reads the same as formatting
// every row, across span edges and before 1970.
func TestLayoutTimeSpans(t *testing.T) {
	for _, tc := range []struct {
		format string
		span   int64
	}{
		{"2006-01-02", 3600}, {"15", 3600}, {"2006-01-02T15", 3600}, {"15:04", 60}, {"15h4m", 60},
		{"15:04:05", 0}, {"05", 0}, {"2006-01-02T15:04:05.000", 0}, {"15.9", 0}, {"Jan _2 3PM", 3600},
	} {
		if got := formatSpan(tc.format); got != tc.span {
			t.Errorf("formatSpan(%q) = %d, want %d", tc.format, got, tc.span)
		}
		s := &Schema{Fields: []Field{{Name: "ts", Type: Timestamp}}}
		l, err := newLayout([]PartitionColumn{{Name: "at", Column: "ts", Format: tc.format}}, s)
		if err != nil {
			t.Fatal(err)
		}
		var buf []byte
		for _, start := range []time.Time{time.Date(2026, 11, 29, 6, 58, 59, 0, time.UTC), time.Date(1969, 12, 31, 23, 58, 30, 0, time.UTC)} {
			for i := range 400 {
				at := start.Add(time.Duration(i) * 997 * time.Millisecond)
				buf = l.AppendFolder(buf[:0], Row{at})
				if want := "at=" + escapeFolderValue(at.Format(tc.format)); string(buf) != want {
					t.Fatalf("%q at %s: folder %q, want %q", tc.format, at.Format(time.RFC3339Nano), buf, want)
				}
			}
		}
	}
}

// TestLayoutSameFolder: SameFolder says "same" only for rows whose folders
// are the same (checked against AppendFolder for every pair of a spread of
// times, before 1970 too, on span edges, in other zones), and never for a
// level it cannot tell without formatting.
func TestLayoutSameFolder(t *testing.T) {
	for _, by := range [][]PartitionColumn{
		{{Name: "dt", Column: "event_time"}, {Name: "hour", Column: "event_time", Format: "15"}},
		{{Name: "m", Column: "event_time", Format: "2006-01-02T15:04"}},
		{{Name: "dt", Column: "event_time"}, {Name: "service", Column: "service"}},
		{{Name: "s", Column: "event_time", Format: "15:04:05"}},
		nil,
	} {
		l, err := newLayout(by, layoutSchema)
		if err != nil {
			t.Fatal(err)
		}
		base := time.Date(2026, 11, 29, 6, 59, 0, 0, time.UTC)
		var rows []Row
		for _, d := range []time.Duration{0, 59 * time.Second, time.Minute - 1, time.Minute, 61 * time.Minute, 90 * time.Minute, 17 * time.Hour, 18 * time.Hour, 25 * time.Hour} {
			rows = append(rows, Row{base.Add(d), "web", nil, nil}, Row{base.Add(d).In(time.FixedZone("X", -5*3600)), "api", nil, nil})
		}
		old := time.Date(1969, 12, 31, 23, 30, 0, 0, time.UTC)
		rows = append(rows, Row{old, "web", nil, nil}, Row{old.Add(29 * time.Minute), "web", nil, nil}, Row{old.Add(31 * time.Minute), "web", nil, nil}, Row{nil, "web", nil, nil})
		for _, a := range rows {
			for _, b := range rows {
				same := string(l.AppendFolder(nil, a)) == string(l.AppendFolder(nil, b))
				if l.SameFolder(a, b) && !same {
					t.Errorf("%v: SameFolder(%v, %v) but the folders differ", by, a[0], b[0])
				}
			}
		}
		a, b := rows[0], rows[2] // 06:59:00 and 06:59:59.999999999
		if got := l.SameFolder(a, b); got != (len(by) == 0 || by[len(by)-1].Column == "event_time" && by[0].Format != "15:04:05") {
			t.Errorf("%v: SameFolder of two times in the same minute = %v", by, got)
		}
	}
}
