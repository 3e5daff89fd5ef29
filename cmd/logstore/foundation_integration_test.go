//go:build integration

package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/logstore/logstore/internal/testkit"
)

// The foundation every other test stands on: the real cluster of
// scripts/kafka-cluster.sh has three brokers in three racks and spreads a
// topic's replicas over them, and `logstore rack` finds its zone on it and
// on a real EC2 metadata service.

func TestClusterHasThreeRacks(t *testing.T) {
	topic := e2eTopic(t, 6) // replication factor 3
	client := &kafka.Client{Addr: kafka.TCP(strings.Split(bootstrap, ",")...), Timeout: 10 * time.Second}

	// A new topic's partitions reach every broker's metadata cache shortly
	// after CreateTopics returns.
	var md *kafka.MetadataResponse
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var err error
		md, err = client.Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{topic}})
		if err == nil && len(md.Topics) == 1 && md.Topics[0].Error == nil && len(md.Topics[0].Partitions) == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s not in metadata after 30s: %v %+v", topic, err, md)
		}
	}

	rackOf := map[int]string{}
	for _, b := range md.Brokers {
		rackOf[b.ID] = b.Rack
	}
	racks := make([]string, 0, len(rackOf))
	for _, r := range rackOf {
		racks = append(racks, r)
	}
	slices.Sort(racks)
	if !slices.Equal(racks, []string{"az-a", "az-b", "az-c"}) {
		t.Fatalf("brokers %+v are in racks %v, want az-a, az-b, az-c", md.Brokers, racks)
	}
	for _, p := range md.Topics[0].Partitions {
		var replicaRacks []string
		for _, r := range p.Replicas {
			replicaRacks = append(replicaRacks, rackOf[r.ID])
		}
		slices.Sort(replicaRacks)
		if !slices.Equal(replicaRacks, racks) {
			t.Errorf("partition %d has replicas in racks %v, want one in each of %v", p.ID, replicaRacks, racks)
		}
	}
}

func TestRackCommandAgainstIMDSMock(t *testing.T) {
	if _, err := os.Stat("/etc/podinfo/labels"); err == nil {
		t.Fatal("/etc/podinfo/labels exists here: the k8s-labels provider would answer before aws-imds")
	}
	// The default chain, with every provider before aws-imds absent.
	for _, v := range []string{"LOGSTORE_RACK", "KUBERNETES_SERVICE_HOST", "NODE_NAME",
		"AWS_EC2_METADATA_DISABLED", "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", testkit.StartIMDSMock(t, "ap-northeast-2a", "apne2-az1"))

	tests := []struct {
		brokerRacks, want string
	}{
		{"apne2-az1,apne2-az2,apne2-az3", "apne2-az1"},         // Amazon MSK: zone IDs
		{"ap-northeast-2a,ap-northeast-2b", "ap-northeast-2a"}, // self-managed: zone names
	}
	for _, tt := range tests {
		t.Run(tt.brokerRacks, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "rack", "--json", "--broker-racks", tt.brokerRacks)
			if code != exitOK {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if want := `"rack": "` + tt.want + `"`; !strings.Contains(stdout, want) || !strings.Contains(stdout, `"source": "aws-imds"`) {
				t.Errorf("want %s from aws-imds:\n%s", want, stdout)
			}
		})
	}
}

func TestRackCommandReadsBrokerRacks(t *testing.T) {
	t.Setenv("LOGSTORE_RACK", "az-c")
	res := rackJSON(t, "--brokers", "127.0.0.1:19092")
	if res.Rack != "az-c" || !res.Matched || !slices.Equal(res.BrokerRacks, []string{"az-a", "az-b", "az-c"}) {
		t.Errorf("rack %q (matched %v) among broker racks %v; want az-c, matched, among az-a, az-b, az-c",
			res.Rack, res.Matched, res.BrokerRacks)
	}
}
