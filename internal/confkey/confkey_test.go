package confkey

import (
	"errors"
	"strings"
	"testing"
)

func TestOneOf(t *testing.T) {
	tests := []struct {
		v       string
		wantErr string
	}{
		{"on", ""},
		{"off", ""},
		{"maybe", `mode: "maybe" is not one of on, off`},
		{"", `mode: "" is not one of on, off`},
	}
	for _, tt := range tests {
		err := OneOf("mode", tt.v, "on", "off")
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("OneOf(%q) = %v, want nil", tt.v, err)
			}
			continue
		}
		var ke *Error
		if !errors.As(err, &ke) || ke.ConfigKey() != "mode" || err.Error() != tt.wantErr {
			t.Errorf("OneOf(%q) = %v, want %s", tt.v, err, tt.wantErr)
		}
	}
}

func TestDefault(t *testing.T) {
	n, s := 0, "set"
	Default(&n, 5)
	Default(&s, "default")
	if n != 5 || s != "set" {
		t.Errorf("n, s = %d, %q; want 5, %q", n, s, "set")
	}
}

func TestOneOfSuggestsTheClosestChoice(t *testing.T) {
	err := OneOf("log.format", "jsno", "auto", "json", "text")
	if err == nil || err.Error() != `log.format: "jsno" is not one of auto, json, text; did you mean "json"?` {
		t.Errorf("got %v", err)
	}
}

func TestClosest(t *testing.T) {
	known := []string{"brokers", "topics", "group", "client_id", "tls", "sasl"}
	tests := []struct{ word, want string }{
		{"gruop", "group"},    // two letters swapped
		{"broker", "brokers"}, // one dropped
		{"topcis", "topics"},  // swapped
		{"client-id", "client_id"},
		{"partitions", ""}, // nothing near: no guess
		{"tsl", "tls"},
	}
	for _, tt := range tests {
		if got := Closest(tt.word, known); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}

func TestQuoteIsShortAndEscaped(t *testing.T) {
	long := "\x7fELF\x02\x01\x01\x00" + strings.Repeat("\x00\xff", 4000)
	q := Quote(long)
	if len(q) > 200 {
		t.Errorf("%d bytes quoted, want a short excerpt: %s", len(q), q)
	}
	for _, r := range q {
		if r < 0x20 || r == 0x7f {
			t.Fatalf("a control character in %q", q)
		}
	}
	if !strings.HasPrefix(q, `"\x7fELF`) || !strings.HasSuffix(q, "…") {
		t.Errorf("Quote = %s", q)
	}
}
