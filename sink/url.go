package sink

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Location is where the Files sink writes, parsed from its URL.
type Location struct {
	// Scheme is "s3" or "file".
	Scheme string
	// Bucket is the S3 bucket; empty for files.
	Bucket string
	// Prefix is the key prefix inside the bucket, without slashes at
	// either end; empty for files.
	Prefix string
	// Dir is the absolute folder for files; empty for S3.
	Dir string
}

func (l Location) String() string {
	if l.Scheme == "s3" {
		if l.Prefix == "" {
			return "s3://" + l.Bucket
		}
		return "s3://" + l.Bucket + "/" + l.Prefix
	}
	return "file://" + filepath.ToSlash(l.Dir)
}

// ParseURL reads a sink URL: s3://bucket/prefix, file:///abs/path, or a
// plain path (relative paths are made absolute), as `logstore demo --output`
// and sinks.files.url take it.
func ParseURL(raw string) (Location, error) {
	if raw == "" {
		return Location{}, fmt.Errorf("empty output URL; use s3://bucket/prefix, file:///path or a folder path")
	}
	scheme, rest, hasScheme := strings.Cut(raw, "://")
	if !hasScheme {
		return fileLocation(raw)
	}
	switch strings.ToLower(scheme) {
	case "s3", "s3a":
		u, err := url.Parse("s3://" + rest)
		if err != nil {
			return Location{}, fmt.Errorf("output URL %q: %w", raw, err)
		}
		if u.Host == "" {
			return Location{}, fmt.Errorf("output URL %q names no bucket; use s3://bucket/prefix", raw)
		}
		if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return Location{}, fmt.Errorf("output URL %q: S3 URLs take no user, query or fragment; set the endpoint and credentials in sinks.files.s3 or the AWS_* environment", raw)
		}
		return Location{Scheme: "s3", Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}, nil
	case "file":
		u, err := url.Parse(raw)
		if err != nil {
			return Location{}, fmt.Errorf("output URL %q: %w", raw, err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return Location{}, fmt.Errorf("output URL %q: file URLs take an absolute path, file:///path (three slashes)", raw)
		}
		if u.Path == "" {
			return Location{}, fmt.Errorf("output URL %q names no folder", raw)
		}
		return fileLocation(filepath.FromSlash(u.Path))
	}
	return Location{}, fmt.Errorf("output URL %q: scheme %q is not s3 or file", raw, scheme)
}

func fileLocation(path string) (Location, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Location{}, fmt.Errorf("output folder %q: %w", path, err)
	}
	return Location{Scheme: "file", Dir: abs}, nil
}
