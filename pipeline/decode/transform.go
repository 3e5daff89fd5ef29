package decode

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"github.com/logstore/logstore/internal/confkey"
	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// The transforms are Spark's filter / withColumn / selectExpr written in
// CEL. Every column whose name is a CEL identifier is a variable of its CEL
// type:
//
//	string, json        string
//	int32, int64        int
//	float32, float64    double
//	bool                bool
//	timestamp, date     google.protobuf.Timestamp
//	bytes               bytes
//	map<string,string>  map(string, string)
//
// A column that may be null (not required, no default) can be compared with
// null (`status != null && status >= 500`); other operators fail on null,
// which makes the record a dead letter, and == and != treat null as a value
// (for a null level, `level != "DEBUG"` is true, unlike SQL). A null map
// reads as {}. An expression gives null with dyn(null).
//
// The record's fields are the variables kafka.key (string), kafka.topic,
// kafka.partition, kafka.offset, kafka.timestamp and kafka.headers
// (map(string, string)). The CEL string, math and encoder extensions are
// loaded (lowerAscii, split, replace, math.round, base64, ...), and numbers
// compare across int and double (`latency_ms > 100`).

// kafkaVars are the CEL variables of the record's fields; their index in
// Decoder.vars is negative, -1-i.
var kafkaVars = []struct {
	name string
	typ  *cel.Type
}{
	{"kafka.key", cel.NullableType(cel.StringType)},
	{"kafka.topic", cel.StringType},
	{"kafka.partition", cel.IntType},
	{"kafka.offset", cel.IntType},
	{"kafka.timestamp", cel.TimestampType},
	{"kafka.headers", cel.MapType(cel.StringType, cel.StringType)},
}

const (
	varKey = -1 - iota
	varTopic
	varPartition
	varOffset
	varTimestamp
	varHeaders
)

// celProgram is one compiled expression.
type celProgram struct {
	prog cel.Program
	refs []int    // the columns it reads, for the null hint of a failure
	fast fastExpr // the same on the row's values, when it is that simple; nil otherwise
}

func celType(t sink.Type) *cel.Type {
	switch t {
	case sink.Int32, sink.Int64:
		return cel.IntType
	case sink.Float32, sink.Float64:
		return cel.DoubleType
	case sink.Bool:
		return cel.BoolType
	case sink.Timestamp, sink.Date:
		return cel.TimestampType
	case sink.Bytes:
		return cel.BytesType
	case sink.StringMap:
		return cel.MapType(cel.StringType, cel.StringType)
	}
	return cel.StringType
}

// celReserved are the words CEL keeps for itself; a column so named is not
// a variable.
var celReserved = []string{"as", "break", "const", "continue", "else", "false", "for", "function", "if",
	"import", "in", "let", "loop", "package", "namespace", "null", "return", "true", "var", "void", "while"}

func isCELIdent(s string) bool {
	if s == "" || slices.Contains(celReserved, s) {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// compileCEL declares the variables and compiles the exprs and where.
func (d *Decoder) compileCEL(cfg *SchemaConfig) error {
	if len(d.exprs) == 0 && cfg.Where == "" {
		return nil
	}
	d.vars = map[string]int{}
	opts := []cel.EnvOption{
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
		ext.Math(),
		ext.Encoders(),
	}
	for i, v := range kafkaVars {
		d.vars[v.name] = -1 - i
		opts = append(opts, cel.Variable(v.name, v.typ))
	}
	for i, c := range d.cols {
		if c.name == "kafka" {
			return confkey.Errorf(c.key+".name", "\"kafka\" is the prefix of the kafka.* variables of expressions; choose another name")
		}
		if !isCELIdent(c.name) {
			continue // not reachable from an expression
		}
		t := celType(c.typ)
		if !c.required && c.def == nil {
			switch c.typ {
			case sink.Timestamp, sink.Date, sink.StringMap:
				// Timestamps take null already; a null map reads as {}.
			default:
				t = cel.NullableType(t)
			}
		}
		d.vars[c.name] = i
		opts = append(opts, cel.Variable(c.name, t))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return confkey.Errorf("columns", "CEL environment: %v", err)
	}
	for _, i := range d.exprs {
		c := &d.cols[i]
		p, out, err := d.compile(env, cfg.Columns[i].Expr, c.key+".expr", i)
		if err != nil {
			return err
		}
		want := celType(c.typ)
		if !outputFits(out, want) {
			hint := ""
			switch want.Kind() {
			case types.IntKind, types.DoubleKind, types.StringKind, types.BytesKind, types.TimestampKind:
				hint = fmt.Sprintf("; convert it, e.g. %s(...)", strings.TrimPrefix(strings.ToLower(want.String()), "google.protobuf."))
			}
			return confkey.Errorf(c.key+".expr", "gives %s, but column %q is %s (CEL %s)%s",
				celTypeName(out), c.name, c.typ, want, hint)
		}
		c.expr = p
	}
	if cfg.Where != "" {
		p, out, err := d.compile(env, cfg.Where, "where", len(d.cols))
		if err != nil {
			return err
		}
		if !outputFits(out, cel.BoolType) {
			return confkey.Errorf("where", "gives %s, not bool", celTypeName(out))
		}
		d.where = p
		// Run the filter as soon as the columns it reads are ready, so a
		// dropped record costs no further derived columns.
		for k, i := range d.exprs {
			if slices.Contains(p.refs, i) {
				d.whereAt = k + 1
			}
		}
	}
	return nil
}

// compile checks one expression; it may read the decoded columns and the
// derived columns before position `at`.
func (d *Decoder) compile(env *cel.Env, src, key string, at int) (*celProgram, *cel.Type, error) {
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		// "ERROR: <input>:1:7: msg" → "at 1:7: msg"; the caret lines stay.
		return nil, nil, confkey.Errorf(key, "%s", strings.ReplaceAll(iss.Err().Error(), "ERROR: <input>:", "at "))
	}
	p := &celProgram{}
	for _, r := range ast.NativeRep().ReferenceMap() {
		if len(r.OverloadIDs) > 0 {
			continue
		}
		i, ok := d.vars[r.Name]
		if !ok || i < 0 || slices.Contains(p.refs, i) {
			continue
		}
		if d.cols[i].src == srcExpr && i >= at {
			what := "a later"
			if i == at {
				what = "its own"
			}
			return nil, nil, confkey.Errorf(key, "reads %s derived column %q; derived columns are computed in order", what, d.cols[i].name)
		}
		p.refs = append(p.refs, i)
	}
	slices.Sort(p.refs)
	prog, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, nil, confkey.Errorf(key, "%v", err)
	}
	p.prog = prog
	if ast.OutputType().Kind() == types.BoolKind {
		p.fast = d.compileFast(ast.NativeRep().Expr())
	}
	return p, ast.OutputType(), nil
}

// celTypeName names a type as a user reads it: a nullable column's
// wrapper(int) is "int or null".
func celTypeName(t *cel.Type) string {
	s := t.String()
	if inner, ok := strings.CutPrefix(s, "wrapper("); ok {
		return strings.TrimSuffix(inner, ")") + " or null"
	}
	return s
}

// outputFits reports whether an expression's type can fill a column of
// CEL type want; dyn is checked at run time.
func outputFits(out, want *cel.Type) bool {
	switch out.Kind() {
	case types.DynKind, types.NullTypeKind:
		return true
	}
	return want.IsAssignableType(out)
}

// transform computes the derived columns and applies the where filter.
func (d *Decoder) transform(row sink.Row, msg *record.Record, st *decodeState) (bool, error) {
	if len(d.exprs) == 0 && d.where == nil {
		return true, nil
	}
	st.act = rowActivation{d: d, row: row, msg: msg}
	defer func() { st.act = rowActivation{} }()
	for k, i := range d.exprs {
		if k == d.whereAt && d.where != nil {
			if keep, err := d.filter(st); !keep || err != nil {
				return false, err
			}
		}
		c := &d.cols[i]
		if c.expr.fast != nil && c.typ == sink.Bool {
			if r := c.expr.fast(row); r != fastError {
				row[i] = r == fastTrue
				continue
			}
		}
		out, _, err := c.expr.prog.Eval(&st.act)
		if err != nil {
			return false, fmt.Errorf("column %q: expr: %v%s", c.name, err, d.nullHint(c.expr, row))
		}
		v, err := c.fromCEL(out)
		if err != nil {
			return false, err
		}
		row[i] = v
	}
	if d.whereAt == len(d.exprs) && d.where != nil {
		return d.filter(st)
	}
	return true, nil
}

func (d *Decoder) filter(st *decodeState) (bool, error) {
	if d.where.fast != nil {
		if r := d.where.fast(st.act.row); r != fastError {
			return r == fastTrue, nil
		}
	}
	out, _, err := d.where.prog.Eval(&st.act)
	if err != nil {
		return false, fmt.Errorf("where: %v%s", err, d.nullHint(d.where, st.act.row))
	}
	switch out {
	case types.True:
		return true, nil
	case types.False, types.NullValue: // null keeps nothing, as in SQL
		return false, nil
	}
	return false, fmt.Errorf("where: gave %v (%s), not a bool", out, out.Type())
}

// nullHint explains the usual cause of a failed evaluation: an operator
// applied to a null column.
func (d *Decoder) nullHint(p *celProgram, row sink.Row) string {
	var nulls []string
	for _, i := range p.refs {
		if row[i] == nil && d.cols[i].typ != sink.StringMap {
			nulls = append(nulls, d.cols[i].name)
		}
	}
	if len(nulls) == 0 {
		return ""
	}
	return fmt.Sprintf(" (null: %s; guard with `%s != null && ...`)", strings.Join(nulls, ", "), nulls[0])
}

var stringMapType = reflect.TypeFor[map[string]string]()

// fromCEL gives an expression's result the column's Go type.
func (c *column) fromCEL(out ref.Val) (any, error) {
	var v any
	switch x := out.(type) {
	case types.Null:
		return c.missing()
	case types.String:
		switch c.typ {
		case sink.String:
			v = sink.ValidText(string(x))
		case sink.JSON:
			var s jsonScanner
			if err := s.scan([]byte(x), nil, nil); err != nil {
				return nil, fmt.Errorf("column %q: expr gave a string that is not JSON: %v", c.name, err)
			}
			v = sink.ValidText(string(x))
		}
	case types.Int:
		switch c.typ {
		case sink.Int64:
			v = int64(x)
		case sink.Int32:
			if int64(x) != int64(int32(x)) {
				return nil, fmt.Errorf("column %q: expr gave %d, out of the int32 range", c.name, int64(x))
			}
			v = int32(x)
		}
	case types.Uint:
		if c.typ == sink.Int64 && x <= 1<<63-1 || c.typ == sink.Int32 && x <= 1<<31-1 {
			return c.fromCEL(types.Int(x))
		}
	case types.Double:
		switch c.typ {
		case sink.Float64:
			v = float64(x)
		case sink.Float32:
			v = float32(x)
		}
	case types.Bool:
		if c.typ == sink.Bool {
			v = bool(x)
		}
	case types.Timestamp:
		if !sink.TimeInRange(x.Time) {
			return nil, c.outOfRange(x.Time.UTC().Format(time.RFC3339Nano))
		}
		switch c.typ {
		case sink.Timestamp:
			v = toUnit(x.Time.UTC(), c.unit)
		case sink.Date:
			v = toDate(x.Time)
		}
	case types.Bytes:
		if c.typ == sink.Bytes {
			v = []byte(x)
		}
	case traits.Mapper:
		if c.typ == sink.StringMap {
			m, err := x.ConvertToNative(stringMapType)
			if err != nil {
				return nil, fmt.Errorf("column %q: expr gave a map that is not map(string, string): %v", c.name, err)
			}
			v = sink.ValidMap(m.(map[string]string))
		}
	case *types.Err:
		return nil, fmt.Errorf("column %q: expr: %v", c.name, x)
	}
	if v == nil {
		return nil, fmt.Errorf("column %q: expr gave %s, not %s", c.name, out.Type(), c.typ)
	}
	return v, nil
}

// rowActivation hands a row's values to CEL by name, without building a map
// per record.
type rowActivation struct {
	d       *Decoder
	row     sink.Row
	msg     *record.Record
	headers ref.Val
}

var emptyStringMap = types.NewStringStringMap(types.DefaultTypeAdapter, map[string]string{})

func (a *rowActivation) ResolveName(name string) (any, bool) {
	i, ok := a.d.vars[name]
	if !ok {
		return nil, false
	}
	if i >= 0 {
		return toCEL(a.row[i], a.d.cols[i].typ), true
	}
	m := a.msg
	switch i {
	case varKey:
		if m.Key == nil {
			return types.NullValue, true
		}
		return types.String(m.Key), true
	case varTopic:
		return types.String(m.Topic), true
	case varPartition:
		return types.Int(m.Partition), true
	case varOffset:
		return types.Int(m.Offset), true
	case varTimestamp:
		return types.Timestamp{Time: m.Time.UTC()}, true
	case varHeaders:
		if a.headers == nil {
			h := make(map[string]string, len(m.Headers))
			for _, kv := range m.Headers {
				if kv.Value != nil { // CEL's map(string, string) holds no null
					h[kv.Key] = string(kv.Value)
				}
			}
			a.headers = types.NewStringStringMap(types.DefaultTypeAdapter, h)
		}
		return a.headers, true
	}
	return nil, false
}

func (a *rowActivation) Parent() interpreter.Activation { return nil }

func toCEL(v any, t sink.Type) ref.Val {
	switch x := v.(type) {
	case nil:
		if t == sink.StringMap {
			return emptyStringMap
		}
		return types.NullValue
	case string:
		return types.String(x)
	case int32:
		return types.Int(x)
	case int64:
		return types.Int(x)
	case float32:
		return types.Double(x)
	case float64:
		return types.Double(x)
	case bool:
		return types.Bool(x)
	case time.Time:
		return types.Timestamp{Time: x}
	case []byte:
		return types.Bytes(x)
	case map[string]string:
		return types.NewStringStringMap(types.DefaultTypeAdapter, x)
	}
	return types.NewErr("column value of type %T", v)
}
