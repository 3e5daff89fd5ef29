//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStatusShowsMembersZonesAndLag: `logstore status` on a running job of
// four members, one in each zone and a second in az-a, the second one
// SIGKILLed: the cluster still counts it until its session ends, and status
// shows all four with their zones, hosts and partitions, every partition's
// lag (its end minus the group's commit, checked here against kafka-go's
// own OffsetFetch), each commit's time, and the total; the members' /metrics are off, so each
// local share is unknown. Both group protocols.
func TestStatusShowsMembersZonesAndLag(t *testing.T) {
	for _, protocol := range []string{"classic", "consumer"} {
		t.Run(protocol, func(t *testing.T) {
			const n, partitions = 6000, 6
			topic := e2eTopic(t, partitions)
			produceLogs(t, topic, n, partitions, 0)
			group := topic + "-" + protocol
			cfg := e2eConfig(t, topic, group, t.TempDir(), 0)
			text := strings.Replace(readFile(t, cfg), "  session_timeout: 10s\n", "  session_timeout: 45s\n  group_protocol: "+protocol+"\n  max_records_per_second: 200\n", 1)
			if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			var members []*chaosMember
			for _, zone := range []string{"az-a", "az-b", "az-c", "az-a"} {
				m := &chaosMember{t: t, cfg: cfg, rack: zone}
				m.start()
				defer m.stop(syscall.SIGKILL)
				members = append(members, m)
			}
			st := waitStatus(t, cfg, 60*time.Second, func(st groupStatus) bool {
				if len(st.Members) != 4 || st.State != "Stable" || st.Lag == 0 {
					return false
				}
				for _, m := range st.Members {
					if len(m.Partitions) == 0 {
						return false
					}
				}
				return committedTotal(t, group, topic, partitions) > 0
			})
			members[3].stop(syscall.SIGKILL)

			// The group's commits before status reads them: the members
			// still commit, so status may be ahead of these, never behind.
			committed := map[int]int64{}
			for _, p := range groupOffsets(t, group, topic, partitions) {
				committed[p.Partition] = p.CommittedOffset
			}
			code, stdout, stderr := runCLI(t, "status", "-c", cfg, "--json")
			if code != exitOK {
				t.Fatalf("status after the kill: exit %d\n%s", code, stderr)
			}
			if err := json.Unmarshal([]byte(stdout), &st); err != nil {
				t.Fatal(err)
			}
			var zones []string
			held := 0
			for _, m := range st.Members {
				zones = append(zones, m.Zone)
				held += len(m.Partitions[topic])
				if m.Host == "" || m.LocalShare != nil {
					t.Errorf("member %s: host %q, local share %v; want a host and an unknown share", m.ID, m.Host, m.LocalShare)
				}
			}
			slices.Sort(zones)
			if !slices.Equal(zones, []string{"az-a", "az-a", "az-b", "az-c"}) || held != partitions {
				t.Errorf("members in zones %v holding %d partitions; want az-a twice, az-b, az-c (the dead one still in) holding all %d\n%s", zones, held, partitions, stdout)
			}
			var total int64
			for _, p := range st.Partitions {
				if c := committed[int(p.Partition)]; c >= 0 && p.Committed < c {
					t.Errorf("%s/%d: status says committed %d, the group has %d (commits only grow)", p.Topic, p.Partition, p.Committed, c)
				}
				if p.Committed >= 0 && p.Mark < 0 && (p.CommittedAt == nil || time.Since(*p.CommittedAt) > time.Minute || time.Until(*p.CommittedAt) > time.Second) {
					t.Errorf("%s/%d: committed at %v; want the time of a commit made in this run", p.Topic, p.Partition, p.CommittedAt)
				}
				if p.Committed >= 0 && p.Lag != p.End-p.Committed {
					t.Errorf("%s/%d: lag %d, want end %d - committed %d", p.Topic, p.Partition, p.Lag, p.End, p.Committed)
				}
				total += max(p.Lag, 0)
			}
			if len(st.Partitions) != partitions || total != st.Lag || st.Lag == 0 {
				t.Errorf("%d partitions, total lag %d, sum of theirs %d; want %d partitions and a lag above 0", len(st.Partitions), st.Lag, total, partitions)
			}
			code, table, _ := runCLI(t, "status", "-c", cfg)
			if code != exitOK || strings.Count(table, " az-a ") < 2 || !strings.Contains(table, fmt.Sprintf("group %s (%s protocol)", group, protocol)) || !strings.Contains(table, "COMMITTED  LAG") {
				t.Errorf("the table:\n%s", table)
			}
			t.Logf("logstore status, one member SIGKILLed:\n%s", table)
		})
	}
}

// waitStatus runs `logstore status --json` until ok holds.
func waitStatus(t *testing.T, cfg string, limit time.Duration, ok func(groupStatus) bool) groupStatus {
	t.Helper()
	var last string
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		code, stdout, stderr := runCLI(t, "status", "-c", cfg, "--json")
		last = stdout + stderr
		var st groupStatus
		if code == exitOK && json.Unmarshal([]byte(stdout), &st) == nil && ok(st) {
			return st
		}
	}
	t.Fatalf("status did not show the group as wanted within %v; last:\n%s", limit, last)
	return groupStatus{}
}
