//go:build integration

package main

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/sink"
)

// isTempFile reports whether a file's name is a temporary one a write
// leaves when it is cut short: .NAME.tmp-*.
func isTempFile(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// leftoverTemps lists what writes cut short left below out, a file://
// folder or s3://bucket/prefix: temporary files, and on S3 unfinished
// multipart uploads (billed until aborted, listed by no reader).
func leftoverTemps(t *testing.T, out string) []string {
	t.Helper()
	var left []string
	bucket, prefix, isS3 := strings.Cut(strings.TrimPrefix(out, "s3://"), "/")
	if !strings.HasPrefix(out, "s3://") {
		dir := strings.TrimPrefix(out, "file://")
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && isTempFile(d.Name()) {
				rel, _ := filepath.Rel(dir, p)
				left = append(left, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("listing %s: %v", dir, err)
		}
		return left
	}
	if isS3 {
		prefix = strings.Trim(prefix, "/") + "/"
	}
	ctx, client := context.Background(), testkit.S3Client(t)
	objects := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for objects.HasMorePages() {
		page, err := objects.NextPage(ctx)
		if err != nil {
			t.Fatalf("listing %s: %v", out, err)
		}
		for _, o := range page.Contents {
			if isTempFile(path.Base(aws.ToString(o.Key))) {
				left = append(left, aws.ToString(o.Key))
			}
		}
	}
	in := &s3.ListMultipartUploadsInput{Bucket: &bucket, Prefix: &prefix}
	for {
		page, err := client.ListMultipartUploads(ctx, in)
		if err != nil {
			t.Fatalf("listing the unfinished uploads below %s: %v", out, err)
		}
		for _, u := range page.Uploads {
			left = append(left, "unfinished upload of "+aws.ToString(u.Key))
		}
		if !aws.ToBool(page.IsTruncated) {
			return left
		}
		in.KeyMarker, in.UploadIdMarker = page.NextKeyMarker, page.NextUploadIdMarker
	}
}

// finalCleanRun runs one member with --until now over a job's output
// after kills, as an operator's run after an incident would: it owns every
// partition, so its start must remove every temporary file and unfinished
// upload the kills left (sink/leftovers.go). None may be left below url,
// nor in bucket (s3://BUCKET, the table's files; "" for none).
func finalCleanRun(t *testing.T, cfg, url, bucket string) (output string) {
	t.Helper()
	began := time.Now()
	st, out := runLogstore(t, cfg, "LOGSTORE_RACK=az-a")
	if dir := os.Getenv("CHAOS_LOGS"); dir != "" {
		os.WriteFile(filepath.Join(dir, "final-clean-run.log"), []byte(out), 0o644)
	}
	if !st.Success() {
		t.Fatalf("the final clean run: %v\n%s", st, tail(out, 30))
	}
	var left []string
	if bucket != "" {
		left = leftoverTemps(t, bucket)
	}
	if !strings.HasPrefix(url, bucket+"/") || bucket == "" {
		left = append(left, leftoverTemps(t, url)...)
	}
	if len(left) > 0 {
		t.Errorf("after the final clean run, %d temporary files or unfinished uploads are left, want 0: %v", len(left), left[:min(10, len(left))])
	}
	t.Logf("the final clean run took %s and left %d temporary files or unfinished uploads (%s)", time.Since(began).Round(time.Millisecond), len(left), url)
	return out
}

// TestE2EKilledWritesLeaveNoTemporaryFiles kills the job while it stores
// a resume record, then while it stores a dead-letter file, each write's
// temporary file in place, and checks that the next start, a clean run
// moments later, leaves none of them: a job killed now and then (a node
// drained, an OOM kill) must not collect one file per kill for ever. The
// output still holds every record once.
func TestE2EKilledWritesLeaveNoTemporaryFiles(t *testing.T) {
	const n, partitions, badEvery = 6_000, 3, 50
	logstoreBinary(t) // built before the runs are timed
	topic := e2eTopic(t, partitions)
	produceLogs(t, topic, n, partitions, badEvery)
	dir := t.TempDir()
	cfg := e2eConfig(t, topic, topic+"-g", dir, 500)
	// A static member takes the killed one's partitions at once.
	static := strings.Replace(readFile(t, cfg), "  group: ", "  group_instance_id: temps\n  group: ", 1)
	if err := os.WriteFile(cfg, []byte(static), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kill := range []struct{ failpoint, left string }{
		{sink.FailStoringMeta + ":4", "_logstore/resume/" + topic + "/."},
		{sink.FailStoringDeadLetters + ":2", "_errors/." + topic + "-"},
	} {
		began := time.Now()
		st, out := runLogstore(t, cfg, "LOGSTORE_RACK=az-c", "LOGSTORE_FAILPOINT="+kill.failpoint)
		if ws, _ := st.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("failpoint %s: the run was not killed (%v):\n%s", kill.failpoint, st, tail(out, 20))
		}
		left := leftoverTemps(t, "file://"+dir)
		found := false
		for _, f := range left {
			found = found || strings.HasPrefix(f, kill.left)
		}
		if !found {
			t.Fatalf("killed at %s, the write left no %s*.tmp-* file (left: %v): the kill did not land mid-write", kill.failpoint, kill.left, left)
		}
		t.Logf("killed at %s after %s: temporary files %v", kill.failpoint, time.Since(began).Round(time.Millisecond), left)
	}
	finalCleanRun(t, cfg, "file://"+dir, "") // the chaos suite's judge, on local files
	checkExactlyOnce(t, dir, n, partitions, badEvery)
}

// TestLeftoverTempsCountsS3: the chaos suite's count of what writes cut
// short left on S3 sees a temporary-named object and an unfinished upload
// below the prefix, and nothing else.
func TestLeftoverTempsCountsS3(t *testing.T) {
	bucket := s3Env(t)
	ctx, client := context.Background(), testkit.S3Client(t)
	for _, key := range []string{"chaos/dt=x/logs-1-0-9.parquet", "chaos/dt=x/.logs-1-10-19.parquet.tmp-42", "elsewhere/.logs-1-0-9.parquet.tmp-1"} {
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(key), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"chaos/_errors/logs-1-0-9.deadletter", "elsewhere/logs-2-0-9.parquet"} {
		if _, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
	}
	got := leftoverTemps(t, "s3://"+bucket+"/chaos")
	want := []string{"chaos/dt=x/.logs-1-10-19.parquet.tmp-42", "unfinished upload of chaos/_errors/logs-1-0-9.deadletter"}
	if !slices.Equal(got, want) {
		t.Errorf("leftoverTemps(s3://%s/chaos) = %v, want %v", bucket, got, want)
	}
	if n := len(leftoverTemps(t, "s3://"+bucket)); n != 4 {
		t.Errorf("leftoverTemps of the whole bucket found %d, want 4", n)
	}
}
