package secret

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

const value = "hunter2-Sup3r"

func TestSecretNeverPrints(t *testing.T) {
	s := Secret(value)
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "password", s, "nested", struct{ P Secret }{s})
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "password", s)
	asJSON, _ := json.Marshal(struct{ P Secret }{s})
	asJSON = bytes.ReplaceAll(bytes.ReplaceAll(asJSON, []byte(`\u003c`), []byte("<")), []byte(`\u003e`), []byte(">"))
	asYAML, _ := yaml.Marshal(struct {
		P Secret `yaml:"p"`
	}{s})
	for name, out := range map[string]string{
		"%v": fmt.Sprintf("%v", s), "%s": fmt.Sprintf("%s", s), "%q": fmt.Sprintf("%q", s),
		"%x": fmt.Sprintf("%x", s), "%#v": fmt.Sprintf("%#v", s), "%+v struct": fmt.Sprintf("%+v", struct{ P Secret }{s}),
		"slog": logged.String(), "json": string(asJSON), "yaml": string(asYAML),
	} {
		if strings.Contains(out, value) || strings.Contains(out, fmt.Sprintf("%x", value)) {
			t.Errorf("%s shows the secret: %s", name, out)
		}
		if !strings.Contains(out, Redacted) && name != "%x" {
			t.Errorf("%s does not say it redacted: %s", name, out)
		}
	}
	if s.Reveal() != value {
		t.Errorf("Reveal() = %q", s.Reveal())
	}
	if Secret("").String() != "" {
		t.Error("an empty secret should print empty, so `check` shows it is unset")
	}
}

func TestSecretFromYAML(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain", value)
	newline := write("newline", value+"\n")
	crlf := write("crlf", value+"\r\n")
	inner := write("inner", "line one\nline two\n")
	empty := write("empty", "\n")
	for _, tc := range []struct {
		name, yaml string
		want, err  string
	}{
		{"literal", "p: " + value, value, ""},
		{"file", "p: ${file:" + plain + "}", value, ""},
		{"file quoted", "p: '${file:" + plain + "}'", value, ""},
		{"trailing newline dropped", "p: ${file:" + newline + "}", value, ""},
		{"trailing CRLF dropped", "p: ${file:" + crlf + "}", value, ""},
		{"inner newlines kept", "p: ${file:" + inner + "}", "line one\nline two", ""},
		{"missing file", "p: ${file:" + dir + "/nope}", "", `secret file "` + dir + `/nope": no such file or directory`},
		{"empty file", "p: ${file:" + empty + "}", "", `secret file "` + empty + `" is empty`},
		{"not a whole reference", "p: x${file:" + plain + "}", "x${file:" + plain + "}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got struct {
				P Secret `yaml:"p"`
			}
			err := yaml.Unmarshal([]byte(tc.yaml), &got)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.P.Reveal() != tc.want {
				t.Errorf("got %q, want %q", got.P.Reveal(), tc.want)
			}
		})
	}
}
