package sink

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestMetaRoundTrip(t *testing.T) {
	fakeS3(t)
	s3, err := NewS3Store(context.Background(), "logs", testS3Config(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, store := range map[string]Store{"file": newFileStore(t.TempDir(), true), "s3": s3} {
		t.Run(name, func(t *testing.T) {
			f, err := newFilesOn(store, "table", testFilesConfig(t, t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := f.GetMeta(ctx, "_logstore/x.json"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a missing object: %v, want fs.ErrNotExist", err)
			}
			for _, v := range []string{`{"next":1}`, `{"next":2}`} {
				if err := f.PutMeta(ctx, "_logstore/x.json", []byte(v)); err != nil {
					t.Fatal(err)
				}
				if got, err := f.GetMeta(ctx, "_logstore/x.json"); err != nil || string(got) != v {
					t.Errorf("GetMeta = %q, %v; want %s", got, err, v)
				}
			}
		})
	}
}

func TestS3PreflightNeedsGetObject(t *testing.T) {
	front := fakeS3(t)
	front.denyGet = true
	s, err := NewS3Store(context.Background(), "logs", testS3Config(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Preflight(context.Background()); err == nil || !strings.Contains(err.Error(), "s3:GetObject") {
		t.Errorf("Preflight = %v, want it to ask for s3:GetObject", err)
	}
}
