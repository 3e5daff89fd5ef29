package pipeline

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/logstore/logstore/internal/confkey"
)

// sizeHint is what a size key takes, said once for every such key.
const sizeHint = "a size: a whole number of bytes, or one with a unit (KiB, MiB, GiB, TiB: powers of 1024; kB, MB, GB, TB: of 1000), such as 134217728 or 128MiB"

var sizeSyntax = regexp.MustCompile(`^([0-9]+) ?(B|KiB|MiB|GiB|TiB|kB|KB|MB|GB|TB)?$`)

var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	"kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
}

// ParseSize reads a size as the config writes it: 134217728, 128MiB or
// 128 MiB, 1GB. Units are case-sensitive, as in Kubernetes quantities: mb
// would be millibits.
func ParseSize(s string) (int64, error) {
	m := sizeSyntax.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("expected %s; found %s", sizeHint, confkey.Quote(s))
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	unit := sizeUnits[m[2]]
	if err != nil || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("%s is too large a size", confkey.Quote(s))
	}
	return n * unit, nil
}

// isSizeKey says whether a key holds a size in bytes: a whole number whose
// name ends in bytes or budget (batch.memory_budget, sinks.*.target_file_bytes,
// kafka.fetch.max_bytes…), so every size in the config reads alike. A type
// that reads its own text keeps its own rules.
func isSizeKey(key string, t reflect.Type) bool {
	if decodesItself(t) || t == durationType { // rack.budget is a time
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		return strings.HasSuffix(key, "bytes") || strings.HasSuffix(key, "budget")
	}
	return false
}

// readSize turns a size key's text (128MiB) into the whole number of bytes
// the decoder takes, in the document itself, before the type check and the
// decoder see it. A number, or a value of another kind, is left as it is.
func (tc *typeCheck) readSize(e *ast.MappingValueNode, key string) error {
	slot := &e.Value
	if a, ok := e.Value.(*ast.AnchorNode); ok {
		slot = &a.Value
	}
	s, ok := (*slot).(*ast.StringNode)
	if !ok {
		return nil
	}
	n, err := ParseSize(s.Value)
	if err != nil {
		return tc.fail(s, key, "%v", err)
	}
	tk := s.GetToken()
	*slot = ast.Integer(token.New(strconv.FormatInt(n, 10), tk.Origin, tk.Position))
	return nil
}

// MemoryLimit is the Go soft memory limit a member sets from its budget
// unless GOMEMLIMIT says otherwise: the budget plus room for the fixed
// costs listed in configs/reference.yaml (batch.memory_budget).
func MemoryLimit(c BatchConfig) int64 { return c.MemoryBudget + 96<<20 }
