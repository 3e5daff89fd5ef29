package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// TestAWSCredentialsSpeakIMDSv2Only: against an instance that serves role
// credentials over IMDSv1 only, the SDK's chain as logstore sets it up
// (S3, MSK IAM) gets nothing and sends no request without a session token,
// unless AWS_EC2_METADATA_V1_DISABLED=false opts in.
func TestAWSCredentialsSpeakIMDSv2Only(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     string // AWS_EC2_METADATA_V1_DISABLED before start; "unset" for none
		wantKey string
	}{
		{"default", "unset", ""},
		{"AWS_EC2_METADATA_V1_DISABLED=false", "false", "AKIDV1ONLY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tokenless atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPut {
					http.NotFound(w, r) // no IMDSv2 on this instance
					return
				}
				if r.Header.Get("X-Aws-Ec2-Metadata-Token") == "" {
					tokenless.Add(1)
				}
				switch r.URL.Path {
				case "/latest/meta-data/iam/security-credentials/":
					fmt.Fprint(w, "logstore-role")
				case "/latest/meta-data/iam/security-credentials/logstore-role":
					fmt.Fprint(w, `{"Code":"Success","Type":"AWS-HMAC","AccessKeyId":"AKIDV1ONLY","SecretAccessKey":"s","Token":"t","Expiration":"2099-01-01T00:00:00Z"}`)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			dir := t.TempDir()
			for k, v := range map[string]string{
				"AWS_EC2_METADATA_SERVICE_ENDPOINT": srv.URL, "AWS_EC2_METADATA_DISABLED": "",
				"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
				"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
				"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_ROLE_ARN": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
				"AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_REGION": "eu-west-1",
				"AWS_EC2_METADATA_V1_DISABLED": tc.env,
			} {
				t.Setenv(k, v)
			}
			if tc.env == "unset" {
				_ = os.Unsetenv("AWS_EC2_METADATA_V1_DISABLED")
			}
			imdsV2OnlyForAWSCredentials()
			cfg, err := awsconfig.LoadDefaultConfig(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			creds, err := cfg.Credentials.Retrieve(context.Background())
			if creds.AccessKeyID != tc.wantKey {
				t.Errorf("got access key %q (err %v), want %q", creds.AccessKeyID, err, tc.wantKey)
			}
			if (tokenless.Load() > 0) != (tc.wantKey != "") {
				t.Errorf("%d requests without a session token", tokenless.Load())
			}
		})
	}
}
