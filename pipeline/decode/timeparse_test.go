package decode

import (
	"strings"
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// TestParseRFC3339 holds the allocation-free parser to time.Parse.
func TestParseRFC3339(t *testing.T) {
	for _, s := range []string{
		"2026-11-29T07:00:00Z",
		"2026-11-29T07:00:00.1Z",
		"2026-11-29T07:00:00.123456789Z",
		"2026-11-29T07:00:00.1234567891Z", // beyond nanoseconds: cut
		"2026-11-29T16:00:00+09:00",
		"2026-11-29T02:30:00-04:30",
		"2024-02-29T00:00:00Z",
		"0001-01-01T00:00:00Z",
		"9999-12-31T23:59:59.999Z",
		"2026-11-29t07:00:00z",
		// Invalid:
		"2023-02-29T00:00:00Z",
		"2026-13-01T00:00:00Z",
		"2026-11-31T00:00:00Z",
		"2026-11-29T24:00:00Z",
		"2026-11-29T07:60:00Z",
		"2026-11-29T07:00:60Z",
		"2026-11-29T07:00:00",
		"2026-11-29T07:00:00.Z",
		"2026-11-29T07:00:00+0900",
		"2026-11-29 07:00:00Z x",
		"2026-11-29",
		"26-11-29T07:00:00Z",
		"2026-1a-29T07:00:00Z",
		"",
	} {
		want, werr := time.Parse(time.RFC3339Nano, strings.NewReplacer("t", "T", "z", "Z").Replace(s))
		got, ok := parseRFC3339([]byte(s))
		if ok != (werr == nil) || ok && !got.Equal(want) {
			t.Errorf("%q: got %v %v, time.Parse %v %v", s, got, ok, want, werr)
		}
		if ok && got.Location() != time.UTC {
			t.Errorf("%q: not in UTC", s)
		}
	}
	// RFC 3339 allows a space for the T; time.Parse does not.
	if got, ok := parseRFC3339([]byte("2026-11-29 07:00:00Z")); !ok || !got.Equal(utc("2026-11-29T07:00:00Z")) {
		t.Errorf("space separator: %v %v", got, ok)
	}
}

func TestParseEpoch(t *testing.T) {
	tests := []struct {
		in   string
		kind timeKind
		want string // RFC 3339, or "" for an error
	}{
		{"0", timeEpochS, "1970-01-01T00:00:00Z"},
		{"1764399600", timeEpochS, "2025-11-29T07:00:00Z"},
		{"1764399600.5", timeEpochS, "2025-11-29T07:00:00.5Z"},
		{"1764399600.123456789123", timeEpochS, "2025-11-29T07:00:00.123456789Z"},
		{"-1", timeEpochS, "1969-12-31T23:59:59Z"},
		{"-0.25", timeEpochS, "1969-12-31T23:59:59.75Z"},
		{"1.7643996e9", timeEpochS, "2025-11-29T07:00:00Z"},
		{"1764399600123", timeEpochMS, "2025-11-29T07:00:00.123Z"},
		{"-1500", timeEpochMS, "1969-12-31T23:59:58.5Z"},
		{"1764399600123.5", timeEpochMS, "2025-11-29T07:00:00.1235Z"},
		{"1764399600123456", timeEpochUS, "2025-11-29T07:00:00.123456Z"},
		{"1764399600123456789", timeEpochNS, "2025-11-29T07:00:00.123456789Z"},
		{"", timeEpochS, ""},
		{"-", timeEpochS, ""},
		{"12a", timeEpochS, ""},
		{"1.", timeEpochS, ""},
		{"1e400", timeEpochS, ""},
		{"99999999999999999999", timeEpochS, ""},
	}
	for _, tt := range tests {
		got, ok := parseEpoch([]byte(tt.in), tt.kind)
		if tt.want == "" {
			if ok {
				t.Errorf("%q: got %v, want an error", tt.in, got)
			}
			continue
		}
		if !ok || !got.Equal(utc(tt.want)) {
			t.Errorf("%q (%v): got %v %v, want %s", tt.in, tt.kind, got, ok, tt.want)
		}
	}
}

func TestParseTimeFormat(t *testing.T) {
	for _, s := range []string{"rfc3339", "epoch_s", "epoch_ms", "epoch_us", "epoch_ns", "2006-01-02", "20060102150405", time.RFC1123Z, "02/Jan/2006:15:04:05 -0700"} {
		if _, err := parseTimeFormat(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"rfc3339nano", "RFC3339", "epoch", "iso8601", "Jan _2 15:04:05", ""} {
		if _, err := parseTimeFormat(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
}

func TestParseRFC3339DoesNotAllocate(t *testing.T) {
	b := []byte("2026-11-29T16:00:00.123456+09:00")
	if n := testing.AllocsPerRun(100, func() { parseRFC3339(b) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}

// TestDaysFromCivil holds the day count to time.Date on every day the
// parser reads (years 0000 to 9999).
func TestDaysFromCivil(t *testing.T) {
	day := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	for ; day.Year() <= 9999; day = day.AddDate(0, 0, 1) {
		want := day.Unix() / 86400
		if day.Unix() < 0 && day.Unix()%86400 != 0 {
			want--
		}
		if got := daysFromCivil(day.Year(), int(day.Month()), day.Day()); got != want {
			t.Fatalf("%s: %d days from 1970-01-01, time.Date %d", day.Format(time.DateOnly), got, want)
		}
	}
}

func BenchmarkParseRFC3339(b *testing.B) {
	in := []byte("2026-11-29T07:00:00.123Z")
	for b.Loop() {
		parseRFC3339(in)
	}
}
