package pipeline

import (
	"os"
	"testing"
	"unicode/utf8"

	"github.com/logstore/logstore/pipeline/decode"
)

// FuzzParseConfig: no config text panics the loader, and one it accepts
// is valid and builds a decoder.
func FuzzParseConfig(f *testing.F) {
	// Small seeds: the fuzzer minimizes every new input, and a 20 KB one
	// (configs/reference.yaml, loaded by its own test) takes it minutes.
	for _, p := range []string{"../configs/local.yaml", "../configs/emr-eks.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("kafka: {brokers: [a:1], topics: [t], group: g}\nsinks: {files: {url: /tmp/x}}\n"))
	f.Add([]byte("kafka:\n  brokers: [${NOPE}]\n"))
	f.Add([]byte("schema:\n  columns:\n    - {name: a, type: int32, default: 2e3}\n"))
	f.Add([]byte("\t- [}{"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, err := Parse("fuzz.yaml", raw)
		if err != nil {
			if !utf8.ValidString(err.Error()) && utf8.Valid(raw) {
				t.Fatalf("error is not UTF-8: %q", err)
			}
			return
		}
		if _, err := decode.New(cfg.Schema); err != nil {
			t.Fatalf("an accepted config has a bad schema: %v", err)
		}
	})
}
