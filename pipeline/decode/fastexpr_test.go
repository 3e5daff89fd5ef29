package decode

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/logstore/logstore/pipeline/record"
	"github.com/logstore/logstore/sink"
)

// fastColumns are the columns the random expressions compare: every type
// the fast path covers, nullable or not, and two it leaves to CEL.
var fastColumns = []ColumnConfig{
	{Name: "s", Type: sink.String},
	{Name: "rs", Type: sink.String, Required: true},
	{Name: "i32", Type: sink.Int32},
	{Name: "i64", Type: sink.Int64},
	{Name: "f32", Type: sink.Float32},
	{Name: "f64", Type: sink.Float64},
	{Name: "b", Type: sink.Bool},
	{Name: "ts", Type: sink.Timestamp},
	{Name: "m", Type: sink.StringMap},
}

var fastOps = []string{"==", "!=", "<", "<=", ">", ">="}

// randomLiteral is a CEL constant of a random kind, most often the column's.
func randomLiteral(rng *rand.Rand, col ColumnConfig) string {
	kind := col.Type
	if rng.IntN(4) == 0 {
		kind = fastColumns[rng.IntN(len(fastColumns))].Type
	}
	switch rng.IntN(12) {
	case 0:
		return "null"
	}
	switch kind {
	case sink.String:
		return strconv.Quote([]string{"", "a", "b", "DEBUG", "é", "ab"}[rng.IntN(6)])
	case sink.Int32, sink.Int64:
		return strconv.Itoa([]int{0, 1, -1, 500, 2147483647, -2147483648}[rng.IntN(6)])
	case sink.Float32, sink.Float64:
		return []string{"0.0", "-0.0", "1.5", "500.0", "1e300", "-2.5"}[rng.IntN(6)]
	case sink.Bool:
		return []string{"true", "false"}[rng.IntN(2)]
	}
	return `"x"`
}

func randomExpr(rng *rand.Rand, depth int) string {
	if depth > 0 && rng.IntN(3) > 0 {
		op := []string{"&&", "||"}[rng.IntN(2)]
		return "(" + randomExpr(rng, depth-1) + " " + op + " " + randomExpr(rng, depth-1) + ")"
	}
	col := fastColumns[rng.IntN(len(fastColumns))]
	lit := randomLiteral(rng, col)
	op := fastOps[rng.IntN(len(fastOps))]
	if rng.IntN(4) == 0 {
		return lit + " " + op + " " + col.Name
	}
	return col.Name + " " + op + " " + lit
}

// randomRecord gives each column a random value, null or missing.
func randomRecord(rng *rand.Rand) []byte {
	var fields []string
	add := func(name, v string) {
		if rng.IntN(6) > 0 {
			fields = append(fields, strconv.Quote(name)+":"+v)
		} else if rng.IntN(2) == 0 {
			fields = append(fields, strconv.Quote(name)+":null")
		}
	}
	fields = append(fields, `"rs":`+strconv.Quote([]string{"", "a", "DEBUG", "b"}[rng.IntN(4)]))
	add("s", strconv.Quote([]string{"", "a", "b", "DEBUG", "é", "ab", "aa"}[rng.IntN(7)]))
	add("i32", strconv.Itoa([]int{0, 1, -1, 499, 500, 501, 2147483647, -2147483648}[rng.IntN(8)]))
	add("i64", strconv.Itoa([]int{0, 1, -1, 500, 1 << 40, -(1 << 40)}[rng.IntN(6)]))
	floats := []string{"0", "-0.0", "1.5", "500", "499.99", "1e300", `"NaN"`, `"Infinity"`, `"-Infinity"`, "-2.5"}
	add("f32", floats[rng.IntN(len(floats))])
	add("f64", floats[rng.IntN(len(floats))])
	add("b", []string{"true", "false"}[rng.IntN(2)])
	add("ts", `"2026-11-29T07:00:00Z"`)
	add("m", `{"k":"v"}`)
	return []byte("{" + strings.Join(fields, ",") + "}")
}

// The fast path gives what CEL gives: for random comparisons, && and ||
// over every column type, null and missing values, NaN and the
// infinities, as a where filter and as a derived bool column, the same
// rows kept, the same values and the same errors (the dead letters'
// reasons) as the CEL program alone.
func TestFastExprAgreesWithCEL(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	records := make([][]byte, 300)
	for i := range records {
		records[i] = randomRecord(rng)
	}
	fast := 0
	const exprs = 1500
	for n := range exprs {
		src := randomExpr(rng, 2)
		cfg := SchemaConfig{Columns: append(append([]ColumnConfig(nil), fastColumns...),
			ColumnConfig{Name: "derived", Type: sink.Bool, Expr: src}), Where: src}
		withFast, err := New(cfg)
		if err != nil {
			continue // a comparison CEL's checker refuses (no such overload)
		}
		if withFast.where.fast == nil {
			continue
		}
		fast++
		celOnly, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		celOnly.where.fast = nil
		celOnly.cols[len(celOnly.cols)-1].expr.fast = nil
		for _, value := range records {
			a, keepA, errA := withFast.Decode(&record.Record{Value: value}, nil)
			b, keepB, errB := celOnly.Decode(&record.Record{Value: value}, nil)
			if keepA != keepB || fmt.Sprint(errA) != fmt.Sprint(errB) || (errA == nil && !sameRow(a, b)) {
				t.Fatalf("expr %d %s on %s:\n fast: keep %v, %v, %v\n CEL:  keep %v, %v, %v", n, src, value, keepA, errA, a, keepB, errB, b)
			}
		}
	}
	if fast < exprs/4 {
		t.Fatalf("only %d of %d expressions took the fast path", fast, exprs)
	}
	t.Logf("%d of %d expressions took the fast path", fast, exprs)
}

// sameRow is reflect.DeepEqual, with NaN equal to NaN.
func sameRow(a, b sink.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if fx, ok := x.(float64); ok && math.IsNaN(fx) {
			fy, ok := y.(float64)
			if !ok || !math.IsNaN(fy) {
				return false
			}
			continue
		}
		if fx, ok := x.(float32); ok && math.IsNaN(float64(fx)) {
			fy, ok := y.(float32)
			if !ok || !math.IsNaN(float64(fy)) {
				return false
			}
			continue
		}
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// The shapes the fast path takes, and the ones it leaves to CEL.
func TestFastExprShapes(t *testing.T) {
	for _, tc := range []struct {
		src  string
		fast bool
	}{
		{`rs != "DEBUG"`, true},
		{`i32 != null && i32 >= 500`, true},
		{`500 <= i32 || s == "a"`, true},
		{`f64 > 1.5`, true},
		{`b == true`, true},
		{`f64 > 1`, false},           // int constant, double column: CEL's cross-type comparison
		{`s.startsWith("a")`, false}, // a function
		{`!(s == "a")`, false},       // not
		{`size(m) > 0`, false},       // a map
		{`ts > timestamp("2026-01-01T00:00:00Z")`, false},
		{`b`, false},
	} {
		d, err := New(SchemaConfig{Columns: fastColumns, Where: tc.src})
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if got := d.where.fast != nil; got != tc.fast {
			t.Errorf("%s: fast path %v, want %v", tc.src, got, tc.fast)
		}
	}
}
