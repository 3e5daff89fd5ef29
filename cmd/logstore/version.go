package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

func init() {
	register("version", "print the version, the commit it was built from and the Go that built it (also --version, -v)", runVersion)
}

// version is set by a build that names its release (-ldflags "-X
// main.version=...", the Dockerfile's VERSION); otherwise the module's
// version from the build information is shown.
var version = "dev"

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "", stdout, stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{GoVersion: runtime.Version()}
	}
	fmt.Fprint(stdout, versionText(version, bi))
	return nil
}

// versionText says which logstore this is: its version, the commit it was
// built from (and whether the tree had changes not in it), and the Go
// release and platform that built it.
func versionText(stamped string, bi *debug.BuildInfo) string {
	setting := map[string]string{"GOOS": runtime.GOOS, "GOARCH": runtime.GOARCH}
	for _, s := range bi.Settings {
		setting[s.Key] = s.Value
	}
	v := stamped
	if v == "dev" || v == "" {
		// "(devel)" from a checkout without a tag; go install module@v1.2.3
		// records v1.2.3.
		v = bi.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "logstore %s", v)
	if bi.Main.Path != "" {
		fmt.Fprintf(&b, " (%s)", bi.Main.Path)
	}
	b.WriteString("\n")
	commit := "unknown (built without version control information: go test, or -buildvcs=false)"
	if rev := setting["vcs.revision"]; rev != "" {
		commit = rev
		if t := setting["vcs.time"]; t != "" {
			commit += " (" + t + ")"
		}
		if setting["vcs.modified"] == "true" {
			commit += ", with uncommitted changes"
		}
	}
	fmt.Fprintf(&b, "%-10s%s\n", "commit", commit)
	fmt.Fprintf(&b, "%-10s%s %s/%s\n", "go", bi.GoVersion, setting["GOOS"], setting["GOARCH"])
	return b.String()
}
