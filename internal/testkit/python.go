package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// PyarrowPython finds a python3 with pyarrow, the independent reader the
// tests check Parquet files with: on PATH (make test puts the project's
// venv there) or in the venv scripts/setup.sh makes.
func PyarrowPython(t testing.TB) string {
	t.Helper()
	candidates := []string{"python3"}
	cache := os.Getenv("LOGSTORE_CACHE")
	if home, err := os.UserHomeDir(); cache == "" && err == nil {
		cache = filepath.Join(home, ".cache", "logstore")
	}
	candidates = append(candidates, filepath.Join(cache, "venv", "bin", "python3"))
	for _, p := range candidates {
		if exec.Command(p, "-c", "import pyarrow").Run() == nil {
			return p
		}
	}
	t.Fatalf("no python3 with pyarrow (tried %v): run scripts/setup.sh, or make test", candidates)
	return ""
}
