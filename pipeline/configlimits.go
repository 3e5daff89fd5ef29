package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"

	"github.com/logstore/logstore/internal/confkey"
)

// A config is checked against these limits before the YAML parser reads it.
// `logstore check` runs in CI on configs from pull requests, and the parser
// (goccy/go-yaml) bounds nothing itself: its time grows with the square of a
// document's nesting and of a mapping's width, and it expands aliases
// without limit (a 200 KB file of nested [ took 84 s and 15 GB, a 300-byte
// alias bomb 77 s and 3.4 GB). The largest shipped config,
// configs/reference.yaml (every key with its comment: 32 KB, 573 lines,
// about 5,500 words, brackets and commas, 34 [ and {), sits far inside
// each limit.
const (
	// MaxConfigBytes: a larger file is refused unread.
	MaxConfigBytes = 1 << 20
	// maxConfigLines bounds a block mapping's width (the parser takes about
	// 0.3 s for 5,000 keys in one mapping, three times that for twice as many).
	maxConfigLines = 5_000
	// maxConfigTokens bounds the parser's tokens, counted as words plus
	// [ ] { } and commas (a flow list can hold a token in every other byte).
	maxConfigTokens = 100_000
	// maxConfigDepth bounds nesting: indentation, "- " and "? " opening
	// collections on one line, and [ and {.
	maxConfigDepth = 64
	// maxFlowOpeners counts every [ and {, quoted or commented or not. The
	// depth count above does not read quotes, so a closer inside a string
	// could hide real nesting from it; nothing hides from this count, which
	// keeps the parser's worst case at 2,000 levels (about 0.1 s).
	maxFlowOpeners = 2_000
	// maxAliasValues bounds the values aliases add once expanded.
	maxAliasValues = 10_000
)

// The kinds of config a loader refuses before it decodes anything; a
// *ConfigError carries one of these (errors.Is) when a limit is the reason.
var (
	ErrConfigTooLarge = errors.New("config too large")
	ErrConfigTooDeep  = errors.New("config nested too deep")
	ErrConfigAliases  = errors.New("config aliases expand too far")
	ErrConfigNotText  = errors.New("config is not text")
)

// checkText refuses bytes that are not UTF-8 text (a binary file, a
// compressed one), quoting a few of them escaped instead of echoing them.
func checkText(name string, raw []byte) error {
	line, col := 1, 1
	for i := 0; i < len(raw); {
		r, size := utf8.DecodeRune(raw[i:])
		bad := r == utf8.RuneError && size == 1 ||
			r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f ||
			r == '\uFEFF' && i > 0 // a byte order mark only opens a file
		if bad {
			excerpt := raw[i:min(len(raw), i+16)]
			return &ConfigError{File: name, Line: line, Column: col, Err: ErrConfigNotText,
				Msg: fmt.Sprintf("not a YAML text file: it holds control characters or bytes that are not UTF-8 (%s); a config is UTF-8 text", confkey.Quote(string(excerpt)))}
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return nil
}

// checkShape bounds the file's lines, tokens and nesting in one pass over its
// bytes, before any parser sees them.
func checkShape(name string, text []byte) error {
	tooLarge := func(line int, msg string) error {
		return &ConfigError{File: name, Line: line, Column: 1, Err: ErrConfigTooLarge, Msg: msg}
	}
	tooDeep := func(line, col int, msg string) error {
		return &ConfigError{File: name, Line: line, Column: col, Err: ErrConfigTooDeep, Msg: msg}
	}
	deeper := fmt.Sprintf("nested more than %d levels deep; a config nests a handful", maxConfigDepth)
	tooManyOpeners := fmt.Sprintf("more than %d [ and { in the file, each of which can open a nested collection; a config has a few dozen", maxFlowOpeners)
	var (
		indents []int // the indentation of the open block collections
		flow    int   // open [ and {, not counting those in comments
		openers int
		tokens  int
		lineNo  int
	)
	for start := 0; start < len(text); {
		end := bytes.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		line := text[start:end]
		start = end + 1
		lineNo++
		if lineNo > maxConfigLines {
			return tooLarge(lineNo, fmt.Sprintf("more than %d lines; a config has a few hundred", maxConfigLines))
		}
		i := 0
		for i < len(line) && blank(line[i]) {
			i++
		}
		if i == len(line) || line[i] == '#' || line[i] == '\r' {
			// A blank or comment line opens nothing, whatever its indentation
			// (still, no [ or { it holds escapes the count).
			openers += countOpeners(line[i:])
			if openers > maxFlowOpeners {
				return tooDeep(lineNo, 1, tooManyOpeners)
			}
			continue
		}
		if flow == 0 {
			for len(indents) > 0 && indents[len(indents)-1] > i {
				indents = indents[:len(indents)-1]
			}
			if len(indents) == 0 || indents[len(indents)-1] < i {
				indents = append(indents, i)
			}
		}
		// "- - - x" and "? ? x" open a collection with each indicator, and
		// anchors or tags may stand between them.
		compact := 0
	indicators:
		for i < len(line) {
			j := i + 1
			switch c := line[i]; {
			case (c == '-' || c == '?') && (j == len(line) || blank(line[j])):
				compact++
				if len(indents)+compact+flow > maxConfigDepth {
					return tooDeep(lineNo, i+1, deeper)
				}
			case c == '&' || c == '!':
				for j < len(line) && !blank(line[j]) {
					j++
				}
			default:
				break indicators
			}
			tokens++
			for j < len(line) && blank(line[j]) {
				j++
			}
			i = j
		}
		inWord := false
		for ; i < len(line); i++ {
			c := line[i]
			switch c {
			case '[', '{':
				openers++
				flow++
				tokens++
				inWord = false
			case ']', '}':
				if flow > 0 {
					flow--
				}
				tokens++
				inWord = false
			case ',':
				tokens++
				inWord = false
			case ' ', '\t', '\r':
				inWord = false
			case '#':
				if !inWord {
					// A comment: its brackets open nothing, but they count.
					openers += countOpeners(line[i:])
					i = len(line)
					continue
				}
			default:
				if !inWord {
					tokens++
					inWord = true
				}
			}
			if openers > maxFlowOpeners {
				return tooDeep(lineNo, i+1, tooManyOpeners)
			}
			if len(indents)+compact+flow > maxConfigDepth {
				return tooDeep(lineNo, i+1, deeper)
			}
		}
		if tokens > maxConfigTokens {
			return tooLarge(lineNo, fmt.Sprintf("more than %d words, brackets and commas; a config has a few thousand", maxConfigTokens))
		}
	}
	return nil
}

func blank(c byte) bool { return c == ' ' || c == '\t' }

func countOpeners(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '[' || c == '{' {
			n++
		}
	}
	return n
}

// checkAliases refuses a document whose aliases, expanded, would add more
// than maxAliasValues values: the decoder copies an alias's value at each
// use, so nine aliases of nine aliases of ... grow as a power.
func checkAliases(name string, file *ast.File) error {
	a := aliasCount{anchors: map[string]int{}}
	for _, doc := range file.Docs {
		a.size(doc.Body)
		if a.at != nil {
			ce := &ConfigError{File: name, Err: ErrConfigAliases,
				Msg: fmt.Sprintf("aliases (*name) would expand to more than %d values; use an alias for a few values, not to multiply them", maxAliasValues)}
			if tk := a.at.GetToken(); tk != nil && tk.Position != nil {
				ce.Line, ce.Column = tk.Position.Line, tk.Position.Column
			}
			return ce
		}
	}
	return nil
}

type aliasCount struct {
	anchors  map[string]int // an anchor's name → values in its value, expanded
	expanded int            // values added by aliases so far
	at       ast.Node       // the alias that went over the limit
}

// size returns the values in n with its aliases expanded, saturating just
// above the limit so the sums cannot overflow.
func (a *aliasCount) size(n ast.Node) int {
	if n == nil || a.at != nil {
		return 0
	}
	sum := func(nodes ...ast.Node) int {
		s := 1
		for _, c := range nodes {
			s = min(s+a.size(c), maxAliasValues+1)
		}
		return s
	}
	switch n := n.(type) {
	case *ast.AnchorNode:
		s := a.size(n.Value)
		a.anchors[tokenValue(n.Name)] = s
		return s
	case *ast.AliasNode:
		s := a.anchors[tokenValue(n.Value)]
		a.expanded += s
		if a.expanded > maxAliasValues {
			a.at = n
		}
		return s
	case *ast.TagNode:
		return a.size(n.Value)
	case *ast.MappingKeyNode:
		return a.size(n.Value)
	case *ast.MappingValueNode:
		return sum(n.Key, n.Value)
	case *ast.MappingNode:
		nodes := make([]ast.Node, len(n.Values))
		for i, v := range n.Values {
			nodes[i] = v
		}
		return sum(nodes...)
	case *ast.SequenceNode:
		return sum(n.Values...)
	}
	return 1
}

func tokenValue(n ast.Node) string {
	if n == nil || n.GetToken() == nil {
		return ""
	}
	return n.GetToken().Value
}
