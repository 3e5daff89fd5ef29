package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/logstore/logstore/pipeline"
)

// The manifests under configs/k8s are checked against the Kubernetes API
// types (strictly: a misspelt field is an error), and against the job's own
// config as the pods load it from the ConfigMap. No cluster is needed.

const (
	k8sDir = "../../configs/k8s/base"
	// overlayDir is the example overlay: the image, the job's environment
	// (envFile, the ConfigMap envName) and the IRSA role.
	overlayDir = "../../configs/k8s/overlays/example"
	envFile    = overlayDir + "/job.env"
	envName    = "logstore-env"
	// topicPartitions is the partitions of `logs` the manifests are sized
	// for (keda.yaml's maxReplicaCount: one member per partition at most).
	topicPartitions = 12
	// zones is how many zones the manifests spread over (three in every
	// AWS region logstore targets, and in the local racks az-a..az-c).
	zones    = 3
	zoneKey  = "topology.kubernetes.io/zone"
	emrEKS   = "../../configs/emr-eks.yaml"
	cmName   = "logstore-config"
	cmKey    = "emr-eks.yaml"
	cmHeader = `# The job's YAML for every logstore pod, mounted at /etc/logstore. It is
# configs/emr-eks.yaml, word for word: edit that file, then run
#   go test ./cmd/logstore -run TestConfigMapIsEMREKS -update
`
)

var update = flag.Bool("update", false, "rewrite configs/k8s/base/configmap.yaml from configs/emr-eks.yaml")

// kinds maps apiVersion/kind to the Go type a document must decode into.
var kinds = map[string]func() any{
	"v1/Namespace":      func() any { return new(corev1.Namespace) },
	"v1/ServiceAccount": func() any { return new(corev1.ServiceAccount) },
	"v1/ConfigMap":      func() any { return new(corev1.ConfigMap) },
	"apps/v1/Deployment": func() any {
		return new(appsv1.Deployment)
	},
	"apps/v1/StatefulSet":                             func() any { return new(appsv1.StatefulSet) },
	"monitoring.coreos.com/v1/PodMonitor":             func() any { return new(podMonitor) },
	"batch/v1/Job":                                    func() any { return new(batchv1.Job) },
	"batch/v1/CronJob":                                func() any { return new(batchv1.CronJob) },
	"policy/v1/PodDisruptionBudget":                   func() any { return new(policyv1.PodDisruptionBudget) },
	"rbac.authorization.k8s.io/v1/ClusterRole":        func() any { return new(rbacv1.ClusterRole) },
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding": func() any { return new(rbacv1.ClusterRoleBinding) },
	"rbac.authorization.k8s.io/v1/Role":               func() any { return new(rbacv1.Role) },
	"rbac.authorization.k8s.io/v1/RoleBinding":        func() any { return new(rbacv1.RoleBinding) },
	"keda.sh/v1alpha1/ScaledObject":                   func() any { return new(scaledObject) },
	"keda.sh/v1alpha1/TriggerAuthentication":          func() any { return new(triggerAuthentication) },
	"kustomize.config.k8s.io/v1beta1/Kustomization":   func() any { return new(kustomization) },
}

// KEDA's and kustomize's types are not in k8s.io/api (and their modules
// bring whole dependency trees), so the fields these manifests may use are
// written out here from KEDA's ScaledObject reference (keda.sh/docs, 2.17);
// strict decoding still rejects any other field. The HPA behaviour is the
// Kubernetes type KEDA passes through.
type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			APIVersion             string `json:"apiVersion,omitempty"`
			Kind                   string `json:"kind,omitempty"`
			Name                   string `json:"name"`
			EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
		} `json:"scaleTargetRef"`
		PollingInterval  *int32 `json:"pollingInterval,omitempty"`
		CooldownPeriod   *int32 `json:"cooldownPeriod,omitempty"`
		IdleReplicaCount *int32 `json:"idleReplicaCount,omitempty"`
		MinReplicaCount  *int32 `json:"minReplicaCount,omitempty"`
		MaxReplicaCount  *int32 `json:"maxReplicaCount,omitempty"`
		Fallback         *struct {
			FailureThreshold int32 `json:"failureThreshold"`
			Replicas         int32 `json:"replicas"`
		} `json:"fallback,omitempty"`
		Advanced *struct {
			RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
			HorizontalPodAutoscalerConfig *struct {
				Name     string                                         `json:"name,omitempty"`
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
			} `json:"horizontalPodAutoscalerConfig,omitempty"`
		} `json:"advanced,omitempty"`
		Triggers []struct {
			Type              string            `json:"type"`
			Name              string            `json:"name,omitempty"`
			Metadata          map[string]string `json:"metadata"`
			AuthenticationRef *struct {
				Name string `json:"name"`
				Kind string `json:"kind,omitempty"`
			} `json:"authenticationRef,omitempty"`
			MetricType       autoscalingv2.MetricTargetType `json:"metricType,omitempty"`
			UseCachedMetrics bool                           `json:"useCachedMetrics,omitempty"`
		} `json:"triggers"`
	} `json:"spec"`
}

type triggerAuthentication struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		PodIdentity *struct {
			Provider      string `json:"provider"`
			RoleArn       string `json:"roleArn,omitempty"`
			IdentityOwner string `json:"identityOwner,omitempty"`
		} `json:"podIdentity,omitempty"`
		SecretTargetRef []struct {
			Parameter string `json:"parameter"`
			Name      string `json:"name"`
			Key       string `json:"key"`
		} `json:"secretTargetRef,omitempty"`
	} `json:"spec"`
}

// kafkaTriggerKeys are the metadata keys of KEDA's kafka scaler.
var kafkaTriggerKeys = []string{"bootstrapServers", "consumerGroup", "topic", "lagThreshold",
	"activationLagThreshold", "offsetResetPolicy", "allowIdleConsumers", "scaleToZeroOnInvalidOffset",
	"excludePersistentLag", "limitToPartitionsWithLag", "ensureEvenDistributionOfPartitions", "version",
	"partitionLimitation", "sasl", "saslTokenProvider", "tls", "unsafeSsl", "awsRegion",
	"bootstrapServersFromEnv", "consumerGroupFromEnv", "topicFromEnv"}

type kustomization struct {
	metav1.TypeMeta `json:",inline"`
	Resources       []string `json:"resources"`
	Images          []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
	} `json:"images,omitempty"`
	ConfigMapGenerator []struct {
		Name      string   `json:"name"`
		Namespace string   `json:"namespace,omitempty"`
		Envs      []string `json:"envs,omitempty"`
		Options   *struct {
			DisableNameSuffixHash bool `json:"disableNameSuffixHash,omitempty"`
		} `json:"options,omitempty"`
	} `json:"configMapGenerator,omitempty"`
	Patches []kustomizePatch `json:"patches,omitempty"`
}

type kustomizePatch struct {
	Target *struct {
		Kind string `json:"kind,omitempty"`
		Name string `json:"name,omitempty"`
	} `json:"target,omitempty"`
	Patch string `json:"patch,omitempty"`
}

// podMonitor is the Prometheus Operator's PodMonitor, the fields these
// manifests may use (monitoring.coreos.com/v1 API reference).
type podMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector *struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector,omitempty"`
		PodMetricsEndpoints []struct {
			Port          string `json:"port,omitempty"`
			Path          string `json:"path,omitempty"`
			Scheme        string `json:"scheme,omitempty"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// manifest is one document of a file under configs/k8s.
type manifest struct {
	where string // file#document
	kind  string // apiVersion/kind
	obj   any
}

// decodeManifest decodes one YAML document strictly into its API type.
func decodeManifest(doc []byte) (string, any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return "", nil, err
	}
	if tm.Kind == "" && tm.APIVersion == "" {
		return "", nil, nil // comments only
	}
	kind := tm.APIVersion + "/" + tm.Kind
	newObj, ok := kinds[kind]
	if !ok {
		return kind, nil, fmt.Errorf("no API type known for %s", kind)
	}
	// As the API server decodes: field names match case-sensitively, and
	// an unknown or repeated field is an error.
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return kind, nil, err
	}
	obj := newObj()
	strict, err := sigsjson.UnmarshalStrict(js, obj)
	if err == nil {
		err = errors.Join(strict...)
	}
	if err != nil {
		return kind, nil, err
	}
	return kind, obj, nil
}

func splitDocuments(raw []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, doc)
	}
}

func loadManifests(t *testing.T) []manifest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", k8sDir, err)
	}
	var all []manifest
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := splitDocuments(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i, doc := range docs {
			where := fmt.Sprintf("%s#%d", filepath.Base(f), i+1)
			kind, obj, err := decodeManifest(doc)
			if err != nil {
				t.Errorf("%s (%s): %v", where, kind, err)
				continue
			}
			if obj != nil {
				all = append(all, manifest{where, kind, obj})
			}
		}
	}
	return all
}

func objectsOf[T any](ms []manifest) []*T {
	var out []*T
	for _, m := range ms {
		if o, ok := m.obj.(*T); ok {
			out = append(out, o)
		}
	}
	return out
}

// TestManifestsDecodeStrictly: every document under configs/k8s/base is a known
// kind and decodes into its API type with no unknown field, and the decoder
// does reject a misspelt field (so the check can fail).
func TestManifestsDecodeStrictly(t *testing.T) {
	ms := loadManifests(t)
	seen := map[string]bool{}
	for _, m := range ms {
		seen[m.kind[strings.LastIndex(m.kind, "/")+1:]] = true
	}
	for _, want := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
		"Deployment", "StatefulSet", "Job", "CronJob", "PodDisruptionBudget", "ScaledObject", "TriggerAuthentication",
		"PodMonitor", "Kustomization"} {
		if !seen[want] {
			t.Errorf("no %s under configs/k8s/base", want)
		}
	}
	raw, err := os.ReadFile(filepath.Join(k8sDir, "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, typo := range []struct{ from, to string }{
		{"terminationGracePeriodSeconds:", "terminationGracePeriodSecond:"},
		{"readOnlyRootFilesystem:", "readOnlyRootFileSystem:"},
		{"topologyKey:", "topologykey:"},
	} {
		bad := strings.Replace(string(raw), typo.from, typo.to, 1)
		if _, _, err := decodeManifest([]byte(bad)); err == nil {
			t.Errorf("a Deployment with %q decoded without error", typo.to)
		}
	}
}

// TestKustomizationListsManifests: kustomize's resources are files here.
func TestKustomizationListsManifests(t *testing.T) {
	ks := objectsOf[kustomization](loadManifests(t))
	if len(ks) != 1 {
		t.Fatalf("%d kustomizations, want 1", len(ks))
	}
	for _, r := range ks[0].Resources {
		if _, err := os.Stat(filepath.Join(k8sDir, r)); err != nil {
			t.Errorf("kustomization.yaml lists %s: %v", r, err)
		}
	}
	for _, want := range []string{"configmap.yaml", "deployment.yaml", "rbac.yaml", "pdb.yaml"} {
		if !slices.Contains(ks[0].Resources, want) {
			t.Errorf("kustomization.yaml does not apply %s", want)
		}
	}
}

// TestConfigMapIsEMREKS: the ConfigMap carries configs/emr-eks.yaml word for
// word, so the pods run the file that `logstore check` and the tests check.
func TestConfigMapIsEMREKS(t *testing.T) {
	want, err := os.ReadFile(emrEKS)
	if err != nil {
		t.Fatal(err)
	}
	cmPath := filepath.Join(k8sDir, "configmap.yaml")
	if *update {
		cm := corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: "logstore", Labels: map[string]string{"app.kubernetes.io/name": "logstore"}},
			Data:       map[string]string{cmKey: string(want)},
		}
		out, err := yaml.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cmPath, append([]byte(cmHeader), out...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cms := objectsOf[corev1.ConfigMap](loadManifests(t))
	for _, cm := range cms {
		if cm.Name == cmName {
			if got := cm.Data[cmKey]; got != string(want) {
				t.Fatalf("configmap.yaml's %s differs from configs/emr-eks.yaml; run go test ./cmd/logstore -run TestConfigMapIsEMREKS -update", cmKey)
			}
			return
		}
	}
	t.Fatalf("no ConfigMap %s in %s", cmName, k8sDir)
}

// workload is a pod template and who runs it.
type workload struct {
	name      string
	namespace string
	pod       corev1.PodTemplateSpec
}

func workloadsOf(t *testing.T, ms []manifest) []workload {
	var ws []workload
	for _, d := range objectsOf[appsv1.Deployment](ms) {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("Deployment %s: selector %v does not select its own pods (%v)", d.Name, d.Spec.Selector, err)
		}
		ws = append(ws, workload{"Deployment " + d.Name, d.Namespace, d.Spec.Template})
	}
	for _, j := range objectsOf[batchv1.Job](ms) {
		ws = append(ws, workload{"Job " + j.Name, j.Namespace, j.Spec.Template})
	}
	for _, s := range objectsOf[appsv1.StatefulSet](ms) {
		sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(s.Spec.Template.Labels)) {
			t.Errorf("StatefulSet %s: selector %v does not select its own pods (%v)", s.Name, s.Spec.Selector, err)
		}
		ws = append(ws, workload{"StatefulSet " + s.Name, s.Namespace, s.Spec.Template})
	}
	for _, c := range objectsOf[batchv1.CronJob](ms) {
		ws = append(ws, workload{"CronJob " + c.Name, c.Namespace, c.Spec.JobTemplate.Spec.Template})
	}
	if len(ws) != 4 {
		t.Errorf("%d workloads, want the Deployment, the StatefulSet, the Job and the CronJob", len(ws))
	}
	return ws
}

// podConfig loads the config a workload's container runs: the file named by
// `-c`, found through the container's mounts in a ConfigMap of the
// manifests, with the container's env set, through the job's own loader.
func podConfig(t *testing.T, ms []manifest, w workload, c corev1.Container) *pipeline.Config {
	t.Helper()
	i := slices.Index(c.Args, "-c")
	if i < 0 || i+1 >= len(c.Args) {
		t.Fatalf("%s: args %v name no config (-c FILE)", w.name, c.Args)
	}
	file := c.Args[i+1]
	var mount *corev1.VolumeMount
	for _, m := range c.VolumeMounts {
		if path.Dir(file) == m.MountPath {
			mount = &m
		}
	}
	if mount == nil {
		t.Fatalf("%s: no volume is mounted at %s, the folder of %s", w.name, path.Dir(file), file)
	}
	vol := volumeNamed(w.pod.Spec, mount.Name)
	if vol == nil || vol.ConfigMap == nil {
		t.Fatalf("%s: %s is mounted from %q, not a ConfigMap", w.name, file, mount.Name)
	}
	for _, cm := range objectsOf[corev1.ConfigMap](ms) {
		if cm.Name != vol.ConfigMap.Name || cm.Namespace != w.namespace {
			continue
		}
		data, ok := cm.Data[path.Base(file)]
		if !ok {
			t.Fatalf("%s: ConfigMap %s has no key %s", w.name, cm.Name, path.Base(file))
		}
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef == nil || from.ConfigMapRef.Name != envName {
				t.Fatalf("%s: envFrom %+v; want the ConfigMap %s the overlay makes", w.name, from, envName)
			}
			for k, v := range overlayEnv(t) {
				t.Setenv(k, v)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				t.Setenv(e.Name, e.Value)
			}
		}
		cfg, err := pipeline.Parse(w.name+":"+file, []byte(data))
		if err != nil {
			t.Fatalf("the config the pods load: %v", err)
		}
		return cfg
	}
	t.Fatalf("%s: no ConfigMap %s in namespace %s", w.name, vol.ConfigMap.Name, w.namespace)
	return nil
}

func volumeNamed(spec corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// mountOf returns the volume mounted at dir, or nil.
func mountOf(spec corev1.PodSpec, c corev1.Container, dir string) *corev1.Volume {
	for _, m := range c.VolumeMounts {
		if m.MountPath == dir {
			return volumeNamed(spec, m.Name)
		}
	}
	return nil
}

// containerPort resolves a probe's port (a number or a port name).
func containerPort(c corev1.Container, p intstr.IntOrString) int {
	if p.Type == intstr.Int {
		return p.IntValue()
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort)
		}
	}
	return -1
}

// TestManifestWorkloads checks each pod template (Deployment, Job, CronJob)
// against the config its container loads from the ConfigMap.
func TestManifestWorkloads(t *testing.T) {
	ms := loadManifests(t)
	sas := objectsOf[corev1.ServiceAccount](ms)
	for _, w := range workloadsOf(t, ms) {
		t.Run(w.name, func(t *testing.T) {
			spec := w.pod.Spec
			if len(spec.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(spec.Containers))
			}
			c := spec.Containers[0]
			cfg := podConfig(t, ms, w, c)

			// Zone spread: the rack-aware balancer can only keep reads in
			// a zone that has members.
			spread := false
			for _, tsc := range spec.TopologySpreadConstraints {
				sel, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
				if tsc.TopologyKey == zoneKey && err == nil && sel.Matches(labels.Set(w.pod.Labels)) &&
					tsc.MaxSkew == 1 && tsc.WhenUnsatisfiable == corev1.DoNotSchedule {
					spread = true
				}
			}
			if !spread {
				t.Errorf("no topologySpreadConstraint on %s with maxSkew 1, DoNotSchedule and a selector of these pods", zoneKey)
			}

			// Probes on the metrics listener.
			host, port, err := net.SplitHostPort(cfg.Metrics.Listen)
			if err != nil {
				t.Fatalf("metrics.listen %q: %v", cfg.Metrics.Listen, err)
			}
			if host != "" && host != "0.0.0.0" && host != "::" {
				t.Errorf("metrics.listen %q: the kubelet cannot reach %s from outside the pod", cfg.Metrics.Listen, host)
			}
			for _, p := range []struct {
				name  string
				probe *corev1.Probe
				path  string
				must  bool
			}{
				{"liveness", c.LivenessProbe, "/healthz", true},
				{"readiness", c.ReadinessProbe, "/readyz", true},
				{"startup", c.StartupProbe, "/healthz", false},
			} {
				switch {
				case p.probe == nil && p.must:
					t.Errorf("no %s probe", p.name)
				case p.probe == nil:
				case p.probe.HTTPGet == nil:
					t.Errorf("%s probe is not an HTTP GET", p.name)
				case p.probe.HTTPGet.Path != p.path:
					t.Errorf("%s probe GETs %s, want %s", p.name, p.probe.HTTPGet.Path, p.path)
				case strconv.Itoa(containerPort(c, p.probe.HTTPGet.Port)) != port:
					t.Errorf("%s probe port %s is not metrics.listen's %s", p.name, p.probe.HTTPGet.Port.String(), port)
				}
			}
			if a := w.pod.Annotations["prometheus.io/port"]; a != "" && a != port {
				t.Errorf("prometheus.io/port %s, metrics.listen port %s", a, port)
			}

			// The kubelet's SIGKILL must come after the graceful stop.
			if spec.TerminationGracePeriodSeconds == nil {
				t.Errorf("no terminationGracePeriodSeconds (default 30s) next to run.shutdown_timeout %s", cfg.Run.ShutdownTimeout)
			} else if grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second; grace <= cfg.Run.ShutdownTimeout {
				t.Errorf("terminationGracePeriodSeconds %s is not above run.shutdown_timeout %s", grace, cfg.Run.ShutdownTimeout)
			}

			// Non-root, read-only root; what the job writes is an emptyDir.
			psc := spec.SecurityContext
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
				t.Errorf("pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", psc)
			}
			csc := c.SecurityContext
			if csc == nil || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem ||
				csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation ||
				csc.Capabilities == nil || !slices.Contains(csc.Capabilities.Drop, "ALL") {
				t.Errorf("container securityContext %+v: want readOnlyRootFilesystem, no privilege escalation, capabilities drop ALL", csc)
			}
			if cfg.Sinks.Files != nil {
				v := mountOf(spec, c, cfg.Sinks.Files.SpoolDir)
				if v == nil || v.EmptyDir == nil {
					t.Errorf("sinks.files.spool_dir %s is not an emptyDir mount (the root filesystem is read-only)", cfg.Sinks.Files.SpoolDir)
				} else {
					checkSpoolSize(t, cfg, v.EmptyDir, c.Resources)
				}
			}

			// Static membership only where pod names are stable.
			podName := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
				return e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
			})
			if stateful := strings.HasPrefix(w.name, "StatefulSet "); podName != stateful {
				t.Errorf("POD_NAME (the static member id) set: %v; want it in the StatefulSet only: a Deployment's pods are renamed on every rollout", podName)
			}

			// Where the rack providers look.
			if slices.Contains(cfg.Rack.Providers, "k8s-labels") {
				v := mountOf(spec, c, filepath.Dir(cfg.Rack.LabelsFile))
				if v == nil || v.DownwardAPI == nil || !slices.ContainsFunc(v.DownwardAPI.Items, func(i corev1.DownwardAPIVolumeFile) bool {
					return i.Path == filepath.Base(cfg.Rack.LabelsFile) && i.FieldRef != nil && i.FieldRef.FieldPath == "metadata.labels"
				}) {
					t.Errorf("rack.labels_file %s is not the pod's labels through a downwardAPI volume", cfg.Rack.LabelsFile)
				}
			}
			if slices.Contains(cfg.Rack.Providers, "k8s-node") {
				if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
					return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
				}) {
					t.Error("the k8s-node provider needs NODE_NAME from spec.nodeName")
				}
				if spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken {
					t.Error("the k8s-node provider needs the service account token mounted")
				}
			}
			if !slices.ContainsFunc(sas, func(sa *corev1.ServiceAccount) bool {
				return sa.Name == spec.ServiceAccountName && sa.Namespace == w.namespace
			}) {
				t.Errorf("serviceAccountName %q is not a ServiceAccount of namespace %s here", spec.ServiceAccountName, w.namespace)
			}

			// Resources: set, and the memory limit above Go's soft limit.
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := c.Resources.Requests[r]; !ok {
					t.Errorf("no %s request", r)
				}
				if _, ok := c.Resources.Limits[r]; !ok {
					t.Errorf("no %s limit", r)
				}
			}
			soft := pipeline.MemoryLimit(cfg.Batch)
			for _, e := range c.Env {
				if e.Name == "GOMEMLIMIT" {
					t.Errorf("GOMEMLIMIT %s: the limit is derived from batch.memory_budget; the resources are sized for that", e.Value)
				}
			}
			if lim := c.Resources.Limits[corev1.ResourceMemory]; lim.Cmp(*resource.NewQuantity(soft, resource.BinarySI)) <= 0 {
				t.Errorf("memory limit %s is not above Go's soft limit %d MiB (batch.memory_budget + 96 MiB)", lim.String(), soft>>20)
			}
		})
	}
}

// TestManifestRBAC: the pods may only read nodes (the k8s-node provider),
// through their own service account.
func TestManifestRBAC(t *testing.T) {
	ms := loadManifests(t)
	roles := map[string][]rbacv1.PolicyRule{}
	for _, r := range objectsOf[rbacv1.ClusterRole](ms) {
		roles["ClusterRole/"+r.Name] = r.Rules
	}
	for _, r := range objectsOf[rbacv1.Role](ms) {
		roles["Role/"+r.Namespace+"/"+r.Name] = r.Rules
	}
	for name, rules := range roles {
		for _, r := range rules {
			if !slices.Equal(r.APIGroups, []string{""}) || !slices.Equal(r.Resources, []string{"nodes"}) ||
				!slices.Equal(r.Verbs, []string{"get"}) || len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
				t.Errorf("%s grants %+v; logstore needs only get on nodes", name, r)
			}
		}
	}
	bound := map[string]bool{} // namespace/serviceaccount bound to a node reader
	bind := func(what, namespace string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
		key := "ClusterRole/" + ref.Name
		if ref.Kind == "Role" {
			key = "Role/" + namespace + "/" + ref.Name
		}
		if _, ok := roles[key]; !ok {
			t.Errorf("%s refers to %s, which is not here", what, key)
		}
		for _, s := range subjects {
			if s.Kind != rbacv1.ServiceAccountKind {
				t.Errorf("%s binds %s %s; only logstore's service account", what, s.Kind, s.Name)
				continue
			}
			bound[s.Namespace+"/"+s.Name] = true
		}
	}
	for _, b := range objectsOf[rbacv1.ClusterRoleBinding](ms) {
		bind("ClusterRoleBinding "+b.Name, "", b.RoleRef, b.Subjects)
	}
	for _, b := range objectsOf[rbacv1.RoleBinding](ms) {
		bind("RoleBinding "+b.Name, b.Namespace, b.RoleRef, b.Subjects)
	}
	for _, w := range workloadsOf(t, ms) {
		if sa := w.namespace + "/" + w.pod.Spec.ServiceAccountName; !bound[sa] {
			t.Errorf("%s runs as %s, which no binding lets read its node", w.name, sa)
		}
	}
	overlay := loadOverlay(t)
	for _, sa := range objectsOf[corev1.ServiceAccount](ms) {
		if !slices.ContainsFunc(overlay.Patches, func(p kustomizePatch) bool {
			return p.Target != nil && p.Target.Kind == "ServiceAccount" && p.Target.Name == sa.Name && strings.Contains(p.Patch, "eks.amazonaws.com/role-arn")
		}) {
			t.Errorf("the overlay gives ServiceAccount %s no IRSA role annotation (eks.amazonaws.com/role-arn)", sa.Name)
		}
	}
}

// TestManifestScaling: the PodDisruptionBudget covers the streaming pods, and
// KEDA scales the Deployment on its own group's lag a zone at a time.
func TestManifestScaling(t *testing.T) {
	ms := loadManifests(t)
	deploys := objectsOf[appsv1.Deployment](ms)
	pdbs := objectsOf[policyv1.PodDisruptionBudget](ms)
	for _, d := range deploys {
		if !slices.ContainsFunc(pdbs, func(p *policyv1.PodDisruptionBudget) bool {
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
			return err == nil && p.Namespace == d.Namespace && sel.Matches(labels.Set(d.Spec.Template.Labels)) && p.Spec.MaxUnavailable != nil
		}) {
			t.Errorf("no PodDisruptionBudget with maxUnavailable covers Deployment %s", d.Name)
		}
	}
	sos := objectsOf[scaledObject](ms)
	if len(sos) != 1 {
		t.Fatalf("%d ScaledObjects, want 1", len(sos))
	}
	so := sos[0]
	i := slices.IndexFunc(deploys, func(d *appsv1.Deployment) bool {
		return d.Name == so.Spec.ScaleTargetRef.Name && d.Namespace == so.Namespace
	})
	if i < 0 || so.Spec.ScaleTargetRef.Kind != "Deployment" {
		t.Fatalf("ScaledObject targets %s %s, not a Deployment here", so.Spec.ScaleTargetRef.Kind, so.Spec.ScaleTargetRef.Name)
	}
	d := deploys[i]
	cfg := podConfig(t, ms, workload{"Deployment " + d.Name, d.Namespace, d.Spec.Template}, d.Spec.Template.Spec.Containers[0])
	if so.Spec.MinReplicaCount == nil || *so.Spec.MinReplicaCount < zones {
		t.Errorf("minReplicaCount %v: want at least one member per zone (%d)", so.Spec.MinReplicaCount, zones)
	}
	if so.Spec.MaxReplicaCount == nil || *so.Spec.MaxReplicaCount%zones != 0 {
		t.Errorf("maxReplicaCount %v: want a multiple of the zones (%d)", so.Spec.MaxReplicaCount, zones)
	}
	if a := so.Spec.Advanced; a == nil || a.HorizontalPodAutoscalerConfig == nil || a.HorizontalPodAutoscalerConfig.Behavior == nil {
		t.Error("no HPA behavior: each scaling step would be as large as the lag asks, and each is a rebalance")
	} else {
		b := a.HorizontalPodAutoscalerConfig.Behavior
		for _, rules := range []*autoscalingv2.HPAScalingRules{b.ScaleUp, b.ScaleDown} {
			if rules == nil || len(rules.Policies) == 0 {
				t.Error("scaleUp and scaleDown need policies")
				continue
			}
			for _, p := range rules.Policies {
				if p.Type != autoscalingv2.PodsScalingPolicy || p.Value > zones {
					t.Errorf("HPA policy %+v: want type Pods, at most %d a period", p, zones)
				}
			}
		}
	}
	auths := objectsOf[triggerAuthentication](ms)
	for _, tr := range so.Spec.Triggers {
		if tr.Type != "kafka" {
			t.Errorf("trigger type %q, want kafka", tr.Type)
			continue
		}
		for k := range tr.Metadata {
			if !slices.Contains(kafkaTriggerKeys, k) {
				t.Errorf("kafka trigger metadata %q is not a key of KEDA's kafka scaler", k)
			}
		}
		if g := tr.Metadata["consumerGroup"]; g != cfg.Kafka.Group {
			t.Errorf("trigger reads group %q; the pods join %q", g, cfg.Kafka.Group)
		}
		if tp := tr.Metadata["topic"]; !slices.Contains(cfg.Kafka.Topics, tp) {
			t.Errorf("trigger reads topic %q; the pods read %v", tp, cfg.Kafka.Topics)
		}
		b := tr.Metadata["bootstrapServers"]
		if v, ok := tr.Metadata["bootstrapServersFromEnv"]; ok {
			b = overlayEnv(t)[v]
		}
		if b != strings.Join(cfg.Kafka.Brokers, ",") {
			t.Errorf("trigger bootstrapServers %q; the pods use %v", b, cfg.Kafka.Brokers)
		}
		if cfg.Kafka.SASL.Mechanism == "aws-msk-iam" && (tr.Metadata["saslTokenProvider"] != "aws_msk_iam" || tr.Metadata["tls"] != "enable") {
			t.Error("the pods use MSK IAM; the trigger needs saslTokenProvider aws_msk_iam and tls enable")
		}
		if tr.AuthenticationRef == nil || !slices.ContainsFunc(auths, func(a *triggerAuthentication) bool {
			return a.Name == tr.AuthenticationRef.Name && a.Namespace == so.Namespace
		}) {
			t.Errorf("trigger authenticationRef %+v is not a TriggerAuthentication here", tr.AuthenticationRef)
		}
	}
}

// eksDoc is the page on running on EKS, whose IAM table names every action.
const eksDoc = "../../docs/eks.md"

// TestIAMPolicyCoversTheJob: configs/iam-policy.json grants every action
// the job of configs/emr-eks.yaml needs, on that job's topics, group, bucket
// prefix and key; the config's header and docs/eks.md name the same actions.
func TestIAMPolicyCoversTheJob(t *testing.T) {
	raw, err := os.ReadFile("../../configs/iam-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Statement []struct {
			Effect   string
			Action   stringOrList
			Resource stringOrList
		}
	}
	if err := json.Unmarshal(raw, &policy); err != nil {
		t.Fatalf("iam-policy.json: %v", err)
	}
	granted := map[string]bool{} // "action resource"
	for _, s := range policy.Statement {
		for _, a := range s.Action {
			for _, r := range s.Resource {
				granted[a+" "+r] = s.Effect == "Allow"
			}
		}
	}
	for k, v := range overlayEnv(t) {
		t.Setenv(k, v)
	}
	cfg, err := pipeline.Load(emrEKS)
	if err != nil {
		t.Fatal(err)
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(cfg.Sinks.Files.URL, "s3://"), "/")
	type need struct {
		actions  []string
		resource string // the ARN's end, or (ending in "/") a part of it
	}
	needs := []need{
		{[]string{"kafka-cluster:Connect", "kafka-cluster:DescribeCluster", "kafka-cluster:DescribeClusterDynamicConfiguration"}, ":cluster/"},
		{[]string{"kafka-cluster:DescribeGroup", "kafka-cluster:AlterGroup"}, "/" + cfg.Kafka.Group},
		{[]string{"s3:PutObject", "s3:GetObject", "s3:DeleteObject", "s3:AbortMultipartUpload"}, ":::" + bucket + "/" + prefix + "/*"},
		{[]string{"s3:ListBucket"}, ":::" + bucket},
	}
	for _, topic := range cfg.Kafka.Topics {
		needs = append(needs, need{[]string{"kafka-cluster:DescribeTopic", "kafka-cluster:ReadData"}, "/" + topic})
	}
	for _, topic := range []string{cfg.DeadLetter.Topic, kafkaSinkTopic(cfg)} {
		if topic != "" {
			needs = append(needs, need{[]string{"kafka-cluster:DescribeTopic", "kafka-cluster:WriteData"}, "/" + topic})
		}
	}
	if cfg.Sinks.Files.S3 != nil && cfg.Sinks.Files.S3.SSE == "aws:kms" {
		needs = append(needs, need{[]string{"kms:GenerateDataKey", "kms:Decrypt"}, ":key/"})
	}
	header, err := os.ReadFile(emrEKS)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(eksDoc)
	if err != nil {
		t.Fatal(err)
	}
	eks := string(doc)
	for _, n := range needs {
		for _, a := range n.actions {
			if !slices.ContainsFunc(slices.Collect(maps.Keys(granted)), func(g string) bool {
				action, resource, _ := strings.Cut(g, " ")
				fits := strings.HasSuffix(resource, n.resource) ||
					strings.HasSuffix(n.resource, "/") && strings.Contains(resource, n.resource)
				return action == a && fits && granted[g]
			}) {
				t.Errorf("iam-policy.json does not allow %s on …%s", a, n.resource)
			}
			_, short, _ := strings.Cut(a, ":")
			if !strings.Contains(string(header), short) {
				t.Errorf("configs/emr-eks.yaml's header does not name %s", a)
			}
			if !strings.Contains(eks, a) {
				t.Errorf("%s does not name %s", eksDoc, a)
			}
		}
	}
}

func kafkaSinkTopic(cfg *pipeline.Config) string {
	if cfg.Sinks.Kafka == nil {
		return ""
	}
	return cfg.Sinks.Kafka.Topic
}

// stringOrList is an IAM policy field that holds one string or a list.
type stringOrList []string

func (s *stringOrList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(s))
}

// overlayEnv is the example overlay's job.env: the variables every logstore
// container gets from the ConfigMap logstore-env.
func overlayEnv(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not NAME=value", envFile, line)
		}
		env[k] = v
	}
	return env
}

func loadOverlay(t *testing.T) *kustomization {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(overlayDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, obj, err := decodeManifest(raw)
	if err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", overlayDir, err)
	}
	k, ok := obj.(*kustomization)
	if !ok {
		t.Fatalf("%s/kustomization.yaml is no Kustomization", overlayDir)
	}
	return k
}

// checkSpoolSize: the spool emptyDir holds the spool's worst case, a batch
// cut at target_file_bytes in every partition the pod owns: partitions x
// folders a batch writes (2: dt/hour at the hour) x (target_file_bytes +
// row_group_bytes, the pages of the row group being written, spilled).
// The request covers a pod that owns the partitions of one pod away, the
// limit a pod that owns them all; a pod over its sizeLimit is evicted.
func checkSpoolSize(t *testing.T, cfg *pipeline.Config, dir *corev1.EmptyDirVolumeSource, res corev1.ResourceRequirements) {
	t.Helper()
	const folders = 2
	perFile := cfg.Sinks.Files.TargetFileBytes + cfg.Sinks.Files.Parquet.RowGroupBytes
	worst := func(partitions int) *resource.Quantity {
		return resource.NewQuantity(int64(partitions*folders)*perFile, resource.BinarySI)
	}
	if all := worst(topicPartitions); dir.SizeLimit == nil || dir.SizeLimit.Cmp(*all) < 0 {
		t.Errorf("spool sizeLimit %v is below the worst case of one pod owning all %d partitions: %s", dir.SizeLimit, topicPartitions, all)
	}
	req, ok := res.Requests[corev1.ResourceEphemeralStorage]
	oneAway := worst((topicPartitions + zones - 2) / (zones - 1))
	if !ok || req.Cmp(*oneAway) < 0 {
		t.Errorf("ephemeral-storage request %s is below the spool's worst case with one pod of %d away: %s", req.String(), zones, oneAway)
	}
	if ok && dir.SizeLimit != nil && req.Cmp(*dir.SizeLimit) > 0 {
		t.Errorf("ephemeral-storage request %s is above the spool's sizeLimit %s", req.String(), dir.SizeLimit)
	}
}

// TestManifestsNameNoAccount: nothing under configs/k8s but the overlay
// names an image, and no manifest or IAM document carries an AWS account
// id: one was copied into ~28 places.
func TestManifestsNameNoAccount(t *testing.T) {
	account := regexp.MustCompile(`\b\d{12}\b`)
	var files []string
	filepath.WalkDir("../../configs/k8s", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	iam, _ := filepath.Glob("../../configs/iam-*.json")
	for _, f := range append(files, iam...) {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := account.Find(raw); m != nil {
			t.Errorf("%s holds an account id %s; the overlay's values name it once", f, m)
		}
		if strings.Contains(string(raw), ".dkr.ecr.") && filepath.Base(f) != "kustomization.yaml" {
			t.Errorf("%s names an ECR image; kustomize's images: in the overlay sets it", f)
		}
	}
	ms := loadManifests(t)
	for _, w := range workloadsOf(t, ms) {
		if img := w.pod.Spec.Containers[0].Image; img != "logstore" {
			t.Errorf("%s runs image %q; want %q, which the overlay's images: replaces", w.name, img, "logstore")
		}
	}
	overlay := loadOverlay(t)
	if len(overlay.Images) != 1 || overlay.Images[0].Name != "logstore" || overlay.Images[0].NewName == "" {
		t.Errorf("the overlay's images %+v: want one, logstore, with its newName", overlay.Images)
	}
	if len(overlay.ConfigMapGenerator) != 1 || overlay.ConfigMapGenerator[0].Name != envName ||
		!slices.Equal(overlay.ConfigMapGenerator[0].Envs, []string{filepath.Base(envFile)}) {
		t.Errorf("the overlay's configMapGenerator %+v: want %s from %s", overlay.ConfigMapGenerator, envName, filepath.Base(envFile))
	}
}

// TestOverlayBuilds runs kustomize (kubectl's) on the example overlay: the
// pods get the overlay's image and environment, the service account its
// role, and every document still decodes strictly.
func TestOverlayBuilds(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH: the overlay's kustomize build is not checked here (the static checks above still ran)")
	}
	out, err := exec.Command(kubectl, "kustomize", overlayDir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", overlayDir, err)
	}
	docs, err := splitDocuments(out)
	if err != nil {
		t.Fatal(err)
	}
	var ms []manifest
	for i, doc := range docs {
		kind, obj, err := decodeManifest(doc)
		if err != nil {
			t.Errorf("built document %d (%s): %v", i+1, kind, err)
			continue
		}
		if obj != nil {
			ms = append(ms, manifest{fmt.Sprintf("built#%d", i+1), kind, obj})
		}
	}
	img := loadOverlay(t).Images[0]
	for _, d := range objectsOf[appsv1.Deployment](ms) {
		c := d.Spec.Template.Spec.Containers[0]
		if want := img.NewName + ":" + img.NewTag; c.Image != want {
			t.Errorf("the built Deployment runs %q, want the overlay's %q", c.Image, want)
		}
		if len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef == nil || c.EnvFrom[0].ConfigMapRef.Name != envName {
			t.Errorf("the built Deployment's envFrom %+v; want the ConfigMap %s", c.EnvFrom, envName)
		}
	}
	found := false
	for _, cm := range objectsOf[corev1.ConfigMap](ms) {
		if cm.Name == envName {
			found = true
			if !maps.Equal(cm.Data, overlayEnv(t)) {
				t.Errorf("the built %s holds %v, not job.env's %v", envName, cm.Data, overlayEnv(t))
			}
		}
	}
	if !found {
		t.Errorf("the build has no ConfigMap %s (named without a hash, so job.yaml and keda.yaml applied by hand find it)", envName)
	}
	for _, sa := range objectsOf[corev1.ServiceAccount](ms) {
		if !strings.HasPrefix(sa.Annotations["eks.amazonaws.com/role-arn"], "arn:aws:iam::") {
			t.Errorf("the built ServiceAccount %s has no IRSA role: %v", sa.Name, sa.Annotations)
		}
	}
}

// TestIRSATrustPolicyTrustsTheServiceAccount: configs/iam-trust-policy.json
// lets exactly the pods' service account assume the role, through the
// cluster's OIDC provider, for STS.
func TestIRSATrustPolicyTrustsTheServiceAccount(t *testing.T) {
	raw, err := os.ReadFile("../../configs/iam-trust-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Statement []struct {
			Effect    string
			Principal struct{ Federated string }
			Action    stringOrList
			Condition map[string]map[string]string
		}
	}
	if err := json.Unmarshal(raw, &policy); err != nil {
		t.Fatalf("iam-trust-policy.json: %v", err)
	}
	if len(policy.Statement) != 1 {
		t.Fatalf("%d statements, want 1", len(policy.Statement))
	}
	st := policy.Statement[0]
	_, provider, ok := strings.Cut(st.Principal.Federated, ":oidc-provider/")
	if st.Effect != "Allow" || !ok || !slices.Equal(st.Action, []string{"sts:AssumeRoleWithWebIdentity"}) {
		t.Errorf("statement %+v: want Allow sts:AssumeRoleWithWebIdentity to an oidc-provider", st)
	}
	eq := st.Condition["StringEquals"]
	for _, sa := range objectsOf[corev1.ServiceAccount](loadManifests(t)) {
		if want := "system:serviceaccount:" + sa.Namespace + ":" + sa.Name; eq[provider+":sub"] != want {
			t.Errorf("the trust policy's %s:sub is %q, want the pods' service account %q", provider, eq[provider+":sub"], want)
		}
	}
	if eq[provider+":aud"] != "sts.amazonaws.com" {
		t.Errorf("the trust policy's %s:aud is %q, want sts.amazonaws.com", provider, eq[provider+":aud"])
	}
}

// TestPodMonitorScrapesThePods: the Prometheus Operator's PodMonitor
// selects every logstore pod and scrapes the port metrics.listen serves.
func TestPodMonitorScrapesThePods(t *testing.T) {
	ms := loadManifests(t)
	pms := objectsOf[podMonitor](ms)
	if len(pms) != 1 {
		t.Fatalf("%d PodMonitors, want 1", len(pms))
	}
	pm := pms[0]
	sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range workloadsOf(t, ms) {
		if w.namespace != pm.Namespace || !sel.Matches(labels.Set(w.pod.Labels)) {
			t.Errorf("the PodMonitor (namespace %s, %v) does not select %s's pods", pm.Namespace, sel, w.name)
			continue
		}
		c := w.pod.Spec.Containers[0]
		_, port, _ := net.SplitHostPort(podConfig(t, ms, w, c).Metrics.Listen)
		for _, e := range pm.Spec.PodMetricsEndpoints {
			if got := containerPort(c, intstr.FromString(e.Port)); strconv.Itoa(got) != port || e.Path != "/metrics" {
				t.Errorf("the PodMonitor scrapes port %q (%d) path %s of %s; metrics.listen serves /metrics on %s", e.Port, got, e.Path, w.name, port)
			}
		}
	}
}
