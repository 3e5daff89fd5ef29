// Package confkey is the config error that names its key, and the small
// helpers every config section uses to fill defaults and check choices.
// rack, sink and pipeline each validate their own section and must not
// import one another; this package is what they share. The loader (package
// pipeline) turns an Error's key into the file:line of the YAML it came from.
package confkey

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is a config error tied to a dotted key path such as
// `kafka.sasl.mechanism` or `schema.columns[2].type`, relative to the
// section that returned it.
type Error struct {
	Key string
	Msg string
}

func (e *Error) Error() string { return e.Key + ": " + e.Msg }

// ConfigKey is the key the error is about.
func (e *Error) ConfigKey() string { return e.Key }

// Errorf returns an *Error at key.
func Errorf(key, format string, args ...any) error {
	return &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// OneOf returns an *Error at key unless v is one of allowed.
func OneOf(key, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	if c := Closest(v, allowed); c != "" {
		return Errorf(key, "%s is not one of %s; did you mean %q?", Quote(v), strings.Join(allowed, ", "), c)
	}
	return Errorf(key, "%s is not one of %s", Quote(v), strings.Join(allowed, ", "))
}

// Closest returns the one of known nearest to word in edits (a letter added,
// dropped, changed, or two swapped), or "" when none is near enough to be a
// likely slip: at most 2 edits, or a third of word's length for longer
// words, and fewer than word has letters.
func Closest(word string, known []string) string {
	n := utf8.RuneCountInString(word)
	best, bestD := "", max(2, n/3)+1
	for _, k := range known {
		if d := editDistance(word, k); d < bestD && d < n {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance: Levenshtein's, with
// a swap of two neighbours counting as one edit (gruop → group).
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	// d[i][j] is the distance between s[:i] and t[:j].
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}

// maxQuoted is the most of a value an error message quotes: enough to
// recognise it, never a terminal's worth of whatever the file held.
const maxQuoted = 40

// Quote returns v for an error message: Go-quoted (control characters and
// invalid UTF-8 escaped) and cut to its first 40 characters.
func Quote(v string) string {
	if utf8.RuneCountInString(v) <= maxQuoted {
		return strconv.Quote(v)
	}
	n := 0
	for i := range v {
		if n == maxQuoted {
			return strconv.Quote(v[:i]) + "…"
		}
		n++
	}
	return strconv.Quote(v)
}

// Default sets *p to v when it holds its zero value.
func Default[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}
