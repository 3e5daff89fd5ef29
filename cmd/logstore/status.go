package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/logstore/logstore/pipeline"
)

func init() {
	register("status", "a running job's group: members, zones, hosts, partitions, lag, local share", runStatus)
}

// runStatus shows the job's consumer group from the cluster alone, as
// kafka-consumer-groups --describe does, with each member's zone and, from
// its /metrics when reachable, the share of its fetched bytes read in its
// own zone.
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("status", "-c FILE [--json]", stdout, stderr)
	path := fs.String("c", "", "the job's config (YAML): its brokers, group, topics and metrics.listen")
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return usageError{"status needs -c FILE, the job's config"}
	}
	cfg, err := pipeline.Load(*path)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cl, err := statusClient(ctx, cfg.Kafka)
	if err != nil {
		return err
	}
	defer cl.Close()
	st, err := describeGroup(ctx, cl, cfg)
	if err != nil {
		return err
	}
	if err := readLag(ctx, cl, cfg, st); err != nil {
		return err
	}
	slices.SortFunc(st.Members, func(a, b memberStatus) int {
		return strings.Compare(a.Zone+"\x00"+a.ID, b.Zone+"\x00"+b.ID)
	})
	readLocalShares(ctx, st, cfg.Metrics.Listen)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	return writeStatus(stdout, st, time.Now())
}

// portsPerHost bounds how many ports status tries on one host: the
// config's port and the ones after it, two per member on that host, so
// members started on one host with ports counted up from the config's
// (9464, 9465, …) are each found.
const portsPerHost = 32

// readLocalShares asks each member's /metrics for the bytes it fetched by
// locality: on its host, at the port of metrics.listen, and, where several
// members share a host, at the ports after it (two per member on the
// host, at most portsPerHost), each read once, one second to answer. A
// member's share is what the endpoint that names it (logstore_group_member)
// says; a member that no endpoint names (one killed and not yet out of the
// group, or on a port outside the range) has an unknown share. An endpoint
// that names nobody (a version before logstore_group_member) is taken at
// its word for the one member of its host.
func readLocalShares(ctx context.Context, st *groupStatus, listen string) {
	_, portText, err := net.SplitHostPort(listen)
	if listen == "" || err != nil {
		return
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return
	}
	client := &http.Client{Timeout: time.Second}
	onHost := map[string][]*memberStatus{}
	for i := range st.Members {
		m := &st.Members[i]
		onHost[m.Host] = append(onHost[m.Host], m)
	}
	type answer struct {
		url string
		ep  metricsEndpoint
		err error
	}
	var urls []string
	for host, members := range onHost {
		n := 1
		if len(members) > 1 {
			n = min(2*len(members), portsPerHost)
		}
		for p := port; p < port+n && p <= 65535; p++ {
			urls = append(urls, "http://"+net.JoinHostPort(host, strconv.Itoa(p))+"/metrics")
		}
	}
	answers := make(chan answer, len(urls))
	for _, u := range urls {
		go func() {
			ep, err := readMetricsEndpoint(ctx, client, u)
			answers <- answer{u, ep, err}
		}()
	}
	byMember := map[string]answer{}
	first := map[string]answer{} // host -> its config port's answer
	for range urls {
		a := <-answers
		if a.err != nil {
			continue
		}
		for _, id := range a.ep.members {
			byMember[id] = a
		}
		if u, _ := url.Parse(a.url); u != nil && u.Port() == portText {
			first[u.Hostname()] = a
		}
	}
	for host, members := range onHost {
		for _, m := range members {
			m.Metrics = "http://" + net.JoinHostPort(host, portText) + "/metrics"
			a, ok := byMember[m.ID]
			if !ok && len(members) == 1 {
				if f, found := first[host]; found && len(f.ep.members) == 0 {
					a, ok = f, true
				}
			}
			if ok {
				m.Metrics = a.url
				m.LocalShare = a.ep.share()
			}
		}
	}
}

// metricsEndpoint is what status reads from one /metrics: the members the
// process says it is, and its fetched bytes by locality.
type metricsEndpoint struct {
	members   []string
	same, all float64
}

// share is same-rack bytes over all bytes; nil when nothing was fetched.
func (e metricsEndpoint) share() *float64 {
	if e.all == 0 {
		return nil
	}
	s := e.same / e.all
	return &s
}

// readMetricsEndpoint reads logstore_group_member and
// logstore_fetch_bytes_total from the /metrics at url.
func readMetricsEndpoint(ctx context.Context, client *http.Client, url string) (metricsEndpoint, error) {
	var ep metricsEndpoint
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return ep, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return ep, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ep, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, `logstore_group_member{member_id="`); ok {
			if end := strings.Index(id, `"}`); end >= 0 {
				ep.members = append(ep.members, id[:end])
			}
			continue
		}
		if !strings.HasPrefix(line, "logstore_fetch_bytes_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			continue
		}
		ep.all += v
		if strings.Contains(line, `locality="same-rack"`) {
			ep.same += v
		}
	}
	return ep, sc.Err()
}

func writeStatus(w io.Writer, st *groupStatus, now time.Time) error {
	fmt.Fprintf(w, "group %s (%s protocol), %s, %d members, lag %d\n\n", st.Group, st.Protocol, strings.ToLower(st.State), len(st.Members), st.Lag)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tZONE\tHOST\tCLIENT\tPARTITIONS\tLAG\tLOCAL")
	for _, m := range st.Members {
		zone := m.Zone
		if zone == "" {
			zone = "-"
		}
		local := "unknown"
		if m.LocalShare != nil {
			local = fmt.Sprintf("%.1f%%", 100**m.LocalShare)
		}
		name := m.ID
		if m.InstanceID != "" {
			name = m.InstanceID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", name, zone, m.Host, m.ClientID, partitionList(m.Partitions), m.Lag, local)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tEND\tCOMMITTED\tLAG\tCOMMIT AGE\tPENDING CUT\tMEMBER")
	for _, p := range st.Partitions {
		committed, lag, cut, age := "-", "-", "-", "-"
		if p.CommittedAt != nil {
			age = now.Sub(*p.CommittedAt).Round(100 * time.Millisecond).String()
		}
		if p.Committed >= 0 {
			committed, lag = strconv.FormatInt(p.Committed, 10), strconv.FormatInt(p.Lag, 10)
		}
		if p.Mark >= 0 {
			cut = strconv.FormatInt(p.Mark, 10)
		}
		member := p.Member
		if member == "" {
			member = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, p.End, committed, lag, age, cut, member)
	}
	return tw.Flush()
}

// partitionList is "logs:0,3,5 more:1", topics and partitions in order.
func partitionList(ps map[string][]int32) string {
	topics := make([]string, 0, len(ps))
	for t := range ps {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	var out []string
	for _, t := range topics {
		ids := slices.Sorted(slices.Values(ps[t]))
		s := make([]string, len(ids))
		for i, id := range ids {
			s[i] = strconv.Itoa(int(id))
		}
		out = append(out, t+":"+strings.Join(s, ","))
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, " ")
}
