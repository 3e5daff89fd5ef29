package rack

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// issueSample is the file format as the issue states it.
const issueSample = `{"follower_fetching": false, "brokers": [{"id": 1, "rack": "az-a"}],
 "topics": [{"name": "logs", "partitions": [{"id": 0, "leader": 1, "replicas": [1,2,3], "isr": [1,2,3]}]}],
 "members": [{"id": "m1", "rack": "az-a", "topics": ["logs"], "owned": [{"topic": "logs", "partition": 0}]}]}`

func TestPlanTopologyJSON(t *testing.T) {
	sample := strings.Replace(issueSample, `[{"id": 1, "rack": "az-a"}]`,
		`[{"id": 1, "rack": "az-a"}, {"id": 2, "rack": "az-b"}, {"id": 3, "rack": "az-c"}]`, 1)
	topo, err := ParseTopology(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(PlanTopology(topo))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"assignments":{"m1":[{"topic":"logs","partition":0}]},"local":1,"total":1}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

func TestTopologyExample(t *testing.T) {
	topo, err := ReadTopologyFile("../configs/topology-example.json")
	if err != nil {
		t.Fatal(err)
	}
	r := PlanTopology(topo)
	// 12 partitions over 4 members, 3 each. Nobody reads in az-c, and the
	// rack-less member reads across: az-a's 4 leaders and 3 of az-b's 4.
	if r.Local != 7 || r.Total != 12 || spreadOf(r) != 0 {
		t.Errorf("local %d/%d, counts %v", r.Local, r.Total, counts(r))
	}
	// logstore-a1 keeps logs/1 though az-b leads it: b1 has only room for
	// three of az-b's four, so keeping it costs no local read.
	for _, tp := range []TopicPartition{{"logs", 0}, {"logs", 1}} {
		if !slices.Contains(r.Assignments["logstore-a1"], tp) {
			t.Errorf("logstore-a1 lost %v: %v", tp, r.Assignments)
		}
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"logstore-a1  az-a  3           2      audit/2 logs/0 logs/1*\n",
		"logstore-x1  -     3           0",
		"7 of 12 partitions read in the member's own rack (58%)",
	} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text lacks %q:\n%s", line, text.String())
		}
	}
}

func TestTopologyDefaults(t *testing.T) {
	topo, err := ParseTopology(strings.NewReader(`{
		"brokers": [{"id": 0, "rack": "az-a"}, {"id": 1, "rack": "az-b"}],
		"topics": [{"name": "logs", "partitions": [{"id": 0, "replicas": [1, 0]}]},
		           {"name": "audit", "partitions": [{"id": 0, "replicas": []}]}],
		"members": [{"id": "m1"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := topo.Topics[0].Partitions[0]
	if p.Leader != 1 || !slices.Equal(p.ISR, []int{1, 0}) {
		t.Errorf("defaults: leader %d isr %v, want 1 and [1 0]", p.Leader, p.ISR)
	}
	if l := topo.Topics[1].Partitions[0].Leader; l != -1 {
		t.Errorf("no replicas: leader %d, want -1", l)
	}
	if r := PlanTopology(topo); r.Total != 2 {
		t.Errorf("member without topics reads %d partitions, want all 2", r.Total)
	}
}

func TestTopologyErrors(t *testing.T) {
	const brokers = `"brokers": [{"id": 1, "rack": "az-a"}]`
	tests := []struct{ file, want string }{
		{`{"brokerz": []}`, `topology: unknown key "brokerz"`},
		{`{` + brokers + `, "members": [{"id": "m1", "ranck": "az-a"}]}`, `topology.members[0]: unknown key "ranck"`},
		{`{` + brokers + `, "topics": [{"name": "logs", "partitions": [{"id": 0, "replicas": [1]}, {"id": 1, "lader": 1}]}]}`,
			`topology.topics[0].partitions[1]: unknown key "lader"`},
		{`{` + brokers + `, "members": [{"id": "m1", "owned": [{"topic": "logs", "partiton": 0}]}]}`,
			`topology.members[0].owned[0]: unknown key "partiton"`},
		{`{` + brokers + `, "topics": [{"name": "logs", "partitions": [{"id": 0, "leader": 2, "replicas": [1]}]}]}`,
			`topology.topics[0].partitions[0]: leader 2 is not among the brokers`},
		{`{` + brokers + `, "topics": [{"name": "logs", "partitions": [{"id": 0, "replicas": [1, 4]}]}]}`,
			`replica 4 is not among the brokers`},
		{`{` + brokers + `, "members": [{"id": "m1"}, {"id": "m1"}]}`, `topology.members[1]: member id "m1" is empty or appears twice`},
		{`{` + brokers + `, "members": [{"id": "m1", "topics": ["metrics"]}]}`, `topic "metrics" is not in topics`},
		{`{` + brokers + `, "members": [{"id": "m1", "owned": [{"topic": "logs", "partition": 3}]}]}`, `owned partition logs/3 is not in topics`},
		{`{"brokers": [{"id": "one"}]}`, `cannot unmarshal string`},
		{`{} {}`, `data after the top-level object`},
	}
	for _, tt := range tests {
		_, err := ParseTopology(strings.NewReader(tt.file))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n got %v\nwant …%s…", tt.file, err, tt.want)
		}
	}
}
