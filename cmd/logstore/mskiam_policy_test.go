//go:build !nodemo

package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/pipeline"
)

// The MSK IAM policy (configs/iam-policy.json) is checked against what the
// job asks of the brokers: each configuration runs on an embedded cluster
// (kfake) that records every request, each request is turned into the
// Kafka ACLs it needs (kafkaACLs) and each ACL into the MSK IAM action that
// stands for it (mskAction), with the actions each one requires.

// aclNeed is one Kafka ACL a request needs: an operation on a resource.
type aclNeed struct {
	op, resource, name string // resource: Cluster, Topic, Group, TransactionalId
}

// kafkaACLs is the Kafka ACLs req needs, per Apache Kafka's documented
// table "Operations and Resources on Protocols" (docs, Security,
// Authorization and ACLs; https://kafka.apache.org/documentation/#operations_resources_and_protocols).
// Where the table offers a cluster-wide or a narrower grant, the narrower
// one (MSK's action is the same). A request the table has no row for here
// is an error: add its row from the table.
func kafkaACLs(req kmsg.Request, topic func([16]byte, string) string) ([]aclNeed, error) {
	var out []aclNeed
	add := func(op, resource, name string) { out = append(out, aclNeed{op, resource, name}) }
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest, *kmsg.SASLHandshakeRequest, *kmsg.SASLAuthenticateRequest, *kmsg.GetTelemetrySubscriptionsRequest:
		// Part of the handshake or authentication: no ACL.
	case *kmsg.ProduceRequest: // PRODUCE (0)
		if r.TransactionID != nil {
			add("Write", "TransactionalId", *r.TransactionID)
		}
		for _, t := range r.Topics {
			add("Write", "Topic", topic(t.TopicID, t.Topic))
			for _, p := range t.Partitions {
				// An idempotent produce (a producer id in the batch
				// header, at byte 43) needs IdempotentWrite.
				if len(p.Records) >= 51 && int64(binary.BigEndian.Uint64(p.Records[43:])) >= 0 && r.TransactionID == nil {
					add("IdempotentWrite", "Cluster", "")
				}
			}
		}
	case *kmsg.FetchRequest: // FETCH (1)
		for _, t := range r.Topics {
			add("Read", "Topic", topic(t.TopicID, t.Topic))
		}
	case *kmsg.ListOffsetsRequest: // LIST_OFFSETS (2)
		for _, t := range r.Topics {
			add("Describe", "Topic", t.Topic)
		}
	case *kmsg.MetadataRequest: // METADATA (3)
		// Create (auto-creation) only where the brokers create topics on
		// metadata requests; MSK's default auto.create.topics.enable is false.
		for _, t := range r.Topics {
			var name string
			if t.Topic != nil {
				name = *t.Topic
			}
			add("Describe", "Topic", topic(t.TopicID, name))
		}
	case *kmsg.OffsetCommitRequest: // OFFSET_COMMIT (8)
		add("Read", "Group", r.Group)
		for _, t := range r.Topics {
			add("Read", "Topic", topic(t.TopicID, t.Topic))
		}
	case *kmsg.OffsetFetchRequest: // OFFSET_FETCH (9)
		if r.Group != "" || len(r.Groups) == 0 {
			add("Describe", "Group", r.Group)
		}
		for _, t := range r.Topics {
			add("Describe", "Topic", t.Topic)
		}
		for _, g := range r.Groups {
			add("Describe", "Group", g.Group)
			for _, t := range g.Topics {
				add("Describe", "Topic", topic(t.TopicID, t.Topic))
			}
		}
	case *kmsg.FindCoordinatorRequest: // FIND_COORDINATOR (10)
		resource := "Group"
		if r.CoordinatorType == 1 {
			resource = "TransactionalId"
		}
		for _, k := range append(r.CoordinatorKeys, r.CoordinatorKey) {
			if k != "" || len(r.CoordinatorKeys) == 0 {
				add("Describe", resource, k)
			}
		}
	case *kmsg.JoinGroupRequest: // JOIN_GROUP (11)
		add("Read", "Group", r.Group)
	case *kmsg.HeartbeatRequest: // HEARTBEAT (12)
		add("Read", "Group", r.Group)
	case *kmsg.LeaveGroupRequest: // LEAVE_GROUP (13)
		add("Read", "Group", r.Group)
	case *kmsg.SyncGroupRequest: // SYNC_GROUP (14)
		add("Read", "Group", r.Group)
	case *kmsg.DescribeGroupsRequest: // DESCRIBE_GROUPS (15)
		for _, g := range r.Groups {
			add("Describe", "Group", g)
		}
	case *kmsg.CreateTopicsRequest: // CREATE_TOPICS (19)
		for _, t := range r.Topics {
			add("Create", "Topic", t.Topic)
		}
	case *kmsg.InitProducerIDRequest: // INIT_PRODUCER_ID (22)
		if r.TransactionalID != nil {
			add("Write", "TransactionalId", *r.TransactionalID)
		} else {
			add("IdempotentWrite", "Cluster", "")
		}
	case *kmsg.OffsetForLeaderEpochRequest: // OFFSET_FOR_LEADER_EPOCH (23)
		for _, t := range r.Topics {
			add("Describe", "Topic", t.Topic)
		}
	case *kmsg.AddPartitionsToTxnRequest: // ADD_PARTITIONS_TO_TXN (24)
		if len(r.Transactions) == 0 {
			add("Write", "TransactionalId", r.TransactionalID)
			for _, t := range r.Topics {
				add("Write", "Topic", t.Topic)
			}
		}
		for _, tx := range r.Transactions {
			add("Write", "TransactionalId", tx.TransactionalID)
			for _, t := range tx.Topics {
				add("Write", "Topic", t.Topic)
			}
		}
	case *kmsg.AddOffsetsToTxnRequest: // ADD_OFFSETS_TO_TXN (25)
		add("Write", "TransactionalId", r.TransactionalID)
		add("Read", "Group", r.Group)
	case *kmsg.EndTxnRequest: // END_TXN (26)
		add("Write", "TransactionalId", r.TransactionalID)
	case *kmsg.TxnOffsetCommitRequest: // TXN_OFFSET_COMMIT (28)
		add("Write", "TransactionalId", r.TransactionalID)
		add("Read", "Group", r.Group)
		for _, t := range r.Topics {
			add("Read", "Topic", topic(t.TopicID, t.Topic))
		}
	case *kmsg.DescribeConfigsRequest: // DESCRIBE_CONFIGS (32)
		for _, res := range r.Resources {
			if res.ResourceType == kmsg.ConfigResourceTypeTopic {
				add("DescribeConfigs", "Topic", res.ResourceName)
			} else {
				add("DescribeConfigs", "Cluster", "")
			}
		}
	case *kmsg.DescribeClusterRequest: // DESCRIBE_CLUSTER (60)
		add("Describe", "Cluster", "")
	case *kmsg.ConsumerGroupHeartbeatRequest: // CONSUMER_GROUP_HEARTBEAT (68)
		add("Read", "Group", r.Group)
		for _, t := range r.SubscribedTopicNames {
			add("Describe", "Topic", t)
		}
	case *kmsg.ConsumerGroupDescribeRequest: // CONSUMER_GROUP_DESCRIBE (69)
		for _, g := range r.Groups {
			add("Describe", "Group", g)
		}
	case *kmsg.DescribeTopicPartitionsRequest: // DESCRIBE_TOPIC_PARTITIONS (75)
		for _, t := range r.Topics {
			add("Describe", "Topic", t.Topic)
		}
	default:
		return nil, fmt.Errorf("%T (key %d): no row for it here; add the ACLs Kafka's table names for it", req, req.Key())
	}
	return out, nil
}

// mskActions is the MSK IAM action that stands for each Kafka ACL (the
// "equivalent to Apache Kafka's … ACL" of each action) and the actions it
// requires, from the Amazon MSK Developer Guide, "Semantics of IAM
// authorization policy actions and resources"
// (https://docs.aws.amazon.com/msk/latest/developerguide/kafka-actions.html).
// IAM grants WriteDataIdempotently on the cluster; unlike Kafka's ACLs
// since KIP-679, WriteData on a topic does not stand in for it (the guide's
// "Create authorization policies" page), unless WriteData is granted on
// every topic.
var mskActions = map[[2]string]struct {
	action, resource string // resource: cluster, topic, group, transactional-id
	requires         []string
}{
	{"Describe", "Cluster"}:         {"DescribeCluster", "cluster", []string{"Connect"}},
	{"DescribeConfigs", "Cluster"}:  {"DescribeClusterDynamicConfiguration", "cluster", []string{"Connect"}},
	{"IdempotentWrite", "Cluster"}:  {"WriteDataIdempotently", "cluster", []string{"Connect", "WriteData"}},
	{"Create", "Topic"}:             {"CreateTopic", "topic", []string{"Connect"}},
	{"Describe", "Topic"}:           {"DescribeTopic", "topic", []string{"Connect"}},
	{"DescribeConfigs", "Topic"}:    {"DescribeTopicDynamicConfiguration", "topic", []string{"Connect"}},
	{"Read", "Topic"}:               {"ReadData", "topic", []string{"Connect", "DescribeTopic", "AlterGroup"}},
	{"Write", "Topic"}:              {"WriteData", "topic", []string{"Connect", "DescribeTopic"}},
	{"Describe", "Group"}:           {"DescribeGroup", "group", []string{"Connect"}},
	{"Read", "Group"}:               {"AlterGroup", "group", []string{"Connect", "DescribeGroup"}},
	{"Describe", "TransactionalId"}: {"DescribeTransactionalId", "transactional-id", []string{"Connect"}},
	{"Write", "TransactionalId"}:    {"AlterTransactionalId", "transactional-id", []string{"Connect", "DescribeTransactionalId", "WriteData"}},
}

// mskResourceOf is the resource type each action is granted on.
var mskResourceOf = map[string]string{"Connect": "cluster"}

func init() {
	for _, a := range mskActions {
		mskResourceOf[a.action] = a.resource
	}
}

// mskNeed is an action on an ARN; arn "" is any resource of the action's type.
type mskNeed struct{ action, arn string }

// The policy's placeholders for the cluster.
const mskARN = "arn:aws:kafka:your-region:your-account-id:"

func clusterARN(kind, name string) string {
	a := mskARN + kind + "/your-cluster/your-cluster-uuid"
	if kind != "cluster" {
		a += "/" + name
	}
	return a
}

// iamPolicy is an IAM policy's Allow statements: action and resource patterns.
type iamPolicy []struct {
	Effect   string
	Action   stringOrList
	Resource stringOrList
}

func readIAMPolicy(t *testing.T) iamPolicy {
	raw, err := os.ReadFile("../../configs/iam-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Statement iamPolicy }
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("iam-policy.json: %v", err)
	}
	return p.Statement
}

// allows says whether the policy allows action on arn ("" : on any
// resource of the action's type), with IAM's * and ? wildcards.
func (p iamPolicy) allows(action, arn string) bool {
	match := func(pattern, s string) bool {
		// IAM's wildcards are path.Match's, with / an ordinary character.
		ok, _ := path.Match(strings.ReplaceAll(pattern, "/", "\x00"), strings.ReplaceAll(s, "/", "\x00"))
		return ok
	}
	for _, s := range p {
		if s.Effect != "Allow" || !slices.ContainsFunc(s.Action, func(a string) bool { return match(a, action) }) {
			continue
		}
		for _, r := range s.Resource {
			if arn == "" && strings.HasPrefix(r, mskARN+mskResourceOf[strings.TrimPrefix(action, "kafka-cluster:")]+"/") || arn != "" && match(r, arn) {
				return true
			}
		}
	}
	return false
}

// recordedRequests runs raw (a job's config on the embedded cluster c) to
// the end offsets and returns every request the brokers got.
func recordedRequests(t *testing.T, c *kfake.Cluster, raw string, after ...[]string) []kmsg.Request {
	var mu sync.Mutex
	var reqs []kmsg.Request
	c.Control(func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		reqs = append(reqs, r)
		mu.Unlock()
		return nil, nil, false
	})
	cfg := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(cfg, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "run", "-c", cfg, "--until", "now"); code != exitOK {
		t.Fatalf("run --until now: exit %d\n%s", code, stderr)
	}
	for _, args := range after {
		if code, _, stderr := runCLI(t, append(args, "-c", cfg)...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(reqs)
}

// TestIAMPolicyCoversEveryRequestOfTheJob: every Kafka request the job
// makes, in each way it runs with the names of configs/emr-eks.yaml (its
// topics, group and dead-letter topic, and sinks.kafka's example output
// topic), is allowed by configs/iam-policy.json as MSK maps requests to
// actions, with the actions each requires; docs/eks.md's IAM table names
// each action. The policy granted WriteData but not WriteDataIdempotently,
// which every producer of the job needs (it asks for a producer id), nor
// anything exactly_once needs on its transactional ids and positions topic.
func TestIAMPolicyCoversEveryRequestOfTheJob(t *testing.T) {
	for k, v := range overlayEnv(t) {
		t.Setenv(k, v)
	}
	job, err := pipeline.Load(emrEKS)
	if err != nil {
		t.Fatal(err)
	}
	input, group, dlq := job.Kafka.Topics[0], job.Kafka.Group, job.DeadLetter.Topic
	const output = "logs-parsed" // configs/reference.yaml's sinks.kafka.topic
	policy := readIAMPolicy(t)
	doc, err := os.ReadFile(eksDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, sinks, kafka string
		after              [][]string
	}{
		{name: "files and dead letters (emr-eks.yaml)", after: [][]string{{"status"}}},
		{name: "group protocol consumer", kafka: "group_protocol: consumer, ", after: [][]string{{"status"}}},
		{name: "kafka output at_least_once", sinks: fmt.Sprintf("kafka: {topic: %s}, ", output)},
		{name: "kafka output exactly_once", sinks: fmt.Sprintf("kafka: {topic: %s, delivery: exactly_once, transaction_timeout: 5s}, ", output)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testkit.FakeCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(3, input, dlq, output))
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic(input))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			for i := range 30 {
				value := fmt.Sprintf(`{"n":%d}`, i)
				if i%10 == 9 {
					value = `not json` // a dead letter
				}
				if err := cl.ProduceSync(context.Background(), kgo.StringRecord(value)).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			raw := fmt.Sprintf(`kafka: {brokers: ["%s"], topics: [%s], group: %s, %sstart_offset: earliest}
rack: {providers: [static], static: az-a, follower_fetching: auto}
schema: {columns: [{name: n, type: int64, required: true}]}
batch: {max_rows: 10}
sinks: {%sfiles: {url: %q, file: {fsync: false}}}
dead_letter: {on_error: dead_letter, topic: %s}
`, strings.Join(c.ListenAddrs(), `", "`), input, group, tc.kafka, tc.sinks, t.TempDir(), dlq)
			reqs := recordedRequests(t, c, raw, tc.after...)
			// Topic IDs (newer Fetch and Produce versions) to names.
			names := map[[16]byte]string{}
			md := kmsg.NewPtrMetadataRequest()
			resp, err := md.RequestWith(context.Background(), cl)
			if err != nil {
				t.Fatal(err)
			}
			for _, tp := range resp.Topics {
				names[tp.TopicID] = *tp.Topic
			}
			topic := func(id [16]byte, name string) string {
				if name == "" {
					return names[id]
				}
				return name
			}
			needs := map[mskNeed][]string{} // → the requests needing it
			keys := map[string]bool{}
			for _, r := range reqs {
				name := kmsg.NameForKey(r.Key())
				keys[name] = true
				needs[mskNeed{"Connect", clusterARN("cluster", "")}] = append(needs[mskNeed{"Connect", clusterARN("cluster", "")}], name)
				acls, err := kafkaACLs(r, topic)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range acls {
					m, ok := mskActions[[2]string{a.op, a.resource}]
					if !ok {
						t.Fatalf("%s needs %s on %s %q: no MSK action for it here", name, a.op, a.resource, a.name)
					}
					n := mskNeed{m.action, clusterARN(m.resource, a.name)}
					needs[n] = append(needs[n], name)
					for _, req := range m.requires {
						arn := ""
						if mskResourceOf[req] == m.resource {
							arn = n.arn
						}
						needs[mskNeed{req, arn}] = append(needs[mskNeed{req, arn}], name+" (required by "+m.action+")")
					}
				}
			}
			var lines []string
			for n, by := range needs {
				action := "kafka-cluster:" + n.action
				if !policy.allows(action, n.arn) {
					on := n.arn
					if on == "" {
						on = "any " + mskResourceOf[n.action]
					}
					slices.Sort(by)
					t.Errorf("iam-policy.json does not allow %s on %s, which %s needs", action, on, strings.Join(slices.Compact(by), ", "))
				}
				if !strings.Contains(string(doc), action) {
					t.Errorf("%s's IAM table does not name %s", eksDoc, action)
				}
				lines = append(lines, action+" "+n.arn)
			}
			sort.Strings(lines)
			t.Logf("requests %v need:\n%s", slices.Sorted(mapKeys(keys)), strings.Join(lines, "\n"))
		})
	}
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
