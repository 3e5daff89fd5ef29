//go:build integration

package main

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logstore/logstore/rack"
)

// TestPlanLiveGroupWithLiveMembers: `logstore plan -c job.yaml` against a
// group with live members of our own. With kafka.rebalance cooperative (the
// default) a member joins with the consumer protocol's subscription version
// 2 (owned partitions and generation after the user data); kafka-go's
// DescribeGroups decoder refused those bytes ("Got non-zero number of bytes
// remaining: 8"), so plan failed whenever a member was live. Both
// rebalance modes: eager members send version 1.
func TestPlanLiveGroupWithLiveMembers(t *testing.T) {
	for _, mode := range []string{"cooperative", "eager"} {
		t.Run(mode, func(t *testing.T) {
			const partitions = 6
			topic := e2eTopic(t, partitions)
			produceLogs(t, topic, 600, partitions, 0)
			group := topic + "-plan"
			cfg := e2eConfig(t, topic, group, t.TempDir(), 0)
			setConfigText(t, cfg, "  session_timeout: 10s\n", "  session_timeout: 10s\n  rebalance: "+mode+"\n")
			var members []*chaosMember
			for _, zone := range []string{"az-a", "az-b"} {
				m := &chaosMember{t: t, cfg: cfg, rack: zone}
				m.start()
				defer m.stop(syscall.SIGTERM)
				members = append(members, m)
			}
			waitStatus(t, cfg, 60*time.Second, func(st groupStatus) bool {
				held := 0
				for _, m := range st.Members {
					held += len(m.Partitions[topic])
				}
				return len(st.Members) == len(members) && st.State == "Stable" && held == partitions
			})
			code, stdout, stderr := runCLI(t, "plan", "-c", cfg, "--json")
			if code != exitOK {
				t.Fatalf("plan -c with %d live members: exit %d\n%s", len(members), code, stderr)
			}
			var plan rack.PlanResult
			if err := json.Unmarshal([]byte(stdout), &plan); err != nil {
				t.Fatalf("plan --json: %v\n%s", err, stdout)
			}
			if len(plan.Assignments) != len(members) || plan.Total != partitions {
				t.Errorf("plan of %d members over %d partitions: %d members, %d partitions assigned\n%s", len(members), partitions, len(plan.Assignments), plan.Total, stdout)
			}
			// Each member's zone came from its user data: the cluster has a
			// replica of every partition in az-a and az-b, so every
			// partition is read in its member's zone.
			if plan.Local != plan.Total {
				t.Errorf("%d of %d partitions local; want all (the members' zones read from their subscriptions)\n%s", plan.Local, plan.Total, stdout)
			}
		})
	}
}

// setConfigText replaces old (which must be there) with new in the config file.
func setConfigText(t *testing.T, path, old, new string) {
	t.Helper()
	text := readFile(t, path)
	if !strings.Contains(text, old) {
		t.Fatalf("%s has no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(text, old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}
