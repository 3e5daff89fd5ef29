package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README is a newcomer's first screen: it once ran to 639 lines and
// 50 KB, with table cells over 1,000 characters and 17 lines of figures
// before the two commands. These keep it short and its links whole.

const readme = "../../README.md"

// TestReadmeFirstScreen: a pitch of at most five lines, then the two
// commands (CI runs `make test`, the second of them), within the first 24
// lines; the long material lives under docs/.
func TestReadmeFirstScreen(t *testing.T) {
	raw, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	firstSection := len(lines)
	for i, l := range lines {
		if i > 0 && strings.HasPrefix(l, "## ") {
			firstSection = i
			break
		}
	}
	pitch := 0
	for _, l := range lines[1:firstSection] {
		if strings.TrimSpace(l) != "" {
			pitch++
		}
	}
	if pitch == 0 || pitch > 5 {
		t.Errorf("the pitch before the first section is %d lines, want 1 to 5", pitch)
	}
	screen := strings.Join(lines[:min(24, len(lines))], "\n")
	for _, cmd := range []string{"\nmake demo ", "\nmake test "} {
		if !strings.Contains(screen, cmd) {
			t.Errorf("the first 24 lines lack %q", strings.TrimSpace(cmd))
		}
	}
	if len(lines) > 120 || len(raw) > 12<<10 {
		t.Errorf("README.md is %d lines, %d bytes; keep it under 120 lines and 12 KiB, and move the rest to docs/", len(lines), len(raw))
	}
}

// TestDocsLinksResolve: every relative link of the README and docs/ names
// a file of the repository, and no table cell runs over 1,000 characters.
func TestDocsLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages under docs/: %v", err)
	}
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for _, page := range append(pages, readme) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(raw), -1) {
			if strings.Contains(m[1], "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), m[1])); err != nil {
				t.Errorf("%s links %s: %v", filepath.Base(page), m[1], err)
			}
		}
		for i, l := range strings.Split(string(raw), "\n") {
			if !strings.HasPrefix(l, "|") {
				continue
			}
			for _, cell := range strings.Split(l, "|") {
				if len(cell) > 1000 {
					t.Errorf("%s:%d: a table cell of %d characters; put the detail in a paragraph below the table", filepath.Base(page), i+1, len(cell))
				}
			}
		}
	}
}
