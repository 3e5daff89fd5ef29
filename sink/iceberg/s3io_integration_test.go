//go:build integration

package iceberg

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/logstore/logstore/internal/testkit"
)

// TestS3IOReadsWritesListsAndDeletesOnS3: the IO iceberg-go gets for
// s3:// (the files sink's store, in gocloud's place), on the project's S3
// server: a file written through Create comes back whole through
// ReadFile, ReadAt (the end reports io.EOF, as Parquet's reader expects)
// and Seek+Read; a key with an escaped partition value (a%20b, as the
// files sink writes it) is kept as written; WalkDir lists every object by
// its full location; DeleteFiles removes them and Stat then says
// fs.ErrNotExist.
func TestS3IOReadsWritesListsAndDeletesOnS3(t *testing.T) {
	bucket := testkit.S3Env(t, "s3io")
	root := "s3://" + bucket + "/t"
	u, _ := url.Parse(root)
	fsys, err := openS3IO(context.Background(), u, map[string]string{
		icebergio.S3EndpointURL:            os.Getenv("AWS_ENDPOINT_URL_S3"),
		icebergio.S3Region:                 "us-east-1",
		icebergio.S3AccessKeyID:            os.Getenv("AWS_ACCESS_KEY_ID"),
		icebergio.S3SecretAccessKey:        os.Getenv("AWS_SECRET_ACCESS_KEY"),
		icebergio.S3ForceVirtualAddressing: "false",
	})
	if err != nil {
		t.Fatal(err)
	}
	o := fsys.(*s3IO)
	content := bytes.Repeat([]byte("0123456789"), 1000)
	data := root + "/data/level=a%20b/f.parquet"
	w, err := o.Create(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.ReadFrom(bytes.NewReader(content[:4000])); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(content[4000:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	meta := root + "/metadata/v1.metadata.json"
	if err := o.WriteFile(meta, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := o.ReadFile(data); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("ReadFile: %d bytes, %v; want %d", len(got), err, len(content))
	}
	f, err := o.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() != int64(len(content)) {
		t.Fatalf("Stat: %v, %v", st, err)
	}
	tail := make([]byte, 8)
	if n, err := f.ReadAt(tail, int64(len(content))-4); n != 4 || !errors.Is(err, io.EOF) || string(tail[:4]) != "6789" {
		t.Errorf("ReadAt past the end: %d %q %v; want 4 \"6789\" EOF", n, tail[:n], err)
	}
	if _, err := f.Seek(-10, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(f); err != nil || string(rest) != "0123456789" {
		t.Errorf("Seek(-10, end)+Read: %q %v", rest, err)
	}
	var walked []string
	err = o.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			walked = append(walked, p)
		}
		return nil
	})
	if want := []string{data, meta}; err != nil || !slices.Equal(walked, want) {
		t.Fatalf("WalkDir: %v %v; want %v", walked, err, want)
	}
	deleted, err := o.DeleteFiles(context.Background(), walked)
	slices.Sort(deleted)
	if err != nil || !slices.Equal(deleted, walked) {
		t.Fatalf("DeleteFiles: %v %v", deleted, err)
	}
	if _, err := o.Stat(meta); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of a deleted file: %v; want fs.ErrNotExist", err)
	}
	if _, err := o.Open(strings.Replace(data, bucket, bucket+"-other", 1)); err == nil {
		t.Error("Open of another bucket's file succeeded")
	}
}
