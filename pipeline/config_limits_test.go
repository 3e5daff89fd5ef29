package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The inputs of issue 27: files that cost the loader minutes and gigabytes
// before it had limits. Each must now be refused with the limit it breaks.

func TestConfigOverOneMiBIsRefusedUnread(t *testing.T) {
	dir := t.TempDir()
	// 56 MB, the size of the file the loader accepted (sparse: nothing is
	// written, and nothing should be read).
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(56 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Just over the limit, and text: a comment line repeated.
	over := filepath.Join(dir, "over.yaml")
	text := minimalConfig + strings.Repeat("# padding\n", MaxConfigBytes/10+1)
	if err := os.WriteFile(over, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{huge, over} {
		_, err := Load(path)
		if !errors.Is(err, ErrConfigTooLarge) {
			t.Fatalf("Load(%s) = %v, want ErrConfigTooLarge", filepath.Base(path), err)
		}
		if !strings.Contains(err.Error(), "1 MiB") || !strings.HasPrefix(err.Error(), path+":") {
			t.Errorf("the error should name the file and the 1 MiB limit: %v", err)
		}
	}
	if _, err := Parse("over.yaml", []byte(text)); !errors.Is(err, ErrConfigTooLarge) {
		t.Errorf("Parse of %d bytes = %v, want ErrConfigTooLarge", len(text), err)
	}
}

func TestDeeplyNestedConfigIsRefused(t *testing.T) {
	tests := []struct{ name, text string }{
		// The file: 200 KB of [.
		{"nested flow sequences", "kafka: " + strings.Repeat("[", 200_000) + "\n"},
		{"nested flow mappings", "kafka: " + strings.Repeat("{a: ", 50_000) + "\n"},
		{"nested block sequences on one line", strings.Repeat("- ", 100_000) + "x\n"},
		{"nested complex keys", strings.Repeat("? ", 100_000) + "x\n"},
		// Closers inside quotes do not close anything: the nesting is real.
		{"quoted closers", "kafka: " + strings.Repeat(`[ "]" `, 20_000) + "\n"},
		{"brackets after a quote that hides them", "kafka: x \"\nbrokers: " + strings.Repeat("[", 20_000) + "\n"},
		{"nested by indentation", nestedByIndent(200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("deep.yaml", []byte(tt.text))
			if !errors.Is(err, ErrConfigTooDeep) {
				t.Fatalf("got %.300v, want ErrConfigTooDeep", err)
			}
			if !strings.HasPrefix(err.Error(), "deep.yaml:") || len(err.Error()) > 300 {
				t.Errorf("want a short error naming the file: %.400s", err)
			}
		})
	}
}

func nestedByIndent(levels int) string {
	var b strings.Builder
	for i := range levels {
		fmt.Fprintf(&b, "%sk:\n", strings.Repeat(" ", i))
	}
	return b.String()
}

func TestAliasBombIsRefused(t *testing.T) {
	// Billion laughs: 300 bytes that expand to 9^9 strings (the loader
	// spent 77 s and 3.4 GB on it).
	var b strings.Builder
	b.WriteString(`a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	for c := 'b'; c <= 'i'; c++ {
		fmt.Fprintf(&b, "%c: &%c [%s]\n", c, c, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*%c,", c-1), 9), ","))
	}
	b.WriteString("kafka: {brokers: *i}\n")
	_, err := Parse("bomb.yaml", []byte(b.String()))
	if !errors.Is(err, ErrConfigAliases) {
		t.Fatalf("got %v, want ErrConfigAliases", err)
	}
	if !strings.Contains(err.Error(), "alias") {
		t.Errorf("the error should say aliases are the problem: %v", err)
	}
}

func TestAnchorsAndAliasesWithinTheLimitStillWork(t *testing.T) {
	text := `kafka:
  brokers: &brokers [127.0.0.1:19092, 127.0.0.1:29092]
  topics: [logs]
  group: g
sinks:
  files: {url: file:///tmp/out}
  kafka: {topic: copy, brokers: *brokers}
dead_letter: {files: true}
`
	c, err := Parse("anchors.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Sinks.Kafka.Brokers; len(got) != 2 || got[1] != "127.0.0.1:29092" {
		t.Errorf("the alias gave %v", got)
	}
}

func TestWideConfigIsRefused(t *testing.T) {
	var wide strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&wide, "k%05d: 1\n", i)
	}
	tests := []struct{ name, text string }{
		// The parser's time grows with the square of a mapping's keys.
		{"20,000 keys", wide.String()},
		{"a list of 300,000 on one line", "kafka: {topics: [" + strings.Repeat("a,", 300_000) + "a]}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("wide.yaml", []byte(tt.text))
			if !errors.Is(err, ErrConfigTooLarge) {
				t.Fatalf("got %.300v, want ErrConfigTooLarge", err)
			}
		})
	}
}

func TestBinaryConfigIsQuotedShortAndEscaped(t *testing.T) {
	raw := []byte("\x7fELF\x02\x01\x01\x00")
	for i := range 7600 {
		raw = append(raw, byte(i*7))
	}
	_, err := Parse("bin.yaml", raw)
	if !errors.Is(err, ErrConfigNotText) {
		t.Fatalf("got %.300q, want ErrConfigNotText", err)
	}
	msg := err.Error()
	if len(msg) > 200 {
		t.Errorf("%d bytes of message, want a short excerpt: %q", len(msg), msg)
	}
	for _, r := range msg {
		if r < 0x20 || r == 0x7f {
			t.Fatalf("the message carries a control character: %q", msg)
		}
	}
	if !strings.HasPrefix(msg, "bin.yaml:1:1:") || !strings.Contains(msg, `\x7fELF`) {
		t.Errorf("want the place and an escaped excerpt: %s", msg)
	}
}

// The shipped configs sit far inside every limit.
func TestShippedConfigsAreWithinTheLimits(t *testing.T) {
	for _, p := range []string{"../configs/reference.yaml", "../configs/local.yaml", "../configs/emr-eks.yaml", "../cmd/logstore/demo.yaml", "../sink/reference-sinks.yaml"} {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkShape(p, raw); err != nil {
			t.Errorf("%v", err)
		}
	}
}
