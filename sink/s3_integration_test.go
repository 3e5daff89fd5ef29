//go:build integration

package sink

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// These tests run against the versitygw process that scripts/s3-server.sh
// starts (CI and scripts/test.sh start it first), with the credentials the
// script prints.

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func s3Script(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(repoRoot(t), "scripts", "s3-server.sh")}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// realS3 points the SDK's environment at the running server and makes a
// fresh bucket for the test.
func realS3(t *testing.T) (bucket string) {
	t.Helper()
	if out, err := s3Script(t, "status"); err != nil {
		t.Fatalf("the S3 server is not up (%s): start it with scripts/s3-server.sh start", strings.TrimSpace(out))
	}
	env, err := s3Script(t, "env")
	if err != nil {
		t.Fatalf("scripts/s3-server.sh env: %v\n%s", err, env)
	}
	isolateAWSEnv(t)
	for _, line := range strings.Split(env, "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "export "), "="); ok {
			t.Setenv(k, v)
		}
	}
	bucket = fmt.Sprintf("it-%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), time.Now().UnixNano()%1e9)
	if len(bucket) > 63 {
		bucket = bucket[len(bucket)-63:]
	}
	bucket = strings.Trim(bucket, "-")
	s := newTestS3Store(t, bucket)
	if _, err := s.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatalf("CreateBucket %s: %v", bucket, err)
	}
	return bucket
}

func newTestS3Store(t *testing.T, bucket string) *S3Store {
	t.Helper()
	c := &Config{Files: &FilesConfig{URL: "s3://" + bucket}}
	c.SetDefaults()
	s, err := NewS3Store(context.Background(), bucket, c.Files.S3)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// itSchema has every column type pyarrow and the JSON encoding compare
// exactly (float32 is compared by value below).
var itSchema = &Schema{Fields: append(append([]Field{}, logSchema.Fields...),
	Field{Name: "ingest_time", Type: Timestamp, Unit: time.Microsecond},
	Field{Name: "day", Type: Date},
	Field{Name: "offset", Type: Int64, Required: true},
	Field{Name: "sampled", Type: Bool},
	Field{Name: "score", Type: Float32},
	Field{Name: "raw", Type: Bytes},
)}

func itRows(n int) []Row {
	base := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	rows := logRows(base, n)
	for i, r := range rows {
		var raw any = []byte(fmt.Sprintf("raw-%d-\x00\xff", i))
		var sampled any = i%2 == 0
		if i%7 == 0 {
			raw, sampled, r[1], r[7] = nil, nil, nil, nil // nulls, a null map
		}
		if i%11 == 0 {
			r[7] = map[string]string{} // an empty map
		}
		day := time.Date(2026, 11, 29-i%3, 0, 0, 0, 0, time.UTC)
		rows[i] = append(r, base.Add(time.Duration(i)*time.Microsecond*1001), day, int64(i), sampled, float32(i)*0.1, raw)
	}
	rows[3][14] = float32(math.NaN())
	return rows
}

// pyarrowRead downloads key and reads it with scripts/verify_parquet.py.
func pyarrowRead(t *testing.T, s *S3Store, key string) (meta struct {
	NumRows      int `json:"num_rows"`
	NumRowGroups int `json:"num_row_groups"`
	Schema       []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Nullable bool   `json:"nullable"`
	} `json:"schema"`
	Rows []map[string]any `json:"rows"`
}) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file.parquet")
	if err := os.WriteFile(path, getObject(t, s, key), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", filepath.Join(repoRoot(t), "scripts", "verify_parquet.py"), path, "--rows")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyarrow could not read %s (is pyarrow installed? pip install pyarrow): %v", key, err)
	}
	if err := json.Unmarshal(out, &meta); err != nil {
		t.Fatalf("verify_parquet.py output: %v", err)
	}
	return meta
}

// checkPyarrowRows compares what pyarrow read with the rows written, through
// the JSON form both sides share.
func checkPyarrowRows(t *testing.T, s *Schema, got []map[string]any, rows []Row) {
	t.Helper()
	if len(got) != len(rows) {
		t.Fatalf("pyarrow read %d rows, want %d", len(got), len(rows))
	}
	// pyarrow hands a json column back as the string it is in the file.
	asStored := &Schema{Fields: append([]Field{}, s.Fields...)}
	for i := range asStored.Fields {
		if asStored.Fields[i].Type == JSON {
			asStored.Fields[i].Type = String
		}
	}
	bad := 0
	for i, r := range expected(s, rows) {
		j, err := appendRowJSON(nil, asStored, r)
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]any
		if err := json.Unmarshal(j, &want); err != nil {
			t.Fatal(err)
		}
		for c, f := range s.Fields {
			g, w := got[i][f.Name], want[f.Name]
			if gf, ok := g.(float64); ok && f.Type == Float32 {
				if wf, ok := w.(float64); ok && float32(gf) == float32(wf) {
					continue
				}
			}
			if fmt.Sprint(g) != fmt.Sprint(w) {
				if bad++; bad < 10 {
					t.Errorf("row %d column %d %s: pyarrow read %#v, wrote %#v", i, c, f.Name, g, w)
				}
			}
		}
	}
}

func TestS3IntegrationMultipartReadByPyarrow(t *testing.T) {
	bucket := realS3(t)
	cfg := testFilesConfig(t, "s3://"+bucket+"/warehouse/logs")
	cfg.Parquet.Compression = "none" // to pass 5 MiB with few rows
	cfg.S3.PartBytes = minPartBytes
	ctx := context.Background()
	f, err := newFiles(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rows := itRows(30000)
	b := &Batch{Topic: "logs", Partition: 1, First: 0, Last: 29999, Schema: itSchema, Rows: rows}
	if err := f.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	s := f.Store().(*S3Store)
	key := "warehouse/logs/logs-1-0-29999.parquet"
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	size := aws.ToInt64(head.ContentLength)
	etag := aws.ToString(head.ETag)
	t.Logf("%s: %d bytes, ETag %s", key, size, etag)
	if size <= cfg.S3.PartBytes || !strings.Contains(etag, "-") {
		t.Errorf("want a multipart object over %d bytes (ETag with -N), got %d bytes, ETag %s", cfg.S3.PartBytes, size, etag)
	}
	meta := pyarrowRead(t, s, key)
	wantTypes := map[string]string{
		"event_time": "timestamp[ms, tz=UTC]", "level": "string", "status": "int32", "latency_ms": "double",
		"labels": "map<string, string ('labels')>", "payload": "string", "ingest_time": "timestamp[us, tz=UTC]",
		"day": "date32[day]", "offset": "int64", "sampled": "bool", "score": "float", "raw": "binary",
	}
	for i, c := range meta.Schema {
		if want, ok := wantTypes[c.Name]; ok && c.Type != want {
			t.Errorf("pyarrow type of %s = %s, want %s", c.Name, c.Type, want)
		}
		if c.Nullable == itSchema.Fields[i].Required || c.Name != itSchema.Fields[i].Name {
			t.Errorf("pyarrow column %d = %+v, want %+v", i, c, itSchema.Fields[i])
		}
	}
	checkPyarrowRows(t, itSchema, meta.Rows, rows)
}

func TestS3IntegrationChecksums(t *testing.T) {
	bucket := realS3(t)
	body := make([]byte, 2*minPartBytes+12345)
	rand.Read(body)
	for _, checksum := range S3Checksums {
		for _, size := range []int{1000, len(body)} {
			c := &Config{Files: &FilesConfig{URL: "s3://" + bucket, S3: &S3Config{Checksum: checksum, PartBytes: minPartBytes}}}
			c.SetDefaults()
			s, err := NewS3Store(context.Background(), bucket, c.Files.S3)
			if err != nil {
				t.Fatal(err)
			}
			key := fmt.Sprintf("%s-%d", checksum, size)
			if err := s.Put(context.Background(), key, bytes.NewReader(body[:size]), int64(size)); err != nil {
				t.Errorf("checksum %s, %d bytes: %v", checksum, size, err)
				continue
			}
			if got := getObject(t, s, key); !bytes.Equal(got, body[:size]) {
				t.Errorf("checksum %s, %d bytes: read back %d bytes that differ", checksum, size, len(got))
			}
		}
	}
}

func TestS3IntegrationPreflightNamesTheBucket(t *testing.T) {
	bucket := realS3(t)
	ctx := context.Background()

	missing := bucket + "-missing"
	err := newTestS3Store(t, missing).Preflight(ctx)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("bucket %q does not exist", missing)) {
		t.Errorf("missing bucket: Preflight = %v", err)
	}

	for _, tc := range []struct{ name, key, secret string }{
		{"wrong secret", "", "not-the-secret"},
		{"unknown access key", "nobody", "whatever-secret"},
	} {
		if tc.key != "" {
			t.Setenv("AWS_ACCESS_KEY_ID", tc.key)
		}
		t.Setenv("AWS_SECRET_ACCESS_KEY", tc.secret)
		err := newTestS3Store(t, bucket).Preflight(ctx)
		t.Logf("%s: %v", tc.name, err)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("access denied to bucket %q", bucket)) {
			t.Errorf("%s: Preflight = %v, want access denied naming the bucket", tc.name, err)
		}
	}

	// newFiles runs the preflight: the failure comes at start.
	cfg := testFilesConfig(t, "s3://"+bucket+"/x")
	if _, err := newFiles(ctx, cfg); err == nil || !strings.Contains(err.Error(), bucket) {
		t.Errorf("newFiles with bad credentials = %v", err)
	}
}

// slowStore reads the spooled file at a limited rate, so that an upload is
// still under way when the test stops the server.
type slowStore struct {
	Store
	bytesPerSecond int64
	started        atomic.Bool
}

func (s *slowStore) Put(ctx context.Context, key string, body io.ReaderAt, size int64) error {
	return s.Store.Put(ctx, key, slowReaderAt{body, s}, size)
}

type slowReaderAt struct {
	r io.ReaderAt
	s *slowStore
}

func (r slowReaderAt) ReadAt(p []byte, off int64) (int, error) {
	r.s.started.Store(true)
	time.Sleep(time.Duration(int64(len(p)) * int64(time.Second) / r.s.bytesPerSecond))
	return r.r.ReadAt(p, off)
}

func TestS3IntegrationWriteRidesOutAServerRestart(t *testing.T) {
	bucket := realS3(t)
	ctx := context.Background()
	cfg := testFilesConfig(t, "s3://"+bucket+"/restart")
	cfg.Parquet.Compression = "none"
	cfg.S3.PartBytes = minPartBytes
	cfg.S3.PartConcurrency = 1
	s3store, err := NewS3Store(ctx, bucket, cfg.S3)
	if err != nil {
		t.Fatal(err)
	}
	slow := &slowStore{Store: s3store, bytesPerSecond: 4 << 20}
	f, err := newFilesOn(slow, "restart", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := slow.Preflight(ctx); err != nil {
		t.Fatal(err)
	}
	rows := itRows(30000)
	b := &Batch{Topic: "logs", Partition: 5, First: 100, Last: 30099, Schema: itSchema, Rows: rows}

	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- f.Write(ctx, b) }()
	for !slow.started.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(time.Second) // into the first part
	if out, err := s3Script(t, "stop"); err != nil {
		t.Fatalf("scripts/s3-server.sh stop: %v\n%s", err, out)
	}
	t.Logf("server stopped %s into the Write", time.Since(start).Round(time.Millisecond))
	restarted := make(chan error, 1)
	go func() {
		time.Sleep(20 * time.Second)
		out, err := s3Script(t, "start")
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, out)
		}
		restarted <- err
	}()
	t.Cleanup(func() { // leave the server up for the next test, whatever happened
		if _, err := s3Script(t, "status"); err != nil {
			s3Script(t, "start")
		}
	})
	select {
	case err := <-done:
		t.Fatalf("Write returned while the server was down: %v", err)
	case err := <-restarted:
		if err != nil {
			t.Fatalf("scripts/s3-server.sh start: %v", err)
		}
	}
	t.Logf("server back %s into the Write", time.Since(start).Round(time.Millisecond))
	if err := <-done; err != nil {
		t.Fatalf("Write after the restart: %v", err)
	}
	t.Logf("Write returned after %s", time.Since(start).Round(time.Millisecond))
	key := "restart/logs-5-100-30099.parquet"
	meta := pyarrowRead(t, s3store, key)
	checkPyarrowRows(t, itSchema, meta.Rows, rows)
}
