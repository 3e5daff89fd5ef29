package testkit

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Client is a client of the S3 server of scripts/s3-server.sh, from the
// environment its `env` command prints (endpoint, test credentials, region);
// the server speaks path-style only. Tests use it to create buckets and read
// back what the job wrote, which the job's own store never needs to offer.
func S3Client(t testing.TB) *s3.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatalf("S3 client for the test server: %v", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
}

// CreateBucket creates bucket on the test S3 server.
func CreateBucket(t testing.TB, bucket string) {
	t.Helper()
	if _, err := S3Client(t).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("creating bucket %s: %v", bucket, err)
	}
}
