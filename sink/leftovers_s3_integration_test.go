//go:build integration

package sink

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// killedUploadEnv carries the files sink's URL to the process
// TestS3IntegrationKilledUploadIsAbortedByTheOwner kills.
const killedUploadEnv = "LOGSTORE_TEST_KILLED_UPLOAD"

// TestS3IntegrationKilledUploadWriter is the process that test kills: it
// stores a dead-letter file of over 5 MiB, a multipart upload, and the
// failpoint kills it once the parts are uploaded and before the upload is
// completed.
func TestS3IntegrationKilledUploadWriter(t *testing.T) {
	url := os.Getenv(killedUploadEnv)
	if url == "" {
		t.Skip("the process TestS3IntegrationKilledUploadIsAbortedByTheOwner kills")
	}
	cfg := testFilesConfig(t, url)
	cfg.Parquet.Compression = "none"
	cfg.S3.PartBytes = minPartBytes
	f, err := newFiles(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	letters := make([]DeadLetterRow, 100)
	for i := range letters {
		value := make([]byte, 64<<10)
		rand.Read(value)
		letters[i] = DeadLetterRow{Reason: "not JSON", Source: Source{Offset: int64(8065 + i), Value: value}}
	}
	err = f.WriteDeadLetters(t.Context(), NewDeadLetterBatch("logs", 10, 8065, 8164, letters))
	t.Fatalf("the failpoint did not kill the writer (WriteDeadLetters: %v)", err)
}

// TestS3IntegrationKilledUploadIsAbortedByTheOwner: a writer killed in the
// middle of a multipart upload leaves the upload unfinished (S3 bills its
// parts until it is aborted, and no listing shows it). The next start
// keeps it in mind, and the member that takes the partition aborts it; an
// upload of another partition stays for that partition's owner.
func TestS3IntegrationKilledUploadIsAbortedByTheOwner(t *testing.T) {
	bucket := realS3(t)
	url := "s3://" + bucket + "/out"
	cmd := exec.Command(os.Args[0], "-test.run=^TestS3IntegrationKilledUploadWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), killedUploadEnv+"="+url, "LOGSTORE_FAILPOINT="+FailStoringDeadLetters+":1")
	out, _ := cmd.CombinedOutput()
	if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the writer was not killed at its failpoint (%v):\n%s", cmd.ProcessState, out)
	}
	s := newTestS3Store(t, bucket)
	ctx := context.Background()
	other := "out/_errors/logs-11-0-99.deadletter" // another partition's, left the same way
	if _, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: aws.String(other)}); err != nil {
		t.Fatal(err)
	}
	uploads := func() []string {
		t.Helper()
		res, err := s.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &bucket})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, u := range res.Uploads {
			keys = append(keys, aws.ToString(u.Key))
		}
		return keys
	}
	killed := "out/_errors/logs-10-8065-8164.deadletter"
	if got := uploads(); len(got) != 2 {
		t.Fatalf("unfinished uploads after the kill: %v, want %s and %s", got, killed, other)
	}
	f, err := newFiles(ctx, testFilesConfig(t, url))
	if err != nil {
		t.Fatal(err)
	}
	if got := uploads(); len(got) != 2 {
		t.Errorf("the start, before it owns a partition, left uploads %v, want both", got)
	}
	if n := f.RemoveLeftovers(ctx, "logs", 10); n != 1 {
		t.Errorf("the owner of logs/10 aborted %d uploads, want 1", n)
	}
	if got := uploads(); len(got) != 1 || got[0] != other {
		t.Errorf("unfinished uploads once logs/10 is owned: %v, want only %s", got, other)
	}
}
