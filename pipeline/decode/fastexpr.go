package decode

import (
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/logstore/logstore/sink"
)

// A filter or a derived bool column is most often a comparison of a column
// with a constant, or a few joined by && and ||: `level != "DEBUG"`,
// `status != null && status >= 500`. CEL's interpreter spends about 150 ns
// on each (dispatch, an activation lookup and a boxed value per variable);
// a fast expression evaluates the same comparisons on the row's Go values
// directly. It covers only what it evaluates exactly as CEL does:
//
//   - a comparison of a string, int or double column (int32/int64,
//     float32/float64; nullable or not) or a bool column with a constant of
//     the same kind, either side; ==, != also with null;
//   - && and || of those, with CEL's commutative rules: false && error is
//     false, true || error is true.
//
// Anything else keeps the CEL program. Where CEL would give an error (an
// ordering with a null column), the fast expression says so and the
// program runs, so the error, and the dead letter's reason, are CEL's own.
type fastExpr func(row sink.Row) fastResult

type fastResult uint8

const (
	fastFalse fastResult = iota
	fastTrue
	fastError // CEL gives an error: run the program for it
)

func fastBool(b bool) fastResult {
	if b {
		return fastTrue
	}
	return fastFalse
}

// compileFast returns the fast expression of a checked expression, or nil.
func (d *Decoder) compileFast(e ast.Expr) fastExpr {
	if e.Kind() != ast.CallKind {
		return nil
	}
	call := e.AsCall()
	args := call.Args()
	if call.IsMemberFunction() || len(args) != 2 {
		return nil
	}
	switch call.FunctionName() {
	case operators.LogicalAnd, operators.LogicalOr:
		l, r := d.compileFast(args[0]), d.compileFast(args[1])
		if l == nil || r == nil {
			return nil
		}
		// One side false decides &&, one side true decides ||, whatever
		// the other side gives (an error included); both the other way
		// decide it the other way; anything else is CEL's error.
		decides, otherwise := fastFalse, fastTrue
		if call.FunctionName() == operators.LogicalOr {
			decides, otherwise = fastTrue, fastFalse
		}
		return func(row sink.Row) fastResult {
			a, b := l(row), r(row)
			switch {
			case a == decides || b == decides:
				return decides
			case a == otherwise && b == otherwise:
				return otherwise
			}
			return fastError
		}
	case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
		op := call.FunctionName()
		col, lit := args[0], args[1]
		if col.Kind() == ast.LiteralKind {
			col, lit, op = lit, col, mirror(op)
		}
		if col.Kind() != ast.IdentKind || lit.Kind() != ast.LiteralKind {
			return nil
		}
		i, ok := d.vars[col.AsIdent()]
		if !ok || i < 0 {
			return nil // a kafka.* variable
		}
		return compareFast(i, d.cols[i].typ, op, lit.AsLiteral())
	}
	return nil
}

// mirror is the operator with its operands swapped: 5 < x is x > 5.
func mirror(op string) string {
	switch op {
	case operators.Less:
		return operators.Greater
	case operators.LessEquals:
		return operators.GreaterEquals
	case operators.Greater:
		return operators.Less
	case operators.GreaterEquals:
		return operators.LessEquals
	}
	return op
}

// compareFast compares column i (of type t) with the constant lit.
func compareFast(i int, t sink.Type, op string, lit ref.Val) fastExpr {
	equality := op == operators.Equals || op == operators.NotEquals
	if lit == types.NullValue {
		if !equality {
			return nil
		}
		switch t {
		case sink.String, sink.Int32, sink.Int64, sink.Float32, sink.Float64, sink.Bool:
		default:
			return nil // a null map reads as {}, not null
		}
		want := op == operators.Equals
		return func(row sink.Row) fastResult { return fastBool((row[i] == nil) == want) }
	}
	// A null column: == is false and != true (CEL's heterogeneous
	// equality); an ordering has no overload, an error.
	var null fastResult = fastError
	if equality {
		null = fastBool(op == operators.NotEquals)
	}
	switch x := lit.(type) {
	case types.String:
		if t == sink.String {
			return columnVs(i, op, string(x), null, func(v string) string { return v })
		}
	case types.Int:
		switch t {
		case sink.Int32:
			return columnVs(i, op, int64(x), null, func(v int32) int64 { return int64(v) })
		case sink.Int64:
			return columnVs(i, op, int64(x), null, func(v int64) int64 { return v })
		}
	case types.Double:
		// NaN compares as in Go: CEL's double overloads are Go's operators
		// (TestFastExprAgreesWithCEL has NaN and the infinities).
		switch t {
		case sink.Float32:
			return columnVs(i, op, float64(x), null, func(v float32) float64 { return float64(v) })
		case sink.Float64:
			return columnVs(i, op, float64(x), null, func(v float64) float64 { return v })
		}
	case types.Bool:
		if t == sink.Bool && equality {
			c := bool(x)
			return func(row sink.Row) fastResult {
				v, ok := row[i].(bool)
				if !ok {
					return null
				}
				return fastBool((v == c) == (op == operators.Equals))
			}
		}
	}
	return nil
}

// columnVs compares column i, a V in the row (or nil: null), as a C with
// the constant c.
func columnVs[V any, C int64 | float64 | string](i int, op string, c C, null fastResult, as func(V) C) fastExpr {
	return func(row sink.Row) fastResult {
		v, ok := row[i].(V)
		if !ok {
			return null
		}
		return fastBool(compare(op, as(v), c))
	}
}

func compare[T int64 | float64 | string](op string, a, b T) bool {
	switch op {
	case operators.Equals:
		return a == b
	case operators.NotEquals:
		return a != b
	case operators.Less:
		return a < b
	case operators.LessEquals:
		return a <= b
	case operators.Greater:
		return a > b
	}
	return a >= b // GreaterEquals
}
