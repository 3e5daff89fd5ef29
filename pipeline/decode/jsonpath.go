package decode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/logstore/logstore/sink"
)

// A JSON path names one value inside a record: `level`, `http.status`,
// `tags[0]`, `labels["k8s.io/app"]` (brackets and quotes for a key that
// holds a dot). The decoder merges the paths of all columns into a tree and
// walks each record once, recording where every wanted value lies and
// validating, without keeping, everything else.

type pathStep struct {
	key   string
	index int // array element; -1 when the step is an object key
}

func parsePath(p string) ([]pathStep, error) {
	var steps []pathStep
	i := 0
	for i < len(p) {
		switch {
		case p[i] == '[':
			end := strings.IndexByte(p[i:], ']')
			if i+1 < len(p) && p[i+1] == '"' {
				// A quoted key may itself hold ']': find the closing quote first.
				q := closingQuote(p, i+1)
				if q < 0 || q+1 >= len(p) || p[q+1] != ']' {
					return nil, fmt.Errorf("path %q: unterminated [\"key\"] at byte %d", p, i)
				}
				key, err := strconv.Unquote(p[i+1 : q+1])
				if err != nil {
					return nil, fmt.Errorf("path %q: bad quoted key %s", p, p[i+1:q+1])
				}
				steps = append(steps, pathStep{key: key, index: -1})
				i = q + 2
			} else {
				if end < 0 {
					return nil, fmt.Errorf("path %q: unterminated [ at byte %d", p, i)
				}
				n, err := strconv.Atoi(p[i+1 : i+end])
				if err != nil || n < 0 {
					return nil, fmt.Errorf("path %q: %q is not an array index; quote a key as [\"key\"]", p, p[i+1:i+end])
				}
				steps = append(steps, pathStep{index: n})
				i += end + 1
			}
			if i < len(p) && p[i] == '.' {
				i++
				if i == len(p) {
					return nil, fmt.Errorf("path %q: ends with '.'", p)
				}
			}
		default:
			end := strings.IndexAny(p[i:], ".[")
			if end < 0 {
				end = len(p) - i
			}
			if end == 0 {
				return nil, fmt.Errorf("path %q: empty key at byte %d", p, i)
			}
			steps = append(steps, pathStep{key: p[i : i+end], index: -1})
			i += end
			if i < len(p) && p[i] == '.' {
				i++
				if i == len(p) {
					return nil, fmt.Errorf("path %q: ends with '.'", p)
				}
			}
		}
	}
	if len(steps) == 0 {
		return nil, errors.New("empty path")
	}
	return steps, nil
}

func closingQuote(s string, open int) int {
	for i := open + 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// pathNode is one step of the merged path tree. A node may both be captured
// (slot >= 0) and lead further, as when one column keeps `http` as json and
// another reads `http.status`.
type pathNode struct {
	key      string
	index    int
	slot     int
	keys     []*pathNode // object members to descend into
	elements []*pathNode // array elements to descend into
	// byLen is keys by the key's length: a member is compared with the
	// keys of its length only (most often one), and a member the schema
	// does not name is mostly passed over without a comparison.
	byLen [][]*pathNode
}

func newPathTree() *pathNode { return &pathNode{index: -1, slot: -1} }

// add puts a path in the tree and returns its capture slot; paths that are
// equal share a slot.
func (n *pathNode) add(steps []pathStep, nslots *int) int {
	for _, s := range steps {
		var next *pathNode
		list := &n.keys
		if s.index >= 0 {
			list = &n.elements
		}
		for _, c := range *list {
			if c.key == s.key && c.index == s.index {
				next = c
				break
			}
		}
		if next == nil {
			next = &pathNode{key: s.key, index: s.index, slot: -1}
			*list = append(*list, next)
			if s.index < 0 {
				for len(n.byLen) <= len(s.key) {
					n.byLen = append(n.byLen, nil)
				}
				n.byLen[len(s.key)] = append(n.byLen[len(s.key)], next)
			}
		}
		n = next
	}
	if n.slot < 0 {
		n.slot = *nslots
		*nslots++
	}
	return n.slot
}

func (n *pathNode) member(key []byte) *pathNode {
	if len(key) >= len(n.byLen) {
		return nil
	}
	for _, c := range n.byLen[len(key)] {
		if string(key) == c.key {
			return c
		}
	}
	return nil
}

func (n *pathNode) element(i int) *pathNode {
	for _, c := range n.elements {
		if c.index == i {
			return c
		}
	}
	return nil
}

// jsonKind is the kind of a JSON value; jsonMissing marks a path the record
// does not have.
type jsonKind uint8

const (
	jsonMissing jsonKind = iota
	jsonNull
	jsonString
	jsonNumber
	jsonTrue
	jsonFalse
	jsonObject
	jsonArray
)

var jsonKindNames = [...]string{"missing", "null", "string", "number", "boolean", "boolean", "object", "array"}

func (k jsonKind) String() string { return jsonKindNames[k] }

// jsonSpan is where a captured value lies in the record.
type jsonSpan struct {
	start, end int
	kind       jsonKind
	escaped    bool // a string holding backslash escapes
	ascii      bool // a string whose bytes are all ASCII (so valid UTF-8)
}

// maxJSONDepth bounds nesting, as encoding/json does, so that a hostile
// record cannot exhaust the stack.
const maxJSONDepth = 10000

// jsonScanner validates a document and fills the spans of the tree's slots.
// It allocates nothing unless the document is invalid.
type jsonScanner struct {
	buf     []byte
	pos     int
	spans   []jsonSpan
	scratch []byte // unescaped object keys
}

// JSONSyntaxError says where a record stops being JSON.
type JSONSyntaxError struct {
	Offset int
	Msg    string
}

func (e *JSONSyntaxError) Error() string {
	return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset)
}

func (s *jsonScanner) fail(msg string) error {
	if s.pos >= len(s.buf) {
		return &JSONSyntaxError{Offset: s.pos, Msg: "unexpected end of input"}
	}
	found := fmt.Sprintf("byte 0x%02x", s.buf[s.pos])
	if r, size := utf8.DecodeRune(s.buf[s.pos:]); r != utf8.RuneError || size > 1 {
		found = strconv.QuoteRune(r)
	}
	return &JSONSyntaxError{Offset: s.pos, Msg: fmt.Sprintf("%s, found %s", msg, found)}
}

// scan walks one document; spans must have one entry per slot, zeroed.
func (s *jsonScanner) scan(doc []byte, root *pathNode, spans []jsonSpan) error {
	s.buf, s.pos, s.spans = doc, 0, spans
	if err := s.value(root, 0); err != nil {
		return err
	}
	s.skipSpace()
	if s.pos != len(s.buf) {
		return s.fail("unexpected data after the document")
	}
	return nil
}

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *jsonScanner) value(n *pathNode, depth int) error {
	s.skipSpace()
	if s.pos >= len(s.buf) {
		return s.fail("")
	}
	start := s.pos
	var kind jsonKind
	var escaped, ascii bool
	var err error
	switch c := s.buf[s.pos]; {
	case c == '{':
		kind = jsonObject
		err = s.object(n, depth+1)
	case c == '[':
		kind = jsonArray
		err = s.array(n, depth+1)
	case c == '"':
		kind = jsonString
		escaped, ascii, err = s.string()
	case c == '-' || c >= '0' && c <= '9':
		kind = jsonNumber
		err = s.number()
	case c == 't':
		kind = jsonTrue
		err = s.literal("true")
	case c == 'f':
		kind = jsonFalse
		err = s.literal("false")
	case c == 'n':
		kind = jsonNull
		err = s.literal("null")
	default:
		return s.fail("expected a value")
	}
	if err != nil {
		return err
	}
	if n != nil && n.slot >= 0 {
		s.spans[n.slot] = jsonSpan{start: start, end: s.pos, kind: kind, escaped: escaped, ascii: ascii}
	}
	return nil
}

func (s *jsonScanner) object(n *pathNode, depth int) error {
	if depth > maxJSONDepth {
		return s.fail("nested too deep")
	}
	s.pos++ // '{'
	s.skipSpace()
	if s.pos < len(s.buf) && s.buf[s.pos] == '}' {
		s.pos++
		return nil
	}
	for {
		s.skipSpace()
		if s.pos >= len(s.buf) || s.buf[s.pos] != '"' {
			return s.fail("expected a string key")
		}
		kstart := s.pos + 1
		escaped, _, err := s.string()
		if err != nil {
			return err
		}
		var child *pathNode
		if n != nil && len(n.keys) > 0 {
			key := s.buf[kstart : s.pos-1]
			if escaped {
				s.scratch = appendUnquoted(s.scratch[:0], key)
				key = s.scratch
			}
			child = n.member(key)
		}
		s.skipSpace()
		if s.pos >= len(s.buf) || s.buf[s.pos] != ':' {
			return s.fail("expected ':' after an object key")
		}
		s.pos++
		if err := s.value(child, depth); err != nil {
			return err
		}
		if more, err := s.more('}', "expected ',' or '}' in an object"); !more {
			return err
		}
	}
}

func (s *jsonScanner) array(n *pathNode, depth int) error {
	if depth > maxJSONDepth {
		return s.fail("nested too deep")
	}
	s.pos++ // '['
	s.skipSpace()
	if s.pos < len(s.buf) && s.buf[s.pos] == ']' {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		var child *pathNode
		if n != nil && len(n.elements) > 0 {
			child = n.element(i)
		}
		if err := s.value(child, depth); err != nil {
			return err
		}
		if more, err := s.more(']', "expected ',' or ']' in an array"); !more {
			return err
		}
	}
}

// more moves past the ',' or the closing bracket after a member or an
// element and reports whether another one follows.
func (s *jsonScanner) more(end byte, msg string) (bool, error) {
	s.skipSpace()
	if s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ',':
			s.pos++
			return true, nil
		case end:
			s.pos++
			return false, nil
		}
	}
	return false, s.fail(msg)
}

// string moves past a string, checking its escapes; it reports whether
// the string has any. UTF-8 is checked only when a captured string is read.
func (s *jsonScanner) string() (escaped, ascii bool, err error) {
	b := s.buf
	p := s.pos + 1
	var high uint64 // the bytes passed over, or'ed: bit 7 of each byte says non-ASCII
	for p < len(b) {
		// Skip eight plain bytes at a time, most of a log line is string,
		// then straight to the first byte that may end the run.
		for p+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[p:])
			if i := firstSpecial8(x); i < 8 {
				high |= x & (1<<(8*i) - 1)
				p += i
				break
			}
			high |= x
			p += 8
		}
		if p >= len(b) {
			break
		}
		c := b[p]
		switch {
		case c == '"':
			s.pos = p + 1
			return escaped, high&0x8080808080808080 == 0, nil
		case c == '\\':
			escaped = true
			if p+1 >= len(b) {
				s.pos = len(b)
				return false, false, s.fail("")
			}
			switch b[p+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p += 2
			case 'u':
				if p+6 > len(b) || !isHex4(b[p+2:p+6]) {
					s.pos = p
					return false, false, s.fail("bad \\u escape")
				}
				p += 6
			default:
				s.pos = p + 1
				return false, false, s.fail("bad escape")
			}
		case c < 0x20:
			s.pos = p
			return false, false, s.fail("control character in a string")
		default:
			high |= uint64(c)
			p++
		}
	}
	s.pos = p
	return false, false, s.fail("")
}

// firstSpecial8 is the index of the first of eight bytes (little endian)
// that is a quote, a backslash or a control byte, or 8 when none is. The
// byte-wise tests borrow only from a flagged byte into the ones above it, so
// the lowest flag is always a real one.
func firstSpecial8(x uint64) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote := x ^ (ones * '"')
	slash := x ^ (ones * '\\')
	zeroQuote := (quote - ones) &^ quote
	zeroSlash := (slash - ones) &^ slash
	control := (x - ones*0x20) &^ x
	return bits.TrailingZeros64((zeroQuote|zeroSlash|control)&highs) >> 3
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func (s *jsonScanner) number() error {
	b, p := s.buf, s.pos
	if b[p] == '-' {
		p++
	}
	switch {
	case p < len(b) && b[p] == '0':
		p++
	case p < len(b) && b[p] >= '1' && b[p] <= '9':
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
		}
	default:
		s.pos = p
		return s.fail("expected a digit")
	}
	if p < len(b) && b[p] == '.' {
		p++
		if p >= len(b) || b[p] < '0' || b[p] > '9' {
			s.pos = p
			return s.fail("expected a digit after '.'")
		}
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
		}
	}
	if p < len(b) && (b[p] == 'e' || b[p] == 'E') {
		p++
		if p < len(b) && (b[p] == '+' || b[p] == '-') {
			p++
		}
		if p >= len(b) || b[p] < '0' || b[p] > '9' {
			s.pos = p
			return s.fail("expected a digit in the exponent")
		}
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
		}
	}
	s.pos = p
	return nil
}

func (s *jsonScanner) literal(lit string) error {
	if len(s.buf)-s.pos < len(lit) || string(s.buf[s.pos:s.pos+len(lit)]) != lit {
		return s.fail("expected " + lit)
	}
	s.pos += len(lit)
	return nil
}

// jsonText returns a string value's text: the bytes themselves when they
// need no work, else unescaped into scratch. Invalid UTF-8 becomes U+FFFD,
// as with encoding/json.
func jsonText(doc []byte, sp jsonSpan, scratch *[]byte) []byte {
	raw := doc[sp.start+1 : sp.end-1]
	if !sp.escaped && (sp.ascii || isValidText(raw)) {
		return raw
	}
	*scratch = appendUnquoted((*scratch)[:0], raw)
	return *scratch
}

// isValidText reports whether b is valid UTF-8 (sink.ValidUTF8, the rule
// every string a file holds follows).
func isValidText(b []byte) bool { return sink.ValidUTF8(b) }

// appendUnquoted appends the text of a JSON string's content (between the
// quotes, escapes already validated by the scanner).
func appendUnquoted(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			switch e := raw[i+1]; e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(raw[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						r2 = hex4(raw[i+2 : i+6])
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
			i += 2
		default:
			j := i + 1
			for j < len(raw) && raw[j] != '\\' {
				j++
			}
			dst = sink.AppendValidText(dst, raw[i:j])
			i = j
		}
	}
	return dst
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// eachMember calls fn for every member of a valid JSON object, with the
// key's text and the value's span.
func eachMember(doc []byte, obj jsonSpan, keyScratch *[]byte, fn func(key []byte, v jsonSpan)) {
	var s jsonScanner
	s.buf, s.pos = doc[:obj.end], obj.start+1
	for {
		s.skipSpace()
		if s.buf[s.pos] == '}' {
			return
		}
		kstart := s.pos
		escaped, _, _ := s.string()
		key := s.buf[kstart+1 : s.pos-1]
		if escaped {
			*keyScratch = appendUnquoted((*keyScratch)[:0], key)
			key = *keyScratch
		}
		s.skipSpace()
		s.pos++ // ':'
		s.skipSpace()
		vstart := s.pos
		var kind jsonKind
		var vesc, vascii bool
		switch c := s.buf[s.pos]; {
		case c == '{':
			kind = jsonObject
			_ = s.object(nil, 0)
		case c == '[':
			kind = jsonArray
			_ = s.array(nil, 0)
		case c == '"':
			kind = jsonString
			vesc, vascii, _ = s.string()
		case c == 't':
			kind, s.pos = jsonTrue, s.pos+4
		case c == 'f':
			kind, s.pos = jsonFalse, s.pos+5
		case c == 'n':
			kind, s.pos = jsonNull, s.pos+4
		default:
			kind = jsonNumber
			_ = s.number()
		}
		fn(key, jsonSpan{start: vstart, end: s.pos, kind: kind, escaped: vesc, ascii: vascii})
		s.skipSpace()
		if s.buf[s.pos] == ',' {
			s.pos++
		}
	}
}
