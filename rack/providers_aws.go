package rack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

// The variables the AWS SDKs read to move or switch off IMDS.
const (
	envIMDSEndpoint     = "AWS_EC2_METADATA_SERVICE_ENDPOINT"
	envIMDSEndpointMode = "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE"
	envIMDSDisabled     = "AWS_EC2_METADATA_DISABLED"
)

// findIMDS asks the EC2 instance metadata service for the zone name and the
// zone ID. It speaks IMDSv2 only unless rack.imds_v1_fallback is set: IMDSv1
// is the request-forgery-prone flow that instances increasingly refuse, and
// a silent fallback would hide the hop-limit problem that containers on EC2
// actually have (the token's answer is dropped one hop short, so the
// request times out; see onTimeout).
func findIMDS(ctx context.Context, cfg Config) (Identity, error) {
	if strings.EqualFold(os.Getenv(envIMDSDisabled), "true") {
		return Identity{}, absentf("%s is true", envIMDSDisabled)
	}
	defaultEndpoint := linkLocalMetadata
	mode := imds.EndpointModeStateIPv4
	if strings.EqualFold(os.Getenv(envIMDSEndpointMode), "IPv6") {
		defaultEndpoint, mode = "http://[fd00:ec2::254]", imds.EndpointModeStateIPv6
	}
	ep := endpointFrom(envIMDSEndpoint, defaultEndpoint)
	// The SDK gives up on an answer after 500ms, because in a container
	// behind a hop limit of 1 the token's answer never comes; we do the same.
	wire := &wireWatcher{client: metadataClient(500 * time.Millisecond)}
	fallback := aws.FalseTernary
	if cfg.IMDSv1Fallback {
		fallback = aws.TrueTernary
	}
	client := imds.New(imds.Options{
		Endpoint:       ep.base,
		EndpointMode:   mode,
		HTTPClient:     wire,
		EnableFallback: fallback,
		// One try: the provider timeout, not the SDK's retries, decides how
		// long start-up waits.
		Retryer: aws.NopRetryer{},
	})
	name, err := imdsValue(ctx, client, "placement/availability-zone")
	if err != nil {
		err = wire.cause(err)
		if isTimeout(err) && dialFailure(err) == nil {
			return Identity{}, fmt.Errorf("IMDS at %s took the connection but did not answer: %w", ep.base, err)
		}
		var status *httpStatusError
		if errors.As(err, &status) && status.status == http.StatusForbidden && strings.HasSuffix(status.url, "/api/token") {
			// IMDS answers the token's PUT with 403 when it is switched off
			// on the instance, or when the request carries X-Forwarded-For:
			// it went through a proxy (a mesh sidecar, an egress proxy),
			// which IMDSv2 refuses by design. Neither is about IMDSv1.
			return Identity{}, fmt.Errorf("IMDS at %s refused the IMDSv2 session token: %w; IMDS answers 403 when it is disabled on the instance (its metadata options' http-endpoint: enable it) or when the request passed a proxy that added X-Forwarded-For (a mesh sidecar or egress proxy: exempt 169.254.169.254 from it); or set rack.static (LOGSTORE_RACK) or use the Kubernetes node labels provider", ep.base, err)
		}
		if !cfg.IMDSv1Fallback && errors.As(err, &status) && strings.HasSuffix(status.url, "/api/token") {
			return Identity{}, fmt.Errorf("IMDS at %s refused the IMDSv2 session token: %w; require IMDSv2 on the instance (http-tokens required), or set rack.imds_v1_fallback: true to allow IMDSv1", ep.base, err)
		}
		return Identity{}, ep.notHere(fmt.Errorf("IMDS at %s: %w", ep.base, err), "on EC2")
	}
	// An IMDS without the zone ID (an emulator, say) still names the zone,
	// which serves self-managed clusters.
	id, err := imdsValue(ctx, client, "placement/availability-zone-id")
	if err != nil && wire.lastStatus() != http.StatusNotFound {
		return Identity{}, fmt.Errorf("IMDS at %s: zone ID: %w", ep.base, wire.cause(err))
	}
	return Identity{Name: name, ID: id}, nil
}

// wireWatcher is the IMDS client's HTTP client, remembering what the last
// request met on the wire. The SDK wraps a failed token request in an error
// without Unwrap, which hides both a timeout and a refusal from errors.As.
type wireWatcher struct {
	client *http.Client
	mu     sync.Mutex
	method string
	url    string
	err    error
	status int
}

func (w *wireWatcher) Do(req *http.Request) (*http.Response, error) {
	resp, err := w.client.Do(req)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.method, w.url, w.err, w.status = req.Method, req.URL.String(), err, 0
	if err == nil {
		w.status = resp.StatusCode
	}
	return resp, err
}

func (w *wireWatcher) lastStatus() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}

// cause is the last request's own failure when it had one, else sdkErr.
func (w *wireWatcher) cause(sdkErr error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.err != nil:
		return w.err
	case w.status >= 300:
		return &httpStatusError{method: w.method, url: w.url, status: w.status}
	}
	return sdkErr
}

func imdsValue(ctx context.Context, client *imds.Client, path string) (string, error) {
	out, err := client.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		return "", err
	}
	defer out.Content.Close()
	b, err := io.ReadAll(io.LimitReader(out.Content, maxMetadataBody))
	return strings.TrimSpace(string(b)), err
}

// envECSMetadata is set by the ECS agent in every task container, on EC2 and
// on Fargate.
const envECSMetadata = "ECS_CONTAINER_METADATA_URI_V4"

// findECSTask reads the task's zone from ECS task metadata v4. It names the
// zone only (AvailabilityZone); the zone ID needs IMDS, which Fargate lacks.
func findECSTask(ctx context.Context, _ Config) (Identity, error) {
	base := strings.TrimRight(os.Getenv(envECSMetadata), "/")
	if base == "" {
		return Identity{}, absentf("not in an ECS task (%s is not set)", envECSMetadata)
	}
	body, err := getBody(ctx, metadataClient(0), base+"/task", nil)
	if err != nil {
		return Identity{}, fmt.Errorf("ECS task metadata: %w", err)
	}
	var task struct {
		AvailabilityZone string `json:"AvailabilityZone"`
	}
	if err := json.Unmarshal(body, &task); err != nil {
		return Identity{}, fmt.Errorf("ECS task metadata at %s/task is not JSON: %w", base, err)
	}
	if task.AvailabilityZone == "" {
		return Identity{}, fmt.Errorf("ECS task metadata at %s/task has no AvailabilityZone (an old ECS agent?)", base)
	}
	return Identity{Name: task.AvailabilityZone}, nil
}
