package rack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// provider looks for this worker's zone in one place. It returns an
// *absentError when the place is not there, so the chain moves on without
// calling it a failure.
type provider struct {
	find func(ctx context.Context, cfg Config) (Identity, error)
	// onTimeout tells the user what to do when the provider's endpoint takes
	// the connection but never answers.
	onTimeout string
}

// providers holds every name in DefaultProviders.
var providers = map[string]provider{
	"static":     {find: findStatic},
	"env":        {find: findEnv},
	"k8s-labels": {find: findPodLabels},
	"k8s-node":   {find: findNodeLabels},
	"aws-imds": {find: findIMDS, onTimeout: "in a container set the instance's IMDS hop limit to 2 " +
		"(aws ec2 modify-instance-metadata-options --http-put-response-hop-limit 2), or set rack.static"},
	"aws-ecs": {find: findECSTask},
	"gcp":     {find: findGCE},
	"azure":   {find: findAzure},
}

// envRack names this worker's rack, overriding every platform below it.
const envRack = "LOGSTORE_RACK"

func findStatic(_ context.Context, cfg Config) (Identity, error) {
	if cfg.Static == "" {
		return Identity{}, absentf("rack.static is not set")
	}
	return userGiven(cfg.Static), nil
}

func findEnv(context.Context, Config) (Identity, error) {
	v := strings.TrimSpace(os.Getenv(envRack))
	if v == "" {
		return Identity{}, absentf("%s is not set", envRack)
	}
	return userGiven(v), nil
}

// absentError says a provider's platform is not here.
type absentError struct{ msg string }

func (e *absentError) Error() string { return e.msg }

func absentf(format string, args ...any) error {
	return &absentError{msg: fmt.Sprintf(format, args...)}
}

// endpoint is where a provider asks: the platform's own address, or one an
// environment variable names (as the platforms' SDKs allow, and tests use).
type endpoint struct {
	base string
	// configured is true when the environment named the endpoint: then a
	// failure there is an error, not a sign that we run elsewhere.
	configured bool
}

func endpointFrom(envVar, platformDefault string) endpoint {
	if v := strings.TrimSpace(os.Getenv(envVar)); v != "" {
		if !strings.Contains(v, "://") {
			v = "http://" + v // GCE_METADATA_HOST is a host:port, not a URL
		}
		return endpoint{base: strings.TrimRight(v, "/"), configured: true}
	}
	return endpoint{base: platformDefault}
}

// notHere reads a failed request to a metadata endpoint the way a user needs
// it: at a platform's default link-local address, nothing listening or a
// refusal (another cloud's metadata server answering) means we run
// elsewhere; at a configured address it is an error to fix.
func (ep endpoint) notHere(err error, platform string) error {
	var status interface{ HTTPStatusCode() int }
	switch {
	case ep.configured:
		return err
	case dialFailure(err) != nil:
		return absentf("nothing answers at %s: not %s (%v)", ep.base, platform, dialFailure(err).Err)
	case errors.As(err, &status):
		return absentf("%s answered HTTP %d: not %s", ep.base, status.HTTPStatusCode(), platform)
	}
	return err
}

// get asks the metadata server at ep for path; what names the server in
// errors ("GCE metadata"), platform says where a refusal shows we are not.
func (ep endpoint) get(ctx context.Context, path string, header map[string]string, what, platform string) ([]byte, error) {
	body, err := getBody(ctx, metadataClient(0), ep.base+path, header)
	if err != nil {
		return nil, ep.notHere(fmt.Errorf("%s: %w", what, err), platform)
	}
	return body, nil
}

// dialFailure is the failed connect inside err, or nil.
func dialFailure(err error) *net.OpError {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return op
	}
	return nil
}

// linkLocalMetadata is where EC2, GCE and Azure all serve instance metadata.
const linkLocalMetadata = "http://169.254.169.254"

// linkLocalDialTimeout bounds the connect to a metadata server. One on the
// local link accepts in well under a millisecond, so a slow connect means
// there is none; the AWS SDK gives up after the same 250ms.
const linkLocalDialTimeout = 250 * time.Millisecond

// metadataClient talks to a metadata server on the local link. It never goes
// through an HTTP proxy: a proxy cannot reach this host's link-local address.
// headerTimeout, when not 0, bounds the wait for an answer's headers.
func metadataClient(headerTimeout time.Duration) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: linkLocalDialTimeout}).DialContext,
		ResponseHeaderTimeout: headerTimeout,
	}}
}

// maxMetadataBody caps what we read from an endpoint; a node object with many
// labels and annotations is tens of kilobytes.
const maxMetadataBody = 1 << 20

// httpStatusError is a non-200 answer. HTTPStatusCode matches the AWS SDK's
// errors so endpoint.notHere reads both the same way.
type httpStatusError struct {
	method string // "" is GET
	url    string
	status int
	body   string
}

func (e *httpStatusError) Error() string {
	method := e.method
	if method == "" {
		method = http.MethodGet
	}
	msg := fmt.Sprintf("%s %s: HTTP %d", method, e.url, e.status)
	if e.body != "" {
		msg += ": " + e.body
	}
	return msg
}

func (e *httpStatusError) HTTPStatusCode() int { return e.status }

// getBody GETs url with the given headers and returns the body of a 200
// answer; any other status is an *httpStatusError.
func getBody(ctx context.Context, client *http.Client, url string, header map[string]string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBody))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the answer: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		const maxShown = 200
		shown := strings.TrimSpace(string(body))
		if len(shown) > maxShown {
			shown = shown[:maxShown] + "…"
		}
		return nil, &httpStatusError{url: url, status: resp.StatusCode, body: shown}
	}
	return body, nil
}
