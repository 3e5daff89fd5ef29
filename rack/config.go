package rack

import (
	"fmt"
	"slices"
	"time"

	"github.com/logstore/logstore/internal/confkey"
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
	// Mode is aware (default) or blind: a rack-unaware baseline that sends
	// no rack in fetches and assigns rack-blind (see ModeBlind).
	Mode string `yaml:"mode"`
}

// DefaultProviders is the detection chain when the config names none.
var DefaultProviders = []string{"static", "env", "k8s-labels", "k8s-node", "aws-imds", "aws-ecs", "gcp", "azure"}

// SetDefaults fills the zero fields.
func (c *Config) SetDefaults() {
	if len(c.Providers) == 0 {
		c.Providers = append([]string(nil), DefaultProviders...)
	}
	confkey.Default(&c.ProviderTimeout, 2*time.Second)
	confkey.Default(&c.Budget, 5*time.Second)
	confkey.Default(&c.Match, "auto")
	confkey.Default(&c.LabelsFile, "/etc/podinfo/labels")
	confkey.Default(&c.FollowerFetching, "auto")
	confkey.Default(&c.Mode, ModeAware)
	if c.Mode == ModeBlind {
		confkey.Default(&c.Balancer, BalancerRoundRobin)
	}
	confkey.Default(&c.Balancer, BalancerRackAware)
}

// Validate checks the section; errors name the key below `rack`.
func (c *Config) Validate() error {
	for i, p := range c.Providers {
		if !slices.Contains(DefaultProviders, p) {
			return confkey.Errorf(fmt.Sprintf("providers[%d]", i), "unknown provider %q; use one of %v", p, DefaultProviders)
		}
	}
	if c.ProviderTimeout < 0 || c.Budget < 0 {
		return confkey.Errorf("budget", "timeouts must be positive")
	}
	if err := confkey.OneOf("match", c.Match, "auto", "name", "id", "as-is"); err != nil {
		return err
	}
	if err := confkey.OneOf("follower_fetching", c.FollowerFetching, "auto", "on", "off"); err != nil {
		return err
	}
	if err := confkey.OneOf("balancer", c.Balancer, "rack-aware", "range", "round-robin"); err != nil {
		return err
	}
	if err := confkey.OneOf("mode", c.Mode, ModeAware, ModeBlind); err != nil {
		return err
	}
	if c.Mode == ModeBlind && c.Balancer == BalancerRackAware {
		return confkey.Errorf("balancer", "rack-aware places partitions by rack, which mode: blind is the baseline without; use range or round-robin (the default in blind mode)")
	}
	return nil
}
