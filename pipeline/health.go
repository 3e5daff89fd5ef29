package pipeline

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// readiness is what /readyz answers: a member is ready once it knows its
// zone, its sinks passed their preflight and it joined the group (or, in a
// --from/--to replay, started reading), and until it starts to stop. A
// rebalance does not make it unready: it is still a member, and a rollout
// that waited for every rebalance to settle would stall.
type readiness struct {
	zone, sinks, joined, stopping atomic.Bool
}

// missing lists what keeps the member from being ready.
func (r *readiness) missing() []string {
	var m []string
	if r.stopping.Load() {
		return []string{"stopping"}
	}
	for _, c := range []struct {
		done *atomic.Bool
		what string
	}{
		{&r.zone, "zone detection"},
		{&r.sinks, "sink preflight"},
		{&r.joined, "group join"},
	} {
		if !c.done.Load() {
			m = append(m, c.what)
		}
	}
	return m
}

// healthz answers while the process serves: liveness, nothing more (a
// member waiting out a sink outage is alive, and restarting it would not
// help).
func healthz(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintln(w, "ok")
}

func (r *readiness) readyz(w http.ResponseWriter, _ *http.Request) {
	if m := r.missing(); len(m) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: waiting for %s\n", strings.Join(m, ", "))
		return
	}
	fmt.Fprintln(w, "ready")
}
