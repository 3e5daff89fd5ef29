// Package mskiam builds the AWS_MSK_IAM SASL mechanism of Amazon MSK's IAM
// listener (port 9098): the client presigns a SigV4 "kafka-cluster:Connect"
// request for the broker's host with the AWS SDK's credentials, and sends
// the signed fields as a JSON object in one SaslAuthenticate round trip.
// kafka-go's aws_msk_iam_v2 does the signing; this package picks the
// credentials and the region and refuses to start without a region.
package mskiam

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	msk "github.com/segmentio/kafka-go/sasl/aws_msk_iam_v2"
)

// New signs with the SDK's default credential chain: IRSA or EKS Pod
// Identity on EKS, the instance profile on EC2/EMR (IMDSv2), environment
// variables elsewhere. The credentials are cached and refreshed by the SDK
// before they expire; each authentication signs with the current ones.
func New(ctx context.Context) (*msk.Mechanism, error) {
	cfg, err := Config(ctx)
	if err != nil {
		return nil, err
	}
	return msk.NewMechanism(cfg), nil
}

// Config is the SDK's default configuration, checked for what signing
// needs: a region and credentials. `logstore status` signs with it through
// franz-go's mechanism.
func Config(ctx context.Context) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading AWS credentials for MSK IAM: %w", err)
	}
	return cfg, check(cfg)
}

// FromConfig signs with cfg's credentials for cfg's region.
func FromConfig(cfg aws.Config) (*msk.Mechanism, error) {
	if err := check(cfg); err != nil {
		return nil, err
	}
	return msk.NewMechanism(cfg), nil
}

func check(cfg aws.Config) error {
	if cfg.Region == "" {
		return fmt.Errorf("MSK IAM signs for the cluster's region, and none is set: set AWS_REGION (e.g. AWS_REGION=ap-northeast-2)")
	}
	if cfg.Credentials == nil {
		return fmt.Errorf("MSK IAM needs AWS credentials and the SDK found none: give the pod a role (IRSA, EKS Pod Identity) or set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY")
	}
	return nil
}
