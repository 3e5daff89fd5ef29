package rack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"time"
)

// Identity is what a platform calls this worker's zone. AWS knows two names
// for one zone: the zone name (ap-northeast-2a) is mapped to a physical zone
// per account, the zone ID (apne2-az1) is the same physical zone in every
// account. Amazon MSK puts the ID in broker.rack, self-managed clusters
// usually the name, so a provider reports both when it can and Match decides.
type Identity struct {
	Name string `json:"name,omitempty"`
	ID   string `json:"id,omitempty"`
}

// userGiven is a rack the user typed (rack.static, LOGSTORE_RACK). We cannot
// tell whether it is a zone name or a zone ID, and the user's word should
// hold whatever rack.match says, so it stands for both.
func userGiven(rack string) Identity { return Identity{Name: rack, ID: rack} }

// Candidates lists the distinct racks this identity could be, the name first:
// without broker racks to choose by, the name is what people see in consoles
// and in Kubernetes' topology.kubernetes.io/zone label.
func (z Identity) Candidates() []string {
	out := []string{}
	for _, c := range []string{z.Name, z.ID} {
		if c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// IsZero reports whether the identity names no zone at all.
func (z Identity) IsZero() bool { return z.Name == "" && z.ID == "" }

func (z Identity) String() string {
	switch {
	case z.Name == z.ID:
		return z.Name
	case z.ID == "":
		return "name " + z.Name
	case z.Name == "":
		return "id " + z.ID
	}
	return "name " + z.Name + ", id " + z.ID
}

// Outcome is what one provider's attempt came to.
type Outcome string

const (
	// OutcomeAnswered: the provider found the zone; detection stops here.
	OutcomeAnswered Outcome = "answered"
	// OutcomeAbsent: this is not the provider's platform (variable unset,
	// file missing, nothing listening at the platform's address).
	OutcomeAbsent Outcome = "absent"
	// OutcomeTimeout: the endpoint did not answer in time, or the budget was
	// spent before the provider could run.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeError: the platform is there but refused or answered nonsense.
	OutcomeError Outcome = "error"
)

// TraceEntry records one provider's attempt, so a user can see why a worker
// ended up in its rack, or rack-blind.
type TraceEntry struct {
	Provider string        `json:"provider"`
	Outcome  Outcome       `json:"outcome"`
	Detail   string        `json:"detail,omitempty"`
	Elapsed  time.Duration `json:"elapsed"`
}

// MarshalJSON writes Elapsed as a duration a person reads ("1.5ms"), not as
// nanoseconds.
func (e TraceEntry) MarshalJSON() ([]byte, error) {
	type plain TraceEntry
	return json.Marshal(struct {
		plain
		Elapsed string `json:"elapsed"`
	}{plain(e), e.Elapsed.Round(time.Microsecond).String()})
}

// Result is where detection and matching put this worker.
type Result struct {
	// Rack is the rack to send to brokers and to the group; empty means
	// rack-blind.
	Rack string `json:"rack"`
	// Source is the provider that answered; empty when none did.
	Source string `json:"source"`
	// Candidates are every rack the answering provider reported, preferred
	// first (see Identity.Candidates).
	Candidates []string `json:"candidates"`
	// Zone is the answer with its kinds kept apart, for Match.
	Zone Identity `json:"zone"`
	// BrokerRacks are the racks the match step compared against; nil when
	// there was no match step.
	BrokerRacks []string `json:"broker_racks,omitempty"`
	// Matched reports whether Rack is one of BrokerRacks: false means reads
	// will not stay in the zone (a metric should say so).
	Matched bool `json:"matched"`
	// Trace is each provider tried, in order.
	Trace []TraceEntry `json:"trace"`
}

// Detect finds this worker's zone by asking cfg.Providers in order and
// stopping at the first that answers. Each provider gets cfg.ProviderTimeout,
// all of them together cfg.Budget, so start-up never hangs on a platform that
// is not there. When no provider answers, the Result has an empty Rack and
// the error is nil: the worker runs rack-blind. The error is non-nil only for
// an invalid config or when ctx ends first.
//
// A non-empty cfg.Static answers even when the chain leaves "static" out: the
// config says it skips detection.
func Detect(ctx context.Context, cfg Config, log *slog.Logger) (Result, error) {
	if log == nil {
		log = slog.Default()
	}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return Result{}, fmt.Errorf("rack: %w", err)
	}
	chain := cfg.Providers
	if cfg.Static != "" && !slices.Contains(chain, "static") {
		chain = append([]string{"static"}, chain...)
	}

	res := Result{Candidates: []string{}, Trace: []TraceEntry{}}
	budget, cancel := context.WithTimeout(ctx, cfg.Budget)
	defer cancel()
	for _, name := range chain {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("rack: detection stopped: %w", err)
		}
		var entry TraceEntry
		var zone Identity
		if budget.Err() != nil {
			entry = TraceEntry{Provider: name, Outcome: OutcomeTimeout,
				Detail: fmt.Sprintf("not tried: the %s budget (rack.budget) was spent", cfg.Budget)}
		} else {
			entry, zone = attempt(budget, name, cfg)
		}
		res.Trace = append(res.Trace, entry)
		log.Debug("rack: provider tried", "provider", name, "outcome", entry.Outcome, "detail", entry.Detail, "elapsed", entry.Elapsed)
		if entry.Outcome == OutcomeAnswered {
			res.Source, res.Zone = name, zone
			res.Candidates = zone.Candidates()
			res.Rack = res.Candidates[0]
			log.Info("rack: found this worker's zone", "source", name, "candidates", res.Candidates)
			return res, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("rack: detection stopped: %w", err)
	}
	log.Warn("rack: no provider found this worker's zone; reading rack-blind (set rack.static or "+envRack+" to name it)",
		"providers", traceSummary(res.Trace))
	return res, nil
}

// attempt runs one provider under its own timeout. The provider runs on its
// own goroutine so that one which ignores its context (a read from a stuck
// mount, say) is left behind instead of holding start-up.
func attempt(budget context.Context, name string, cfg Config) (TraceEntry, Identity) {
	p := providers[name]
	ctx, cancel := context.WithTimeout(budget, cfg.ProviderTimeout)
	defer cancel()
	type found struct {
		zone Identity
		err  error
	}
	done := make(chan found, 1)
	start := time.Now()
	go func() {
		z, err := p.find(ctx, cfg)
		done <- found{z, err}
	}()
	var f found
	select {
	case f = <-done:
	case <-ctx.Done():
		select {
		case f = <-done: // an answer that came with the deadline still counts
		default:
			f.err = fmt.Errorf("no answer within %s: %w", cfg.ProviderTimeout, ctx.Err())
		}
	}
	entry := TraceEntry{Provider: name, Elapsed: time.Since(start)}
	var absent *absentError
	switch {
	case f.err == nil && !f.zone.IsZero():
		entry.Outcome, entry.Detail = OutcomeAnswered, f.zone.String()
	case f.err == nil:
		entry.Outcome, entry.Detail = OutcomeError, "answered without a zone"
	case errors.As(f.err, &absent):
		entry.Outcome, entry.Detail = OutcomeAbsent, absent.Error()
	case isTimeout(f.err):
		entry.Outcome, entry.Detail = OutcomeTimeout, f.err.Error()
		if p.onTimeout != "" {
			entry.Detail += "; " + p.onTimeout
		}
	default:
		entry.Outcome, entry.Detail = OutcomeError, f.err.Error()
	}
	if entry.Outcome != OutcomeAnswered {
		f.zone = Identity{}
	}
	return entry, f.zone
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// traceSummary is the trace in one log value: "env: absent (...); aws-imds: timeout (...)".
func traceSummary(trace []TraceEntry) string {
	parts := make([]string, len(trace))
	for i, e := range trace {
		parts[i] = fmt.Sprintf("%s: %s (%s)", e.Provider, e.Outcome, e.Detail)
	}
	return strings.Join(parts, "; ")
}
