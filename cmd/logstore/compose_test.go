package main

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/logstore/logstore/pipeline"
)

// scripts/local/compose.yaml cannot be started here (no container engine),
// so it is loaded the way `docker compose` loads it (compose-go: schema
// validation, interpolation, merge keys) and checked: three Redpanda brokers
// in racks az-a..az-c started with the flags that make them so, rack
// awareness turned on, an S3 server and an IMDSv2 mock per zone, and the
// addresses scripts/local/logstore.yaml and replay.sh use.

const (
	composePath     = "../../scripts/local/compose.yaml"
	localConfigPath = "../../scripts/local/logstore.yaml"
)

var brokerRacks = map[string]string{"redpanda-a": "az-a", "redpanda-b": "az-b", "redpanda-c": "az-c"}

func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	// The defaults of the file's ${VAR:-default}, not this machine's values.
	for _, v := range []string{"REDPANDA_VERSION", "VERSITYGW_VERSION", "AEMM_VERSION", "LOCAL_STATE"} {
		t.Setenv(v, "")
	}
	abs, err := filepath.Abs(composePath)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := cli.NewProjectOptions([]string{abs}, cli.WithWorkingDirectory(filepath.Dir(abs)), cli.WithOsEnv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("compose.yaml does not load: %v", err)
	}
	return p
}

// flagValues returns every value of a --name=value or --name value flag.
func flagValues(args []string, name string) []string {
	var vs []string
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			vs = append(vs, v)
		} else if a == name && i+1 < len(args) {
			vs = append(vs, args[i+1])
		}
	}
	return vs
}

// listener finds NAME://host:port in a Redpanda address list.
func listener(list, name string) string {
	for _, l := range strings.Split(list, ",") {
		if addr, ok := strings.CutPrefix(l, name+"://"); ok {
			return addr
		}
	}
	return ""
}

func TestComposeStack(t *testing.T) {
	p := loadCompose(t)
	names := slices.Sorted(maps.Keys(p.Services))
	if len(p.DisabledServices) > 0 {
		names = append(names, slices.Sorted(maps.Keys(p.DisabledServices))...)
	}
	for _, want := range []string{"redpanda-a", "redpanda-b", "redpanda-c", "redpanda-init", "s3", "imds-az-a", "imds-az-b", "imds-az-c"} {
		if !slices.Contains(names, want) {
			t.Errorf("no service %s (have %v)", want, names)
		}
	}

	var external []string // the brokers' advertised host addresses, a..c
	seeds := map[string]bool{}
	for _, name := range []string{"redpanda-a", "redpanda-b", "redpanda-c"} {
		s, ok := p.Services[name]
		if !ok {
			continue
		}
		args := []string(s.Command)
		if len(args) < 2 || args[0] != "redpanda" || args[1] != "start" {
			t.Errorf("%s starts with %v, want redpanda start", name, args)
			continue
		}
		if sets := flagValues(args, "--set"); !slices.Contains(sets, "redpanda.rack="+brokerRacks[name]) {
			t.Errorf("%s: --set %v does not put it in rack %s", name, sets, brokerRacks[name])
		}
		if !slices.Contains(args, "--mode=dev-container") {
			t.Errorf("%s: not in dev-container mode", name)
		}
		for _, s := range flagValues(args, "--seeds") {
			seeds[s] = true
		}
		adv := listener(strings.Join(flagValues(args, "--advertise-kafka-addr"), ","), "external")
		bind := listener(strings.Join(flagValues(args, "--kafka-addr"), ","), "external")
		_, advPort, _ := net.SplitHostPort(adv)
		_, bindPort, _ := net.SplitHostPort(bind)
		published := false
		for _, port := range s.Ports {
			if port.HostIP == "127.0.0.1" && port.Published == advPort && strconv.Itoa(int(port.Target)) == bindPort {
				published = true
			}
		}
		if !published {
			t.Errorf("%s advertises %s for clients, but no 127.0.0.1:%s maps to the external listener %s (ports %+v)", name, adv, advPort, bind, s.Ports)
		}
		external = append(external, adv)
		if rpc := flagValues(args, "--advertise-rpc-addr"); len(rpc) != 1 || rpc[0] != name+":33145" {
			t.Errorf("%s advertises RPC at %v, want %s:33145", name, rpc, name)
		}
		if s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 {
			t.Errorf("%s has no healthcheck; redpanda-init waits for it", name)
		}
	}
	if len(seeds) != 1 {
		t.Errorf("brokers name different seeds %v; one cluster needs one seed list", slices.Collect(maps.Keys(seeds)))
	}
	for s := range seeds {
		if host, _, _ := net.SplitHostPort(s); brokerRacks[host] == "" {
			t.Errorf("seed %s is not a broker service", s)
		}
	}

	// Rack awareness is a cluster property: the init service sets it.
	init, ok := p.Services["redpanda-init"]
	if !ok {
		init = p.DisabledServices["redpanda-init"]
	}
	script := strings.Join(init.Command, " ")
	for _, want := range []string{"rpk cluster config set enable_rack_awareness true", "rpk topic create logs ", "--replicas 3"} {
		if !strings.Contains(script, want) {
			t.Errorf("redpanda-init does not run %q:\n%s", want, script)
		}
	}
	for b := range brokerRacks {
		if d, ok := init.DependsOn[b]; !ok || d.Condition != types.ServiceConditionHealthy {
			t.Errorf("redpanda-init does not wait for %s to be healthy", b)
		}
	}

	// The IMDS mocks: IMDSv2 only, one per broker rack.
	zones := map[string]string{} // zone → service
	for _, name := range []string{"imds-az-a", "imds-az-b", "imds-az-c"} {
		s, ok := p.Services[name]
		if !ok {
			continue
		}
		if !slices.Contains(s.Command, "-I") {
			t.Errorf("%s does not enforce IMDSv2 (-I)", name)
		}
		if len(s.Configs) != 1 {
			t.Fatalf("%s mounts %d configs, want its zone's", name, len(s.Configs))
		}
		var cfg struct {
			IMDSv2   bool `json:"imdsv2"`
			Metadata struct {
				Values map[string]string `json:"values"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(p.Configs[s.Configs[0].Source].Content), &cfg); err != nil {
			t.Fatalf("%s config: %v", name, err)
		}
		zones[cfg.Metadata.Values["placement-availability-zone"]] = name
		if cfg.Metadata.Values["placement-availability-zone-id"] == "" {
			t.Errorf("%s reports no zone ID", name)
		}
	}
	for b, rack := range brokerRacks {
		if zones[rack] == "" {
			t.Errorf("no IMDS mock puts a member in %s, the rack of %s", rack, b)
		}
	}
	if s3, ok := p.Services["s3"]; !ok || !slices.Contains(s3.Command, "posix") || len(s3.Ports) != 1 {
		t.Errorf("s3 is not versitygw with a posix backend on one port: %+v", s3.Command)
	}

	// scripts/local/logstore.yaml, as replay.sh runs it, reaches those brokers
	// and that S3 server.
	for _, v := range []string{"LOCAL_BROKERS", "LOGSTORE_OUTPUT", "AWS_ENDPOINT_URL_S3", "LOGSTORE_METRICS"} {
		t.Setenv(v, "")
	}
	cfg, err := pipeline.Load(localConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Kafka.Brokers, external) {
		t.Errorf("logstore.yaml's brokers %v are not the stack's %v", cfg.Kafka.Brokers, external)
	}
	if s3, ok := p.Services["s3"]; ok && len(s3.Ports) == 1 && cfg.Sinks.Files.S3.Endpoint != "http://127.0.0.1:"+s3.Ports[0].Published {
		t.Errorf("logstore.yaml's S3 endpoint %s is not the stack's port %s", cfg.Sinks.Files.S3.Endpoint, s3.Ports[0].Published)
	}
	if !slices.Contains(cfg.Rack.Providers, "aws-imds") {
		t.Errorf("logstore.yaml's rack.providers %v leave out the IMDS mocks", cfg.Rack.Providers)
	}
	raw, err := os.ReadFile("../../scripts/local/replay.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"18091", "AWS_EC2_METADATA_SERVICE_ENDPOINT", "replay -c", "run -c \"$CONFIG\" --until now"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("replay.sh lacks %q", want)
		}
	}
}
