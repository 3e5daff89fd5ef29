package sink

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The check reads eight bytes at a time: a bad or a multi-byte sequence
// must be seen wherever it sits, in a word or in the tail.
func TestValidTextAtEveryPosition(t *testing.T) {
	for n := 1; n <= 25; n++ {
		for at := 0; at < n; at++ {
			bad := strings.Repeat("a", at) + "\xff" + strings.Repeat("b", n-at-1)
			if got := ValidText(bad); got != strings.Repeat("a", at)+"\uFFFD"+strings.Repeat("b", n-at-1) {
				t.Fatalf("ValidText(%q) = %q", bad, got)
			}
			good := strings.Repeat("a", at) + "é" + strings.Repeat("b", n-at-1)
			if !isASCIIOrValid(good) || isASCIIOrValid(bad) != utf8.ValidString(bad) {
				t.Fatalf("isASCIIOrValid wrong for %q or %q", good, bad)
			}
		}
	}
}

// TimeInRange compares seconds; it must agree with MinTime and MaxTime to
// the nanosecond, in any location.
func TestTimeInRangeAtItsBounds(t *testing.T) {
	east := time.FixedZone("east", 14*3600)
	for _, c := range []struct {
		t    time.Time
		want bool
	}{
		{MinTime, true},
		{MinTime.Add(-time.Nanosecond), false},
		{MinTime.In(east), true},
		{MaxTime, true},
		{MaxTime.Add(time.Nanosecond), false},
		{MaxTime.Add(-time.Nanosecond), true},
		{MaxTime.In(east), true},
		{time.Time{}, true}, // 0001-01-01 UTC is MinTime
		{time.Unix(0, 0), true},
		{time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{time.Date(9999, 12, 31, 23, 59, 59, 0, east), true},
		{time.Date(10000, 1, 1, 13, 59, 59, 999999999, east), true}, // 9999-12-31T23:59:59.999999999Z
		{time.Date(10000, 1, 1, 14, 0, 0, 0, east), false},
	} {
		if got := TimeInRange(c.t); got != c.want {
			t.Errorf("TimeInRange(%s) = %v, want %v", c.t.Format(time.RFC3339Nano), got, c.want)
		}
		if want := !c.t.Before(MinTime) && !c.t.After(MaxTime); want != c.want {
			t.Errorf("case %s: the test's own answer %v disagrees with Before/After", c.t.Format(time.RFC3339Nano), c.want)
		}
	}
}
