package rack

import (
	"context"
	"log/slog"
	"slices"
	"strings"
)

// Match picks the name of this worker's zone to use as its rack, given the
// racks the brokers report in cluster metadata. mode is rack.match:
//
//   - auto: the candidate the brokers use — the zone ID on Amazon MSK
//     (apne2-az1), usually the zone name on self-managed clusters
//     (ap-northeast-2a). When none is a broker rack it returns "": the worker
//     reads rack-blind rather than claim a locality it does not have.
//   - name, id: that kind of identity, whatever the brokers use ("" when the
//     platform does not report that kind).
//   - as-is: the first candidate as detected (the zone name when the platform
//     reports one).
//
// brokerRacks nil means the brokers' racks are unknown: auto then acts as
// as-is. matched reports whether rack is a broker rack.
//
// In auto mode racks compare ignoring case and the broker's own spelling is
// returned: brokers compare the rack a fetch sends byte for byte. The forced
// modes return the identity verbatim.
func Match(zone Identity, brokerRacks []string, mode string) (rack string, matched bool) {
	var want string
	switch mode {
	case "name":
		want = zone.Name
	case "id":
		want = zone.ID
	case "as-is":
		want = preferred(zone)
	default: // auto
		if brokerRacks == nil {
			return preferred(zone), false
		}
		for _, c := range zone.Candidates() {
			for _, b := range brokerRacks {
				if b != "" && strings.EqualFold(strings.TrimSpace(b), c) {
					return b, true
				}
			}
		}
		return "", false
	}
	return want, want != "" && slices.Contains(brokerRacks, want)
}

func preferred(zone Identity) string {
	if c := zone.Candidates(); len(c) > 0 {
		return c[0]
	}
	return ""
}

// MatchBrokers sets r.Rack to the identity the brokers use (see Match) and
// says so loudly, in one warning, when the worker's zone matches no broker
// rack. Call it again when the brokers' racks change; Detect need not rerun.
func (r *Result) MatchBrokers(brokerRacks []string, mode string, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	r.BrokerRacks = distinctRacks(brokerRacks)
	r.Rack, r.Matched = Match(r.Zone, r.BrokerRacks, mode)
	switch {
	case r.Matched || r.Zone.IsZero():
		// Matched, or Detect already warned that it found no zone.
	case len(r.BrokerRacks) == 0:
		log.Warn("rack: the brokers report no racks (broker.rack is unset); reading rack-blind",
			"candidates", r.Candidates, "source", r.Source)
	case r.Rack == "" && (mode == "name" || mode == "id"):
		log.Warn("rack: rack.match is "+mode+" but the provider reports no zone "+mode+"; reading rack-blind",
			"candidates", r.Candidates, "source", r.Source, "broker_racks", r.BrokerRacks)
	case r.Rack == "":
		log.Warn("rack: no broker rack matches this worker's zone "+strings.Join(r.Candidates, " or ")+
			"; reading rack-blind (if the brokers name zones their own way, set rack.static to this zone's broker rack)",
			"candidates", r.Candidates, "source", r.Source, "broker_racks", r.BrokerRacks)
	default:
		log.Warn("rack: this worker's rack "+r.Rack+" matches no broker rack; using it anyway because rack.match is "+mode,
			"candidates", r.Candidates, "source", r.Source, "broker_racks", r.BrokerRacks)
	}
}

// distinctRacks drops empty racks (brokers without broker.rack) and repeats,
// and sorts, so logs and JSON read the same on every worker. nil stays nil:
// it means "unknown", not "no racks".
func distinctRacks(racks []string) []string {
	if racks == nil {
		return nil
	}
	out := []string{}
	for _, r := range racks {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Resolve finds this worker's zone (Detect) and picks the identity the
// brokers use (MatchBrokers with cfg.Match). brokerRacks nil skips the match:
// the rack is then the preferred candidate, the zone name where known.
func Resolve(ctx context.Context, cfg Config, brokerRacks []string, log *slog.Logger) (Result, error) {
	res, err := Detect(ctx, cfg, log)
	if err != nil || brokerRacks == nil {
		return res, err
	}
	cfg.SetDefaults()
	res.MatchBrokers(brokerRacks, cfg.Match, log)
	return res, nil
}
