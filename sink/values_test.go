package sink

import (
	"strings"
	"testing"
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
