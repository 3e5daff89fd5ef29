package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/logstore/logstore/internal/confkey"
	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// Decoder turns Kafka records into rows by a schema: it parses each record
// once, picking only the paths its columns name, converts them to the column
// types, derives the expr columns and applies the where filter. It is safe
// for concurrent use.
//
// Conversions follow one rule per type, written down in the schema section
// of configs/reference.yaml: a value converts exactly (integers and epoch
// times from their digits, never through float64) or the record is a dead
// letter naming the column and the value. A JSON null is a missing field;
// "" is a value. Every string a row holds is valid UTF-8: invalid bytes
// become U+FFFD, one per byte, as with encoding/json.
type Decoder struct {
	schema sink.Schema
	text   bool // format: text
	cols   []column
	tree   *pathNode
	nslots int
	// textSlots are the slots of string, json and map columns: their text
	// goes to the row's string arena.
	textSlots []int

	// The CEL part (transform.go).
	vars    map[string]int // CEL variable name → column index, or a kafkaVar
	exprs   []int          // the derived columns, in order
	where   *celProgram
	whereAt int // where runs after exprs[:whereAt]

	states sync.Pool // *decodeState
}

type column struct {
	key      string // "columns[N]", for config errors
	name     string
	typ      sink.Type
	unit     time.Duration
	src      sourceKind
	path     string // the source as configured, for messages
	slot     int    // srcPath: the capture slot
	header   string // srcHeader
	required bool
	def      any // the default, already converted; nil for none
	tf       timeFormat
	expr     *celProgram
	maps     *mapCache // a map column's maps by object text
}

// decodeState is the per-call scratch, pooled so a Decode allocates only
// what the row keeps.
type decodeState struct {
	scanner jsonScanner
	spans   []jsonSpan
	text    []byte // unescaped string values
	keys    []byte // unescaped map keys
	num     []byte // formatted numbers of Kafka fields
	act     rowActivation
	strs    []byte // the current row's string arena
	fixed   []byte // text with invalid UTF-8 repaired
	vals    valueBoxes
}

// strArena is the size of a string arena: the text of about 25 of the
// bench's logs.
const strArena = 8 << 10

// str returns b as a string carved from the arena, so that one allocation
// holds the text of many rows' strings. Bytes once handed out are never
// written again: the arena only grows, and a full arena is replaced, not
// reused.
func (st *decodeState) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if cap(st.strs)-len(st.strs) < len(b) {
		st.strs = make([]byte, 0, max(len(b), 64))
	}
	start := len(st.strs)
	st.strs = append(st.strs, b...)
	return unsafe.String(&st.strs[start], len(b))
}

// validStr is str for text that may hold invalid UTF-8: each invalid byte
// becomes U+FFFD, the rule for every string a file holds (sink/values.go).
// Text already valid, as jsonText gives it, is copied as it is.
func (st *decodeState) validStr(b []byte) string {
	if isValidText(b) {
		return st.str(b)
	}
	st.fixed = sink.AppendValidText(st.fixed[:0], b)
	return st.str(st.fixed)
}

// New builds the decoder of a schema section; its errors are the
// config errors of Validate.
func New(cfg SchemaConfig) (*Decoder, error) {
	cfg.Columns = slices.Clone(cfg.Columns)
	cfg.SetDefaults()
	return newDecoder(&cfg)
}

func newDecoder(cfg *SchemaConfig) (*Decoder, error) {
	switch cfg.Format {
	case "json", "text":
	default:
		return nil, confkey.Errorf("format", "%q is not json or text", cfg.Format)
	}
	if len(cfg.Columns) == 0 {
		return nil, confkey.Errorf("columns", "no columns; list at least one {name, type}")
	}
	d := &Decoder{text: cfg.Format == "text", tree: newPathTree()}
	seen := map[string]int{}
	for i, cc := range cfg.Columns {
		key := fmt.Sprintf("columns[%d]", i)
		c := column{key: key, name: cc.Name, typ: cc.Type, required: cc.Required, slot: -1, path: cc.Source}
		if cc.Name == "" {
			return nil, confkey.Errorf(key+".name", "missing; every column needs a name")
		}
		if j, dup := seen[cc.Name]; dup {
			return nil, confkey.Errorf(key+".name", "%q is also the name of columns[%d]", cc.Name, j)
		}
		seen[cc.Name] = i
		if !cc.Type.Valid() {
			if cc.Type == "" {
				return nil, confkey.Errorf(key+".type", "missing; one of %s", typeList(sink.Types))
			}
			return nil, confkey.Errorf(key+".type", "%q is not one of %s", cc.Type, typeList(sink.Types))
		}
		switch {
		case cc.Type == sink.Timestamp:
			switch cc.Unit {
			case "ms", "":
				c.unit = time.Millisecond
			case "us":
				c.unit = time.Microsecond
			default:
				return nil, confkey.Errorf(key+".unit", "%q is not ms or us", cc.Unit)
			}
		case cc.Unit != "":
			return nil, confkey.Errorf(key+".unit", "only a timestamp column has a unit")
		}
		switch {
		case cc.Type == sink.Timestamp || cc.Type == sink.Date:
			tf := cc.TimeFormat
			if tf == "" {
				tf = map[sink.Type]string{sink.Timestamp: "rfc3339", sink.Date: dateLayout}[cc.Type]
			}
			f, err := parseTimeFormat(tf)
			if err != nil {
				return nil, confkey.Errorf(key+".time_format", "%v", err)
			}
			c.tf = f
		case cc.TimeFormat != "":
			return nil, confkey.Errorf(key+".time_format", "only a timestamp or date column has a time_format")
		}
		if cc.Required && cc.Default != nil {
			return nil, confkey.Errorf(key+".default", "a required column has no default: a record without the field is a dead letter")
		}
		if cc.Expr != "" {
			if cc.Source != "" {
				return nil, confkey.Errorf(key+".expr", "a column has a source or an expr, not both")
			}
			c.src = srcExpr
			d.exprs = append(d.exprs, i)
		} else {
			src := cc.Source
			if src == "" {
				src = cc.Name
				if d.text {
					src = "value"
				}
				c.path = src
			}
			kind, header, steps, err := parseSource(src, cfg.Format)
			if err != nil {
				return nil, confkey.Errorf(key+".source", "%v", err)
			}
			c.src, c.header = kind, header
			if kind == srcPath {
				c.slot = d.tree.add(steps, &d.nslots)
				switch c.typ {
				case sink.String, sink.JSON, sink.StringMap:
					d.textSlots = append(d.textSlots, c.slot)
				}
			}
			allowed := sourceTypes[kind]
			if kind == srcValue && !d.text {
				allowed = []sink.Type{sink.String, sink.Bytes, sink.JSON}
			}
			if allowed != nil && !slices.Contains(allowed, cc.Type) {
				return nil, confkey.Errorf(key+".type", "source %s gives %s, not %s", src, typeList(allowed), cc.Type)
			}
		}
		if cc.Default != nil {
			v, err := c.defaultValue(cc.Default)
			if err != nil {
				return nil, confkey.Errorf(key+".default", "%v", err)
			}
			c.def = v
		}
		if c.typ == sink.StringMap {
			c.maps = new(mapCache)
		}
		d.cols = append(d.cols, c)
		d.schema.Fields = append(d.schema.Fields, sink.Field{
			Name:     c.name,
			Type:     c.typ,
			Unit:     c.unit,
			Required: c.required || c.def != nil,
		})
	}
	if err := d.compileCEL(cfg); err != nil {
		return nil, err
	}
	d.states.New = func() any {
		return &decodeState{spans: make([]jsonSpan, d.nslots)}
	}
	return d, nil
}

// Schema is the schema of the rows Decode returns.
func (d *Decoder) Schema() *sink.Schema { return &d.schema }

// Decode turns one record into a row, reusing dst's storage when it is large
// enough (on error too). keep is false when the where filter drops the
// record. An error is a record the pipeline cannot take; its message is the
// dead-letter reason.
func (d *Decoder) Decode(msg *record.Record, dst sink.Row) (row sink.Row, keep bool, err error) {
	st := d.states.Get().(*decodeState)
	defer d.states.Put(st)
	return d.decode(msg, dst, st)
}

// A Scratch is one caller's decoding storage, for a caller that knows when
// the rows it decoded are gone (a partition's worker: when its batch lets
// go of them). Then Release lets the next rows reuse the storage of their
// numbers, strings and times, and decoding allocates much less. A Scratch
// is for one goroutine at a time.
type Scratch struct {
	d  *Decoder
	st *decodeState
}

// NewScratch is storage for DecodeWith.
func (d *Decoder) NewScratch() *Scratch {
	st := d.states.New().(*decodeState)
	st.vals.recycled()
	return &Scratch{d: d, st: st}
}

// Decode is the Decoder's Decode, with s's storage.
func (s *Scratch) Decode(msg *record.Record, dst sink.Row) (row sink.Row, keep bool, err error) {
	return s.d.decode(msg, dst, s.st)
}

// Release says that no row decoded with s is held any more, nor any value
// from one: the storage of their values is reused. Strings' text is not:
// the sinks may still hold it (the Parquet writer's pending values).
func (s *Scratch) Release() { s.st.vals.release() }

func (d *Decoder) decode(msg *record.Record, dst sink.Row, st *decodeState) (row sink.Row, keep bool, err error) {
	n := len(d.cols)
	if cap(dst) >= n {
		row = dst[:n]
	} else {
		row = make(sink.Row, n)
	}
	if !d.text {
		if err := d.scan(msg.Value, st); err != nil {
			return row, false, err
		}
		// Decoded text is seldom longer than its JSON (only invalid UTF-8
		// grows), so the spans size the row's part of the arena. Rows share
		// an arena of strArena bytes: one allocation for the text of tens
		// of rows, kept alive by any of them (rows are staged and dropped
		// a chunk at a time).
		n := 0
		for _, slot := range d.textSlots {
			n += st.spans[slot].end - st.spans[slot].start
		}
		if cap(st.strs)-len(st.strs) < n {
			st.strs = make([]byte, 0, max(n, strArena))
		}
	}
	for i := range d.cols {
		c := &d.cols[i]
		if c.src == srcExpr {
			row[i] = nil
			continue
		}
		v, err := d.field(c, msg, st)
		if err != nil {
			return row, false, err
		}
		row[i] = v
	}
	keep, err = d.transform(row, msg, st)
	return row, keep, err
}

func (d *Decoder) scan(value []byte, st *decodeState) error {
	clear(st.spans)
	if value == nil {
		return errTombstone
	}
	if len(value) == 0 {
		return fmt.Errorf("the value is empty, not a JSON object")
	}
	err := st.scanner.scan(value, d.tree, st.spans)
	st.scanner.buf = nil
	if err != nil {
		return fmt.Errorf("the value is not JSON: %w", err)
	}
	for _, c := range value {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return nil
		}
		return fmt.Errorf("the value is JSON but not an object")
	}
	return nil
}

// errTombstone is the reason of a record without a value: Kafka's delete
// marker on a compacted topic, not a log line.
var errTombstone = errors.New("the value is null (a tombstone)")

// fieldValue is a value on its way to a column: the JSON text of a value
// from the record, or the bytes of a Kafka field (raw nil).
type fieldValue struct {
	kind  jsonKind
	raw   []byte // JSON text
	text  []byte // jsonString: the string's content, unescaped
	valid bool   // text is valid UTF-8 already (jsonText made it)
}

func (d *Decoder) field(c *column, msg *record.Record, st *decodeState) (any, error) {
	var v fieldValue
	switch c.src {
	case srcPath:
		sp := st.spans[c.slot]
		v.kind = sp.kind
		if sp.kind != jsonMissing {
			v.raw = msg.Value[sp.start:sp.end]
			if sp.kind == jsonString && c.typ != sink.JSON {
				v.text, v.valid = jsonText(msg.Value, sp, &st.text), true
			}
		}
	case srcValue:
		if !d.text {
			v = fieldValue{kind: jsonObject, raw: msg.Value}
			break
		}
		v = textValue(msg.Value)
	case srcKey:
		v = textValue(msg.Key)
	case srcHeader:
		for i := len(msg.Headers) - 1; i >= 0; i-- {
			if msg.Headers[i].Key == c.header {
				v = textValue(msg.Headers[i].Value) // a null value is null
				break
			}
		}
	case srcTopic:
		v = fieldValue{kind: jsonString, text: []byte(msg.Topic)}
	case srcPartition:
		// An integer column takes the number as it is; any other type
		// converts its text, as for a number in the JSON.
		switch c.typ {
		case sink.Int32:
			return st.vals.int32s.box(int32(msg.Partition)), nil
		case sink.Int64:
			return st.vals.int64s.box(int64(msg.Partition)), nil
		}
		st.num = strconv.AppendInt(st.num[:0], int64(msg.Partition), 10)
		v = fieldValue{kind: jsonNumber, raw: st.num}
	case srcOffset:
		if c.typ == sink.Int64 {
			return st.vals.int64s.box(msg.Offset), nil
		}
		st.num = strconv.AppendInt(st.num[:0], msg.Offset, 10)
		v = fieldValue{kind: jsonNumber, raw: st.num}
	case srcTimestamp:
		return c.kafkaTime(msg.Time, st)
	case srcHeaders:
		if len(msg.Headers) == 0 {
			return c.missing()
		}
		// A header without a value (null, not empty) keeps its name with a
		// null value, as Spark's Kafka source and Kafka's Headers keep it.
		m := make(map[string]string, len(msg.Headers))
		for _, h := range msg.Headers {
			v := sink.MapNull
			if h.Value != nil {
				v = st.validStr(h.Value)
			}
			m[st.validStr([]byte(h.Key))] = v
		}
		return m, nil
	}
	return c.convert(v, st)
}

// textValue is a Kafka field read as a string; a nil field is missing.
func textValue(b []byte) fieldValue {
	if b == nil {
		return fieldValue{}
	}
	return fieldValue{kind: jsonString, text: b}
}

func (c *column) kafkaTime(t time.Time, st *decodeState) (any, error) {
	if t.IsZero() {
		return c.missing()
	}
	t = t.UTC()
	if (c.typ == sink.Timestamp || c.typ == sink.Date) && !sink.TimeInRange(t) {
		return nil, c.outOfRange(fmt.Sprintf("the record's timestamp %d ms", t.UnixMilli()))
	}
	switch c.typ {
	case sink.Timestamp:
		return st.vals.times.box(toUnit(t, c.unit)), nil
	case sink.Date:
		return st.vals.times.box(toDate(t)), nil
	case sink.Int64:
		return st.vals.int64s.box(t.UnixMilli()), nil
	default: // sink.String
		return st.vals.strs.box(t.Format(time.RFC3339Nano)), nil
	}
}

// missing is the value of a missing or null field.
func (c *column) missing() (any, error) {
	if c.def != nil {
		return c.def, nil
	}
	if c.required && c.src == srcValue {
		return nil, errTombstone
	}
	if c.required {
		if c.src == srcExpr {
			return nil, fmt.Errorf("column %q: expr gave null for a required column", c.name)
		}
		return nil, fmt.Errorf("column %q: required field %s is missing or null", c.name, c.path)
	}
	return nil, nil
}

// convert gives a value the column's type.
func (c *column) convert(v fieldValue, st *decodeState) (any, error) {
	if v.kind == jsonMissing || v.kind == jsonNull {
		return c.missing()
	}
	switch c.typ {
	case sink.String:
		if v.kind != jsonString {
			return st.vals.strs.box(st.validStr(v.raw)), nil
		}
		if v.valid {
			return st.vals.strs.box(st.str(v.text)), nil
		}
		return st.vals.strs.box(st.validStr(v.text)), nil

	case sink.Int32, sink.Int64:
		b, ok := v.number()
		if !ok {
			return nil, c.notA(v)
		}
		n, ok := parseInteger(b)
		if !ok {
			return nil, c.notA(v)
		}
		if c.typ == sink.Int32 {
			if n < math.MinInt32 || n > math.MaxInt32 {
				return nil, c.notA(v)
			}
			return st.vals.int32s.box(int32(n)), nil
		}
		return st.vals.int64s.box(n), nil

	case sink.Float32, sink.Float64:
		b, ok := v.number()
		if !ok {
			return nil, c.notA(v)
		}
		bits := 64
		if c.typ == sink.Float32 {
			bits = 32
		}
		// A decimal number, or the spellings of NaN and the infinities that
		// JSON writers use (ours among them); not Go's hex floats, '+' or '_'.
		switch string(b) {
		case "NaN", "Infinity", "-Infinity":
		default:
			d, ok := parseDecimal(b)
			if !ok {
				return nil, c.notA(v)
			}
			if bits == 64 { // a float32 from a float64 could round twice
				if f, ok := d.float64(); ok {
					return st.vals.f64s.box(f), nil
				}
			}
		}
		f, err := strconv.ParseFloat(string(b), bits)
		if err != nil {
			return nil, c.notA(v)
		}
		if bits == 32 {
			return st.vals.f32s.box(float32(f)), nil
		}
		return st.vals.f64s.box(f), nil

	case sink.Bool:
		switch v.kind {
		case jsonTrue:
			return true, nil
		case jsonFalse:
			return false, nil
		case jsonString:
			if b, err := strconv.ParseBool(string(v.text)); err == nil {
				return b, nil
			}
		}
		return nil, c.notA(v)

	case sink.Timestamp, sink.Date:
		var t time.Time
		ok := false
		switch {
		case c.tf.epoch():
			if b, isNum := v.number(); isNum {
				t, ok = parseEpoch(b, c.tf.kind)
			}
		case v.kind == jsonString:
			t, ok = c.tf.parseText(v.text)
		}
		if !ok {
			if b, isNum := v.number(); isNum && c.tf.epoch() {
				if _, isDecimal := parseDecimal(b); isDecimal {
					return nil, c.outOfRange(c.show(v)) // beyond ±10^12 s
				}
			}
			return nil, c.notA(v)
		}
		if !sink.TimeInRange(t) {
			return nil, c.outOfRange(c.show(v))
		}
		if c.typ == sink.Date {
			return st.vals.times.box(toDate(t)), nil
		}
		return st.vals.times.box(toUnit(t, c.unit)), nil

	case sink.Bytes:
		if v.kind == jsonString {
			return bytes.Clone(v.text), nil
		}
		return bytes.Clone(v.raw), nil

	case sink.JSON:
		if v.raw != nil {
			return st.vals.strs.box(st.validStr(v.raw)), nil
		}
		// A Kafka field: keep it only if it is a JSON document.
		var s jsonScanner
		if err := s.scan(v.text, nil, nil); err != nil {
			return nil, fmt.Errorf("column %q: %s is not JSON: %v", c.name, c.show(v), err)
		}
		return st.vals.strs.box(st.validStr(v.text)), nil

	case sink.StringMap:
		if v.kind != jsonObject {
			return nil, c.notA(v)
		}
		cached, slot := c.maps.lookup(v.raw)
		if cached != nil {
			return cached, nil
		}
		if slot == nil {
			return c.buildMap(v.raw, st), nil
		}
		// A map to cache gets its strings from an allocation of its own,
		// not the rows' arena, which it would pin: its text and its keys
		// and values, which are no longer than the text (unless invalid
		// UTF-8 is replaced: str then takes more).
		rows := st.strs
		st.strs = make([]byte, 0, 2*len(v.raw))
		m := c.buildMap(v.raw, st)
		slot.Store(&mapCacheEntry{text: st.str(v.raw), m: m})
		st.strs = rows
		return m, nil
	}
	return nil, fmt.Errorf("column %q: type %s has no conversion", c.name, c.typ)
}

// buildMap is the map of the JSON object raw; null members are left out.
func (c *column) buildMap(raw []byte, st *decodeState) map[string]string {
	m := make(map[string]string)
	eachMember(raw, jsonSpan{end: len(raw), kind: jsonObject}, &st.keys, func(key []byte, mv jsonSpan) {
		switch mv.kind {
		case jsonNull:
		case jsonString:
			m[st.validStr(key)] = st.str(jsonText(raw, mv, &st.text))
		default:
			m[st.validStr(key)] = st.validStr(raw[mv.start:mv.end])
		}
	})
	return m
}

// number is the text a numeric column parses: a JSON number, or the
// content of a string.
func (v fieldValue) number() ([]byte, bool) {
	switch v.kind {
	case jsonNumber:
		return v.raw, true
	case jsonString:
		return v.text, true
	}
	return nil, false
}

// parseInteger reads an integer exactly, also from integral decimal or
// exponent forms (200.0, 2e3, 9007199254740993.0); a fraction or a value
// beyond int64 is no integer.
func parseInteger(b []byte) (int64, bool) {
	if n, ok := parsePlainInteger(b); ok {
		return n, true
	}
	d, ok := parseDecimal(b)
	if !ok {
		return 0, false
	}
	return d.int64()
}

// parsePlainInteger is parseInteger's fast path for what most integers
// look like: 0, or up to 18 digits without a leading zero, maybe after a
// minus; anything else (and -0) goes the exact way.
func parsePlainInteger(b []byte) (int64, bool) {
	digits := b
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if len(digits) < len(b) {
		n = -n
	}
	return n, true
}

// notA is the dead-letter reason of a value the column cannot take.
func (c *column) notA(v fieldValue) error {
	var what string
	switch c.typ {
	case sink.Int32, sink.Int64:
		what = "an " + string(c.typ)
	case sink.Timestamp, sink.Date:
		switch c.tf.kind {
		case timeRFC3339:
			what = "an RFC 3339 timestamp"
		case timeLayout:
			what = fmt.Sprintf("a time in the layout %q", c.tf.layout)
		default:
			what = "a number for time_format " + c.tf.String()
		}
	case sink.StringMap:
		what = "a JSON object for a map<string,string>"
	default:
		what = "a " + string(c.typ)
	}
	return fmt.Errorf("column %q: %s is not %s", c.name, c.show(v), what)
}

// outOfRange is the dead-letter reason of an instant no file can hold.
func (c *column) outOfRange(what string) error {
	return fmt.Errorf("column %q: %s is out of the %s range %s to %s", c.name, what, c.typ,
		sink.MinTime.Format(time.RFC3339), sink.MaxTime.Format(time.RFC3339Nano))
}

// show quotes a value for a message, cut short at a character boundary:
// JSON text as it is (invalid UTF-8 repaired), a string quoted with Go's
// escapes.
func (c *column) show(v fieldValue) string {
	if v.raw != nil {
		return sink.ValidText(cutText(v.raw))
	}
	return strconv.Quote(cutText(v.text))
}

// cutText is b, or its first 64 bytes or so, cut between characters, and
// an ellipsis.
func cutText(b []byte) string {
	const max = 64
	if len(b) <= max {
		return string(b)
	}
	n := max
	for n > max-utf8.UTFMax && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + "…"
}

// defaultValue converts a config default to the column type, the way a
// record's value would be converted.
func (c *column) defaultValue(def any) (any, error) {
	var v fieldValue
	switch x := def.(type) {
	case string:
		v = fieldValue{kind: jsonString, text: []byte(x)}
	case bool:
		v = fieldValue{kind: jsonFalse, raw: []byte("false")}
		if x {
			v = fieldValue{kind: jsonTrue, raw: []byte("true")}
		}
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		v = fieldValue{kind: jsonNumber, raw: fmt.Append(nil, x)}
	case float32, float64:
		v = fieldValue{kind: jsonNumber, raw: fmt.Append(nil, x)}
	case time.Time:
		switch c.typ {
		case sink.Timestamp:
			return toUnit(x.UTC(), c.unit), nil
		case sink.Date:
			return toDate(x), nil
		}
		v = fieldValue{kind: jsonString, text: []byte(x.Format(time.RFC3339Nano))}
	default: // a YAML map or list
		raw, err := json.Marshal(def)
		if err != nil {
			return nil, fmt.Errorf("%v cannot be a %s", def, c.typ)
		}
		v = fieldValue{kind: jsonArray, raw: raw}
		if raw[0] == '{' {
			v.kind = jsonObject
		}
	}
	if c.typ == sink.JSON && v.raw == nil {
		// A string default of a json column is the document itself.
		v.raw = v.text
		var s jsonScanner
		if err := s.scan(v.raw, nil, nil); err != nil {
			return nil, fmt.Errorf("%q is not JSON: %v", v.text, err)
		}
	}
	var st decodeState
	val, err := c.convert(v, &st)
	if err != nil {
		return nil, err
	}
	if val == nil {
		return nil, fmt.Errorf("null is no default")
	}
	return val, nil
}
