package iceberg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/logstore/logstore/internal/secret"
	"github.com/logstore/logstore/sink"
)

// iceberg-go reaches a table's s3:// metadata, manifests and (in upkeep)
// data files through the io scheme registry. Its own S3 IO
// (io/gocloud/s3) brings gocloud.dev and, through it, the 50 MiB
// google.golang.org/api module into every first build; this one is the
// files sink's S3 store, which the binary links anyway. file:// stays
// iceberg-go's LocalFS.
var s3Schemes = []string{"s3", "s3a", "s3n"}

func init() {
	for _, scheme := range s3Schemes {
		icebergio.Register(scheme, openS3IO)
	}
}

// s3Stores keeps the last store per bucket and place: iceberg-go asks for an
// IO at every table load and commit, and each store loads the AWS config.
// A REST catalog may vend new temporary credentials at every table load:
// a store made with other credentials replaces the last, so the map keeps
// one per place however long the job runs.
var s3Stores = struct {
	sync.Mutex
	m map[s3Place]s3Cached
}{m: map[s3Place]s3Cached{}}

type s3Place struct{ bucket, endpoint, region, pathStyle string }

type s3Creds struct{ accessKey, secret, token string }

type s3Cached struct {
	creds s3Creds
	store *sink.S3Store
}

// openS3IO is the scheme's factory: the table's properties (the catalog's,
// which OpenCatalog fills from sinks.iceberg.s3, with what a REST catalog
// vends on top) give the endpoint, region and credentials.
func openS3IO(ctx context.Context, parsed *url.URL, props map[string]string) (icebergio.IO, error) {
	if v, ok := props[icebergio.S3RemoteSigningEnabled]; ok {
		if on, _ := strconv.ParseBool(v); on {
			return nil, errors.New("iceberg: S3 remote signing (s3.remote-signing-enabled) is not supported")
		}
	}
	if parsed.Host == "" {
		return nil, fmt.Errorf("iceberg: table location %q names no bucket", parsed.String())
	}
	k := s3Place{
		bucket:    parsed.Host,
		endpoint:  props[icebergio.S3EndpointURL],
		region:    cmpOr(props[icebergio.S3Region], props[icebergio.S3ClientRegion]),
		pathStyle: props[icebergio.S3ForceVirtualAddressing],
	}
	c := s3Creds{
		accessKey: props[icebergio.S3AccessKeyID],
		secret:    props[icebergio.S3SecretAccessKey],
		token:     props[icebergio.S3SessionToken],
	}
	if c.accessKey == "" && (c.secret != "" || c.token != "") {
		return nil, fmt.Errorf("iceberg: %s or %s set without %s", icebergio.S3SecretAccessKey, icebergio.S3SessionToken, icebergio.S3AccessKeyID)
	}
	s3Stores.Lock()
	defer s3Stores.Unlock()
	if got, ok := s3Stores.m[k]; ok && got.creds == c {
		return &s3IO{store: got.store}, nil
	}
	cfg := sink.S3Config{
		Endpoint:        k.endpoint,
		Region:          k.region,
		AccessKeyID:     c.accessKey,
		SecretAccessKey: secret.Secret(c.secret),
		SessionToken:    secret.Secret(c.token),
	}
	if k.pathStyle != "" {
		virtual, err := strconv.ParseBool(k.pathStyle)
		if err != nil {
			return nil, fmt.Errorf("iceberg: %s=%q: want true or false", icebergio.S3ForceVirtualAddressing, k.pathStyle)
		}
		pathStyle := !virtual
		cfg.PathStyle = &pathStyle
	}
	st, err := sink.NewS3Store(ctx, k.bucket, cfg.WithDefaults())
	if err != nil {
		return nil, fmt.Errorf("iceberg: table files in s3://%s: %w", k.bucket, err)
	}
	s3Stores.m[k] = s3Cached{creds: c, store: st}
	return &s3IO{store: st}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// s3IO is iceberg-go's IO on one bucket. The interface has no contexts:
// the store's retries bound each call.
type s3IO struct{ store *sink.S3Store }

var (
	_ icebergio.ReadFileIO      = (*s3IO)(nil)
	_ icebergio.WriteFileIO     = (*s3IO)(nil)
	_ icebergio.ListableIO      = (*s3IO)(nil)
	_ icebergio.BulkRemovableIO = (*s3IO)(nil)
	_ icebergio.StatIO          = (*s3IO)(nil)
)

// key is the object key of a location in the bucket, s3://bucket/key.
// The key is taken as written, not URL-decoded: the files sink escapes
// partition values (a%20b), and S3 holds the escaped key.
func (o *s3IO) key(op, name string) (string, error) {
	scheme, rest, ok := strings.Cut(name, "://")
	bucket, key, _ := strings.Cut(rest, "/")
	if !ok || !slices.Contains(s3Schemes, scheme) || bucket != o.store.Bucket() {
		return "", &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("not in s3://%s", o.store.Bucket())}
	}
	return key, nil
}

// head is the object at name, by a HEAD request.
func (o *s3IO) head(op, name string) (sink.ObjectInfo, error) {
	key, err := o.key(op, name)
	if err != nil {
		return sink.ObjectInfo{}, err
	}
	return o.store.Head(context.Background(), key)
}

func (o *s3IO) Open(name string) (icebergio.File, error) {
	info, err := o.head("open", name)
	if err != nil {
		return nil, err
	}
	return &s3File{store: o.store, info: info}, nil
}

func (o *s3IO) ReadFile(name string) ([]byte, error) {
	key, err := o.key("read", name)
	if err != nil {
		return nil, err
	}
	body, err := o.store.GetRange(context.Background(), key, 0, -1)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(body)
}

func (o *s3IO) Stat(name string) (fs.FileInfo, error) {
	info, err := o.head("stat", name)
	if err != nil {
		return nil, err
	}
	return objectInfo{info}, nil
}

func (o *s3IO) Remove(name string) error {
	_, err := o.DeleteFiles(context.Background(), []string{name})
	return err
}

// DeleteFiles removes the objects in batches and returns the paths removed.
func (o *s3IO) DeleteFiles(ctx context.Context, paths []string) ([]string, error) {
	keys := make([]string, 0, len(paths))
	pathOf := make(map[string]string, len(paths))
	for _, p := range paths {
		key, err := o.key("remove", p)
		if err != nil {
			return nil, err
		}
		keys = append(keys, key)
		pathOf[key] = p
	}
	deleted, err := o.store.Delete(ctx, keys)
	out := make([]string, 0, len(deleted))
	for _, k := range deleted {
		out = append(out, pathOf[k])
	}
	return out, err
}

func (o *s3IO) WriteFile(name string, content []byte) error {
	key, err := o.key("write", name)
	if err != nil {
		return err
	}
	return o.store.Put(context.Background(), key, bytes.NewReader(content), int64(len(content)))
}

// Create spools the file to a temporary file and uploads it on Close: a
// compacted data file can be large, and the store's multipart upload reads
// its parts at once from a ReaderAt.
func (o *s3IO) Create(name string) (icebergio.FileWriter, error) {
	key, err := o.key("create", name)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "logstore-iceberg-*")
	if err != nil {
		return nil, fmt.Errorf("iceberg: spooling %s: %w", name, err)
	}
	return &s3Writer{store: o.store, key: key, f: f}, nil
}

// WalkDir reports every object below root as a file, by its full
// location, after root itself as a directory. S3 has no directories: none
// below root is reported, and fs.SkipDir from a file ends the walk.
func (o *s3IO) WalkDir(root string, fn fs.WalkDirFunc) error {
	key, err := o.key("walk dir", root)
	if err != nil {
		return fn(root, nil, err)
	}
	if err := fn(root, fs.FileInfoToDirEntry(dirInfo(path.Base(key))), nil); err != nil {
		if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
			return nil
		}
		return err
	}
	prefix := key
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	scheme, _, _ := strings.Cut(root, "://")
	base := scheme + "://" + o.store.Bucket() + "/"
	err = o.store.List(context.Background(), prefix, func(obj sink.ObjectInfo) error {
		return fn(base+obj.Key, fs.FileInfoToDirEntry(objectInfo{obj}), nil)
	})
	if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// objectInfo is an object as a file.
type objectInfo struct{ o sink.ObjectInfo }

func (i objectInfo) Name() string       { return path.Base(i.o.Key) }
func (i objectInfo) Size() int64        { return i.o.Size }
func (i objectInfo) Mode() fs.FileMode  { return 0o444 }
func (i objectInfo) ModTime() time.Time { return i.o.ModTime }
func (i objectInfo) IsDir() bool        { return false }
func (i objectInfo) Sys() any           { return nil }

// dirInfo is the walk's root.
type dirInfo string

func (d dirInfo) Name() string       { return string(d) }
func (d dirInfo) Size() int64        { return 0 }
func (d dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o555 }
func (d dirInfo) ModTime() time.Time { return time.Time{} }
func (d dirInfo) IsDir() bool        { return true }
func (d dirInfo) Sys() any           { return nil }

// s3File reads an object: ReadAt with a ranged GET each (Parquet's footer
// and column chunks), Read as one stream from the position, reopened after
// a Seek.
type s3File struct {
	store *sink.S3Store
	info  sink.ObjectInfo
	pos   int64
	body  io.ReadCloser
}

func (f *s3File) Stat() (fs.FileInfo, error) { return objectInfo{f.info}, nil }

func (f *s3File) Read(p []byte) (int, error) {
	if f.pos >= f.info.Size {
		return 0, io.EOF
	}
	if f.body == nil {
		body, err := f.store.GetRange(context.Background(), f.info.Key, f.pos, -1)
		if err != nil {
			return 0, err
		}
		f.body = body
	}
	n, err := f.body.Read(p)
	f.pos += int64(n)
	return n, err
}

func (f *s3File) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += f.pos
	case io.SeekEnd:
		offset += f.info.Size
	}
	if offset < 0 {
		return 0, fmt.Errorf("s3://%s/%s: seek to %d", f.store.Bucket(), f.info.Key, offset)
	}
	if offset != f.pos && f.body != nil {
		f.body.Close()
		f.body = nil
	}
	f.pos = offset
	return offset, nil
}

func (f *s3File) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.info.Size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), f.info.Size-off)
	body, err := f.store.GetRange(context.Background(), f.info.Key, off, want)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	n, err := io.ReadFull(body, p[:want])
	if err == nil && want < int64(len(p)) {
		err = io.EOF
	}
	return n, err
}

func (f *s3File) Close() error {
	if f.body == nil {
		return nil
	}
	err := f.body.Close()
	f.body = nil
	return err
}

// s3Writer is Create's file: written to the spool, uploaded on Close.
type s3Writer struct {
	store *sink.S3Store
	key   string
	f     *os.File
	size  int64
}

func (w *s3Writer) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.size += int64(n)
	return n, err
}

func (w *s3Writer) ReadFrom(r io.Reader) (int64, error) {
	n, err := io.Copy(w.f, r)
	w.size += n
	return n, err
}

func (w *s3Writer) Close() error {
	defer os.Remove(w.f.Name())
	defer w.f.Close()
	return w.store.Put(context.Background(), w.key, w.f, w.size)
}
