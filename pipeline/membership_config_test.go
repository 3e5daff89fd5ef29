package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestMembershipKeys: kafka.group_instance_id takes a pod name from the
// environment (${POD_NAME}), and the membership keys refuse what the
// brokers or the member cannot use, naming the key and its line.
func TestMembershipKeys(t *testing.T) {
	t.Setenv("LOGSTORE_TEST_POD_NAME", "logstore-2")
	with := func(lines string) string {
		return strings.Replace(minimalConfig, "  group: g\n", "  group: g\n"+lines, 1)
	}
	c, err := Parse("t.yaml", []byte(with("  group_instance_id: ${LOGSTORE_TEST_POD_NAME}\n")))
	if err != nil {
		t.Fatal(err)
	}
	if k := c.Kafka; k.GroupInstanceID != "logstore-2" || k.Rebalance != RebalanceCooperative || k.Revoke != RevokeHandover {
		t.Errorf("instance %q, rebalance %q, revoke %q; want logstore-2, cooperative, handover", k.GroupInstanceID, k.Rebalance, k.Revoke)
	}
	c, err = Parse("t.yaml", []byte(with("  group_protocol: consumer\n  leave_on_shutdown: true\n")))
	if err != nil {
		t.Fatal(err)
	}
	if k := c.Kafka; k.GroupRemoteAssignor != "uniform" || !k.LeaveOnShutdown || k.initialRebalanceDelay() != 3*time.Second {
		t.Errorf("group_remote_assignor %q, leave_on_shutdown %v, group_initial_rebalance_delay %v; want uniform, true, 3s",
			k.GroupRemoteAssignor, k.LeaveOnShutdown, k.initialRebalanceDelay())
	}
	c, err = Parse("t.yaml", []byte(with("  group_protocol: consumer\n  group_initial_rebalance_delay: 0s\n")))
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Kafka.initialRebalanceDelay(); d != 0 {
		t.Errorf("group_initial_rebalance_delay: 0s reads as %v; want 0 (start at once)", d)
	}
	for _, tc := range []struct{ name, lines, key, msg string }{
		{"instance id with a slash", "  group_instance_id: pods/logstore-0\n", "kafka.group_instance_id", "a-z A-Z 0-9 . _ -"},
		{"instance id too long", "  group_instance_id: " + strings.Repeat("x", 250) + "\n", "kafka.group_instance_id", "at most 249"},
		{"unknown rebalance", "  rebalance: incremental\n", "kafka.rebalance", "cooperative"},
		{"unknown revoke", "  revoke: flush\n", "kafka.revoke", "handover"},
		{"unknown group protocol", "  group_protocol: kip848\n", "kafka.group_protocol", "classic, consumer"},
		{"eager under consumer", "  rebalance: eager\n  group_protocol: consumer\n", "kafka.rebalance", "incremental"},
		{"unknown broker assignor", "  group_remote_assignor: sticky\n  group_protocol: consumer\n", "kafka.group_remote_assignor", "uniform, range"},
		{"broker assignor under classic", "  group_remote_assignor: range\n", "kafka.group_remote_assignor", "rack.balancer"},
		{"initial delay under classic", "  group_initial_rebalance_delay: 3s\n", "kafka.group_initial_rebalance_delay", "group.initial.rebalance.delay.ms"},
		{"negative initial delay", "  group_initial_rebalance_delay: -1s\n  group_protocol: consumer\n", "kafka.group_initial_rebalance_delay", "outside 0s..1m"},
		{"initial delay over a minute", "  group_initial_rebalance_delay: 2m\n  group_protocol: consumer\n", "kafka.group_initial_rebalance_delay", "outside 0s..1m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(with(tc.lines)))
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Line != 5 || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got %v; want a ConfigError at line 5 naming %s and saying %q", err, tc.key, tc.msg)
			}
		})
	}
}

// TestPlanLiveRefusesConsumerProtocol: under group_protocol: consumer the
// broker assigns, so `logstore plan` must not show the rack-aware plan as
// if it were the group's.
func TestPlanLiveRefusesConsumerProtocol(t *testing.T) {
	c, err := Parse("t.yaml", []byte(strings.Replace(minimalConfig, "  group: g\n", "  group: g\n  group_protocol: consumer\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = PlanLive(context.Background(), c, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "the broker assigns") || !strings.Contains(err.Error(), "--topology") {
		t.Errorf("got %v; want a refusal saying the broker assigns and naming --topology", err)
	}
}
