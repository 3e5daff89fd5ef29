package decode

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/logstore/logstore/sink"
)

func TestParsePath(t *testing.T) {
	k := func(s string) pathStep { return pathStep{key: s, index: -1} }
	i := func(n int) pathStep { return pathStep{index: n} }
	tests := []struct {
		path    string
		want    []pathStep
		wantErr string
	}{
		{"level", []pathStep{k("level")}, ""},
		{"http.status", []pathStep{k("http"), k("status")}, ""},
		{"a.b.c", []pathStep{k("a"), k("b"), k("c")}, ""},
		{"tags[0]", []pathStep{k("tags"), i(0)}, ""},
		{"users[12].name", []pathStep{k("users"), i(12), k("name")}, ""},
		{"m[0][1]", []pathStep{k("m"), i(0), i(1)}, ""},
		{`labels["k8s.io/app"]`, []pathStep{k("labels"), k("k8s.io/app")}, ""},
		{`labels["a]b"].c`, []pathStep{k("labels"), k("a]b"), k("c")}, ""},
		{`["kafka"].key`, []pathStep{k("kafka"), k("key")}, ""},
		{"@timestamp", []pathStep{k("@timestamp")}, ""},
		{"", nil, "empty path"},
		{"a..b", nil, "empty key"},
		{"a.", nil, "ends with '.'"},
		{".a", nil, "empty key"},
		{"a[x]", nil, `"x" is not an array index`},
		{"a[-1]", nil, "is not an array index"},
		{"a[1", nil, "unterminated ["},
		{`a["b]`, nil, "unterminated"},
	}
	for _, tt := range tests {
		got, err := parsePath(tt.path)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: error %v, want %q", tt.path, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %+v %v, want %+v", tt.path, got, err, tt.want)
		}
	}
}

// TestScanDoesNotAllocate checks the scanner's promise: no allocation for a
// valid record, wanted paths or not.
func TestScanDoesNotAllocate(t *testing.T) {
	tree := newPathTree()
	n := 0
	for _, p := range []string{"a.b", "list[1].x", "s", "escape"} {
		steps, _ := parsePath(p)
		tree.add(steps, &n)
	}
	doc := []byte(`{"a": {"b": [1, 2.5, {"c": null}]}, "list": [{"x": 1}, {"x": "two"}], "s": "t\u00e9xt", "esc\u0061pe": 1, "skip": {"deep": [[[true, false]]]}}`)
	spans := make([]jsonSpan, n)
	var s jsonScanner
	if allocs := testing.AllocsPerRun(100, func() {
		clear(spans)
		if err := s.scan(doc, tree, spans); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per scan", allocs)
	}
	for slot, sp := range spans {
		if sp.kind == jsonMissing {
			t.Errorf("slot %d not found", slot)
		}
	}
}

// TestFirstSpecial8 checks the word-at-a-time test finds the first quote,
// backslash or control byte exactly, wherever it sits and whatever
// surrounds it.
func TestFirstSpecial8(t *testing.T) {
	special := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
	check := func(w [8]byte) {
		want := 8
		for i, c := range w {
			if special(c) {
				want = i
				break
			}
		}
		if got := firstSpecial8(binary.LittleEndian.Uint64(w[:])); got != want {
			t.Fatalf("%q: first special at %d, want %d", w[:], got, want)
		}
	}
	for _, fill := range []byte{'a', 0x7f, 0x80, 0xff, ' ', '!', '#', '[', ']', 0, '"', '\\', 0x1f} {
		for pos := range 8 {
			for c := range 256 {
				var w [8]byte
				for i := range w {
					w[i] = fill
				}
				w[pos] = byte(c)
				check(w)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		check(w)
	}
}

// isValidText reads eight bytes at a time: a bad or a multi-byte sequence
// must be seen wherever it sits, in a word or in the tail.
func TestIsValidTextAtEveryPosition(t *testing.T) {
	for n := 1; n <= 25; n++ {
		for at := 0; at < n; at++ {
			for _, c := range []string{"\xff", "é", "\xc3", "\xed\xa0\x80"} {
				b := []byte(strings.Repeat("a", at) + c + strings.Repeat("b", n-at-1))
				if got, want := isValidText(b), utf8.Valid(b); got != want {
					t.Fatalf("isValidText(%q) = %v, want %v", b, got, want)
				}
			}
		}
	}
}

// TestPathMember: a member is found among keys of its length, and a key
// the tree does not name (shorter, longer, or of a known length) is not.
func TestPathMember(t *testing.T) {
	tree := newPathTree()
	var n int
	for _, k := range []string{"ab", "cd", "level", "http", "a", "trace_id_of_the_request"} {
		tree.add([]pathStep{{key: k, index: -1}}, &n)
	}
	tree.add([]pathStep{{key: "arr", index: -1}, {index: 2}}, &n)
	for _, k := range []string{"ab", "cd", "level", "http", "a", "trace_id_of_the_request", "arr"} {
		if c := tree.member([]byte(k)); c == nil || c.key != k {
			t.Errorf("member(%q) = %v", k, c)
		}
	}
	for _, k := range []string{"", "ac", "b", "levels", "leve", "trace_id_of_the_request_", "x"} {
		if c := tree.member([]byte(k)); c != nil {
			t.Errorf("member(%q) = %q, want none", k, c.key)
		}
	}
	if c := tree.member([]byte("arr")); c.element(2) == nil || c.element(1) != nil {
		t.Error("an array step is not found by its index")
	}
}

// TestScannerSeesNonASCIIEverywhere: a string is taken for ASCII (and its
// UTF-8 check skipped) only when every byte is: a byte of 0x80 or more at
// any position, in the scanner's eight-byte steps, before an escape or in
// the bytes after the last whole word, clears the flag, and its text comes
// out repaired as sink.AppendValidText repairs it.
func TestScannerSeesNonASCIIEverywhere(t *testing.T) {
	tree := newPathTree()
	var n int
	slot := tree.add([]pathStep{{key: "k", index: -1}}, &n)
	var s jsonScanner
	spans := make([]jsonSpan, n)
	for size := range 26 {
		for _, tail := range []string{"", `\n`, "abc", "ab\\u00e9cdefghij"} {
			for pos := -1; pos < size; pos++ {
				for _, b := range []byte{0x80, 0xc3, 0xe9, 0xff} {
					str := []byte(strings.Repeat("x", size))
					if pos >= 0 {
						str[pos] = b
					}
					str = append(str, tail...)
					doc := append(append([]byte(`{"k":"`), str...), `"}`...)
					if err := s.scan(doc, tree, spans); err != nil {
						t.Fatalf("%q: %v", doc, err)
					}
					sp := spans[slot]
					if want := pos < 0; sp.ascii != want {
						t.Fatalf("%q: ascii %v, want %v", doc, sp.ascii, want)
					}
					var scratch []byte
					got := jsonText(doc, sp, &scratch)
					want := sink.AppendValidText(nil, appendUnquoted(nil, str))
					if !utf8.Valid(got) || string(got) != string(want) {
						t.Fatalf("%q: text %q, want %q", doc, got, want)
					}
				}
			}
		}
	}
}
