package rack

import (
	"fmt"
	"time"
)

// Config is the `rack` section: how a worker finds its zone and how the
// group places partitions.
type Config struct {
	// Static is the rack to use, skipping detection. Empty means detect.
	Static string `yaml:"static"`
	// Providers is the detection chain, tried in order.
	Providers []string `yaml:"providers"`
	// ProviderTimeout bounds each provider.
	ProviderTimeout time.Duration `yaml:"provider_timeout"`
	// Budget bounds the whole chain.
	Budget time.Duration `yaml:"budget"`
	// Match picks which identity (zone name or zone ID) to use: auto|name|id|as-is.
	Match string `yaml:"match"`
	// LabelsFile is the Kubernetes Downward API labels file.
	LabelsFile string `yaml:"labels_file"`
	// FollowerFetching says whether brokers serve fetches from followers:
	// auto|on|off.
	FollowerFetching string `yaml:"follower_fetching"`
	// Balancer is the group balancer: rack-aware (default) or range/round-robin
	// for comparison.
	Balancer string `yaml:"balancer"`
	// IMDSv1Fallback lets aws-imds fall back to IMDSv1 (requests without a
	// session token) when the token request is refused. Off: IMDSv1 is
	// the flow server-side request forgery abuses.
	IMDSv1Fallback bool `yaml:"imds_v1_fallback"`
}

// DefaultProviders is the detection chain when the config names none.
var DefaultProviders = []string{"static", "env", "k8s-labels", "k8s-node", "aws-imds", "aws-ecs", "gcp", "azure"}

// SetDefaults fills the zero fields.
func (c *Config) SetDefaults() {
	if len(c.Providers) == 0 {
		c.Providers = append([]string(nil), DefaultProviders...)
	}
	setDefault(&c.ProviderTimeout, 2*time.Second)
	setDefault(&c.Budget, 5*time.Second)
	setDefault(&c.Match, "auto")
	setDefault(&c.LabelsFile, "/etc/podinfo/labels")
	setDefault(&c.FollowerFetching, "auto")
	setDefault(&c.Balancer, "rack-aware")
}

// Validate checks the section; errors name the key below `rack`.
func (c *Config) Validate() error {
	for i, p := range c.Providers {
		if !oneOf(p, DefaultProviders...) {
			return keyErr(fmt.Sprintf("providers[%d]", i), "unknown provider %q; use one of %v", p, DefaultProviders)
		}
	}
	if c.ProviderTimeout < 0 || c.Budget < 0 {
		return keyErr("budget", "timeouts must be positive")
	}
	if !oneOf(c.Match, "auto", "name", "id", "as-is") {
		return keyErr("match", "%q is not one of auto, name, id, as-is", c.Match)
	}
	if !oneOf(c.FollowerFetching, "auto", "on", "off") {
		return keyErr("follower_fetching", "%q is not one of auto, on, off", c.FollowerFetching)
	}
	if !oneOf(c.Balancer, "rack-aware", "range", "round-robin") {
		return keyErr("balancer", "%q is not one of rack-aware, range, round-robin", c.Balancer)
	}
	return nil
}

func oneOf(s string, allowed ...string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}

// KeyError is a config error tied to a key of the section; the loader turns
// Key into a file:line.
type KeyError struct {
	Key string
	Msg string
}

func (e *KeyError) Error() string     { return e.Key + ": " + e.Msg }
func (e *KeyError) ConfigKey() string { return e.Key }

func keyErr(key, format string, args ...any) error {
	return &KeyError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// setDefault sets *p to v when it holds its zero value.
func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}
