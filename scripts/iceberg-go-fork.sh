#!/usr/bin/env bash
# Re-creates third_party/iceberg-go, the project's patched copy of
# github.com/apache/iceberg-go (go.mod replaces the module with it; why:
# third_party/iceberg-go/PATCHES.md).
#
#   scripts/iceberg-go-fork.sh            the version go.mod requires
#   scripts/iceberg-go-fork.sh v0.8.0     another release (go.mod follows)
#
# The copy holds what the build needs and nothing else: the non-test .go
# files and the embedded files of every iceberg-go package this module
# imports, under each build tag set it is built or tested with and on the
# platforms the image and developers build for; the module's go.mod, go.sum,
# LICENSE and NOTICE. The release comes from the module cache (downloaded
# through the module proxy like any module), then every
# third_party/iceberg-go/patches/*.patch is applied in name order. A patch
# that no longer applies stops the script: see PATCHES.md.
set -euo pipefail

LOGSTORE_TOOL=iceberg-go-fork
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$LOGSTORE_ROOT"
need go patch

mod=github.com/apache/iceberg-go
fork=third_party/iceberg-go
version=${1:-$(go list -m -f '{{.Version}}' "$mod")}
[[ $version == v* ]] || die "no version of $mod to copy (got '$version')"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The package list comes from this module's imports as they would be
# without the replacement (the copy may be missing or of another version):
# a go.mod of our own with the requirement at $version and no replace.
cp go.mod "$work/go.mod"
cp go.sum "$work/go.sum"
go mod edit -dropreplace="$mod" -require="$mod@$version" "$work/go.mod"
golist() { go list -modfile="$work/go.mod" -mod=mod "$@"; }
src=$(cd / && GOFLAGS='' go mod download -json "$mod@$version" |
	sed -nE 's/^[[:space:]]*"Dir": "(.*)",?$/\1/p')
[[ -d $src ]] || die "go mod download $mod@$version gave no directory"
say "copying $mod $version from $src"

# Packages and embedded files, each line "import/path file...". Test deps
# (-test) count: the tests import iceberg-go packages the binary may not.
for tags in "" integration notable nodemo; do
	for platform in linux/amd64 linux/arm64 darwin/arm64; do
		GOOS=${platform%/*} GOARCH=${platform#*/} golist -deps -test -tags "$tags" \
			-f '{{.ImportPath}}{{range .EmbedFiles}} {{.}}{{end}}' ./...
	done
done | sed -nE "s#^($mod(/[^ ]*)?)( \[[^]]*\])?(( [^ ]+)*)\$#\1\4#p" | sort -u >"$work/packages"
[[ -s $work/packages ]] || die "this module imports no $mod package"

out="$work/copy"
mkdir -p "$out"
while read -r pkg embeds; do
	rel=${pkg#"$mod"}
	rel=${rel#/}
	dir="$out/${rel:-.}"
	mkdir -p "$dir"
	# Every non-test .go file, whatever its build constraint: the package
	# then builds for any GOOS/GOARCH, not only the ones listed above.
	find "$src/${rel:-.}" -maxdepth 1 -type f -name '*.go' ! -name '*_test.go' -exec cp {} "$dir/" \;
	for f in $embeds; do
		mkdir -p "$(dirname "$dir/$f")"
		cp "$src/${rel:-.}/$f" "$dir/$f"
	done
done <"$work/packages"
cp "$src/go.mod" "$src/go.sum" "$src/LICENSE" "$src/NOTICE" "$out/"
chmod -R u+w "$out"

# The copy's own files (these notes and the patches) survive a re-creation.
mkdir -p "$out/patches"
if [[ -d $fork/patches ]]; then cp "$fork"/patches/*.patch "$out/patches/"; fi
if [[ -f $fork/PATCHES.md ]]; then cp "$fork/PATCHES.md" "$out/"; fi
for p in "$out"/patches/*.patch; do
	[[ -e $p ]] || continue
	say "applying patches/$(basename "$p")"
	patch -s -p1 --no-backup-if-mismatch -d "$out" <"$p" ||
		die "patches/$(basename "$p") does not apply to $version: re-do it by hand (PATCHES.md)"
done

rm -rf "$fork"
mkdir -p "$(dirname "$fork")"
mv "$out" "$fork"
go mod edit -require="$mod@$version" -replace="$mod=./$fork"
go mod tidy
say "$fork: $mod $version, $(wc -l <"$work/packages") packages, $(find "$fork" -name '*.go' | wc -l) .go files"
