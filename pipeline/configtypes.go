package pipeline

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/logstore/logstore/internal/confkey"
)

// checkTypes walks the document beside the Go type it decodes into, so that
// an unknown key or a value of the wrong kind is reported with its key path
// and what the key takes, in the config's words: the decoder's own errors
// name Go types and struct fields (`cannot unmarshal []interface {} into Go
// struct field Config.Batch of type time.Duration`) and no key. On the way
// it turns sizes with units into bytes (configsize.go).
func checkTypes(name string, file *ast.File, t reflect.Type) error {
	if len(file.Docs) == 0 {
		return nil
	}
	tc := typeCheck{name: name, anchors: map[string]ast.Node{}}
	return tc.value(file.Docs[0].Body, t, "") // the config; later documents are not read
}

type typeCheck struct {
	name    string
	anchors map[string]ast.Node
}

var durationType = reflect.TypeFor[time.Duration]()

// decodesItself says whether t reads its own YAML (a Secret, or a type with
// UnmarshalText): what it takes is its own business, so the check lets it
// decode the value and reports its error under the key.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	for _, i := range []reflect.Type{
		reflect.TypeFor[yaml.InterfaceUnmarshaler](), reflect.TypeFor[yaml.InterfaceUnmarshalerContext](),
		reflect.TypeFor[yaml.BytesUnmarshaler](), reflect.TypeFor[yaml.BytesUnmarshalerContext](),
		reflect.TypeFor[yaml.NodeUnmarshaler](), reflect.TypeFor[yaml.NodeUnmarshalerContext](),
		reflect.TypeFor[encoding.TextUnmarshaler](),
	} {
		if p.Implements(i) {
			return true
		}
	}
	return false
}

// resolve looks through anchors, aliases and tags to the node that holds
// the value.
func (tc *typeCheck) resolve(n ast.Node) ast.Node {
	for range 64 { // an alias chain is no longer than the nesting allows
		switch v := n.(type) {
		case *ast.AnchorNode:
			tc.anchors[tokenValue(v.Name)] = v.Value
			n = v.Value
		case *ast.AliasNode:
			a, ok := tc.anchors[tokenValue(v.Value)]
			if !ok {
				return n // the decoder says the anchor is missing
			}
			n = a
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
	return n
}

func (tc *typeCheck) fail(n ast.Node, key, format string, args ...any) error {
	ce := &ConfigError{File: tc.name, Key: key, Msg: fmt.Sprintf(format, args...)}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		ce.Line, ce.Column = tk.Position.Line, tk.Position.Column
	}
	return ce
}

func (tc *typeCheck) value(n ast.Node, t reflect.Type, key string) error {
	if n == nil {
		return nil
	}
	at := n
	n = tc.resolve(n)
	if _, ok := n.(*ast.NullNode); ok {
		return nil // the zero value
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	mismatch := func() error {
		msg := fmt.Sprintf("expected %s, found %s", expected(t, key), found(n))
		if s, ok := n.(*ast.StringNode); ok && t.Kind() == reflect.Slice {
			msg += fmt.Sprintf("; write [%s] for a list of one", s.Value)
		}
		if i, ok := n.(*ast.IntegerNode); ok && t == durationType {
			msg += fmt.Sprintf("; write %ss for seconds", i.GetToken().Value)
		}
		return tc.fail(at, key, "%s", msg)
	}
	if decodesItself(t) {
		if err := yaml.NodeToValue(n, reflect.New(t).Interface()); err != nil {
			return tc.fail(at, key, "%v", err)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Interface:
		return nil
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			return mismatch()
		}
		for i, v := range seq.Values {
			if err := tc.value(v, t.Elem(), fmt.Sprintf("%s[%d]", key, i)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		entries, ok := tc.entries(n)
		if !ok {
			return mismatch()
		}
		fields := yamlFields(t)
		for _, e := range entries {
			name := ""
			if tk := tc.resolve(e.Key).GetToken(); tk != nil {
				name = tk.Value
			}
			f, ok := fields[name]
			if !ok {
				return tc.fail(e.Key, "", "%s", unknownKey(name, key, fields))
			}
			if isSizeKey(name, f) {
				if err := tc.readSize(e, join(key, name)); err != nil {
					return err
				}
			}
			if err := tc.value(e.Value, f, join(key, name)); err != nil {
				return err
			}
		}
	case reflect.Map:
		entries, ok := tc.entries(n)
		if !ok {
			return mismatch()
		}
		for _, e := range entries {
			name := ""
			if tk := tc.resolve(e.Key).GetToken(); tk != nil {
				name = tk.Value
			}
			if err := tc.value(e.Value, t.Elem(), join(key, name)); err != nil {
				return err
			}
		}
	default:
		// A scalar: the decoder's own rules say what it takes (to it 1e3
		// and 50000.0 are whole numbers, 0x1F a string, 10 no duration).
		if !isScalar(n) || yaml.NodeToValue(n, reflect.New(t).Interface()) != nil {
			return mismatch()
		}
	}
	return nil
}

// entries are a mapping's key-value pairs, those merged in with `<<: *alias`
// included.
func (tc *typeCheck) entries(n ast.Node) ([]*ast.MappingValueNode, bool) {
	var pairs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		pairs = m.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{m}
	default:
		return nil, false
	}
	var out []*ast.MappingValueNode
	for _, p := range pairs {
		if _, merge := p.Key.(*ast.MergeKeyNode); !merge {
			out = append(out, p)
			continue
		}
		v := tc.resolve(p.Value)
		sources := []ast.Node{v}
		if seq, ok := v.(*ast.SequenceNode); ok {
			sources = seq.Values
		}
		for _, s := range sources {
			merged, ok := tc.entries(tc.resolve(s))
			if !ok {
				return nil, false
			}
			out = append(out, merged...)
		}
	}
	return out, true
}

// yamlFields maps a struct's YAML keys to their types, as the decoder reads
// them: the tag's name, or the field's name in lower case; inline structs'
// keys are the struct's own.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "inline") {
			for k, v := range yamlFields(f.Type) {
				fields[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields
}

func unknownKey(name, in string, fields map[string]reflect.Type) string {
	known := make([]string, 0, len(fields))
	for k := range fields {
		known = append(known, k)
	}
	slices.Sort(known)
	where := ""
	if in != "" {
		where = " in " + in
	}
	if c := confkey.Closest(name, known); c != "" {
		return fmt.Sprintf("unknown key %s%s; did you mean %q? (every key: configs/reference.yaml)", confkey.Quote(name), where, c)
	}
	return fmt.Sprintf("unknown key %s%s; it takes %s (every key: configs/reference.yaml)", confkey.Quote(name), where, strings.Join(known, ", "))
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func isScalar(n ast.Node) bool {
	switch n.(type) {
	case *ast.StringNode, *ast.LiteralNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode,
		*ast.InfinityNode, *ast.NanNode:
		return true
	}
	return false
}

// expected says what a key of type t takes.
func expected(t reflect.Type, key string) string {
	switch {
	case t == durationType:
		return "a duration with its unit, such as 30s, 5m or 1h30m"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if isSizeKey(key, t) {
			return sizeHint
		}
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "a mapping of keys"
	}
	return "another kind of value"
}

// found says what the file holds, quoting at most a short excerpt.
func found(n ast.Node) string {
	switch n := n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.BoolNode:
		return strconv.FormatBool(n.Value)
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		v := n.GetToken().Value
		if len(v) > 24 {
			v = v[:24] + "…"
		}
		return "the number " + v
	case *ast.StringNode:
		return confkey.Quote(n.Value)
	case *ast.LiteralNode:
		return confkey.Quote(n.Value.Value)
	case *ast.AliasNode:
		return "an alias to an anchor not defined before it"
	}
	if tk := n.GetToken(); tk != nil {
		return confkey.Quote(tk.Value)
	}
	return "another kind of value"
}
