package rack

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The labels Kubernetes puts on nodes, and from 1.35 (KEP-4742, beta) copies
// onto pods. EKS adds the zone ID beside the standard zone name.
const (
	labelZone   = "topology.kubernetes.io/zone"
	labelZoneID = "topology.k8s.aws/zone-id"
)

func zoneFromLabels(labels map[string]string) Identity {
	return Identity{Name: labels[labelZone], ID: labels[labelZoneID]}
}

// findPodLabels reads the pod's labels from a Downward API volume
// (rack.labels_file). It is the only way to learn the zone without an API
// call, but pods carry zone labels only where KEP-4742 copies them from the
// node, or where the user's manifest sets them.
func findPodLabels(_ context.Context, cfg Config) (Identity, error) {
	data, err := os.ReadFile(cfg.LabelsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Identity{}, absentf("no labels file at %s (mount the pod's labels there with a Downward API volume, or set rack.labels_file)", cfg.LabelsFile)
	}
	if err != nil {
		return Identity{}, fmt.Errorf("reading the pod labels (rack.labels_file): %w", err)
	}
	zone := zoneFromLabels(parseDownwardLabels(data))
	if zone.IsZero() {
		return Identity{}, absentf("%s has no %s or %s label (Kubernetes 1.35+ copies the zone onto pods; older clusters need the k8s-node provider)",
			cfg.LabelsFile, labelZone, labelZoneID)
	}
	return zone, nil
}

// parseDownwardLabels reads the Downward API format: one key="value" line
// per label, the value quoted like a Go string.
func parseDownwardLabels(data []byte) map[string]string {
	labels := map[string]string{}
	lines := bufio.NewScanner(bytes.NewReader(data))
	for lines.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(lines.Text()), "=")
		if !ok {
			continue
		}
		if unquoted, err := strconv.Unquote(value); err == nil {
			value = unquoted
		}
		labels[key] = value
	}
	return labels
}

// envServiceAccountDir moves the in-cluster service account directory; tests
// use it, and so can a user running the node lookup outside a pod.
const envServiceAccountDir = "LOGSTORE_K8S_SERVICEACCOUNT_DIR"

const defaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// findNodeLabels asks the Kubernetes API for the labels of the node this pod
// runs on. Pods cannot see node labels through the Downward API before
// KEP-4742, so this needs NODE_NAME (from spec.nodeName) and a service
// account allowed to get nodes.
func findNodeLabels(ctx context.Context, _ Config) (Identity, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return Identity{}, absentf("not in a Kubernetes pod (KUBERNETES_SERVICE_HOST is not set)")
	}
	node := os.Getenv("NODE_NAME")
	if node == "" {
		return Identity{}, absentf("NODE_NAME is not set (set it from spec.nodeName with the Downward API)")
	}
	dir := os.Getenv(envServiceAccountDir)
	if dir == "" {
		dir = defaultServiceAccountDir
	}
	token, err := os.ReadFile(filepath.Join(dir, "token"))
	if errors.Is(err, fs.ErrNotExist) {
		return Identity{}, absentf("no service account token in %s (is automountServiceAccountToken off?)", dir)
	}
	if err != nil {
		return Identity{}, fmt.Errorf("reading the service account token: %w", err)
	}
	client, err := inClusterClient(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return Identity{}, err
	}

	nodeURL := "https://" + net.JoinHostPort(host, port) + "/api/v1/nodes/" + url.PathEscape(node)
	body, err := getBody(ctx, client, nodeURL, map[string]string{
		"Authorization": "Bearer " + strings.TrimSpace(string(token)),
		"Accept":        "application/json",
	})
	var status *httpStatusError
	if errors.As(err, &status) {
		switch status.status {
		case http.StatusUnauthorized, http.StatusForbidden:
			return Identity{}, fmt.Errorf("the service account may not get node %s (HTTP %d): grant it get on nodes with a ClusterRole, or use k8s-labels", node, status.status)
		case http.StatusNotFound:
			return Identity{}, fmt.Errorf("node %s not found: NODE_NAME should come from spec.nodeName", node)
		}
	}
	if err != nil {
		return Identity{}, err
	}
	var object struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &object); err != nil {
		return Identity{}, fmt.Errorf("node %s: the API answered something other than a Node: %w", node, err)
	}
	zone := zoneFromLabels(object.Metadata.Labels)
	if zone.IsZero() {
		return Identity{}, absentf("node %s has no %s or %s label", node, labelZone, labelZoneID)
	}
	return zone, nil
}

// inClusterClient trusts only the cluster's CA, as client-go does in a pod,
// and honours the proxy environment as client-go does.
func inClusterClient(caFile string) (*http.Client, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyFromEnvironment,
		TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	}}, nil
}
