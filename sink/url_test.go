package sink

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseURL(t *testing.T) {
	wd, _ := os.Getwd()
	for _, tc := range []struct {
		in   string
		want Location
	}{
		{"s3://bucket", Location{Scheme: "s3", Bucket: "bucket"}},
		{"s3://bucket/", Location{Scheme: "s3", Bucket: "bucket"}},
		{"s3://bucket/a/b/", Location{Scheme: "s3", Bucket: "bucket", Prefix: "a/b"}},
		{"S3A://bucket/a", Location{Scheme: "s3", Bucket: "bucket", Prefix: "a"}},
		{"file:///tmp/out", Location{Scheme: "file", Dir: "/tmp/out"}},
		{"file://localhost/tmp/out/", Location{Scheme: "file", Dir: "/tmp/out"}},
		{"/tmp/out", Location{Scheme: "file", Dir: "/tmp/out"}},
		{"out/x", Location{Scheme: "file", Dir: filepath.Join(wd, "out/x")}},
	} {
		got, err := ParseURL(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "s3://", "s3:///prefix", "s3://b/p?x=1", "file://host/path", "gs://bucket/x"} {
		if got, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) = %+v, want an error", bad, got)
		}
	}
}
