package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// The reads, listings and deletes below serve the Iceberg table's metadata,
// manifests and upkeep (sink/iceberg's S3 IO); the files sink only puts.

// WithDefaults is a copy of s with every unset field at its default, for
// a store made from settings other than the config file's (an Iceberg
// table's properties).
func (s S3Config) WithDefaults() *S3Config {
	s.setDefaults()
	return &s
}

// Bucket is the store's bucket.
func (s *S3Store) Bucket() string { return s.bucket }

// ObjectInfo is what a HEAD or a listing says of one object.
type ObjectInfo struct {
	Key     string
	Size    int64
	ModTime time.Time
}

// notFound maps S3's missing key to fs.ErrNotExist, which iceberg-go and
// the callers test for.
func (s *S3Store) notFound(op, key string, err error) error {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var api smithy.APIError
	if errors.As(err, &nsk) || errors.As(err, &nf) || (errors.As(err, &api) && api.ErrorCode() == "NotFound") {
		return &fs.PathError{Op: op, Path: "s3://" + s.bucket + "/" + key, Err: fs.ErrNotExist}
	}
	return s.explain(op, key, err)
}

// Head returns the object's size and time.
func (s *S3Store) Head(ctx context.Context, key string) (ObjectInfo, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return ObjectInfo{}, s.notFound("HeadObject", key, err)
	}
	return ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// GetRange streams n bytes of the object from off; n < 0 reads to the end.
func (s *S3Store) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: &key}
	switch {
	case n > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	case n < 0 && off > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
	case n == 0:
		return io.NopCloser(eofReader{}), nil
	}
	// A part of an object has no checksum to validate; the SDK would log
	// that it skipped the check at every ranged read.
	out, err := s.client.GetObject(ctx, in, func(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = in.Range != nil })
	if err != nil {
		return nil, s.notFound("GetObject", key, err)
	}
	return out.Body, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// List calls fn for each object below prefix, in key order; fn's error
// stops the listing and is returned.
func (s *S3Store) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return s.explain("ListObjectsV2", prefix, err)
		}
		for _, o := range page.Contents {
			if err := fn(ObjectInfo{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteBatch is the most keys one DeleteObjects takes.
const deleteBatch = 1000

// Delete removes the keys and returns those removed (a missing key counts
// as removed, as S3 reports it). The error names the first key S3 refused.
func (s *S3Store) Delete(ctx context.Context, keys []string) ([]string, error) {
	var deleted []string
	var firstErr error
	for start := 0; start < len(keys); start += deleteBatch {
		batch := keys[start:min(start+deleteBatch, len(keys))]
		objs := make([]types.ObjectIdentifier, len(batch))
		for i := range batch {
			objs[i] = types.ObjectIdentifier{Key: &batch[i]}
		}
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: &s.bucket,
			Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(false)},
		})
		if err != nil {
			return deleted, s.explain("DeleteObjects", batch[0], err)
		}
		for _, d := range out.Deleted {
			deleted = append(deleted, aws.ToString(d.Key))
		}
		if len(out.Errors) > 0 && firstErr == nil {
			e := out.Errors[0]
			firstErr = fmt.Errorf("s3: DeleteObjects s3://%s/%s: %s: %s", s.bucket, aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		}
	}
	return deleted, firstErr
}
