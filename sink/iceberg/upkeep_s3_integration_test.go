//go:build integration

package iceberg

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/sink"
)

// TestUpkeepRemovesOrphansOnS3: with the warehouse on S3 (the project's
// S3 server), the upkeep lists the table's folder, deletes the old files
// no snapshot references (a killed write's data file, one in a partition
// folder, a killed commit's manifest), keeps a young one (a commit under
// way) and every file a snapshot references, though all of those are as
// old as the orphans; pyiceberg then reads every row once. On the SQLite
// catalog and on the REST catalog, whose server (Java's S3FileIO) writes
// the table's metadata files and chooses its location.
func TestUpkeepRemovesOrphansOnS3(t *testing.T) {
	bucket := testkit.S3Env(t, "upkeep")
	for _, catalog := range []string{"sql", "rest"} {
		t.Run(catalog, func(t *testing.T) { upkeepOnS3(t, bucket, catalog) })
	}
}

func upkeepOnS3(t *testing.T, bucket, catalog string) {
	cfg := testConfig(t, t.TempDir())
	cfg.Catalog.Warehouse = "s3://" + bucket + "/warehouse"
	readArgs := []string{"--s3-endpoint", os.Getenv("AWS_ENDPOINT_URL_S3"), "--s3-key", os.Getenv("AWS_ACCESS_KEY_ID"), "--s3-secret", os.Getenv("AWS_SECRET_ACCESS_KEY")}
	if catalog == "rest" {
		uri := testkit.IcebergREST(t, bucket)
		cfg.Catalog = sink.IcebergCatalog{Type: "rest", Name: cfg.Catalog.Name, URI: uri}
		cfg.Table = "logs.rest_upkeep"
	}
	tb := openTestTable(t, cfg)
	ctx := context.Background()
	const commits, retain = 8, 3
	for i := range int64(commits) {
		if err := tb.Write(ctx, testBatch(0, i*5, i*5+4)); err != nil {
			t.Fatal(err)
		}
	}
	// Partition folders whose names are escaped (the files sink's
	// url.PathEscape): the keys S3 lists must match the paths the
	// manifests hold, or a referenced file would look orphaned.
	odd := testBatch(1, 0, 3)
	for i, level := range []string{"a b", "x/y", "50%", "ü"} {
		odd.Rows[i][2] = level
	}
	if err := tb.Write(ctx, odd); err != nil {
		t.Fatal(err)
	}
	location := tableOf(t, tb).Location()
	prefix, ok := strings.CutPrefix(location, "s3://"+bucket+"/")
	if !ok {
		t.Fatalf("table location %s is not in bucket %s", location, bucket)
	}
	client := testkit.S3Client(t)
	put := func(key string) {
		t.Helper()
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("PAR1")}); err != nil {
			t.Fatal(err)
		}
	}
	oldOrphans := []string{
		prefix + "/data/killed-write.parquet",
		prefix + "/data/ts_day=2026-11-29/level=info/killed-write.parquet",
		prefix + "/metadata/killed-commit-m0.avro",
	}
	for _, k := range oldOrphans {
		put(k)
	}
	// Everything so far, referenced or not, two days old.
	old := time.Now().Add(-48 * time.Hour)
	root := testkit.S3ObjectFile(t, bucket, prefix)
	if err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(path, old, old)
	}); err != nil {
		t.Fatalf("ageing the bucket's objects on the S3 server's disk: %v", err)
	}
	young := prefix + "/data/under-way.parquet"
	put(young)
	if lm := lastModified(t, client, bucket, oldOrphans[0]); time.Since(lm) < 47*time.Hour {
		t.Fatalf("the S3 server reports %s as modified at %s: ageing its file did not age the object", oldOrphans[0], lm)
	}

	u := sink.TableUpkeep{SnapshotMaxAge: 0, RetainLast: retain, OrphanMinAge: new(24 * time.Hour)}
	res, err := Upkeep(ctx, tb.cat, cfg.Table, u, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if res.SnapshotsBefore != commits+1 || res.SnapshotsAfter != retain || res.Orphans != len(oldOrphans) {
		t.Errorf("upkeep: %+v, want %d snapshots to %d and %d orphans deleted", res, commits+1, retain, len(oldOrphans))
	}
	for _, k := range oldOrphans {
		if exists(t, client, bucket, k) {
			t.Errorf("the 48h-old orphan %s is still there", k)
		}
	}
	if !exists(t, client, bucket, young) {
		t.Errorf("the young orphan %s was deleted", young)
	}

	r := readTable(t, cfg, readArgs...)
	wantOnce(t, r, testBatch(0, 0, commits*5-1), odd)
	if r.Snapshots != retain {
		t.Errorf("%d snapshots, want %d", r.Snapshots, retain)
	}
	t.Logf("upkeep %+v; %d data files, e.g. %s", res, len(r.Files), r.Files[len(r.Files)-1])
	for _, f := range r.Files {
		k, ok := strings.CutPrefix(f, "s3://"+bucket+"/")
		if !ok || !exists(t, client, bucket, k) {
			t.Errorf("data file %s of the current snapshot is gone", f)
		}
	}
}

func lastModified(t *testing.T, c *s3.Client, bucket, key string) time.Time {
	t.Helper()
	h, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("HEAD %s: %v", key, err)
	}
	return aws.ToTime(h.LastModified)
}

func exists(t *testing.T, c *s3.Client, bucket, key string) bool {
	t.Helper()
	_, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	var nf *types.NotFound
	if errors.As(err, &nf) {
		return false
	}
	if err != nil {
		t.Fatalf("HEAD %s: %v", key, err)
	}
	return true
}
