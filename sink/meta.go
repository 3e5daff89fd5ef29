package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// getter is a store that reads back what it stored.
type getter interface {
	// Get returns the bytes under key, or an error wrapping fs.ErrNotExist.
	Get(ctx context.Context, key string) ([]byte, error)
}

// PutMeta stores a small object that is not data (the pipeline's resume
// records, a backfill's manifest) under name below the sink's root. name
// should start with '_', which table readers skip.
func (f *Files) PutMeta(ctx context.Context, name string, data []byte) error {
	return f.store.Put(ctx, joinKey(f.prefix, name), bytes.NewReader(data), int64(len(data)))
}

// GetMeta reads what PutMeta stored; an error wrapping fs.ErrNotExist when
// nothing is there.
func (f *Files) GetMeta(ctx context.Context, name string) ([]byte, error) {
	g, ok := f.store.(getter)
	if !ok {
		return nil, fmt.Errorf("files: %s cannot read back %s: %w", f.store, name, fs.ErrNotExist)
	}
	return g.Get(ctx, joinKey(f.prefix, name))
}

// Get reads a file; a missing one is fs.ErrNotExist.
func (s *FileStore) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(s.Path(key))
	if err != nil {
		return nil, fmt.Errorf("file store: %w", err)
	}
	return b, nil
}

// Get reads an object; a missing one is fs.ErrNotExist. It needs
// s3:GetObject on the key (and s3:ListBucket for S3 to answer 404, not
// 403, when the key is missing).
func (s *S3Store) Get(ctx context.Context, key string) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		var missing *types.NoSuchKey
		if errors.As(err, &missing) {
			return nil, fmt.Errorf("s3://%s/%s: %w", s.bucket, key, fs.ErrNotExist)
		}
		return nil, s.explain("GetObject", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, s.explain("GetObject", key, err)
	}
	return b, nil
}
