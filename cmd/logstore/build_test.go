package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeUsesTheGoThatPlainGoUses: make's targets run go with the user's
// own toolchain choice (here `go env -w GOTOOLCHAIN=local`, kept in GOENV),
// so `make build` and the README's plain `go build` use the same Go. The
// Makefile exported GOTOOLCHAIN=auto over it.
func TestMakeUsesTheGoThatPlainGoUses(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on this machine")
	}
	goenv := filepath.Join(t.TempDir(), "go.env")
	if err := os.WriteFile(goenv, []byte("GOTOOLCHAIN=local\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"GOENV=" + goenv}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOTOOLCHAIN=") && !strings.HasPrefix(kv, "GOENV=") && !strings.HasPrefix(kv, "MAKEFLAGS=") {
			env = append(env, kv)
		}
	}
	goEnv := func(name string, arg ...string) string {
		cmd := exec.Command(name, arg...)
		cmd.Dir, cmd.Env = "../..", env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(arg, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	plain := goEnv("go", "env", "GOTOOLCHAIN")
	// The Makefile's own variables, with a target that asks go what it will use.
	viaMake := goEnv("make", "-s", "--eval", "go-toolchain: ; @$(GO) env GOTOOLCHAIN", "go-toolchain")
	if plain != "local" || viaMake != plain {
		t.Errorf("plain go uses GOTOOLCHAIN=%s, make's go %s; want both local", plain, viaMake)
	}
}

// TestBuildWithoutTheTableLinksNoIceberg: `-tags notable` builds a binary
// whose jobs pay nothing for the table sink: none of iceberg-go, Arrow,
// substrait (whose package init parsed its extension YAML at every start:
// ~110 ms and 32 MB) or the catalogs' SDKs is linked. The default build
// still links the table sink.
func TestBuildWithoutTheTableLinksNoIceberg(t *testing.T) {
	deps := func(tags ...string) string {
		args := append([]string{"list", "-deps"}, tags...)
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		return string(out)
	}
	lean := deps("-tags", "notable")
	for _, p := range []string{"github.com/apache/iceberg-go", "github.com/apache/arrow-go", "github.com/substrait-io/", "gocloud.dev", "github.com/aws/aws-sdk-go-v2/service/glue", "github.com/logstore/logstore/sink/iceberg"} {
		if strings.Contains(lean, p) {
			t.Errorf("-tags notable links %s", p)
		}
	}
	if !strings.Contains(deps(), "github.com/logstore/logstore/sink/iceberg\n") {
		t.Error("the default build does not link the table sink")
	}
}

// TestTableBuildReachesS3WithoutGocloud: the default build's table reads
// and writes s3:// through the files sink's own S3 store (sink/iceberg's
// S3 IO), not iceberg-go's gocloud layer, whose gocloud.dev and
// google.golang.org/api (a 50 MiB zip for a few error types) every first
// build downloaded.
func TestTableBuildReachesS3WithoutGocloud(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range []string{"gocloud.dev", "google.golang.org/api", "github.com/apache/iceberg-go/io/gocloud"} {
		if strings.Contains(string(out), p) {
			t.Errorf("the default build links %s", p)
		}
	}
}
