package rack

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// Topology is the input of `logstore plan --topology FILE`: a cluster and a
// group, written by hand or captured from a live one.
type Topology struct {
	// FollowerFetching says the brokers serve fetches from in-sync
	// followers (replica.selector.class=RackAwareReplicaSelector).
	FollowerFetching bool             `json:"follower_fetching"`
	Brokers          []Broker         `json:"brokers"`
	Topics           []TopologyTopic  `json:"topics"`
	Members          []TopologyMember `json:"members"`
}

// TopologyTopic is a topic and its partitions.
type TopologyTopic struct {
	Name       string              `json:"name"`
	Partitions []TopologyPartition `json:"partitions"`
}

// TopologyPartition places a partition's replicas. In the file, leader
// defaults to the first replica (Kafka's preferred leader; -1 is no leader)
// and isr to all replicas.
type TopologyPartition struct {
	ID       int   `json:"id"`
	Leader   int   `json:"leader"`
	Replicas []int `json:"replicas"`
	ISR      []int `json:"isr"`
}

// TopologyMember is a group member. Topics empty means every topic; Owned
// is what it held in the previous generation.
type TopologyMember struct {
	ID     string           `json:"id"`
	Rack   string           `json:"rack"`
	Topics []string         `json:"topics,omitempty"`
	Owned  []TopicPartition `json:"owned,omitempty"`
}

// topologyKeys lists the keys each kind of object in the file may have;
// a key whose value holds objects names their kind by its path.
var topologyKeys = map[string][]string{
	"":                  {"follower_fetching", "brokers", "topics", "members"},
	"brokers":           {"id", "rack"},
	"topics":            {"name", "partitions"},
	"topics.partitions": {"id", "leader", "replicas", "isr"},
	"members":           {"id", "rack", "topics", "owned"},
	"members.owned":     {"topic", "partition"},
}

// ReadTopologyFile reads and checks a topology file.
func ReadTopologyFile(path string) (Topology, error) {
	f, err := os.Open(path)
	if err != nil {
		return Topology{}, fmt.Errorf("topology: %w", err)
	}
	defer f.Close()
	t, err := ParseTopology(f)
	if err != nil {
		return Topology{}, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseTopology reads a topology from JSON and checks it. Errors name the
// place in the file: `topics[0].partitions[3]: unknown key "lader"`.
func ParseTopology(r io.Reader) (Topology, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return Topology{}, fmt.Errorf("topology: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return Topology{}, fmt.Errorf("topology: %w", err)
	}
	if dec.More() {
		return Topology{}, fmt.Errorf("topology: data after the top-level object")
	}
	if err := checkKeys(tree, "", "topology"); err != nil {
		return Topology{}, err
	}
	fillPartitionDefaults(tree)
	normalized, err := json.Marshal(tree)
	if err != nil {
		return Topology{}, fmt.Errorf("topology: %w", err)
	}
	var t Topology
	strict := json.NewDecoder(bytes.NewReader(normalized))
	strict.DisallowUnknownFields()
	if err := strict.Decode(&t); err != nil {
		return Topology{}, fmt.Errorf("topology: %w", err)
	}
	if err := t.Validate(); err != nil {
		return Topology{}, err
	}
	return t, nil
}

// checkKeys walks the decoded JSON and rejects keys the kind of object at
// that place does not have.
func checkKeys(v any, kind, path string) error {
	switch v := v.(type) {
	case map[string]any:
		allowed, ok := topologyKeys[kind]
		if !ok {
			return nil // a value, not one of the file's objects
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if !slices.Contains(allowed, k) {
				return fmt.Errorf("%s: unknown key %q; known keys are %s", path, k, strings.Join(allowed, ", "))
			}
			child := k
			if kind != "" {
				child = kind + "." + k
			}
			if err := checkKeys(v[k], child, path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := checkKeys(e, kind, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// fillPartitionDefaults sets leader to the first replica and isr to the
// replicas where the file leaves them out, so a missing leader is not read
// as broker 0.
func fillPartitionDefaults(tree any) {
	top, _ := tree.(map[string]any)
	topics, _ := top["topics"].([]any)
	for _, t := range topics {
		topic, _ := t.(map[string]any)
		parts, _ := topic["partitions"].([]any)
		for _, p := range parts {
			part, ok := p.(map[string]any)
			if !ok {
				continue
			}
			replicas, _ := part["replicas"].([]any)
			if _, ok := part["leader"]; !ok {
				part["leader"] = json.Number("-1")
				if len(replicas) > 0 {
					part["leader"] = replicas[0]
				}
			}
			if _, ok := part["isr"]; !ok && replicas != nil {
				part["isr"] = replicas
			}
		}
	}
}

// Validate checks that names are unique and that every reference points at
// a broker, topic or partition of the topology.
func (t Topology) Validate() error {
	brokers := make(map[int]bool)
	for i, b := range t.Brokers {
		if brokers[b.ID] {
			return fmt.Errorf("topology.brokers[%d]: broker %d appears twice", i, b.ID)
		}
		brokers[b.ID] = true
	}
	partitions := make(map[TopicPartition]bool)
	for ti, topic := range t.Topics {
		at := fmt.Sprintf("topology.topics[%d]", ti)
		if topic.Name == "" {
			return fmt.Errorf("%s: name is empty", at)
		}
		for _, other := range t.Topics[:ti] {
			if other.Name == topic.Name {
				return fmt.Errorf("%s: topic %q appears twice", at, topic.Name)
			}
		}
		for pi, p := range topic.Partitions {
			at := fmt.Sprintf("%s.partitions[%d]", at, pi)
			tp := TopicPartition{topic.Name, p.ID}
			if p.ID < 0 || partitions[tp] {
				return fmt.Errorf("%s: partition id %d is negative or appears twice", at, p.ID)
			}
			partitions[tp] = true
			if p.Leader != -1 && !brokers[p.Leader] {
				return fmt.Errorf("%s: leader %d is not among the brokers (-1 means no leader)", at, p.Leader)
			}
			for _, id := range slices.Concat(p.Replicas, p.ISR) {
				if !brokers[id] {
					return fmt.Errorf("%s: replica %d is not among the brokers", at, id)
				}
			}
		}
	}
	topics := make(map[string]bool)
	for _, topic := range t.Topics {
		topics[topic.Name] = true
	}
	members := make(map[string]bool)
	for mi, m := range t.Members {
		at := fmt.Sprintf("topology.members[%d]", mi)
		if m.ID == "" || members[m.ID] {
			return fmt.Errorf("%s: member id %q is empty or appears twice", at, m.ID)
		}
		members[m.ID] = true
		for _, name := range m.Topics {
			if !topics[name] {
				return fmt.Errorf("%s: topic %q is not in topics", at, name)
			}
		}
		for _, tp := range m.Owned {
			if !partitions[tp] {
				return fmt.Errorf("%s: owned partition %s/%d is not in topics", at, tp.Topic, tp.Partition)
			}
		}
	}
	return nil
}

// PlanTopology plans the topology's group on its cluster.
func PlanTopology(t Topology) PlanResult {
	c := Cluster{Brokers: t.Brokers, FollowerFetching: t.FollowerFetching}
	var all []string
	for _, topic := range t.Topics {
		all = append(all, topic.Name)
		for _, p := range topic.Partitions {
			c.Partitions = append(c.Partitions, Partition{
				Topic: topic.Name, ID: p.ID, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR,
			})
		}
	}
	members := make([]Member, len(t.Members))
	for i, m := range t.Members {
		members[i] = Member{ID: m.ID, Rack: m.Rack, Topics: m.Topics, Owned: m.Owned}
		if len(m.Topics) == 0 {
			members[i].Topics = all
		}
	}
	return Plan(c, members)
}

// WriteText writes the plan for people: a line per member with its rack,
// how many partitions it reads and how many of those in its own rack, and
// the partitions, a cross-rack read marked with *.
func (r PlanResult) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tRACK\tPARTITIONS\tLOCAL\tASSIGNED")
	byID := make(map[string]plannedMember, len(r.members))
	for _, m := range r.members {
		byID[m.id] = m
	}
	for _, id := range slices.Sorted(maps.Keys(r.Assignments)) {
		tps := r.Assignments[id]
		m, known := byID[id]
		rack, local := "-", "?"
		if known {
			rack = cmp.Or(m.rack, "-")
			local = fmt.Sprint(count(m.local, true))
		}
		names := make([]string, len(tps))
		for i, tp := range tps {
			names[i] = fmt.Sprintf("%s/%d", tp.Topic, tp.Partition)
			if known && !m.local[i] {
				names[i] += "*"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", id, rack, len(tps), local, strings.Join(names, " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	share := 0.0
	if r.Total > 0 {
		share = 100 * float64(r.Local) / float64(r.Total)
	}
	if _, err := fmt.Fprintf(w, "%d of %d partitions read in the member's own rack (%.0f%%); * marks a cross-rack read\n",
		r.Local, r.Total, share); err != nil {
		return err
	}
	if len(r.Unassigned) > 0 {
		names := make([]string, len(r.Unassigned))
		for i, tp := range r.Unassigned {
			names[i] = fmt.Sprintf("%s/%d", tp.Topic, tp.Partition)
		}
		_, err := fmt.Fprintf(w, "unassigned, no member subscribes: %s\n", strings.Join(names, " "))
		return err
	}
	return nil
}

func count[T comparable](s []T, v T) int {
	n := 0
	for _, e := range s {
		if e == v {
			n++
		}
	}
	return n
}
