// Package secret holds configuration values that must never be printed:
// passwords and keys. It is shared by the config sections of pipeline/ and
// sink/, which cannot import each other's types.
//
// A Secret prints as <redacted> through every path a value takes out of the
// process — fmt verbs, slog, YAML and JSON — so `logstore check` and log
// lines can show a config whole. Only Reveal gives the value, at the one
// place that hands it to a client library.
package secret

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
)

// Redacted is what a set Secret prints as.
const Redacted = "<redacted>"

// Secret is a string that never prints. In YAML it is either the value
// itself (usually `${VAR}` from the environment) or a file reference,
// `${file:/path}`, whose content (one trailing newline dropped) becomes the
// value: a Kubernetes Secret or a Docker secret mounted as a file then never
// passes through an environment variable, which child processes inherit and
// /proc/PID/environ shows.
type Secret string

// Reveal returns the value, for the client library that needs it.
func (s Secret) Reveal() string { return string(s) }

// String redacts the value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// GoString redacts the value under %#v.
func (s Secret) GoString() string { return fmt.Sprintf("secret.Secret(%q)", s.String()) }

// LogValue redacts the value in slog lines.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalYAML redacts the value.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// MarshalText redacts the value (JSON and other text encoders).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

var fileRef = regexp.MustCompile(`^\$\{file:([^}]+)\}$`)

// UnmarshalYAML takes a plain value or reads a `${file:/path}` reference.
func (s *Secret) UnmarshalYAML(unmarshal func(any) error) error {
	var v string
	if err := unmarshal(&v); err != nil {
		return err
	}
	resolved, err := Resolve(v)
	if err != nil {
		return err
	}
	*s = resolved
	return nil
}

// Resolve returns v, or the content of the file v refers to as
// `${file:/path}`. Errors name the file, never a value.
func Resolve(v string) (Secret, error) {
	m := fileRef.FindStringSubmatch(v)
	if m == nil {
		return Secret(v), nil
	}
	path := m[1]
	raw, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("secret file %q: %v", path, err)
	}
	text := strings.TrimSuffix(strings.TrimSuffix(string(raw), "\n"), "\r")
	if text == "" {
		return "", fmt.Errorf("secret file %q is empty", path)
	}
	return Secret(text), nil
}
