package iceberg

import (
	"context"
	"net/url"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
)

// TestS3IOKeepsOneStorePerPlaceAsCredentialsRotate: iceberg-go asks for an
// IO at every table load and commit, and a REST catalog may vend new
// temporary credentials each time. The same settings reuse the store; new
// credentials replace it, so a long job does not gather one S3 client per
// token; a token without a key is refused.
func TestS3IOKeepsOneStorePerPlaceAsCredentialsRotate(t *testing.T) {
	u, _ := url.Parse("s3://rotate-bucket/warehouse/t")
	open := func(token string) *s3IO {
		t.Helper()
		fsys, err := openS3IO(context.Background(), u, map[string]string{
			icebergio.S3EndpointURL:     "http://127.0.0.1:1",
			icebergio.S3Region:          "us-east-1",
			icebergio.S3AccessKeyID:     "AKIA",
			icebergio.S3SecretAccessKey: "secret",
			icebergio.S3SessionToken:    token,
		})
		if err != nil {
			t.Fatal(err)
		}
		return fsys.(*s3IO)
	}
	first := open("t1")
	if again := open("t1"); again.store != first.store {
		t.Error("the same settings made a second store")
	}
	for _, tok := range []string{"t2", "t3", "t4"} {
		if o := open(tok); o.store == first.store {
			t.Errorf("token %s reused the store of token t1", tok)
		}
	}
	s3Stores.Lock()
	n := 0
	for k := range s3Stores.m {
		if k.bucket == "rotate-bucket" {
			n++
		}
	}
	s3Stores.Unlock()
	if n != 1 {
		t.Errorf("%d stores kept for one bucket after 4 tokens; want 1", n)
	}
	if _, err := openS3IO(context.Background(), u, map[string]string{icebergio.S3SessionToken: "t"}); err == nil {
		t.Error("a session token without an access key was accepted")
	}
}
