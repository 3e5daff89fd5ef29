package main

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/logstore/logstore/pipeline"
)

const referencePath = "../../configs/reference.yaml"

func TestShippedConfigsPassCheck(t *testing.T) {
	tests := []struct {
		file     string
		env      map[string]string // set, then checked in the effective config
		want     []string
		required []string // of env: without them check fails naming each
	}{
		{"reference.yaml", map[string]string{"KAFKA_PASSWORD": "hunter2"},
			[]string{"password: <redacted>"}, nil},
		{"local.yaml", map[string]string{"LOGSTORE_RACK": "az-c", "LOGSTORE_OUTPUT": "s3://logstore/raw", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:7071"},
			[]string{"static: az-c", "url: s3://logstore/raw", "endpoint: http://127.0.0.1:7071"}, nil},
		{"emr-eks.yaml", map[string]string{"MSK_BOOTSTRAP": "b-1.x:9098,b-2.x:9098", "LOGSTORE_BUCKET": "prod-logs", "LOGSTORE_KMS_KEY": "alias/logs", "AWS_REGION": "eu-west-1"},
			[]string{"- b-2.x:9098", "url: s3://prod-logs/raw/logs", "kms_key_id: alias/logs", "region: eu-west-1", "mechanism: aws-msk-iam"},
			[]string{"MSK_BOOTSTRAP", "LOGSTORE_BUCKET", "AWS_REGION"}},
	}
	for _, tt := range tests {
		path := "../../configs/" + tt.file
		// Without the variables every ${VAR:-default} takes its default (an
		// empty variable counts as unset) and a required ${VAR} fails the
		// check, naming it; with them, the values show.
		t.Run(tt.file+"/defaults", func(t *testing.T) {
			for k := range tt.env {
				t.Setenv(k, "")
			}
			code, _, stderr := runCLI(t, "check", "-c", path)
			if len(tt.required) == 0 {
				if code != exitOK {
					t.Fatalf("logstore check -c %s: exit %d\n%s", path, code, stderr)
				}
				return
			}
			if code != exitUsage {
				t.Fatalf("logstore check -c %s without %v: exit %d, want %d\n%s", path, tt.required, code, exitUsage, stderr)
			}
			for _, v := range tt.required {
				if !strings.Contains(stderr, v) {
					t.Errorf("the error does not name %s:\n%s", v, stderr)
				}
			}
		})
		t.Run(tt.file+"/env", func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, stdout, stderr := runCLI(t, "check", "-c", path)
			if code != exitOK {
				t.Fatalf("logstore check -c %s: exit %d\n%s", path, code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("the effective config does not show %q:\n%s", w, stdout)
				}
			}
			if strings.Contains(stdout, "hunter2") {
				t.Error("check printed a secret")
			}
		})
	}
}

// TestReferenceCoversEveryKey keeps configs/reference.yaml whole: every key
// the config types accept must be in it, with a comment.
func TestReferenceCoversEveryKey(t *testing.T) {
	raw, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	file, err := parser.ParseBytes(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]int{} // key path → line of its first occurrence
	for _, doc := range file.Docs {
		yamlKeys(doc.Body, "", found)
	}
	lines := strings.Split(string(raw), "\n")

	keys := configKeys(reflect.TypeFor[pipeline.Config](), "")
	if len(keys) < 50 {
		t.Fatalf("only %d keys found in pipeline.Config: %v", len(keys), keys)
	}
	for _, key := range keys {
		line, ok := found[key]
		if !ok {
			t.Errorf("configs/reference.yaml has no %s; add it with its default and a comment", key)
			continue
		}
		if !commented(lines, line) {
			t.Errorf("configs/reference.yaml:%d: %s has no comment (above it, above its block of keys, or at the end of its line)", line, key)
		}
	}
}

// configKeys lists the dotted key paths a config type accepts, by its yaml
// tags; `[]` stands for any element of a list of sections.
func configKeys(typ reflect.Type, prefix string) []string {
	var keys []string
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		key := prefix + name
		keys = append(keys, key)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice {
			key += "[]"
			ft = ft.Elem()
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
		}
		if ft.Kind() == reflect.Struct {
			keys = append(keys, configKeys(ft, key+".")...)
		}
	}
	return keys
}

// yamlKeys records the key paths of a YAML tree, as configKeys spells them,
// with the line where each first occurs.
func yamlKeys(n ast.Node, prefix string, found map[string]int) {
	switch n := n.(type) {
	case *ast.MappingNode:
		for _, mv := range n.Values {
			yamlKeys(mv, prefix, found)
		}
	case *ast.MappingValueNode:
		tk := n.Key.GetToken()
		key := prefix + tk.Value
		if _, seen := found[key]; !seen {
			found[key] = tk.Position.Line
		}
		yamlKeys(n.Value, key+".", found)
	case *ast.SequenceNode:
		for _, v := range n.Values {
			yamlKeys(v, strings.TrimSuffix(prefix, ".")+"[].", found)
		}
	}
}

// commented reports whether the key on line (1-based) is explained: a
// comment ends its line or stands right above it. A leaf key may share the
// comment of the block of leaf keys it stands in; a section needs its own.
func commented(lines []string, line int) bool {
	text := lines[line-1]
	if strings.Contains(text, " #") {
		return true
	}
	section := strings.HasSuffix(text, ":")
	indent := len(text) - len(strings.TrimLeft(text, " -"))
	for i := line - 2; i >= 0; i-- {
		above := lines[i]
		trimmed := strings.TrimSpace(above)
		switch {
		case strings.HasPrefix(trimmed, "#"):
			return true
		case section || trimmed == "" || strings.HasSuffix(above, ":") ||
			len(above)-len(strings.TrimLeft(above, " -")) != indent:
			return false
		}
	}
	return false
}
