package sink

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// fakeS3 serves an in-process S3 with bucket "logs" and points the SDK's
// default chain at it through the environment, as a user would.
func fakeS3(t *testing.T) *s3Front {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("logs"); err != nil {
		t.Fatal(err)
	}
	front := &s3Front{next: gofakes3.New(backend).Server()}
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)
	isolateAWSEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	return front
}

// s3Front logs requests and can answer the next few with 503 SlowDown.
type s3Front struct {
	next http.Handler
	mu   sync.Mutex
	log  []string
	fail int
	// denyGet answers every GET with 403 AccessDenied, as a policy
	// without s3:GetObject does.
	denyGet bool
}

func (f *s3Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	op := r.Method
	for _, q := range []string{"uploads", "uploadId", "partNumber"} {
		if r.URL.Query().Has(q) {
			op += " ?" + q
		}
	}
	f.log = append(f.log, op)
	failing := f.fail > 0
	f.fail--
	deny := f.denyGet && r.Method == http.MethodGet
	f.mu.Unlock()
	if deny {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
		return
	}
	if failing {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		return
	}
	f.next.ServeHTTP(w, r)
}

func (f *s3Front) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	log := f.log
	f.log = nil
	return log
}

func (f *s3Front) failNext(n int) {
	f.mu.Lock()
	f.fail = n
	f.mu.Unlock()
}

// isolateAWSEnv keeps the developer's own AWS setup out of a test.
func isolateAWSEnv(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_PROFILE":                 "",
		"AWS_REGION":                  "us-east-1",
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_ENDPOINT_URL":            "",
		"AWS_ENDPOINT_URL_S3":         "",
		"AWS_SESSION_TOKEN":           "",
	} {
		t.Setenv(k, v)
	}
}

func testS3Config(t *testing.T) *S3Config {
	c := &Config{Files: &FilesConfig{URL: "s3://logs", S3: &S3Config{MaxAttempts: 2, MaxBackoff: time.Second}}}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c.Files.S3
}

func getObject(t *testing.T, s *S3Store, key string) []byte {
	t.Helper()
	// gofakes3 answers a multipart object with the checksum of one part,
	// where S3 gives the composite "…-N" the SDK skips; check bytes instead.
	out, err := s.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: &key},
		func(o *s3.Options) { o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired })
	if err != nil {
		t.Fatalf("GetObject %s: %v", key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("GetObject %s: %v", key, err)
	}
	return data
}

func TestS3PutSmallAndMultipart(t *testing.T) {
	front := fakeS3(t)
	for _, checksum := range S3Checksums {
		t.Run(checksum, func(t *testing.T) {
			cfg := testS3Config(t)
			cfg.Checksum = checksum
			cfg.PartBytes = minPartBytes
			cfg.PartConcurrency = 2
			s, err := NewS3Store(context.Background(), "logs", cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Preflight(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, size := range []int{0, 1000, minPartBytes, 2*minPartBytes + 12345} {
				body := make([]byte, size)
				rand.Read(body)
				key := "p/obj-" + checksum
				front.take()
				if err := s.Put(context.Background(), key, bytes.NewReader(body), int64(size)); err != nil {
					t.Fatalf("Put %d bytes: %v", size, err)
				}
				want := []string{"PUT"}
				if size > minPartBytes {
					want = []string{"POST ?uploads", "PUT ?uploadId ?partNumber", "PUT ?uploadId ?partNumber", "PUT ?uploadId ?partNumber", "POST ?uploadId"}
				}
				if got := front.take(); strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("Put %d bytes sent %v, want %v", size, got, want)
				}
				if got := getObject(t, s, key); !bytes.Equal(got, body) {
					t.Fatalf("Put %d bytes: read back %d bytes that differ", size, len(got))
				}
			}
		})
	}
}

func TestS3RetriesThrottlingAnd5xx(t *testing.T) {
	front := fakeS3(t)
	cfg := testS3Config(t)
	cfg.MaxAttempts = 3
	s, err := NewS3Store(context.Background(), "logs", cfg)
	if err != nil {
		t.Fatal(err)
	}
	front.failNext(2)
	if err := s.Put(context.Background(), "k", strings.NewReader("body"), 4); err != nil {
		t.Fatalf("Put after two 503s: %v", err)
	}
	if got := getObject(t, s, "k"); string(got) != "body" {
		t.Errorf("read back %q", got)
	}
	front.failNext(3)
	err = s.Put(context.Background(), "k2", strings.NewReader("body"), 4)
	if err == nil || !strings.Contains(err.Error(), "SlowDown") || !strings.Contains(err.Error(), "s3://logs/k2") {
		t.Errorf("Put after three 503s with max_attempts 3 = %v, want SlowDown naming s3://logs/k2", err)
	}
}

func TestS3PreflightNamesTheMissingBucket(t *testing.T) {
	fakeS3(t)
	s, err := NewS3Store(context.Background(), "no-such-bucket", testS3Config(t))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Preflight(context.Background())
	if err == nil || !strings.Contains(err.Error(), `bucket "no-such-bucket" does not exist`) {
		t.Errorf("Preflight = %v, want it to name the missing bucket", err)
	}
}

// TestS3PreflightRidesOutAnOutage: a member started while S3 answers 503
// keeps trying for preflight_timeout, and starts once S3 is back; an
// outage longer than that fails, naming the key; a missing bucket fails at
// the first answer.
func TestS3PreflightRidesOutAnOutage(t *testing.T) {
	front := fakeS3(t)
	cfg := testS3Config(t)
	s, err := NewS3Store(context.Background(), "logs", cfg)
	if err != nil {
		t.Fatal(err)
	}
	front.take()
	front.failNext(5)
	if err := s.Preflight(context.Background()); err != nil {
		t.Fatalf("Preflight after five 503s: %v", err)
	}
	if got := front.take(); len(got) != 8 { // five refused PUTs, the PUT, the GET (resume records are read back), the DELETE
		t.Errorf("requests %v, want 5 failed PUTs, a PUT, a GET and a DELETE", got)
	}

	cfg.PreflightTimeout = time.Second
	front.failNext(1000)
	err = s.Preflight(context.Background())
	front.failNext(0)
	if err == nil || !strings.Contains(err.Error(), "sinks.files.s3.preflight_timeout, 1s") || !strings.Contains(err.Error(), "SlowDown") {
		t.Errorf("Preflight during a long outage = %v, want SlowDown and the preflight_timeout", err)
	}

	missing, err := NewS3Store(context.Background(), "no-such-bucket", testS3Config(t))
	if err != nil {
		t.Fatal(err)
	}
	front.take()
	if err := missing.Preflight(context.Background()); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Preflight of a missing bucket = %v", err)
	}
	if got := front.take(); len(got) != 1 {
		t.Errorf("a missing bucket was asked %d times (%v), want once", len(got), got)
	}
}

func TestS3NeedsARegionWithoutEndpoint(t *testing.T) {
	isolateAWSEnv(t)
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	_, err := NewS3Store(context.Background(), "logs", testS3Config(t))
	if err == nil || !strings.Contains(err.Error(), "sinks.files.s3.region") {
		t.Errorf("NewS3Store = %v, want it to ask for a region", err)
	}
}

func TestFilesOnS3(t *testing.T) {
	fakeS3(t)
	cfg := testFilesConfig(t, "s3://logs/warehouse/app")
	cfg.PartitionBy = []PartitionColumn{{Name: "dt", Column: "event_time"}}
	cfg.S3.PartBytes = minPartBytes
	f, err := newFiles(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	rows := logRows(time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC), 7200)
	b := &Batch{Topic: "logs", Partition: 0, First: 0, Last: 7199, Schema: logSchema, Rows: rows}
	if err := f.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	s := f.Store().(*S3Store)
	list, err := s.client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("logs"), Prefix: aws.String("warehouse/app/")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, *o.Key)
	}
	want := []string{"warehouse/app/dt=2026-11-29/logs-0-0-7199.parquet", "warehouse/app/dt=2026-11-30/logs-0-0-7199.parquet"}
	if strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Fatalf("keys %v, want %v (and no preflight probe left)", keys, want)
	}
	var got []Row
	for _, k := range want {
		_, r := decodeParquet(t, logSchema, getObject(t, s, k))
		got = append(got, r...)
	}
	sameRows(t, got, rows)
}
