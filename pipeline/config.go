package pipeline

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/logstore/logstore/internal/confkey"
	"github.com/logstore/logstore/internal/secret"
	"github.com/logstore/logstore/pipeline/decode"
	"github.com/logstore/logstore/pipeline/fetch"
	"github.com/logstore/logstore/pipeline/group"
	"github.com/logstore/logstore/rack"
	"github.com/logstore/logstore/sink"
)

// Config is a whole logstore job. Each section's type lives with the package
// that uses it; Load applies defaults in one place and validates every section.
type Config struct {
	Kafka      InputConfig         `yaml:"kafka"`
	Rack       rack.Config         `yaml:"rack"`
	Schema     decode.SchemaConfig `yaml:"schema"`
	Batch      BatchConfig         `yaml:"batch"`
	Sinks      sink.Config         `yaml:"sinks"`
	DeadLetter DeadLetterConfig    `yaml:"dead_letter"`
	Metrics    MetricsConfig       `yaml:"metrics"`
	Log        LogConfig           `yaml:"log"`
	Run        RunConfig           `yaml:"run"`
}

// InputConfig is the `kafka` section: the input cluster and the group.
type InputConfig struct {
	Brokers  []string   `yaml:"brokers"`
	Topics   []string   `yaml:"topics"`
	Group    string     `yaml:"group"`
	ClientID string     `yaml:"client_id"`
	TLS      TLSConfig  `yaml:"tls"`
	SASL     SASLConfig `yaml:"sasl"`
	// Isolation is read_uncommitted or read_committed.
	Isolation string `yaml:"isolation"`
	// StartOffset applies to partitions the group never committed:
	// earliest, latest or an RFC 3339 time (Spark's startingOffsets).
	StartOffset string `yaml:"start_offset"`
	// OnOffsetOutOfRange applies when retention deleted the committed
	// position: fail, earliest or latest (Spark's failOnDataLoss).
	OnOffsetOutOfRange string `yaml:"on_offset_out_of_range"`
	// MaxRecordsPerSecond caps this member's read rate; 0 is unlimited
	// (the role of Spark's maxOffsetsPerTrigger).
	MaxRecordsPerSecond int           `yaml:"max_records_per_second"`
	Fetch               FetchConfig   `yaml:"fetch"`
	SessionTimeout      time.Duration `yaml:"session_timeout"`
	HeartbeatInterval   time.Duration `yaml:"heartbeat_interval"`
	RebalanceTimeout    time.Duration `yaml:"rebalance_timeout"`
	// GroupInstanceID makes the member static (KIP-345): a restart within
	// session_timeout gets its partitions back with no rebalance. "" is a
	// dynamic member.
	GroupInstanceID string `yaml:"group_instance_id"`
	// Rebalance is cooperative (KIP-429: members keep what they keep) or
	// eager (every member lets go of everything at every rebalance).
	Rebalance string `yaml:"rebalance"`
	// Revoke is what a partition moving to another member does with its
	// open batch: handover (dropped; the new owner reads it again from the
	// last commit) or write (cut, written and committed first).
	Revoke string `yaml:"revoke"`
	// LeaveOnShutdown makes a static member leave the group when it stops
	// (a scale-in), so its partitions move at once instead of after the
	// session timeout; a dynamic member always leaves.
	LeaveOnShutdown bool `yaml:"leave_on_shutdown"`
	// GroupProtocol is classic (JoinGroup/SyncGroup, this member's
	// rack-aware planner assigns) or consumer (KIP-848: the broker assigns,
	// rack-blind in Kafka 4.x).
	GroupProtocol string `yaml:"group_protocol"`
	// GroupRemoteAssignor is the broker-side assignor under
	// group_protocol: consumer: uniform or range.
	GroupRemoteAssignor string `yaml:"group_remote_assignor"`
	// GroupInitialRebalanceDelay is how long a member alone in an empty
	// group holds its first assignment back under group_protocol:
	// consumer, whose brokers have no such delay (the classic protocol's
	// is the brokers' group.initial.rebalance.delay.ms); 0 starts at once.
	// Unset: 3s under consumer.
	GroupInitialRebalanceDelay *time.Duration `yaml:"group_initial_rebalance_delay"`
}

// maxInitialRebalanceDelay bounds kafka.group_initial_rebalance_delay:
// members that start further apart than this are not starting together.
const maxInitialRebalanceDelay = time.Minute

// FetchConfig tunes the partition readers.
type FetchConfig struct {
	MinBytes int `yaml:"min_bytes"`
	// MaxBytes caps a partition's part of a fetch, RequestMaxBytes the
	// whole fetch to one broker (all of the member's partitions there).
	MaxBytes        int           `yaml:"max_bytes"`
	RequestMaxBytes int           `yaml:"request_max_bytes"`
	MaxWait         time.Duration `yaml:"max_wait"`
	// PreferredReplicaLease is how long a reader follows the replica the
	// leader preferred before asking the leader again (KIP-392).
	PreferredReplicaLease time.Duration `yaml:"preferred_replica_lease"`
	// ReplicaBackoff is how long a reader reads from the leader alone after
	// its preferred replica failed, doubling with each failure in a row up
	// to ReplicaBackoffMax.
	ReplicaBackoff    time.Duration `yaml:"replica_backoff"`
	ReplicaBackoffMax time.Duration `yaml:"replica_backoff_max"`
}

// TLSConfig is `kafka.tls`.
type TLSConfig struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// SASLConfig is `kafka.sasl`.
type SASLConfig struct {
	// Mechanism is none, plain, scram-sha-256, scram-sha-512 or aws-msk-iam.
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	Password  Secret `yaml:"password"`
}

// BatchConfig is the flush rule: a partition's open batch is cut at whichever
// limit comes first (and, with a files sink, once a file reaches
// sinks.files.target_file_bytes). MaxRows and MaxBytes 0 set no limit.
type BatchConfig struct {
	MaxRows  int           `yaml:"max_rows"`
	MaxBytes int64         `yaml:"max_bytes"`
	MaxAge   time.Duration `yaml:"max_age"`
	// MemoryBudget bounds the bytes a member holds between fetch and sinks
	// (fetched records, decoded rows not yet staged, dead letters) across
	// all partitions; when it is spent, fetching pauses.
	MemoryBudget int64 `yaml:"memory_budget"`
}

// DeadLetterConfig says where records that cannot become rows go.
type DeadLetterConfig struct {
	// OnError is dead_letter, skip or fail.
	OnError string `yaml:"on_error"`
	// Topic receives the original record with the reason in headers; empty
	// means no Kafka dead letters.
	Topic string `yaml:"topic"`
	// Files writes dead letters under `_errors/` of the files sink.
	Files bool `yaml:"files"`
}

// MetricsConfig is the Prometheus endpoint.
type MetricsConfig struct {
	// Listen is the address of /metrics, e.g. ":9464"; empty turns it off.
	Listen string `yaml:"listen"`
}

// LogConfig is the structured log.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // auto (text on a terminal, else JSON), json or text
}

// RunConfig is the job's lifecycle.
type RunConfig struct {
	// ShutdownTimeout bounds the flush-commit-leave on SIGTERM; keep it under
	// the pod's termination grace period (30 s by default).
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// ProgressInterval is how often a progress line is logged; 0 logs none.
	// Absent from the file it is DefaultProgressInterval (set before
	// decoding, so an explicit 0 stays 0).
	ProgressInterval time.Duration `yaml:"progress_interval"`
}

// Secret is a string that never prints; in YAML it may be `${file:/path}`.
type Secret = secret.Secret

// SetDefaults fills every zero field; it is the one place defaults live for
// the pipeline's own sections.
func (c *Config) SetDefaults() {
	k := &c.Kafka
	if k.ClientID == "" {
		k.ClientID = "logstore"
	}
	if k.SASL.Mechanism == "" {
		k.SASL.Mechanism = "none"
	}
	if k.Isolation == "" {
		k.Isolation = "read_committed"
	}
	if k.StartOffset == "" {
		k.StartOffset = "earliest"
	}
	if k.OnOffsetOutOfRange == "" {
		k.OnOffsetOutOfRange = "fail"
	}
	confkey.Default(&k.Fetch.MinBytes, 1)
	confkey.Default(&k.Fetch.MaxBytes, fetch.DefaultFetchMaxBytes)
	confkey.Default(&k.Fetch.RequestMaxBytes, fetch.DefaultFetchRequestMaxBytes)
	confkey.Default(&k.Fetch.MaxWait, fetch.DefaultFetchMaxWait)
	confkey.Default(&k.Fetch.PreferredReplicaLease, 5*time.Minute)
	confkey.Default(&k.Fetch.ReplicaBackoff, fetch.DefaultReplicaBackoff)
	confkey.Default(&k.Fetch.ReplicaBackoffMax, fetch.DefaultReplicaBackoffMax)
	confkey.Default(&k.SessionTimeout, 30*time.Second)
	confkey.Default(&k.HeartbeatInterval, 3*time.Second)
	confkey.Default(&k.RebalanceTimeout, 30*time.Second)
	if k.Rebalance == "" {
		k.Rebalance = RebalanceCooperative
	}
	if k.Revoke == "" {
		k.Revoke = RevokeHandover
	}
	if k.GroupProtocol == "" {
		k.GroupProtocol = GroupProtocolClassic
	}
	if k.GroupProtocol == GroupProtocolConsumer {
		confkey.Default(&k.GroupRemoteAssignor, "uniform")
		if k.GroupInitialRebalanceDelay == nil {
			k.GroupInitialRebalanceDelay = new(group.DefaultInitialDelay)
		}
	}
	c.Rack.SetDefaults()
	c.Schema.SetDefaults()
	confkey.Default(&c.Batch.MaxAge, 5*time.Minute)
	confkey.Default(&c.Batch.MemoryBudget, 128<<20)
	c.Sinks.SetDefaults()
	if c.DeadLetter.OnError == "" {
		c.DeadLetter.OnError = "dead_letter"
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "auto"
	}
	confkey.Default(&c.Run.ShutdownTimeout, 25*time.Second)
}

// Values of kafka.rebalance and kafka.revoke.
const (
	RebalanceCooperative = "cooperative"
	RebalanceEager       = "eager"
	RevokeHandover       = "handover"
	RevokeWrite          = "write"
)

// Values of kafka.group_protocol.
const (
	GroupProtocolClassic  = "classic"
	GroupProtocolConsumer = "consumer"
)

// The brokers check a group instance id as a topic name (JoinGroup
// refuses others with INVALID_REQUEST).
var instanceIDChars = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

const maxInstanceID = 249

// DefaultProgressInterval is run.progress_interval when the file has none.
const DefaultProgressInterval = 30 * time.Second

// Validate checks every section; an error names the key (see confkey.Error).
func (c *Config) Validate() error {
	k := &c.Kafka
	switch {
	case len(k.Brokers) == 0:
		return confkey.Errorf("kafka.brokers", "no brokers; list at least one host:port")
	case len(k.Topics) == 0:
		return confkey.Errorf("kafka.topics", "no topics; list the topics to read")
	case k.Group == "":
		return confkey.Errorf("kafka.group", "no consumer group; set a group id (commits and rack-aware assignment need one)")
	}
	for i, b := range k.Brokers {
		if !strings.Contains(b, ":") {
			return confkey.Errorf(fmt.Sprintf("kafka.brokers[%d]", i), "%s has no port; write host:port", confkey.Quote(b))
		}
	}
	if err := confkey.OneOf("kafka.sasl.mechanism", k.SASL.Mechanism, "none", "plain", "scram-sha-256", "scram-sha-512", "aws-msk-iam"); err != nil {
		return err
	}
	if (k.SASL.Mechanism == "plain" || strings.HasPrefix(k.SASL.Mechanism, "scram")) && k.SASL.Username == "" {
		return confkey.Errorf("kafka.sasl.username", "mechanism %s needs a username (and a password, e.g. ${KAFKA_PASSWORD})", k.SASL.Mechanism)
	}
	if k.SASL.Mechanism == "aws-msk-iam" && !k.TLS.Enabled {
		return confkey.Errorf("kafka.tls.enabled", "sasl.mechanism aws-msk-iam needs TLS (MSK's IAM listener, port 9098, only speaks TLS); set kafka.tls.enabled: true")
	}
	if err := confkey.OneOf("kafka.isolation", k.Isolation, "read_uncommitted", "read_committed"); err != nil {
		return err
	}
	if _, _, err := ParseStartOffset(k.StartOffset); err != nil {
		return confkey.Errorf("kafka.start_offset", "%v", err)
	}
	if err := confkey.OneOf("kafka.on_offset_out_of_range", k.OnOffsetOutOfRange, "fail", "earliest", "latest"); err != nil {
		return err
	}
	if k.MaxRecordsPerSecond < 0 {
		return confkey.Errorf("kafka.max_records_per_second", "must be 0 (unlimited) or positive")
	}
	f := k.Fetch
	if err := firstNegative(
		limit{"kafka.fetch.min_bytes", f.MinBytes < 0, f.MinBytes, "1"},
		limit{"kafka.fetch.max_bytes", f.MaxBytes < 0, f.MaxBytes, "1MiB"},
		limit{"kafka.fetch.request_max_bytes", f.RequestMaxBytes < 0, f.RequestMaxBytes, "50MiB"},
		limit{"kafka.fetch.max_wait", f.MaxWait < 0, f.MaxWait, fetch.DefaultFetchMaxWait.String()},
		limit{"kafka.fetch.preferred_replica_lease", f.PreferredReplicaLease < 0, f.PreferredReplicaLease, "5m"},
		limit{"kafka.fetch.replica_backoff", f.ReplicaBackoff < 0, f.ReplicaBackoff, fetch.DefaultReplicaBackoff.String()},
	); err != nil {
		return err
	}
	// Fetch sizes are int32 on the wire.
	if f.MaxBytes > math.MaxInt32 {
		return confkey.Errorf("kafka.fetch.max_bytes", "%d is over the 2147483647 bytes a Kafka fetch can ask for", f.MaxBytes)
	}
	if f.RequestMaxBytes > math.MaxInt32 {
		return confkey.Errorf("kafka.fetch.request_max_bytes", "%d is over the 2147483647 bytes a Kafka fetch can ask for", f.RequestMaxBytes)
	}
	if f.ReplicaBackoffMax < f.ReplicaBackoff {
		return confkey.Errorf("kafka.fetch.replica_backoff_max", "%s is shorter than replica_backoff (%s); the wait only grows", f.ReplicaBackoffMax, f.ReplicaBackoff)
	}
	if k.HeartbeatInterval >= k.SessionTimeout {
		return confkey.Errorf("kafka.heartbeat_interval", "must be shorter than session_timeout (%s)", k.SessionTimeout)
	}
	if err := confkey.OneOf("kafka.rebalance", k.Rebalance, RebalanceCooperative, RebalanceEager); err != nil {
		return err
	}
	if err := confkey.OneOf("kafka.revoke", k.Revoke, RevokeHandover, RevokeWrite); err != nil {
		return err
	}
	if err := confkey.OneOf("kafka.group_protocol", k.GroupProtocol, GroupProtocolClassic, GroupProtocolConsumer); err != nil {
		return err
	}
	if k.GroupProtocol == GroupProtocolConsumer {
		if k.Rebalance == RebalanceEager {
			return confkey.Errorf("kafka.rebalance", "eager has no place under group_protocol: consumer (KIP-848 is incremental: a member only lets go of what moves); remove it or use group_protocol: classic")
		}
		if err := confkey.OneOf("kafka.group_remote_assignor", k.GroupRemoteAssignor, "uniform", "range"); err != nil {
			return err
		}
		if d := *k.GroupInitialRebalanceDelay; d < 0 || d > maxInitialRebalanceDelay {
			return confkey.Errorf("kafka.group_initial_rebalance_delay", "%s is outside 0s..%s (0 starts at once)", d, maxInitialRebalanceDelay)
		}
	} else if k.GroupRemoteAssignor != "" {
		return confkey.Errorf("kafka.group_remote_assignor", "only applies to group_protocol: consumer (the broker assigns); the classic protocol uses rack.balancer")
	} else if k.GroupInitialRebalanceDelay != nil {
		return confkey.Errorf("kafka.group_initial_rebalance_delay", "only applies to group_protocol: consumer; under classic the brokers' group.initial.rebalance.delay.ms does this")
	}
	if err := validateClientID(k.ClientID); err != nil {
		return err
	}
	if id := k.GroupInstanceID; id != "" && (len(id) > maxInstanceID || !instanceIDChars.MatchString(id)) {
		return confkey.Errorf("kafka.group_instance_id", "%q: the brokers take at most %d of the characters a-z A-Z 0-9 . _ - (a pod name: ${POD_NAME})", id, maxInstanceID)
	}
	if err := prefixed("rack.", c.Rack.Validate()); err != nil {
		return err
	}
	if err := prefixed("schema.", c.Schema.Validate()); err != nil {
		return err
	}
	b := &c.Batch
	if err := firstNegative(
		limit{"batch.max_rows", b.MaxRows < 0, b.MaxRows, "0 (no limit)"},
		limit{"batch.max_bytes", b.MaxBytes < 0, b.MaxBytes, "0 (no limit)"},
		limit{"batch.max_age", b.MaxAge < 0, b.MaxAge, "5m"},
	); err != nil {
		return err
	}
	if b.MemoryBudget < 16<<20 {
		return confkey.Errorf("batch.memory_budget", "%d is below the minimum of 16 MiB (16777216)", b.MemoryBudget)
	}
	if err := prefixed("sinks.", c.Sinks.Validate()); err != nil {
		return err
	}
	if err := confkey.OneOf("dead_letter.on_error", c.DeadLetter.OnError, "dead_letter", "skip", "fail"); err != nil {
		return err
	}
	if c.DeadLetter.OnError == "dead_letter" && c.DeadLetter.Topic == "" && !c.DeadLetter.Files {
		return confkey.Errorf("dead_letter", "on_error is dead_letter but no destination is set; set dead_letter.topic and/or dead_letter.files: true (or on_error: skip)")
	}
	if c.DeadLetter.Files && c.Sinks.Files == nil {
		return confkey.Errorf("dead_letter.files", "needs sinks.files (dead letters go under its _errors/ prefix)")
	}
	if err := confkey.OneOf("log.level", c.Log.Level, "debug", "info", "warn", "error"); err != nil {
		return err
	}
	if err := confkey.OneOf("log.format", c.Log.Format, "auto", "json", "text"); err != nil {
		return err
	}
	if c.Run.ProgressInterval < 0 {
		return confkey.Errorf("run.progress_interval", "%s is negative; use 0 to log no progress", c.Run.ProgressInterval)
	}
	if c.Run.ShutdownTimeout < time.Second {
		return confkey.Errorf("run.shutdown_timeout", "%s is too short to flush; use at least 1s", c.Run.ShutdownTimeout)
	}
	return nil
}

// limit is a key that may not be negative; unset is what leaving it out (or
// 0) gives.
type limit struct {
	key      string
	negative bool
	value    any
	unset    string
}

// firstNegative names the first negative limit: a negative value is not
// "unset" to the code that reads it (the reader fetched 8 MiB for a
// kafka.fetch.max_bytes of -1), so it is refused here.
func firstNegative(limits ...limit) error {
	for _, l := range limits {
		if l.negative {
			return confkey.Errorf(l.key, "%v is negative; leave it out (or write 0) for the default, %s, or give a positive value", l.value, l.unset)
		}
	}
	return nil
}

// ParseStartOffset reads `kafka.start_offset`: earliest, latest, or an
// RFC 3339 time.
func ParseStartOffset(s string) (name string, at time.Time, err error) {
	switch s {
	case "earliest", "latest":
		return s, time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s is not earliest, latest or an RFC 3339 time like 2026-11-29T07:00:00Z", confkey.Quote(s))
	}
	return "time", t, nil
}

// keyed is what every section's key error satisfies.
type keyed interface {
	error
	ConfigKey() string
}

// prefixed re-roots a section's key error under the section's name.
func prefixed(section string, err error) error {
	var k keyed
	if err == nil || !errors.As(err, &k) {
		return err
	}
	key := k.ConfigKey()
	msg := strings.TrimPrefix(k.Error(), key+": ")
	return &confkey.Error{Key: section + key, Msg: msg}
}

// ConfigError is what Load returns for a bad config: where, which key, what
// to do. The CLI exits 2 on it. Err, when set, is the kind of refusal
// (ErrConfigTooLarge, ErrConfigTooDeep, ErrConfigAliases, ErrConfigNotText).
type ConfigError struct {
	File         string
	Line, Column int
	Key          string
	Msg          string
	Err          error
}

func (e *ConfigError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Column)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Load reads, expands, decodes (strictly), defaults and validates a config
// file. Every error is a *ConfigError. A file over MaxConfigBytes is refused
// without reading it.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: err.Error()}
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxConfigBytes {
		return nil, tooBig(path, fmt.Sprintf("%.1f MiB", float64(st.Size())/(1<<20)))
	}
	// One byte past the limit tells a stream over it (a pipe has no size).
	raw, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, &ConfigError{File: path, Msg: err.Error()}
	}
	if len(raw) > MaxConfigBytes {
		return nil, tooBig(path, "it")
	}
	return Parse(path, raw)
}

func tooBig(name, size string) error {
	return &ConfigError{File: name, Err: ErrConfigTooLarge,
		Msg: fmt.Sprintf("%s is over the 1 MiB a config may be; is it the right file? (configs/reference.yaml, every key documented, is about 30 KB)", size)}
}

// Parse is Load on bytes already read; name is used in messages. Before the
// YAML parser reads the text, its size, bytes and shape are checked
// (configlimits.go), after the environment is expanded into it too; its
// aliases and its values' kinds are checked before it is decoded.
func Parse(name string, raw []byte) (*Config, error) {
	if len(raw) > MaxConfigBytes {
		return nil, tooBig(name, fmt.Sprintf("%.1f MiB", float64(len(raw))/(1<<20)))
	}
	if err := checkText(name, raw); err != nil {
		return nil, err
	}
	text, err := expandEnv(name, raw)
	if err != nil {
		return nil, err
	}
	if len(text) > MaxConfigBytes {
		return nil, tooBig(name, "with its environment variables expanded, it")
	}
	if err := checkText(name, text); err != nil {
		return nil, err
	}
	if err := checkShape(name, text); err != nil {
		return nil, err
	}
	file, err := parser.ParseBytes(text, 0)
	if err != nil {
		return nil, yamlError(name, err)
	}
	if err := checkOneDocument(name, file); err != nil {
		return nil, err
	}
	if err := checkAliases(name, file); err != nil {
		return nil, err
	}
	if err := checkTypes(name, file, reflect.TypeFor[Config]()); err != nil {
		return nil, err
	}
	c := Config{Run: RunConfig{ProgressInterval: DefaultProgressInterval}}
	// The first document is the config, as yaml.Unmarshal reads it.
	if len(file.Docs) > 0 && file.Docs[0].Body != nil {
		if err := yaml.NodeToValue(file.Docs[0].Body, &c, yaml.Strict()); err != nil {
			return nil, yamlError(name, err)
		}
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		return nil, locate(name, file, err)
	}
	return &c, nil
}

// checkOneDocument refuses keys after a `---`: the config is the first
// document, and a second one (a job pasted below another, a config split
// in two) was silently dropped. An empty document (a closing --- or ...)
// holds nothing to lose.
func checkOneDocument(name string, file *ast.File) error {
	for i, d := range file.Docs {
		if i == 0 || d.Body == nil {
			continue
		}
		ce := &ConfigError{File: name, Msg: "a second YAML document starts here, after a ---; a config is one document: merge its keys into the first (or remove the ---), or give the other job a file of its own"}
		if tk := d.Body.GetToken(); tk != nil && tk.Position != nil {
			ce.Line, ce.Column = tk.Position.Line, tk.Position.Column
		}
		return ce
	}
	return nil
}

// yamlError turns a parser or decoder error into file:line:col and a short
// message. The type check has already named every key of the wrong kind, so
// what reaches here is a syntax error or a value a key's own decoder refused
// (a secret's file); its token is quoted short, as it may be anything.
func yamlError(name string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		tk := ye.GetToken()
		msg := ye.GetMessage()
		if strings.Contains(msg, "'\t'") {
			msg = strings.ReplaceAll(msg, "\t", `\t`) + "; indent with spaces, not tabs"
		}
		if v := strings.TrimSpace(tk.Value); v != "" {
			msg += " (at " + confkey.Quote(v) + ")"
		}
		return &ConfigError{File: name, Line: tk.Position.Line, Column: tk.Position.Column, Msg: msg}
	}
	return &ConfigError{File: name, Msg: err.Error()}
}

// locate finds the line of the key a validation error names; when the key is
// absent from the file (a missing value), it points at its nearest parent.
func locate(name string, file *ast.File, err error) error {
	var k keyed
	if !errors.As(err, &k) {
		return &ConfigError{File: name, Msg: err.Error()}
	}
	ce := &ConfigError{File: name, Key: k.ConfigKey(), Msg: strings.TrimPrefix(k.Error(), k.ConfigKey()+": ")}
	for key := k.ConfigKey(); key != ""; key = parentKey(key) {
		p, err := yaml.PathString("$." + key)
		if err != nil {
			continue
		}
		n, err := p.FilterFile(file)
		if err != nil || n == nil {
			continue
		}
		pos := n.GetToken().Position
		if mv, ok := parentMapValue(file, key); ok {
			pos = mv.Key.GetToken().Position
		}
		ce.Line, ce.Column = pos.Line, pos.Column
		break
	}
	return ce
}

// parentMapValue finds the key token of `key` so the error points at the key,
// not at its value.
func parentMapValue(file *ast.File, key string) (*ast.MappingValueNode, bool) {
	parent, last := parentKey(key), key[strings.LastIndexAny(key, ".")+1:]
	if strings.HasSuffix(last, "]") {
		return nil, false
	}
	var node ast.Node
	if parent == "" {
		if len(file.Docs) == 0 {
			return nil, false
		}
		node = file.Docs[0].Body
	} else {
		p, err := yaml.PathString("$." + parent)
		if err != nil {
			return nil, false
		}
		if node, err = p.FilterFile(file); err != nil || node == nil {
			return nil, false
		}
	}
	var values []*ast.MappingValueNode
	switch n := node.(type) {
	case *ast.MappingNode:
		values = n.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{n}
	}
	for _, mv := range values {
		if mv.Key.GetToken().Value == last {
			return mv, true
		}
	}
	return nil, false
}

var indexSuffix = regexp.MustCompile(`\[\d+\]$`)

func parentKey(key string) string {
	if loc := indexSuffix.FindStringIndex(key); loc != nil {
		return key[:loc[0]]
	}
	if i := strings.LastIndex(key, "."); i >= 0 {
		return key[:i]
	}
	return ""
}

var envRef = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// secretRef is a secret key whose whole value is one ${VAR}.
var secretRef = regexp.MustCompile(`^\s*(?:-\s+)?(?:password|secret_access_key):\s+\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}\s*(?:#.*)?$`)

// expandEnv replaces ${VAR} and ${VAR:-default} in the raw text ($$ is a
// literal $). Expanding before parsing keeps line numbers and lets a variable
// hold any YAML scalar. A variable without a default is required: unset or
// empty, it is an error naming every such variable, so a missing bucket or
// secret fails at start instead of becoming an empty value. A
// secret key's ${VAR} becomes a quoted string, so a password with YAML in it
// (`: `, ` #`, a leading @ or [) stays whole and never shows in a YAML error.
func expandEnv(name string, raw []byte) ([]byte, error) {
	var missing *ConfigError // at the first unset variable
	var first string
	var others []string // the unset variables after the first, with their lines
	lines := strings.Split(string(raw), "\n")
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		quote := func(v string) string { return v }
		if secretRef.MatchString(line) {
			quote = strconv.Quote
		}
		lines[i] = envRef.ReplaceAllStringFunc(line, func(m string) string {
			if m == "$$" {
				return "$"
			}
			sub := envRef.FindStringSubmatch(m)
			if v, ok := os.LookupEnv(sub[1]); ok && v != "" {
				return quote(v)
			}
			if sub[2] != "" {
				return quote(sub[3])
			}
			if missing == nil {
				missing = &ConfigError{File: name, Line: i + 1, Column: strings.Index(line, m) + 1, Key: m}
				first = sub[1]
			} else if v := fmt.Sprintf("%s (line %d)", sub[1], i+1); !slices.Contains(others, v) {
				others = append(others, v)
			}
			return ""
		})
	}
	if missing == nil {
		return []byte(strings.Join(lines, "\n")), nil
	}
	if len(others) == 0 {
		missing.Msg = fmt.Sprintf("environment variable %s is not set (or is empty); export it, or write ${%s:-default} if the value is optional", first, first)
	} else {
		missing.Msg = fmt.Sprintf("environment variables %s, %s are not set (or are empty); export them, or write ${NAME:-default} for a value that is optional", first, strings.Join(others, ", "))
	}
	return nil, missing
}

// Build is the TLS configuration of `kafka.tls` (nil when it is off), for a
// client of the input cluster other than the job's own (`logstore status`).
func (t TLSConfig) Build() (*tls.Config, error) { return tlsConfig(t) }
