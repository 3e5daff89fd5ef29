//go:build !nodemo

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
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
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/logstore/logstore/pipeline"
)

// The manifests under configs/k8s are rendered as `kubectl apply -k` of the
// example overlay renders them, with kustomize's own library, once for
// every way to run that docs/eks.md lists (the overlay's `components:`),
// and every object rendered is decoded strictly: the built-in kinds into
// the Kubernetes API types, the custom resources against the schemas of
// their published CRDs (testdata/crds). Each render is then checked
// against the job's config as the pods load it from the rendered
// ConfigMap. No cluster is needed.

const (
	k8sRoot = "../../configs/k8s"
	// overlay is the example overlay, relative to k8sRoot: the image, the
	// job's config and environment, the IRSA role, the components.
	overlay    = "overlays/example"
	overlayDir = k8sRoot + "/" + overlay
	envFile    = overlayDir + "/job.env"
	// The ConfigMaps the overlay generates, before kustomize adds the
	// hash of their content to the names.
	envName = "logstore-env"
	cmName  = "logstore-config"
	cmKey   = "emr-eks.yaml"
	// topicPartitions is the partitions of `logs` the manifests are sized
	// for (keda.yaml's maxReplicaCount: one member per partition at most).
	topicPartitions = 12
	// zones is how many zones the manifests spread over (three in every
	// AWS region logstore targets, and in the local racks az-a..az-c).
	zones   = 3
	zoneKey = "topology.kubernetes.io/zone"
	emrEKS  = "../../configs/emr-eks.yaml"
	// namespace is where every namespaced object goes.
	namespace = "logstore"
)

var update = flag.Bool("update", false, "rewrite configs/k8s/components/prometheusrule/prometheusrule.yaml from configs/prometheus/alerts.yaml")

// builtin maps apiVersion/kind to the Kubernetes API type a rendered
// object must decode into.
var builtin = map[string]func() any{
	"v1/Namespace":                             func() any { return new(corev1.Namespace) },
	"v1/ServiceAccount":                        func() any { return new(corev1.ServiceAccount) },
	"v1/ConfigMap":                             func() any { return new(corev1.ConfigMap) },
	"v1/Service":                               func() any { return new(corev1.Service) },
	"apps/v1/Deployment":                       func() any { return new(appsv1.Deployment) },
	"apps/v1/StatefulSet":                      func() any { return new(appsv1.StatefulSet) },
	"batch/v1/Job":                             func() any { return new(batchv1.Job) },
	"batch/v1/CronJob":                         func() any { return new(batchv1.CronJob) },
	"policy/v1/PodDisruptionBudget":            func() any { return new(policyv1.PodDisruptionBudget) },
	"rbac.authorization.k8s.io/v1/ClusterRole": func() any { return new(rbacv1.ClusterRole) },
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding": func() any { return new(rbacv1.ClusterRoleBinding) },
	"rbac.authorization.k8s.io/v1/Role":               func() any { return new(rbacv1.Role) },
	"rbac.authorization.k8s.io/v1/RoleBinding":        func() any { return new(rbacv1.RoleBinding) },
}

// custom maps a custom resource's apiVersion/kind to its CRD file under
// testdata/crds and to the view of the fields the checks below read. The
// CRD's schema decides what is valid; the view is decoded leniently after.
var custom = map[string]struct {
	crd  string
	view func() any
}{
	"keda.sh/v1alpha1/ScaledObject":          {"keda.sh_scaledobjects.yaml", func() any { return new(scaledObject) }},
	"keda.sh/v1alpha1/TriggerAuthentication": {"keda.sh_triggerauthentications.yaml", func() any { return new(triggerAuthentication) }},
	"monitoring.coreos.com/v1/PodMonitor":    {"monitoring.coreos.com_podmonitors.yaml", func() any { return new(podMonitor) }},
	"monitoring.coreos.com/v1/ServiceMonitor": {"monitoring.coreos.com_servicemonitors.yaml", func() any {
		return new(serviceMonitor)
	}},
	"monitoring.coreos.com/v1/PrometheusRule": {"monitoring.coreos.com_prometheusrules.yaml", func() any {
		return new(prometheusRule)
	}},
}

type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		MinReplicaCount *int32 `json:"minReplicaCount"`
		MaxReplicaCount *int32 `json:"maxReplicaCount"`
		Advanced        *struct {
			HorizontalPodAutoscalerConfig *struct {
				Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior"`
			} `json:"horizontalPodAutoscalerConfig"`
		} `json:"advanced"`
		Triggers []struct {
			Type              string            `json:"type"`
			Metadata          map[string]string `json:"metadata"`
			AuthenticationRef *struct {
				Name string `json:"name"`
			} `json:"authenticationRef"`
		} `json:"triggers"`
	} `json:"spec"`
}

type triggerAuthentication struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
}

// kafkaTriggerKeys are the metadata keys of KEDA's kafka scaler (its
// metadata is a map of strings in the CRD, so the schema cannot tell).
var kafkaTriggerKeys = []string{"bootstrapServers", "consumerGroup", "topic", "lagThreshold",
	"activationLagThreshold", "offsetResetPolicy", "allowIdleConsumers", "scaleToZeroOnInvalidOffset",
	"excludePersistentLag", "limitToPartitionsWithLag", "ensureEvenDistributionOfPartitions", "version",
	"partitionLimitation", "sasl", "saslTokenProvider", "tls", "unsafeSsl", "awsRegion",
	"bootstrapServersFromEnv", "consumerGroupFromEnv", "topicFromEnv"}

// monitor is a PodMonitor or a ServiceMonitor, each kind with its own
// list of endpoints.
type monitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector            metav1.LabelSelector `json:"selector"`
		PodMetricsEndpoints []scrapeEndpoint     `json:"podMetricsEndpoints"`
		Endpoints           []scrapeEndpoint     `json:"endpoints"`
	} `json:"spec"`
}

type (
	podMonitor     monitor
	serviceMonitor monitor
)

type scrapeEndpoint struct {
	Port string `json:"port"`
	Path string `json:"path"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []any `json:"groups"`
	} `json:"spec"`
}

// manifest is one rendered object.
type manifest struct {
	kind string // apiVersion/kind
	obj  any
}

// decodeManifest decodes one YAML document strictly: a built-in kind into
// its API type, a custom resource against its CRD's schema.
func decodeManifest(doc []byte) (string, any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return "", nil, err
	}
	if tm.Kind == "" && tm.APIVersion == "" {
		return "", nil, nil // comments only
	}
	kind := tm.APIVersion + "/" + tm.Kind
	// As the API server decodes: field names match case-sensitively, and
	// an unknown or repeated field is an error.
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return kind, nil, err
	}
	if newObj, ok := builtin[kind]; ok {
		obj := newObj()
		return kind, obj, unmarshalStrict(js, obj)
	}
	cr, ok := custom[kind]
	if !ok {
		return kind, nil, fmt.Errorf("no API type or CRD known for %s", kind)
	}
	if err := validateCustom(kind, cr.crd, js); err != nil {
		return kind, nil, err
	}
	obj := cr.view()
	return kind, obj, json.Unmarshal(js, obj)
}

func unmarshalStrict(js []byte, obj any) error {
	strict, err := sigsjson.UnmarshalStrict(js, obj)
	if err == nil {
		err = errors.Join(strict...)
	}
	return err
}

// validateCustom checks a custom resource as an API server with the CRD
// installed and strict field validation (kubectl's default) would: against
// the CRD's openAPIV3Schema, where a field the schema does not declare is
// an error, and its metadata as the ObjectMeta every object has.
func validateCustom(kind, crd string, js []byte) error {
	sch, err := crdSchema(crd, kind)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		return err
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("%s against %s: %v", kind, crd, err)
	}
	var meta struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              json.RawMessage `json:"spec"`
	}
	return unmarshalStrict(js, &meta)
}

var (
	schemasMu sync.Mutex
	schemas   = map[string]*jsonschema.Schema{}
)

// crdSchema compiles the openAPIV3Schema of the CRD's version that serves
// kind (apiVersion/kind). A CRD's schema lets unknown fields through (the
// API server prunes them, or with strict field validation refuses them),
// so every object schema that lists its properties and does not preserve
// unknown fields is closed here with additionalProperties: false.
func crdSchema(crd, kind string) (*jsonschema.Schema, error) {
	schemasMu.Lock()
	defer schemasMu.Unlock()
	if s, ok := schemas[kind]; ok {
		return s, nil
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "crds", crd))
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", crd, err)
	}
	var def struct {
		Spec struct {
			Group string
			Names struct{ Kind string }
			// Versions holds each version's schema, as JSON for the
			// validator's own decoding (numbers kept exact).
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema json.RawMessage
				}
			}
		}
	}
	if err := json.Unmarshal(js, &def); err != nil {
		return nil, fmt.Errorf("%s: %v", crd, err)
	}
	for _, v := range def.Spec.Versions {
		if def.Spec.Group+"/"+v.Name+"/"+def.Spec.Names.Kind != kind {
			continue
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(v.Schema.OpenAPIV3Schema))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", crd, err)
		}
		closeSchema(doc)
		c := jsonschema.NewCompiler()
		// OpenAPI 3.0's schema object is JSON Schema draft 4's, with
		// extensions (nullable, x-kubernetes-*) the validator ignores.
		c.DefaultDraft(jsonschema.Draft4)
		url := "crd:///" + kind
		if err := c.AddResource(url, doc); err != nil {
			return nil, err
		}
		s, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", crd, err)
		}
		schemas[kind] = s
		return s, nil
	}
	return nil, fmt.Errorf("%s serves no %s", crd, kind)
}

func closeSchema(v any) {
	switch n := v.(type) {
	case map[string]any:
		_, props := n["properties"]
		_, open := n["additionalProperties"]
		if props && !open && n["x-kubernetes-preserve-unknown-fields"] != true {
			n["additionalProperties"] = false
		}
		for _, c := range n {
			closeSchema(c)
		}
	case []any:
		for _, c := range n {
			closeSchema(c)
		}
	}
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

func objectsOf[T any](ms []manifest) []*T {
	var out []*T
	for _, m := range ms {
		if o, ok := m.obj.(*T); ok {
			out = append(out, o)
		}
	}
	return out
}

// A way to run: the overlay's components (under configs/k8s/components)
// and the one workload it must render.
type way struct {
	name       string
	components []string
	workload   string // Deployment, StatefulSet, Job or CronJob
}

// ways are the ways to run docs/eks.md lists, each with its exact
// `components:` line; any of extras may be added to each.
var ways = []way{
	{"Deployment", nil, "Deployment"},
	{"StatefulSet", []string{"statefulset"}, "StatefulSet"},
	{"Job", []string{"job"}, "Job"},
	{"CronJob", []string{"cronjob"}, "CronJob"},
	{"Deployment with KEDA", []string{"keda"}, "Deployment"},
	{"StatefulSet with KEDA", []string{"statefulset", "keda-statefulset"}, "StatefulSet"},
}

var extras = []string{"podmonitor", "servicemonitor", "prometheusrule"}

// combinations are every way with every subset of the extras.
func combinations() []way {
	var all []way
	for _, w := range ways {
		for mask := range 1 << len(extras) {
			c := w
			c.components = slices.Clone(w.components)
			for i, e := range extras {
				if mask&(1<<i) != 0 {
					c.components = append(c.components, e)
					c.name += " + " + e
				}
			}
			all = append(all, c)
		}
	}
	return all
}

// componentsLine is the overlay's kustomization line that picks them, as
// docs/eks.md writes it.
func componentsLine(components []string) string {
	var paths []string
	for _, c := range components {
		paths = append(paths, "../../components/"+c)
	}
	return "components: [" + strings.Join(paths, ", ") + "]"
}

var componentsRE = regexp.MustCompile(`(?m)^components: \[.*\]$`)

var (
	treeOnce sync.Once
	tree     map[string][]byte // configs/k8s's files by path under it
	treeErr  error
)

// k8sTree reads configs/k8s once.
func k8sTree(t *testing.T) map[string][]byte {
	t.Helper()
	treeOnce.Do(func() {
		tree = map[string][]byte{}
		treeErr = filepath.WalkDir(k8sRoot, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(k8sRoot, p)
			if err == nil {
				tree[filepath.ToSlash(rel)], err = os.ReadFile(p)
			}
			return err
		})
	})
	if treeErr != nil {
		t.Fatal(treeErr)
	}
	return tree
}

// render builds the example overlay with kustomize's library, as `kubectl
// apply -k` does, with its components line set to components and the
// files of edits (paths under configs/k8s) replaced: the raw YAML and the
// objects decoded strictly.
func render(t *testing.T, components []string, edits map[string]string) ([]byte, []manifest, error) {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	for p, b := range overlayFiles(t, components, edits) {
		if err := mem.WriteFile("/k8s/"+p, b); err != nil {
			t.Fatal(err)
		}
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/k8s/"+overlay)
	if err != nil {
		return nil, nil, err
	}
	out, err := rm.AsYaml()
	if err != nil {
		return nil, nil, err
	}
	return decodeRender(out)
}

// overlayFiles is configs/k8s with the example overlay's components line
// set to components and the files of edits replaced.
func overlayFiles(t *testing.T, components []string, edits map[string]string) map[string][]byte {
	t.Helper()
	files := maps.Clone(k8sTree(t))
	for p, s := range edits {
		files[p] = []byte(s)
	}
	k := overlay + "/kustomization.yaml"
	if !componentsRE.Match(files[k]) {
		t.Fatalf("%s has no `components: [...]` line", k)
	}
	files[k] = componentsRE.ReplaceAll(files[k], []byte(componentsLine(components)))
	return files
}

// renderKubectl is render by the real `kubectl kustomize` (kubectl's own
// kustomize), on a copy of configs/k8s in a temporary folder.
func renderKubectl(t *testing.T, components []string, edits map[string]string) ([]byte, []manifest, error) {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl: %v (the manifests are checked with kubectl's kustomize too; install kubectl)", err)
	}
	dir := t.TempDir()
	for p, b := range overlayFiles(t, components, edits) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", filepath.Join(dir, overlay))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("kubectl kustomize: %w: %s", err, stderr.String())
	}
	return decodeRender(out)
}

// decodeRender decodes each object of a render strictly.
func decodeRender(out []byte) ([]byte, []manifest, error) {
	docs, err := splitDocuments(out)
	if err != nil {
		return nil, nil, err
	}
	var ms []manifest
	var errs []error
	for i, doc := range docs {
		kind, obj, err := decodeManifest(doc)
		if err != nil {
			errs = append(errs, fmt.Errorf("object %d (%s): %w", i+1, kind, err))
			continue
		}
		if obj != nil {
			ms = append(ms, manifest{kind, obj})
		}
	}
	return out, ms, errors.Join(errs...)
}

// mustRender is render for a combination that must build.
func mustRender(t *testing.T, components []string, edits map[string]string) ([]byte, []manifest) {
	t.Helper()
	out, ms, err := render(t, components, edits)
	if err != nil {
		t.Fatalf("%s: %v", componentsLine(components), err)
	}
	return out, ms
}

// TestEveryWayToRunRenders renders every combination docs/eks.md documents
// (each way to run, with each subset of the monitoring components) and
// checks what a platform team relies on: one workload, of the kind the
// combination names; the overlay's image in every container; KEDA's
// region and brokers from the overlay's job.env; the config and the
// environment under hashed names the pods mount, so a change rolls them;
// each pod against the config it loads; and every monitor, autoscaler and
// disruption budget pointed at the pods that are there.
func TestEveryWayToRunRenders(t *testing.T) {
	env := overlayEnv(t)
	img := overlayImage(t)
	for _, c := range combinations() {
		t.Run(c.name, func(t *testing.T) {
			out, ms := mustRender(t, c.components, nil)
			ws := workloadsOf(t, ms)
			if len(ws) != 1 || !strings.HasPrefix(ws[0].name, c.workload+" ") {
				names := make([]string, len(ws))
				for i, w := range ws {
					names[i] = w.name
				}
				t.Fatalf("workloads %v; want exactly one %s", names, c.workload)
			}
			w := ws[0]

			if m := regexp.MustCompile(`(?m)^\s*(- )?image: logstore\s*$`).Find(out); m != nil {
				t.Errorf("the render runs the bare image %q: the overlay's images: did not reach it", strings.TrimSpace(string(m)))
			}
			spec := w.pod.Spec
			for _, ctr := range slices.Concat(spec.InitContainers, spec.Containers) {
				if ctr.Image != img {
					t.Errorf("container %s runs %q, want the overlay's %q", ctr.Name, ctr.Image, img)
				}
			}
			if bytes.Contains(out, []byte("ap-northeast-2")) {
				t.Error("the render names ap-northeast-2; the region is the overlay's AWS_REGION")
			}
			for _, o := range ms {
				if m, ok := objectMeta(o.obj); ok && o.kind != "v1/Namespace" && !strings.Contains(o.kind, "/Cluster") && m.Namespace != namespace {
					t.Errorf("%s %s is in namespace %q, want %s", o.kind, m.Name, m.Namespace, namespace)
				}
			}

			// The config and the environment: generated, named with their
			// content's hash, and those names are what the pods mount.
			config := generated(t, ms, cmName)
			envCM := generated(t, ms, envName)
			if want, err := os.ReadFile(filepath.Join(overlayDir, cmKey)); err != nil || config.Data[cmKey] != string(want) {
				t.Errorf("ConfigMap %s does not hold the overlay's %s (%v)", config.Name, cmKey, err)
			}
			if !maps.Equal(envCM.Data, env) {
				t.Errorf("ConfigMap %s holds %v, not job.env's %v", envCM.Name, envCM.Data, env)
			}
			if v := volumeNamed(spec, "config"); v == nil || v.ConfigMap == nil || v.ConfigMap.Name != config.Name {
				t.Errorf("the pods' config volume %+v is not ConfigMap %s", v, config.Name)
			}
			for _, ctr := range spec.Containers {
				if len(ctr.EnvFrom) != 1 || ctr.EnvFrom[0].ConfigMapRef == nil || ctr.EnvFrom[0].ConfigMapRef.Name != envCM.Name {
					t.Errorf("container %s envFrom %+v; want ConfigMap %s", ctr.Name, ctr.EnvFrom, envCM.Name)
				}
			}

			checkWorkload(t, ms, w)
			checkRBAC(t, ms, w)
			for _, p := range scaleTargetProblems(ms) {
				t.Error(p)
			}
			checkScaling(t, ms, w)
			checkMonitoring(t, ms, w, c.components)
		})
	}
}

// overlayImage is the image the example overlay's images: names.
func overlayImage(t *testing.T) string {
	t.Helper()
	var k struct {
		Images []struct{ Name, NewName, NewTag string }
	}
	raw, err := os.ReadFile(filepath.Join(overlayDir, "kustomization.yaml"))
	if err == nil {
		err = yaml.Unmarshal(raw, &k)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Images) != 1 || k.Images[0].Name != "logstore" || k.Images[0].NewName == "" || k.Images[0].NewTag == "" {
		t.Fatalf("the overlay's images %+v: want one, logstore, with newName and newTag", k.Images)
	}
	return k.Images[0].NewName + ":" + k.Images[0].NewTag
}

func objectMeta(obj any) (*metav1.ObjectMeta, bool) {
	v := reflect.ValueOf(obj).Elem().FieldByName("ObjectMeta")
	if !v.IsValid() {
		return nil, false
	}
	m, ok := v.Addr().Interface().(*metav1.ObjectMeta)
	return m, ok
}

// hashedName is a generated ConfigMap's name: the overlay's name, a dash
// and kustomize's 10-character hash of the content.
func hashedName(name string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `-[bcdfghkmt2-9]{10}$`)
}

// generated is the one ConfigMap the overlay generated as name.
func generated(t *testing.T, ms []manifest, name string) *corev1.ConfigMap {
	t.Helper()
	var found []*corev1.ConfigMap
	for _, cm := range objectsOf[corev1.ConfigMap](ms) {
		if strings.HasPrefix(cm.Name, name) {
			found = append(found, cm)
		}
	}
	if len(found) != 1 || !hashedName(name).MatchString(found[0].Name) {
		t.Fatalf("ConfigMaps %v; want one %s-<hash>: without the hash a changed config does not roll the pods", found, name)
	}
	return found[0]
}

// scaleTargetProblems: every ScaledObject scales a workload of the render.
func scaleTargetProblems(ms []manifest) []string {
	var out []string
	for _, so := range objectsOf[scaledObject](ms) {
		ref := so.Spec.ScaleTargetRef
		found := false
		for _, d := range objectsOf[appsv1.Deployment](ms) {
			found = found || ref.Kind == "Deployment" && ref.Name == d.Name && d.Namespace == so.Namespace
		}
		for _, s := range objectsOf[appsv1.StatefulSet](ms) {
			found = found || ref.Kind == "StatefulSet" && ref.Name == s.Name && s.Namespace == so.Namespace
		}
		if !found || ref.APIVersion != "apps/v1" {
			out = append(out, fmt.Sprintf("ScaledObject %s scales %s %s %s, which is not in the render", so.Name, ref.APIVersion, ref.Kind, ref.Name))
		}
	}
	return out
}

// TestKEDAWithTheWrongWorkloadIsCaught: the keda component with the
// StatefulSet (keda-statefulset is the documented pair) scales a
// Deployment that is not there, and the check above says so.
func TestKEDAWithTheWrongWorkloadIsCaught(t *testing.T) {
	_, ms := mustRender(t, []string{"statefulset", "keda"}, nil)
	if p := scaleTargetProblems(ms); len(p) != 1 || !strings.Contains(p[0], "Deployment logstore, which is not in the render") {
		t.Errorf("problems %q; want the ScaledObject's missing Deployment", p)
	}
}

// TestDocumentedCombinationsRender: docs/eks.md gives each way to run its
// exact `components:` line, and every such line in it renders one workload.
func TestDocumentedCombinationsRender(t *testing.T) {
	raw, err := os.ReadFile(eksDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, w := range ways {
		if line := componentsLine(w.components); !strings.Contains(doc, line) {
			t.Errorf("%s does not give %s its line %q", eksDoc, w.name, line)
		}
	}
	lines := regexp.MustCompile(`components: \[[^\]\n]*\]`).FindAllString(doc, -1)
	if len(lines) < len(ways) {
		t.Fatalf("%s has %d components lines; want one per way to run (%d)", eksDoc, len(lines), len(ways))
	}
	for _, line := range slices.Compact(slices.Sorted(slices.Values(lines))) {
		var comps []string
		for _, p := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "components: ["), "]"), ",") {
			if p = strings.TrimSpace(p); p != "" {
				c, ok := strings.CutPrefix(p, "../../components/")
				if !ok {
					t.Errorf("%s: %q is not a component of configs/k8s/components", line, p)
				}
				comps = append(comps, c)
			}
		}
		_, ms, err := render(t, comps, nil)
		if err != nil {
			t.Errorf("%s from %s: %v", line, eksDoc, err)
			continue
		}
		if ws := workloadsOf(t, ms); len(ws) != 1 {
			t.Errorf("%s renders %d workloads, want 1", line, len(ws))
		}
		if p := scaleTargetProblems(ms); len(p) > 0 {
			t.Errorf("%s: %v", line, p)
		}
	}
	for _, stale := range []string{"kubectl apply -f", "overlay's `resources`", "by hand"} {
		if strings.Contains(doc, stale) {
			t.Errorf("%s still says %q: the components replace applying files by hand", eksDoc, stale)
		}
	}
}

// TestManifestHeadersApplyAnOverlay: what the files under configs/k8s tell
// a reader to apply is an overlay (the base alone has no image, config or
// role), never a file by hand (its pods would run the bare image).
func TestManifestHeadersApplyAnOverlay(t *testing.T) {
	apply := regexp.MustCompile(`kubectl apply -([kf]) (\S+)`)
	for p, b := range k8sTree(t) {
		for _, m := range apply.FindAllStringSubmatch(string(b), -1) {
			if m[1] == "f" || !strings.HasPrefix(m[2], "configs/k8s/overlays/") {
				t.Errorf("configs/k8s/%s says %q; apply an overlay: kubectl apply -k configs/k8s/overlays/...", p, m[0])
			}
		}
	}
}

// TestConfigChangeRollsThePods: a changed config (or job.env) is a new
// ConfigMap name in every workload's pod template, which is what makes
// the controller roll the pods; the same files give the same names.
func TestConfigChangeRollsThePods(t *testing.T) {
	cfg, err := os.ReadFile(filepath.Join(overlayDir, cmKey))
	if err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	changedCfg := strings.Replace(string(cfg), "\n  level: info\n", "\n  level: debug\n", 1)
	if changedCfg == string(cfg) {
		t.Fatalf("%s has no `  level: info` line to change", cmKey)
	}
	edits := []struct {
		what, file, content, cm string
	}{
		{"log.level in " + cmKey, overlay + "/" + cmKey, changedCfg, cmName},
		{"LOGSTORE_BUCKET in job.env", overlay + "/job.env", strings.Replace(string(env), "LOGSTORE_BUCKET=", "LOGSTORE_BUCKET=other-", 1), envName},
	}
	for _, w := range ways[:4] {
		_, before := mustRender(t, w.components, nil)
		_, again := mustRender(t, w.components, nil)
		if !reflect.DeepEqual(podTemplate(t, before), podTemplate(t, again)) {
			t.Errorf("%s: two renders of the same files differ", w.name)
		}
		for _, e := range edits {
			_, after := mustRender(t, w.components, map[string]string{e.file: e.content})
			old, new := generated(t, before, e.cm).Name, generated(t, after, e.cm).Name
			if old == new {
				t.Errorf("%s: %s changed, ConfigMap still %s", w.name, e.what, old)
			}
			pb, pa := podTemplate(t, before), podTemplate(t, after)
			if reflect.DeepEqual(pb, pa) {
				t.Errorf("%s: %s changed and the pod template did not: the pods would not roll", w.name, e.what)
			}
			if !strings.Contains(fmt.Sprintf("%+v", pa), new) {
				t.Errorf("%s: the pod template does not name the new ConfigMap %s", w.name, new)
			}
		}
	}
}

func podTemplate(t *testing.T, ms []manifest) corev1.PodTemplateSpec {
	t.Helper()
	ws := workloadsOf(t, ms)
	if len(ws) != 1 {
		t.Fatalf("%d workloads, want 1", len(ws))
	}
	return ws[0].pod
}

// TestKEDARegionIsTheOverlays: the ScaledObject's awsRegion is the
// overlay's AWS_REGION, whatever it is, for either workload.
func TestKEDARegionIsTheOverlays(t *testing.T) {
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, region := range []string{"eu-west-1", "us-east-2"} {
		edited := regexp.MustCompile(`(?m)^AWS_REGION=.*$`).ReplaceAllString(string(env), "AWS_REGION="+region)
		for _, w := range []way{ways[4], ways[5]} {
			_, ms := mustRender(t, w.components, map[string]string{overlay + "/job.env": edited})
			sos := objectsOf[scaledObject](ms)
			if len(sos) != 1 || len(sos[0].Spec.Triggers) != 1 {
				t.Fatalf("%s: %d ScaledObjects; want one with one trigger", w.name, len(sos))
			}
			if got := sos[0].Spec.Triggers[0].Metadata["awsRegion"]; got != region {
				t.Errorf("%s with AWS_REGION=%s: the trigger's awsRegion is %q", w.name, region, got)
			}
		}
	}
}

// TestKEDAFollowsTheJobsGroupAndTopic: the KEDA trigger scaled on
// keda.yaml's own `consumerGroup: logstore-logs` and `topic: logs`, so an
// overlay whose job reads another group or topic rendered a trigger on a
// group that does not exist. The overlay's job.env names them once
// (LOGSTORE_GROUP, LOGSTORE_TOPIC): the pods' config reads them, and the
// trigger too (KEDA's consumerGroupFromEnv and topicFromEnv, from the
// scaled pods' environment, as bootstrapServersFromEnv). Rendered by the
// real `kubectl kustomize`.
func TestKEDAFollowsTheJobsGroupAndTopic(t *testing.T) {
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	const group, topic = "prod-logs", "prod-app-logs"
	edited := string(env)
	for k, v := range map[string]string{"LOGSTORE_GROUP": group, "LOGSTORE_TOPIC": topic} {
		re := regexp.MustCompile(`(?m)^` + k + `=.*$`)
		if !re.MatchString(edited) {
			t.Fatalf("%s does not set %s, the job's %s", envFile, k, strings.ToLower(strings.TrimPrefix(k, "LOGSTORE_")))
		}
		edited = re.ReplaceAllString(edited, k+"="+v)
	}
	for _, w := range []way{ways[4], ways[5]} {
		t.Run(w.name, func(t *testing.T) {
			_, ms, err := renderKubectl(t, w.components, map[string]string{overlay + "/job.env": edited})
			if err != nil {
				t.Fatal(err)
			}
			wl := workloadsOf(t, ms)
			if len(wl) != 1 {
				t.Fatalf("%d workloads", len(wl))
			}
			cfg := podConfig(t, ms, wl[0], wl[0].pod.Spec.Containers[0])
			if cfg.Kafka.Group != group || !slices.Equal(cfg.Kafka.Topics, []string{topic}) {
				t.Errorf("with job.env's group %s and topic %s the pods join %q reading %v", group, topic, cfg.Kafka.Group, cfg.Kafka.Topics)
			}
			checkScaling(t, ms, wl[0])
		})
	}
}

// TestStrictDecodingRefusesUnknownFields: a misspelt field is an error in a
// built-in kind and in each custom resource, so the decoding can fail.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	tr := k8sTree(t)
	for _, typo := range []struct{ file, from, to string }{
		{"base/deployment.yaml", "terminationGracePeriodSeconds:", "terminationGracePeriodSecond:"},
		{"base/deployment.yaml", "readOnlyRootFilesystem:", "readOnlyRootFileSystem:"},
		{"base/deployment.yaml", "topologyKey:", "topologykey:"},
		{"components/keda/keda.yaml", "minReplicaCount:", "minReplicas:"},
		{"components/keda/keda.yaml", "stabilizationWindowSeconds:", "stabilisationWindowSeconds:"},
		{"components/podmonitor/podmonitor.yaml", "podMetricsEndpoints:", "podMetricEndpoints:"},
		{"components/servicemonitor/servicemonitor.yaml", "endpoints:", "endpoint:"},
		{"components/prometheusrule/prometheusrule.yaml", "annotations:", "annotation:"},
	} {
		docs, err := splitDocuments(tr[typo.file])
		if err != nil {
			t.Fatal(err)
		}
		refused := false
		for _, doc := range docs {
			if !bytes.Contains(doc, []byte(typo.from)) {
				continue
			}
			if _, _, err := decodeManifest(doc); err != nil {
				t.Errorf("%s as it is: %v", typo.file, err)
			}
			bad := strings.Replace(string(doc), typo.from, typo.to, 1)
			_, _, err := decodeManifest([]byte(bad))
			refused = err != nil
		}
		if !refused {
			t.Errorf("%s with %q decoded without error", typo.file, typo.to)
		}
	}
}

// TestOverlayConfigIsEMREKS: the example overlay's job is
// configs/emr-eks.yaml, key for key (the comments differ: the overlay's
// says where it goes), so the file `logstore check` and the tests check
// is the one the pods run.
func TestOverlayConfigIsEMREKS(t *testing.T) {
	var a, b any
	for _, f := range []struct {
		path string
		into *any
	}{{emrEKS, &a}, {filepath.Join(overlayDir, cmKey), &b}} {
		raw, err := os.ReadFile(f.path)
		if err == nil {
			// ${VAR} is expanded before the YAML is read; as a word here.
			err = yaml.Unmarshal(envRef.ReplaceAll(raw, []byte("env:$1")), f.into)
		}
		if err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("%s/%s differs from configs/emr-eks.yaml; carry the change to both", overlay, cmKey)
	}
}

var envRef = regexp.MustCompile(`\$\{([^}]*)\}`)

const ruleFile = k8sRoot + "/components/prometheusrule/prometheusrule.yaml"

const ruleHeader = `# configs/prometheus/alerts.yaml as the Prometheus Operator's PrometheusRule:
# spec.groups below is that file's groups, indented, comments and all.
# Edit alerts.yaml, then regenerate this file:
#   go test ./cmd/logstore -run TestPrometheusRuleIsAlertsYAML -update
# Your Prometheus must select it: by its ruleSelector (often a
# ` + "`release:`" + ` label, added under metadata.labels here).
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: logstore
  namespace: logstore
  labels:
    app.kubernetes.io/name: logstore
spec:
`

// prometheusRuleYAML is the PrometheusRule of a rule file: its groups:
// block, from that line on, under spec.
func prometheusRuleYAML(rules []byte) ([]byte, error) {
	i := bytes.Index(rules, []byte("\ngroups:\n"))
	if i < 0 {
		return nil, errors.New("no top-level groups:")
	}
	out := []byte(ruleHeader)
	for _, line := range bytes.SplitAfter(rules[i+1:], []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			out = append(out, "  "...)
		}
		out = append(out, line...)
	}
	return out, nil
}

// TestPrometheusRuleIsAlertsYAML: the prometheusrule component's rules are
// configs/prometheus/alerts.yaml's (which TestAlertRulesAndDashboardUseDocumentedMetrics
// checks), and the file is what -update makes of it.
func TestPrometheusRuleIsAlertsYAML(t *testing.T) {
	rules, err := os.ReadFile(alertsPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := prometheusRuleYAML(rules)
	if err != nil {
		t.Fatalf("%s: %v", alertsPath, err)
	}
	if *update {
		if err := os.WriteFile(ruleFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not alerts.yaml's rules; run go test ./cmd/logstore -run TestPrometheusRuleIsAlertsYAML -update", ruleFile)
	}
	// And as rendered: the same groups, rule for rule.
	_, ms := mustRender(t, []string{"prometheusrule"}, nil)
	prs := objectsOf[prometheusRule](ms)
	var file struct{ Groups []any }
	if err := yaml.Unmarshal(rules, &file); err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 || !reflect.DeepEqual(prs[0].Spec.Groups, file.Groups) {
		t.Errorf("the rendered PrometheusRule's groups differ from %s", alertsPath)
	}
}

// checkMonitoring: the PodMonitor, and the ServiceMonitor through its
// Service, scrape /metrics on the port metrics.listen serves, of this
// render's pods.
func checkMonitoring(t *testing.T, ms []manifest, w workload, components []string) {
	t.Helper()
	pms, sms := objectsOf[podMonitor](ms), objectsOf[serviceMonitor](ms)
	svcs := objectsOf[corev1.Service](ms)
	if n := len(objectsOf[prometheusRule](ms)); n != btoi(slices.Contains(components, "prometheusrule")) {
		t.Errorf("%d PrometheusRules with components %v", n, components)
	}
	if len(pms) != btoi(slices.Contains(components, "podmonitor")) || len(sms) != btoi(slices.Contains(components, "servicemonitor")) {
		t.Fatalf("%d PodMonitors, %d ServiceMonitors with components %v", len(pms), len(sms), components)
	}
	c := w.pod.Spec.Containers[0]
	_, port, _ := net.SplitHostPort(podConfig(t, ms, w, c).Metrics.Listen)
	scrapes := func(what string, e scrapeEndpoint, podPort intstr.IntOrString) {
		if got := containerPort(c, podPort); strconv.Itoa(got) != port || e.Path != "/metrics" {
			t.Errorf("%s scrapes port %q (%d) path %s of %s; metrics.listen serves /metrics on %s", what, e.Port, got, e.Path, w.name, port)
		}
	}
	selects := func(what, ns string, sel *metav1.LabelSelector, set map[string]string) bool {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil || ns != w.namespace || !s.Matches(labels.Set(set)) {
			t.Errorf("%s (namespace %s, %v) does not select %s's pods (%v)", what, ns, sel, w.name, err)
			return false
		}
		return true
	}
	for _, pm := range pms {
		if selects("PodMonitor "+pm.Name, pm.Namespace, &pm.Spec.Selector, w.pod.Labels) {
			for _, e := range pm.Spec.PodMetricsEndpoints {
				scrapes("PodMonitor "+pm.Name, e, intstr.FromString(e.Port))
			}
		}
	}
	for _, sm := range sms {
		n := 0
		for _, svc := range svcs {
			s, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
			if err != nil || svc.Namespace != sm.Namespace || !s.Matches(labels.Set(svc.Labels)) {
				continue
			}
			n++
			if !selects("Service "+svc.Name, svc.Namespace, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, w.pod.Labels) {
				continue
			}
			for _, e := range sm.Spec.Endpoints {
				i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == e.Port })
				if i < 0 {
					t.Errorf("ServiceMonitor %s scrapes port %q, which Service %s does not have", sm.Name, e.Port, svc.Name)
					continue
				}
				scrapes("ServiceMonitor "+sm.Name, e, svc.Spec.Ports[i].TargetPort)
			}
		}
		if n != 1 {
			t.Errorf("ServiceMonitor %s selects %d Services, want 1", sm.Name, n)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// workload is a pod template and who runs it.
type workload struct {
	name      string
	namespace string
	pod       corev1.PodTemplateSpec
	replicas  *int32 // a Deployment's or a StatefulSet's
}

func workloadsOf(t *testing.T, ms []manifest) []workload {
	var ws []workload
	for _, d := range objectsOf[appsv1.Deployment](ms) {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("Deployment %s: selector %v does not select its own pods (%v)", d.Name, d.Spec.Selector, err)
		}
		ws = append(ws, workload{"Deployment " + d.Name, d.Namespace, d.Spec.Template, d.Spec.Replicas})
	}
	for _, j := range objectsOf[batchv1.Job](ms) {
		ws = append(ws, workload{"Job " + j.Name, j.Namespace, j.Spec.Template, nil})
	}
	for _, s := range objectsOf[appsv1.StatefulSet](ms) {
		sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(s.Spec.Template.Labels)) {
			t.Errorf("StatefulSet %s: selector %v does not select its own pods (%v)", s.Name, s.Spec.Selector, err)
		}
		ws = append(ws, workload{"StatefulSet " + s.Name, s.Namespace, s.Spec.Template, s.Spec.Replicas})
	}
	for _, c := range objectsOf[batchv1.CronJob](ms) {
		ws = append(ws, workload{"CronJob " + c.Name, c.Namespace, c.Spec.JobTemplate.Spec.Template, nil})
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
			i := -1
			if from.ConfigMapRef != nil {
				i = slices.IndexFunc(objectsOf[corev1.ConfigMap](ms), func(cm *corev1.ConfigMap) bool {
					return cm.Name == from.ConfigMapRef.Name && cm.Namespace == w.namespace
				})
			}
			if i < 0 {
				t.Fatalf("%s: envFrom %+v is not a ConfigMap of the render", w.name, from)
			}
			for k, v := range objectsOf[corev1.ConfigMap](ms)[i].Data {
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

// checkWorkload checks a pod template against the config its container
// loads from the rendered ConfigMap.
func checkWorkload(t *testing.T, ms []manifest, w workload) {
	t.Helper()
	sas := objectsOf[corev1.ServiceAccount](ms)
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
}

// checkRBAC: the pods may only read nodes (the k8s-node provider),
// through their own service account, which has its IRSA role.
func checkRBAC(t *testing.T, ms []manifest, w workload) {
	t.Helper()
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
	if sa := w.namespace + "/" + w.pod.Spec.ServiceAccountName; !bound[sa] {
		t.Errorf("%s runs as %s, which no binding lets read its node", w.name, sa)
	}
	for _, sa := range objectsOf[corev1.ServiceAccount](ms) {
		if !strings.HasPrefix(sa.Annotations["eks.amazonaws.com/role-arn"], "arn:aws:iam::") {
			t.Errorf("ServiceAccount %s has no IRSA role (eks.amazonaws.com/role-arn): %v", sa.Name, sa.Annotations)
		}
	}
}

// checkScaling: a PodDisruptionBudget covers the streaming pods (a
// Deployment's or a StatefulSet's), none the bounded runs (their owner has
// no scale, so maxUnavailable could not be computed); a ScaledObject
// scales the workload on its own group's lag, a zone at a time.
func checkScaling(t *testing.T, ms []manifest, w workload) {
	t.Helper()
	pdbs := objectsOf[policyv1.PodDisruptionBudget](ms)
	streaming := strings.HasPrefix(w.name, "Deployment ") || strings.HasPrefix(w.name, "StatefulSet ")
	covered := slices.ContainsFunc(pdbs, func(p *policyv1.PodDisruptionBudget) bool {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		return err == nil && p.Namespace == w.namespace && sel.Matches(labels.Set(w.pod.Labels)) && p.Spec.MaxUnavailable != nil
	})
	if covered != streaming || len(pdbs) != btoi(streaming) {
		t.Errorf("%d PodDisruptionBudgets, covering %s: %v; want one for streaming pods, none for a bounded run", len(pdbs), w.name, covered)
	}
	sos := objectsOf[scaledObject](ms)
	if len(sos) == 0 {
		if streaming && (w.replicas == nil || *w.replicas%zones != 0) {
			t.Errorf("%s: replicas %v, want a multiple of the zones (%d)", w.name, w.replicas, zones)
		}
		return
	}
	if w.replicas != nil {
		t.Errorf("%s sets replicas: %d beside its ScaledObject: every kubectl apply would reset the count KEDA set", w.name, *w.replicas)
	}
	if len(sos) != 1 || !streaming {
		t.Fatalf("%d ScaledObjects beside %s; want one, and only for streaming pods", len(sos), w.name)
	}
	so := sos[0]
	if so.Spec.ScaleTargetRef.Kind+" "+so.Spec.ScaleTargetRef.Name != w.name {
		t.Fatalf("ScaledObject targets %s %s, not %s", so.Spec.ScaleTargetRef.Kind, so.Spec.ScaleTargetRef.Name, w.name)
	}
	cfg := podConfig(t, ms, w, w.pod.Spec.Containers[0])
	var env map[string]string
	for _, cm := range objectsOf[corev1.ConfigMap](ms) {
		if hashedName(envName).MatchString(cm.Name) {
			env = cm.Data
		}
	}
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
		// KEDA reads a *FromEnv key from the scaled workload's container
		// environment: the overlay's job.env.
		fromEnv := func(key string) string {
			if v, ok := tr.Metadata[key+"FromEnv"]; ok {
				return env[v]
			}
			return tr.Metadata[key]
		}
		if g := fromEnv("consumerGroup"); g != cfg.Kafka.Group {
			t.Errorf("trigger reads group %q; the pods join %q", g, cfg.Kafka.Group)
		}
		if tp := fromEnv("topic"); !slices.Contains(cfg.Kafka.Topics, tp) {
			t.Errorf("trigger reads topic %q; the pods read %v", tp, cfg.Kafka.Topics)
		}
		b := tr.Metadata["bootstrapServers"]
		if v, ok := tr.Metadata["bootstrapServersFromEnv"]; ok {
			b = env[v]
		}
		if r := tr.Metadata["awsRegion"]; r == "" || r != env["AWS_REGION"] || r != cfg.Sinks.Files.S3.Region {
			t.Errorf("trigger awsRegion %q; the pods' AWS_REGION is %q", r, env["AWS_REGION"])
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
		{[]string{"s3:ListBucket", "s3:ListBucketMultipartUploads"}, ":::" + bucket},
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
	image := regexp.MustCompile(`(?m)^\s*(?:- )?image: *(.*)$`)
	for p, b := range k8sTree(t) {
		for _, m := range image.FindAllSubmatch(b, -1) {
			if string(m[1]) != "logstore" {
				t.Errorf("configs/k8s/%s runs image %q; want logstore, which the overlay's images: replaces", p, m[1])
			}
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
	_, ms := mustRender(t, nil, nil)
	for _, sa := range objectsOf[corev1.ServiceAccount](ms) {
		if want := "system:serviceaccount:" + sa.Namespace + ":" + sa.Name; eq[provider+":sub"] != want {
			t.Errorf("the trust policy's %s:sub is %q, want the pods' service account %q", provider, eq[provider+":sub"], want)
		}
	}
	if eq[provider+":aud"] != "sts.amazonaws.com" {
		t.Errorf("the trust policy's %s:aud is %q, want sts.amazonaws.com", provider, eq[provider+":aud"])
	}
}

// TestDockerignoreKeepsOutputsOut: what git ignores (build outputs, demo
// runs, the services' state) and the history stay out of the image's
// build context too.
func TestDockerignoreKeepsOutputsOut(t *testing.T) {
	raw, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	ignored := map[string]bool{}
	for _, l := range strings.Split(string(raw), "\n") {
		ignored[strings.TrimSpace(l)] = true
	}
	gi, err := os.ReadFile("../../.gitignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range append(strings.Split(string(gi), "\n"), ".git", "**/*.test") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && !ignored[l] {
			t.Errorf(".dockerignore does not leave out %s", l)
		}
	}
}
