package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// parquetContentType is Parquet's registered media type.
const parquetContentType = "application/vnd.apache.parquet"

// contentTypeOf is the object's media type: the table's metadata and
// manifests go through this store too (sink/iceberg's S3 IO).
func contentTypeOf(key string) string {
	switch {
	case outputFile(key):
		return parquetContentType
	case strings.HasSuffix(key, ".json"):
		return "application/json"
	}
	return "application/octet-stream"
}

// S3Store keeps files as objects in one bucket. A file up to part_bytes goes
// in one PutObject, a larger one as a multipart upload; either way the
// object appears whole or not at all, and a second Put of the same key
// replaces it.
type S3Store struct {
	client   *s3.Client
	bucket   string
	endpoint string // for messages; empty is AWS
	cfg      *S3Config
	probeKey string

	leftovers leftoverList[types.MultipartUpload] // unfinished uploads found at start
}

// NewS3Store makes a client from cfg's static credentials if set, else the
// SDK's default chain (env, profile, IRSA/web identity, EKS Pod Identity,
// ECS, instance profile).
// cfg must have had SetDefaults.
func NewS3Store(ctx context.Context, bucket string, cfg *S3Config) (*S3Store, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				o.MaxBackoff = cfg.MaxBackoff
				o.Backoff = doublingBackoff{max: cfg.MaxBackoff}
				// The token bucket gives up on retries when many fail at once,
				// which is exactly an outage; the backoff paces us instead.
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey.Reveal(), cfg.SessionToken.Reveal())))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3: loading AWS config: %w", err)
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = envEndpoint()
	}
	if awsCfg.Region == "" {
		if endpoint == "" {
			return nil, fmt.Errorf("s3: no region for bucket %q: set sinks.files.s3.region or AWS_REGION", bucket)
		}
		// S3-compatible servers take any region in the signature.
		awsCfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = *cfg.PathStyle
		if cfg.Checksum == "none" {
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
	return &S3Store{client: client, bucket: bucket, endpoint: endpoint, cfg: cfg, probeKey: "_logstore_preflight"}, nil
}

func (s *S3Store) String() string { return "s3://" + s.bucket }

// doublingBackoff waits between half and all of 1s·2^(attempt-1), capped at
// max: with the defaults (10 attempts, 20s) a request keeps trying for about
// one to two minutes, which rides out a restart of the S3 endpoint.
type doublingBackoff struct{ max time.Duration }

func (b doublingBackoff) BackoffDelay(attempt int, err error) (time.Duration, error) {
	d := b.max
	if attempt >= 1 && attempt < 30 {
		d = min(time.Second<<(attempt-1), b.max)
	}
	d = d/2 + rand.N(d/2+1)
	// The SDK retries silently; an outage must show in the log.
	slog.Warn("s3: request failed; retrying", "attempt", attempt, "backoff", d.Round(time.Millisecond), "err", err)
	return d, nil
}

func (s *S3Store) checksum() types.ChecksumAlgorithm {
	switch s.cfg.Checksum {
	case "crc32":
		return types.ChecksumAlgorithmCrc32
	case "crc32c":
		return types.ChecksumAlgorithmCrc32c
	case "sha256":
		return types.ChecksumAlgorithmSha256
	}
	return ""
}

func (s *S3Store) sse() (types.ServerSideEncryption, *string) {
	switch s.cfg.SSE {
	case "aes256":
		return types.ServerSideEncryptionAes256, nil
	case "aws:kms":
		var key *string
		if s.cfg.KMSKeyID != "" {
			key = aws.String(s.cfg.KMSKeyID)
		}
		return types.ServerSideEncryptionAwsKms, key
	}
	return "", nil
}

// storageClass is empty for STANDARD, which S3 applies anyway; some
// S3-compatible servers refuse the header.
func (s *S3Store) storageClass() types.StorageClass {
	if s.cfg.StorageClass == "STANDARD" {
		return ""
	}
	return types.StorageClass(s.cfg.StorageClass)
}

// Put uploads size bytes of body to key.
func (s *S3Store) Put(ctx context.Context, key string, body io.ReaderAt, size int64) error {
	if size <= s.cfg.PartBytes {
		return s.putObject(ctx, key, io.NewSectionReader(body, 0, size), size)
	}
	return s.putMultipart(ctx, key, body, size)
}

func (s *S3Store) putObject(ctx context.Context, key string, body io.ReadSeeker, size int64) error {
	sse, kms := s.sse()
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:               &s.bucket,
		Key:                  &key,
		Body:                 body,
		ContentLength:        aws.Int64(size),
		ContentType:          aws.String(contentTypeOf(key)),
		ChecksumAlgorithm:    s.checksum(),
		ServerSideEncryption: sse,
		SSEKMSKeyId:          kms,
		StorageClass:         s.storageClass(),
	})
	if err != nil {
		return s.explain("PutObject", key, err)
	}
	return nil
}

func (s *S3Store) putMultipart(ctx context.Context, key string, body io.ReaderAt, size int64) error {
	// S3 takes at most 10000 parts; grow the part for huge files.
	partBytes := max(s.cfg.PartBytes, (size+maxParts-1)/maxParts)
	n := int((size + partBytes - 1) / partBytes)
	sse, kms := s.sse()
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:               &s.bucket,
		Key:                  &key,
		ContentType:          aws.String(contentTypeOf(key)),
		ChecksumAlgorithm:    s.checksum(),
		ServerSideEncryption: sse,
		SSEKMSKeyId:          kms,
		StorageClass:         s.storageClass(),
	})
	if err != nil {
		return s.explain("CreateMultipartUpload", key, err)
	}
	uploadID := created.UploadId
	parts := make([]types.CompletedPart, n)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
		slots    = make(chan struct{}, s.cfg.PartConcurrency)
	)
	for i := range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			off := int64(i) * partBytes
			part, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
				Bucket:            &s.bucket,
				Key:               &key,
				UploadId:          uploadID,
				PartNumber:        aws.Int32(int32(i + 1)),
				Body:              io.NewSectionReader(body, off, min(partBytes, size-off)),
				ContentLength:     aws.Int64(min(partBytes, size-off)),
				ChecksumAlgorithm: s.checksum(),
			})
			if err != nil {
				once.Do(func() {
					firstErr = s.explain(fmt.Sprintf("UploadPart %d/%d", i+1, n), key, err)
					cancel()
				})
				return
			}
			parts[i] = types.CompletedPart{
				PartNumber:     aws.Int32(int32(i + 1)),
				ETag:           part.ETag,
				ChecksumCRC32:  part.ChecksumCRC32,
				ChecksumCRC32C: part.ChecksumCRC32C,
				ChecksumSHA256: part.ChecksumSHA256,
			}
		})
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr == nil {
		failpointStoring(ctx, key)
		_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket:          &s.bucket,
			Key:             &key,
			UploadId:        uploadID,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		})
		if err == nil {
			return nil
		}
		firstErr = s.explain("CompleteMultipartUpload", key, err)
	}
	// Parts of an abandoned upload are billed until aborted; abort even when
	// ctx is done. A failed abort is left to the bucket's lifecycle rule
	// (AbortIncompleteMultipartUpload), which docs/eks.md recommends.
	abortCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer stop()
	s.client.AbortMultipartUpload(abortCtx, &s3.AbortMultipartUploadInput{
		Bucket: &s.bucket, Key: &key, UploadId: uploadID,
	}, func(o *s3.Options) { o.RetryMaxAttempts = 3 })
	return firstErr
}

// Preflight checks that the bucket exists and takes our writes: a small
// PutObject under the prefix, a GetObject of it, then a best-effort delete. Put is all the
// sink needs (no s3:ListBucket, which HeadBucket would want), and unlike
// HeadBucket its error carries a code that tells a missing bucket from bad
// credentials. The probe's name starts with '_', so table readers skip it
// when the delete is not allowed.
//
// A member started during an S3 outage rides it out as running members do:
// connection errors, 5xx and throttling are retried with backoff (0.1 s
// doubling up to max_backoff) for up to preflight_timeout, and only then
// does the start fail. A missing bucket, bad credentials, a denied write or
// a wrong region fail at once: waiting cannot fix them.
func (s *S3Store) Preflight(ctx context.Context) error {
	deadline := time.Now().Add(s.cfg.PreflightTimeout)
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := s.preflightOnce(ctx)
		if err == nil || permanentS3Error(err) || ctx.Err() != nil {
			return err
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("%w (S3 did not answer for %d tries over sinks.files.s3.preflight_timeout, %s)", err, attempt, s.cfg.PreflightTimeout)
		}
		slog.Warn("s3: preflight failed; retrying", "attempt", attempt, "backoff", wait, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, s.cfg.MaxBackoff)
	}
}

// preflightOnce is one PUT and delete of the probe, without the SDK's
// retries: Preflight paces the tries itself.
func (s *S3Store) preflightOnce(ctx context.Context) error {
	once := func(o *s3.Options) { o.RetryMaxAttempts = 1 }
	probe := []byte("logstore preflight: checks that this process may write here\n")
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           &s.probeKey,
		Body:          bytes.NewReader(probe),
		ContentLength: aws.Int64(int64(len(probe))),
		ContentType:   aws.String("text/plain"),
	}, once)
	if err != nil {
		return s.explain("preflight PutObject", s.probeKey, err)
	}
	// The pipeline reads its resume records back (_logstore/resume/).
	if _, err := s.Get(ctx, s.probeKey); err != nil {
		return fmt.Errorf("%w; logstore reads back the resume records it keeps under _logstore/: allow s3:GetObject on the prefix", err)
	}
	s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &s.probeKey}, once)
	return nil
}

// permanentS3Error reports whether an S3 answer says something only a
// change of config or permissions can fix: a 4xx other than timeout and
// throttling, or no credentials at all.
func permanentS3Error(err error) bool {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		st := re.HTTPStatusCode()
		return st >= 300 && st < 500 && st != http.StatusRequestTimeout && st != http.StatusTooManyRequests
	}
	return strings.Contains(err.Error(), "failed to retrieve credentials") || strings.Contains(err.Error(), "no EC2 IMDS role found")
}

// explain turns an SDK error into one that names the bucket and says what
// to check.
func (s *S3Store) explain(op, key string, err error) error {
	where := fmt.Sprintf("s3://%s", s.bucket)
	if key != "" {
		where += "/" + key
	}
	if s.endpoint != "" {
		where += " at " + s.endpoint
	}
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	code := ""
	var api smithy.APIError
	if errors.As(err, &api) {
		code = api.ErrorCode()
	}
	switch {
	case code == "NoSuchBucket":
		return fmt.Errorf("s3: bucket %q does not exist (%s, %s): create it or fix sinks.files.url: %w", s.bucket, op, where, err)
	// XAdminUserNotFound is versitygw's answer (a 404) to an unknown access key.
	case slices.Contains([]string{"InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "XAdminUserNotFound"}, code):
		return fmt.Errorf("s3: access denied to bucket %q (%s, %s): the credentials are not valid (%s): check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, the profile or the pod's role: %w", s.bucket, op, where, code, err)
	case code == "AccessDenied" || status == http.StatusForbidden:
		return fmt.Errorf("s3: access denied to bucket %q (%s, %s): the credentials may not use it; the policy must allow s3:PutObject (and s3:AbortMultipartUpload) on its keys, and kms:GenerateDataKey with SSE-KMS: %w", s.bucket, op, where, err)
	case code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed" || status == http.StatusMovedPermanently:
		return fmt.Errorf("s3: bucket %q is in another region than %q (%s): set sinks.files.s3.region: %w", s.bucket, s.client.Options().Region, op, err)
	case strings.Contains(err.Error(), "failed to retrieve credentials") || strings.Contains(err.Error(), "no EC2 IMDS role found"):
		return fmt.Errorf("s3: no AWS credentials for bucket %q (%s): set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE, or give the pod or instance a role: %w", s.bucket, op, err)
	}
	return fmt.Errorf("s3: %s %s: %w", op, where, err)
}

// leftoverListTimeout bounds the start's listing of unfinished uploads:
// the preflight has just waited S3 out, and a start must not hang on a
// list that only saves storage.
const leftoverListTimeout = 30 * time.Second

// sweepLeftovers lists the unfinished multipart uploads of Parquet files
// below prefix, aborts those older than leftoverMaxAge and keeps the rest
// in mind for the partitions' owners. The list needs
// s3:ListBucketMultipartUploads; without it the uploads crashed writers
// leave wait for the bucket's lifecycle rule (docs/eks.md).
func (s *S3Store) sweepLeftovers(ctx context.Context, prefix string) int {
	ctx, cancel := context.WithTimeout(ctx, leftoverListTimeout)
	defer cancel()
	in := &s3.ListMultipartUploadsInput{Bucket: &s.bucket}
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		in.Prefix = aws.String(prefix + "/")
	}
	now := time.Now()
	var young []types.MultipartUpload
	removed := 0
	for {
		out, err := s.client.ListMultipartUploads(ctx, in, func(o *s3.Options) { o.RetryMaxAttempts = 3 })
		if err != nil {
			slog.Warn("s3: cannot list unfinished multipart uploads, so those crashed writers left stay until the bucket's lifecycle rule (AbortIncompleteMultipartUpload) aborts them; allow s3:ListBucketMultipartUploads to abort them at start",
				"bucket", s.bucket, "err", err)
			break
		}
		for _, u := range out.Uploads {
			if !outputFile(aws.ToString(u.Key)) {
				continue // not logstore's
			}
			if u.Initiated != nil && now.Sub(*u.Initiated) >= leftoverMaxAge && s.abort(ctx, u) == nil {
				removed++
				continue
			}
			young = append(young, u)
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	s.leftovers.keep(young)
	if removed > 0 {
		slog.Info("s3: aborted multipart uploads left by crashed writers", "bucket", s.bucket, "uploads", removed)
	}
	return removed
}

// removeLeftoversOf aborts the partition's uploads the start found. S3
// has no lock to tell a living writer: one still uploading (a member the
// group already replaced) fails its upload and stores the file again.
func (s *S3Store) removeLeftoversOf(ctx context.Context, owned func(key string) bool) int {
	return s.leftovers.sift(func(u types.MultipartUpload) bool {
		return owned(aws.ToString(u.Key))
	}, func(u types.MultipartUpload) error {
		err := s.abort(ctx, u)
		if err != nil {
			slog.Warn("s3: aborting a multipart upload a crashed writer left", "key", aws.ToString(u.Key), "err", err)
		}
		return err
	})
}

// abort ends an unfinished upload; one already gone is no error.
func (s *S3Store) abort(ctx context.Context, u types.MultipartUpload) error {
	_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: u.Key, UploadId: u.UploadId},
		func(o *s3.Options) { o.RetryMaxAttempts = 3 })
	var gone *types.NoSuchUpload
	if errors.As(err, &gone) {
		return nil
	}
	return err
}
