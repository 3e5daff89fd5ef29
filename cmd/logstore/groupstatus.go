package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kaws "github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/logstore/logstore/internal/mskiam"
	"github.com/logstore/logstore/pipeline"
	"github.com/logstore/logstore/pipeline/worker"
	"github.com/logstore/logstore/rack"
)

// groupStatus is a consumer group as the cluster describes it: who is in
// it, where, what each holds, and how far behind each partition is.
type groupStatus struct {
	Group      string            `json:"group"`
	Protocol   string            `json:"protocol"` // classic or consumer
	State      string            `json:"state"`
	Members    []memberStatus    `json:"members"`
	Partitions []partitionStatus `json:"partitions"`
	Lag        int64             `json:"lag"` // over partitions with a commit
}

type memberStatus struct {
	ID         string             `json:"member_id"`
	InstanceID string             `json:"instance_id,omitempty"`
	ClientID   string             `json:"client_id"`
	Host       string             `json:"host"`
	Zone       string             `json:"zone"` // "" when the member says none
	Partitions map[string][]int32 `json:"partitions"`
	Lag        int64              `json:"lag"`
	LocalShare *float64           `json:"local_share"` // null: unknown
	Metrics    string             `json:"metrics,omitempty"`
}

type partitionStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	End       int64  `json:"end"`
	Committed int64  `json:"committed"` // -1: none
	Lag       int64  `json:"lag"`       // -1: no commit
	Member    string `json:"member,omitempty"`
	// Mark is the pending cut a committed cut mark names (-1: none).
	Mark int64 `json:"pending_cut"`
	// CommittedAt is when the commit was made, from its metadata; nil for
	// a cut mark or a commit of a binary that wrote no time.
	CommittedAt *time.Time `json:"committed_at"`
}

// statusClient is a franz-go client of the input cluster with the job's TLS
// and SASL: it speaks DescribeGroups and KIP-848's ConsumerGroupDescribe,
// which kafka-go does not, and sends each request to the broker it is for
// (the group's coordinator, the partitions' leaders).
func statusClient(ctx context.Context, k pipeline.InputConfig) (*kgo.Client, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(k.Brokers...), kgo.ClientID(k.ClientID + "-status")}
	tlsCfg, err := k.TLS.Build()
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsCfg))
	}
	switch k.SASL.Mechanism {
	case "none", "":
	case "plain":
		opts = append(opts, kgo.SASL(plain.Auth{User: k.SASL.Username, Pass: string(k.SASL.Password)}.AsMechanism()))
	case "scram-sha-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: k.SASL.Username, Pass: string(k.SASL.Password)}.AsSha256Mechanism()))
	case "scram-sha-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: k.SASL.Username, Pass: string(k.SASL.Password)}.AsSha512Mechanism()))
	case "aws-msk-iam":
		// The job signs with kafka-go's mechanism; this client is
		// franz-go's, which signs the same way with the same credentials.
		cfg, err := mskiam.Config(ctx)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(kaws.ManagedStreamingIAM(func(ctx context.Context) (kaws.Auth, error) {
			c, err := cfg.Credentials.Retrieve(ctx)
			if err != nil {
				return kaws.Auth{}, fmt.Errorf("MSK IAM credentials: %w", err)
			}
			return kaws.Auth{AccessKey: c.AccessKeyID, SecretKey: c.SecretAccessKey, SessionToken: c.SessionToken, UserAgent: "logstore-status"}, nil
		})))
	default:
		return nil, usageError{fmt.Sprintf("status does not speak kafka.sasl.mechanism %s yet; use kafka-consumer-groups --describe --group %s", k.SASL.Mechanism, k.Group)}
	}
	return kgo.NewClient(opts...)
}

// describeGroup reads the group's members with the protocol the job's
// config names: DescribeGroups for classic, ConsumerGroupDescribe for
// consumer (a KIP-848 group is not described by DescribeGroups).
func describeGroup(ctx context.Context, cl *kgo.Client, cfg *pipeline.Config) (*groupStatus, error) {
	k := cfg.Kafka
	st := &groupStatus{Group: k.Group, Protocol: k.GroupProtocol}
	var err error
	if k.GroupProtocol == pipeline.GroupProtocolConsumer {
		err = describeConsumerGroup(ctx, cl, st)
	} else {
		err = describeClassicGroup(ctx, cl, st)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

func describeClassicGroup(ctx context.Context, cl *kgo.Client, st *groupStatus) error {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{st.Group}
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = oneGroup(len(resp.Groups), func() int16 { return resp.Groups[0].ErrorCode })
	}
	if err != nil {
		return fmt.Errorf("describing group %s: %w", st.Group, err)
	}
	g := resp.Groups[0]
	st.State = g.State
	for _, m := range g.Members {
		ms := newMemberStatus(m.MemberID, m.InstanceID, m.ClientID, m.ClientHost)
		var meta kmsg.ConsumerMemberMetadata
		if meta.ReadFrom(m.ProtocolMetadata) == nil {
			if meta.Rack != nil {
				ms.Zone = *meta.Rack
			}
			if r, err := rack.UserDataRack(meta.UserData); err == nil && r != "" {
				ms.Zone = r
			}
		}
		var as kmsg.ConsumerMemberAssignment
		if len(m.MemberAssignment) > 0 && as.ReadFrom(m.MemberAssignment) == nil {
			for _, t := range as.Topics {
				ms.Partitions[t.Topic] = append(ms.Partitions[t.Topic], t.Partitions...)
			}
		}
		st.Members = append(st.Members, ms)
	}
	return nil
}

func describeConsumerGroup(ctx context.Context, cl *kgo.Client, st *groupStatus) error {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{st.Group}
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = oneGroup(len(resp.Groups), func() int16 { return resp.Groups[0].ErrorCode })
	}
	if err != nil {
		return fmt.Errorf("describing group %s: %w", st.Group, err)
	}
	g := resp.Groups[0]
	st.State = g.State
	for _, m := range g.Members {
		ms := newMemberStatus(m.MemberID, m.InstanceID, m.ClientID, m.ClientHost)
		if m.RackID != nil {
			ms.Zone = *m.RackID
		}
		for _, t := range m.Assignment.TopicPartitions {
			ms.Partitions[t.Topic] = append(ms.Partitions[t.Topic], t.Partitions...)
		}
		st.Members = append(st.Members, ms)
	}
	return nil
}

// oneGroup checks a describe answer for one group: one group, without an
// error code.
func oneGroup(n int, code func() int16) error {
	if n != 1 {
		return fmt.Errorf("%d groups in the answer", n)
	}
	return kerr.ErrorForCode(code())
}

func newMemberStatus(id string, instance *string, clientID, host string) memberStatus {
	return memberStatus{ID: id, InstanceID: deref(instance), ClientID: clientID, Host: strings.TrimPrefix(host, "/"), Partitions: map[string][]int32{}}
}

// readLag fills each partition of the job's topics with its end offset (the
// last stable offset under read_committed), the group's commit and the lag
// between them, and sums each member's.
func readLag(ctx context.Context, cl *kgo.Client, cfg *pipeline.Config, st *groupStatus) error {
	md := kmsg.NewPtrMetadataRequest()
	for _, t := range cfg.Kafka.Topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		md.Topics = append(md.Topics, rt)
	}
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("reading topic metadata: %w", err)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	if cfg.Kafka.Isolation == "read_committed" {
		lo.IsolationLevel = 1
	}
	for _, t := range mresp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("topic %s: %w", *t.Topic, err)
		}
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = *t.Topic
		for _, p := range t.Partitions {
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition, lp.Timestamp = p.Partition, -1
			lt.Partitions = append(lt.Partitions, lp)
		}
		lo.Topics = append(lo.Topics, lt)
	}
	lresp, err := lo.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("listing end offsets: %w", err)
	}
	committed, err := fetchCommitted(ctx, cl, st.Group)
	if err != nil {
		return err
	}
	owner := map[string]int{}
	for i, m := range st.Members {
		for t, ps := range m.Partitions {
			for _, p := range ps {
				owner[fmt.Sprintf("%s/%d", t, p)] = i
			}
		}
	}
	for _, t := range lresp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("end offset of %s/%d: %w", t.Topic, p.Partition, err)
			}
			ps := partitionStatus{Topic: t.Topic, Partition: p.Partition, End: p.Offset, Committed: -1, Lag: -1, Mark: -1}
			key := fmt.Sprintf("%s/%d", t.Topic, p.Partition)
			if c, ok := committed[key]; ok {
				ps.Committed, ps.Mark = c.offset, pendingCut(c.metadata)
				if at, ok := worker.CommitTime(c.metadata); ok {
					ps.CommittedAt = &at
				}
				ps.Lag = max(0, ps.End-ps.Committed)
				st.Lag += ps.Lag
			}
			if i, ok := owner[key]; ok {
				ps.Member = st.Members[i].ID
				if ps.Lag > 0 {
					st.Members[i].Lag += ps.Lag
				}
			}
			st.Partitions = append(st.Partitions, ps)
		}
	}
	slices.SortFunc(st.Partitions, func(a, b partitionStatus) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return nil
}

type commit struct {
	offset   int64
	metadata string
}

// fetchCommitted is the group's committed offset and metadata per
// topic/partition.
func fetchCommitted(ctx context.Context, cl *kgo.Client, group string) (map[string]commit, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("fetching the group's offsets: %w", err)
	}
	out := map[string]commit{}
	add := func(topic string, p int32, off int64, meta *string, code int16) error {
		if err := kerr.ErrorForCode(code); err != nil {
			return fmt.Errorf("the group's offset of %s/%d: %w", topic, p, err)
		}
		if off >= 0 {
			out[fmt.Sprintf("%s/%d", topic, p)] = commit{offset: off, metadata: deref(meta)}
		}
		return nil
	}
	for _, g := range resp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return nil, fmt.Errorf("fetching the group's offsets: %w", err)
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if err := add(t.Topic, p.Partition, p.Offset, p.Metadata, p.ErrorCode); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(resp.Groups) == 0 {
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, fmt.Errorf("fetching the group's offsets: %w", err)
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := add(t.Topic, p.Partition, p.Offset, p.Metadata, p.ErrorCode); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// pendingCut is the last offset of the cut a committed cut mark
// ("cut:<last> …", pipeline/start/mark.go) says is being written, -1 for none.
func pendingCut(meta string) int64 {
	rest, ok := strings.CutPrefix(meta, "cut:")
	if !ok {
		return -1
	}
	n, _, _ := strings.Cut(rest, " ")
	v, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		return -1
	}
	return v
}
