// Package confkey is the config error that names its key, and the small
// helpers every config section uses to fill defaults and check choices.
// rack, sink and pipeline each validate their own section and must not
// import one another; this package is what they share. The loader (package
// pipeline) turns an Error's key into the file:line of the YAML it came from.
package confkey

import (
	"fmt"
	"strings"
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
	return Errorf(key, "%q is not one of %s", v, strings.Join(allowed, ", "))
}

// Default sets *p to v when it holds its zero value.
func Default[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}
