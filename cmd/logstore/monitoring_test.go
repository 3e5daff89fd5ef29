//go:build !nodemo

package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/logstore/logstore/pipeline"
)

// The alert rules and the Grafana dashboard under configs/ are parsed with
// Prometheus's own parsers, and every metric they name must be one logstore
// documents in configs/prometheus/METRICS.md.

const (
	alertsPath    = "../../configs/prometheus/alerts.yaml"
	metricsMDPath = "../../configs/prometheus/METRICS.md"
	dashboardPath = "../../configs/grafana/logstore.json"
)

var promql = parser.NewParser(parser.Options{})

// documentedMetrics reads METRICS.md's table: metric name → type.
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(metricsMDPath)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z_:][a-z0-9_:]*)` \\| (counter|gauge|histogram|summary) \\|")
	types := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			if _, dup := types[m[1]]; dup {
				t.Errorf("METRICS.md lists %s twice", m[1])
			}
			types[m[1]] = m[2]
		}
	}
	if len(types) == 0 {
		t.Fatal("METRICS.md has no table rows")
	}
	return types
}

// exposedName maps a series name to the metric it belongs to: a histogram
// is exposed as _bucket, _sum and _count series.
func exposedName(name string, types map[string]string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && (types[base] == "histogram" || types[base] == "summary") {
			return base
		}
	}
	return name
}

// selectorNames returns the metric names an expression selects.
func selectorNames(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			names = append(names, matcherName(vs.Name, vs.LabelMatchers))
		}
		return nil
	})
	return names
}

func matcherName(name string, ms []*labels.Matcher) string {
	if name != "" {
		return name
	}
	for _, m := range ms {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return "" // a selector without a fixed name; reported by the caller
}

// ruleMetrics parses alerts.yaml as Prometheus loads a rule file (unknown
// fields are errors, every expression and template is checked) and returns
// the metric names each alert uses.
func ruleMetrics(t *testing.T) map[string][]string {
	t.Helper()
	groups, errs := rulefmt.ParseFile(alertsPath, false, model.LegacyValidation, promql, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, err := range errs {
		t.Errorf("alerts.yaml: %v", err)
	}
	if groups == nil {
		t.FailNow()
	}
	used := map[string][]string{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s holds a recording rule %q; the file is for alerts", g.Name, r.Record)
				continue
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s needs a severity label and summary and description annotations", r.Alert)
			}
			expr, err := promql.ParseExpr(r.Expr)
			if err != nil {
				t.Errorf("alert %s: %v", r.Alert, err)
				continue
			}
			used[r.Alert] = selectorNames(expr)
		}
	}
	return used
}

// grafanaVars stand in for the dashboard's variables so its queries parse
// as PromQL; a variable not listed here fails the test.
var grafanaVars = map[string]string{
	"__rate_interval": "5m", "__interval": "1m", "__range": "6h",
	"job": "logstore", "topic": "logs", "price_per_gb": "0.02",
}

var grafanaVar = regexp.MustCompile(`\$\{?(\w+)\}?`)

// dashboardMetrics walks the dashboard JSON: every "expr" of a panel target
// and every label_values() of a template variable. It returns the metric
// names by panel title.
func dashboardMetrics(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []panelJSON `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("logstore.json: %v", err)
	}
	substitute := func(where, s string) string {
		return grafanaVar.ReplaceAllStringFunc(s, func(v string) string {
			name := grafanaVar.FindStringSubmatch(v)[1]
			val, ok := grafanaVars[name]
			if !ok {
				t.Errorf("%s uses the variable $%s, unknown to this test", where, name)
			}
			return val
		})
	}
	used := map[string][]string{}
	ids := map[int]bool{}
	var walk func(ps []panelJSON)
	walk = func(ps []panelJSON) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d is used twice", p.ID)
			}
			ids[p.ID] = true
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				expr, err := promql.ParseExpr(substitute(p.Title, tg.Expr))
				if err != nil {
					t.Errorf("panel %q: %s: %v", p.Title, tg.Expr, err)
					continue
				}
				used["panel "+p.Title] = append(used["panel "+p.Title], selectorNames(expr)...)
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)
	for _, v := range dash.Templating.List {
		q := v.Query
		if m, ok := q.(map[string]any); ok {
			q = m["query"]
		}
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(q.(string))
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q)
			continue
		}
		ms, err := promql.ParseMetricSelector(substitute("variable "+v.Name, m[1]))
		if err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
			continue
		}
		used["variable "+v.Name] = []string{matcherName("", ms)}
	}
	return used
}

type panelJSON struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panelJSON `json:"panels"`
}

// TestAlertRulesAndDashboardUseDocumentedMetrics: the rules load with
// Prometheus's rule parser, every PromQL expression parses, every metric
// they and the dashboard name is in METRICS.md and in a live /metrics of a
// short run; the dashboard shows every metric METRICS.md lists.
func TestAlertRulesAndDashboardUseDocumentedMetrics(t *testing.T) {
	types := documentedMetrics(t)
	rules := ruleMetrics(t)
	for _, want := range []string{"LogstoreLagGrowing", "LogstoreCrossZoneShareHigh", "LogstoreNoCommit", "LogstoreRackNotMatched"} {
		if _, ok := rules[want]; !ok {
			t.Errorf("alerts.yaml has no %s", want)
		}
	}
	dash := dashboardMetrics(t)
	onDashboard := map[string]bool{}
	for _, uses := range []map[string][]string{rules, dash} {
		for _, where := range slices.Sorted(maps.Keys(uses)) {
			for _, name := range uses[where] {
				if name == "" {
					t.Errorf("%s selects series without a metric name", where)
					continue
				}
				base := exposedName(name, types)
				if _, ok := types[base]; !ok {
					t.Errorf("%s uses %s, which METRICS.md does not list", where, name)
				}
				if strings.HasPrefix(where, "panel ") {
					onDashboard[base] = true
				}
			}
		}
	}
	for name := range types {
		if !onDashboard[name] {
			t.Errorf("METRICS.md lists %s, but no dashboard panel shows it", name)
		}
	}

	// A live scrape: a short --until now run on an embedded cluster must
	// export every metric the rules and the dashboard use.
	srv, newJob := demoJobWithListener(t, 5000)
	if err := newJob().Run(context.Background(), pipeline.Mode{UntilNow: true}); err != nil {
		t.Fatal(err)
	}
	live := scrape(t, srv)
	for _, uses := range []map[string][]string{rules, dash} {
		for _, where := range slices.Sorted(maps.Keys(uses)) {
			for _, name := range uses[where] {
				if _, ok := live[exposedName(name, types)]; !ok {
					t.Errorf("%s uses %s; a live /metrics has no such metric", where, name)
				}
			}
		}
	}
	for _, name := range []string{"logstore_batches_total", "logstore_flush_duration_seconds", "logstore_commit_duration_seconds", "logstore_rebalances_total"} {
		if live[name] == 0 {
			t.Errorf("%s is 0 after a run that committed batches", name)
		}
	}
	// --until now read every partition to its end and committed it all.
	for _, name := range []string{"logstore_consumer_lag", "logstore_uncommitted_batch_age_seconds"} {
		if live[name] != 0 {
			t.Errorf("%s sums to %v after a run that read and committed everything", name, live[name])
		}
	}
}
