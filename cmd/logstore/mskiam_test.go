package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go/sasl"

	"github.com/logstore/logstore/pipeline"
)

// TestMSKIAMWiredFromConfig: `sasl.mechanism: aws-msk-iam` gives the group
// dialer and the transport the AWS_MSK_IAM mechanism, signing with the
// credentials and region of the environment; without a region it refuses
// to start instead of being refused by every broker.
func TestMSKIAMWiredFromConfig(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDWIRED", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_REGION": "ap-northeast-2",
	} {
		t.Setenv(k, v)
	}
	cfg, err := pipeline.Parse("msk.yaml", []byte(`kafka:
  brokers: [b-1.msk.example:9098]
  topics: [logs]
  group: g
  tls: {enabled: true}
  sasl: {mechanism: aws-msk-iam}
sinks:
  files: {url: /tmp/unused}
dead_letter: {on_error: skip}
`))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pipeline.NewClients(context.Background(), cfg.Kafka)
	if err != nil {
		t.Fatal(err)
	}
	if conn.Dialer.TLS == nil {
		t.Error("MSK IAM without TLS")
	}
	// The transport dials through the dialer's TLS and SASL (renewing
	// sessions), not its own.
	if conn.Transport.Dial == nil || conn.Transport.TLS != nil || conn.Transport.SASL != nil {
		t.Error("the transport does not dial through the session layer")
	}
	for name, mech := range map[string]sasl.Mechanism{"dialer": conn.Dialer.SASLMechanism} {
		if mech == nil || mech.Name() != "AWS_MSK_IAM" {
			t.Fatalf("%s mechanism: %v", name, mech)
		}
		ctx := sasl.WithMetadata(context.Background(), &sasl.Metadata{Host: "b-1.msk.example", Port: 9098})
		_, ir, err := mech.Start(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var p map[string]string
		if err := json.Unmarshal(ir, &p); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p["x-amz-credential"], "AKIDWIRED/") || !strings.Contains(p["x-amz-credential"], "/ap-northeast-2/kafka-cluster/") || p["host"] != "b-1.msk.example" {
			t.Errorf("%s signs %v", name, p)
		}
	}

	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	if _, err := pipeline.NewClients(context.Background(), cfg.Kafka); err == nil || !strings.Contains(err.Error(), "set AWS_REGION") {
		t.Errorf("no region: err %v, want one saying to set AWS_REGION", err)
	}
}
