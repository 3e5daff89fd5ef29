package mskiam

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/segmentio/kafka-go/sasl"
)

// The AWS_MSK_IAM payload for fixed credentials and a fixed time: every
// field MSK reads, and a signature recomputed here from the SigV4 rules
// (canonical request → string to sign → HMAC chain), not by the SDK.
func TestSignedPayload(t *testing.T) {
	const (
		keyID, secretKey, token = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token-example"
		region, host            = "ap-northeast-2", "b-1.logs.abc123.c2.kafka.ap-northeast-2.amazonaws.com:9098"
	)
	at := time.Date(2026, 12, 1, 8, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		token string
	}{
		{"long-term keys", ""},
		{"session credentials (IRSA, instance profile)", token},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := FromConfig(aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider(keyID, secretKey, tc.token)})
			if err != nil {
				t.Fatal(err)
			}
			m.SignTime = at
			ctx := sasl.WithMetadata(context.Background(), &sasl.Metadata{Host: strings.Split(host, ":")[0], Port: 9098})
			if m.Name() != "AWS_MSK_IAM" {
				t.Errorf("mechanism %q", m.Name())
			}
			_, ir, err := m.Start(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]string
			if err := json.Unmarshal(ir, &got); err != nil {
				t.Fatalf("payload is not a JSON object of strings: %v\n%s", err, ir)
			}
			signedHost := got["host"]
			want := map[string]string{
				"version":             "2020_10_22",
				"action":              "kafka-cluster:Connect",
				"x-amz-algorithm":     "AWS4-HMAC-SHA256",
				"x-amz-credential":    keyID + "/20261201/" + region + "/kafka-cluster/aws4_request",
				"x-amz-date":          "20261201T083000Z",
				"x-amz-signedheaders": "host",
				"x-amz-expires":       "300",
			}
			if tc.token != "" {
				want["x-amz-security-token"] = tc.token
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			if signedHost != strings.Split(host, ":")[0] {
				t.Errorf("host = %q, want the broker's host %q", signedHost, strings.Split(host, ":")[0])
			}
			if !strings.HasPrefix(got["user-agent"], "kafka-go/") {
				t.Errorf("user-agent = %q", got["user-agent"])
			}
			if _, ok := got["x-amz-security-token"]; ok != (tc.token != "") {
				t.Errorf("x-amz-security-token present: %v, want %v", ok, tc.token != "")
			}
			if strings.Contains(string(ir), secretKey) {
				t.Error("the payload carries the secret key")
			}
			if sig := sigV4(secretKey, region, signedHost, got); got["x-amz-signature"] != sig {
				t.Errorf("x-amz-signature = %q, want %q", got["x-amz-signature"], sig)
			}
		})
	}
}

// sigV4 computes the signature of the presigned GET kafka://host/?Action=...
// that the payload describes.
func sigV4(secretKey, region, host string, p map[string]string) string {
	q := url.Values{}
	q.Set("Action", p["action"])
	for _, k := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-Security-Token", "X-Amz-SignedHeaders"} {
		if v, ok := p[strings.ToLower(k)]; ok {
			q.Set(k, v)
		}
	}
	query := strings.ReplaceAll(q.Encode(), "+", "%20") // Encode sorts by key
	const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	canonical := strings.Join([]string{"GET", "/", query, "host:" + host + "\n", "host", emptySHA256}, "\n")
	day := p["x-amz-date"][:8]
	scope := day + "/" + region + "/kafka-cluster/aws4_request"
	hash := sha256.Sum256([]byte(canonical))
	toSign := strings.Join([]string{"AWS4-HMAC-SHA256", p["x-amz-date"], scope, hex.EncodeToString(hash[:])}, "\n")
	key := []byte("AWS4" + secretKey)
	for _, part := range []string{day, region, "kafka-cluster", "aws4_request", toSign} {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(part))
		key = mac.Sum(nil)
	}
	return hex.EncodeToString(key)
}
