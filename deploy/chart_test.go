package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/openapi/openapitest"
	"sigs.k8s.io/yaml"
)

// prometheusOperator is the module whose ServiceMonitor CRD schema validates the chart's ServiceMonitor.
const prometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.85.0"

var (
	toolsOnce sync.Once
	toolsDir  string
	toolsErr  error
)

// tool builds the pinned Go tools of deploy/go.mod (once per test binary) and returns the path of one.
func tool(t *testing.T, name string) string {
	t.Helper()
	toolsOnce.Do(func() {
		if toolsDir, toolsErr = os.MkdirTemp("", "bankml-deploy-tools"); toolsErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", toolsDir+string(os.PathSeparator),
			"helm.sh/helm/v3/cmd/helm", "github.com/yannh/kubeconform/cmd/kubeconform", "github.com/google/ko")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			toolsErr = fmt.Errorf("building the pinned tools: %v\n%s", err, out)
		}
	})
	if toolsErr != nil {
		t.Fatal(toolsErr)
	}
	return filepath.Join(toolsDir, name)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if toolsDir != "" {
		os.RemoveAll(toolsDir)
	}
	os.Exit(code)
}

func runTool(t *testing.T, dir, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.Bytes()
}

func TestChartPassesHelmLintStrict(t *testing.T) {
	out := runTool(t, ".", tool(t, "helm"), "lint", "--strict", "helm/bankml")
	if !bytes.Contains(out, []byte("1 chart(s) linted, 0 chart(s) failed")) {
		t.Fatalf("helm lint: %s", out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}

func TestChartRendersValidKubernetesObjectsUnderKubeconformStrict(t *testing.T) {
	schemas := t.TempDir()
	kinds := writeKubernetesSchemas(t, schemas)
	writeServiceMonitorSchema(t, schemas)
	for _, c := range []struct {
		name string
		set  []string
	}{
		{"the defaults", nil},
		{"a ServiceMonitor on a cluster with the Prometheus Operator", []string{"--set", "serviceMonitor.enabled=true", "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor"}},
		{"a mirror, an existing claim and no ServiceMonitor", []string{"--set", "mirror=http://mirror.example/models,persistence.existingClaim=models,serviceMonitor.enabled=false"}},
		{"no persistence and a pinned image digest", []string{"--set", "persistence.enabled=false,image.digest=sha256:" + strings.Repeat("ab", 32)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			manifests := runTool(t, ".", tool(t, "helm"), append([]string{"template", "t", "helm/bankml"}, c.set...)...)
			in := filepath.Join(t.TempDir(), "manifests.yaml")
			if err := os.WriteFile(in, manifests, 0o644); err != nil {
				t.Fatal(err)
			}
			out := runTool(t, ".", tool(t, "kubeconform"), "-strict", "-summary", "-output", "json",
				"-schema-location", filepath.Join(schemas, "{{ .ResourceKind }}{{ .KindSuffix }}.json"), in)
			var res struct {
				Summary struct{ Valid, Invalid, Errors, Skipped int } `json:"summary"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("kubeconform output: %v\n%s", err, out)
			}
			n := bytes.Count(manifests, []byte("\nkind: "))
			if res.Summary.Valid != n || res.Summary.Invalid+res.Summary.Errors+res.Summary.Skipped != 0 {
				t.Fatalf("kubeconform: %s (rendered %d objects)", out, n)
			}
			t.Logf("kubeconform -strict: %d of %d objects valid (schemas of %d kinds)", res.Summary.Valid, n, kinds)
		})
	}
}

// TestKubeconformStrictRefusesAnUnknownField checks the generated strict schemas can fail: a Deployment
// with a misspelt field is refused.
func TestKubeconformStrictRefusesAnUnknownField(t *testing.T) {
	schemas := t.TempDir()
	writeKubernetesSchemas(t, schemas)
	manifests := runTool(t, ".", tool(t, "helm"), "template", "t", "helm/bankml", "--set", "serviceMonitor.enabled=false")
	bad := bytes.Replace(manifests, []byte("readinessProbe:"), []byte("readynessProbe:"), 1)
	in := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(in, bad, 0o644)
	cmd := exec.Command(tool(t, "kubeconform"), "-strict", "-schema-location", filepath.Join(schemas, "{{ .ResourceKind }}{{ .KindSuffix }}.json"), in)
	out, err := cmd.CombinedOutput()
	if err == nil || !bytes.Contains(out, []byte("readynessProbe")) {
		t.Fatalf("a misspelt field was not refused: %v\n%s", err, out)
	}
}

// writeKubernetesSchemas writes a strict standalone JSON schema per Kubernetes kind, named as kubeconform
// looks them up (deployment-apps-v1.json, service-v1.json, ...), from the OpenAPI v3 documents k8s.io/
// client-go's openapitest package embeds (each schema carries every definition it may reference). It
// returns how many kinds it wrote.
func writeKubernetesSchemas(t *testing.T, dir string) int {
	t.Helper()
	paths, err := openapitest.NewEmbeddedFileClient().Paths()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for p, gv := range paths {
		doc, err := gv.Schema("application/json")
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		var spec struct {
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(doc, &spec); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		defs := map[string]any{}
		for name, s := range spec.Components.Schemas {
			defs[name] = strict(rewriteRefs(s))
		}
		for name, s := range spec.Components.Schemas {
			gvks, _ := s["x-kubernetes-group-version-kind"].([]any)
			for _, g := range gvks {
				gvk := g.(map[string]any)
				group, _ := gvk["group"].(string)
				suffix := "-" + gvk["version"].(string)
				if group != "" {
					suffix = "-" + strings.Split(group, ".")[0] + suffix
				}
				file := filepath.Join(dir, strings.ToLower(gvk["kind"].(string))+suffix+".json")
				writeJSON(t, file, map[string]any{"$ref": "#/definitions/" + name, "definitions": defs})
				n++
			}
		}
	}
	return n
}

// writeServiceMonitorSchema writes servicemonitor-monitoring-v1.json from the prometheus-operator module's
// CRD (its openAPIV3Schema, made strict), downloaded through the Go module proxy and checked against the
// checksum database like any module.
func writeServiceMonitorSchema(t *testing.T, dir string) {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", prometheusOperator).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", prometheusOperator, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download %s: %s", prometheusOperator, out)
	}
	y, err := os.ReadFile(filepath.Join(mod.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_servicemonitors.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(y, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1" {
			s := strict(v.Schema.OpenAPIV3Schema).(map[string]any)
			// the CRD schema leaves apiVersion, kind and metadata open; close metadata's top level as the
			// Kubernetes schemas do not matter here: check the chart's spec.
			writeJSON(t, filepath.Join(dir, "servicemonitor-monitoring-v1.json"), s)
			return
		}
	}
	t.Fatal("the ServiceMonitor CRD has no v1")
}

// rewriteRefs points OpenAPI's "#/components/schemas/X" references at "#/definitions/X".
func rewriteRefs(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if s, ok := e.(string); ok && k == "$ref" {
				out[k] = strings.Replace(s, "#/components/schemas/", "#/definitions/", 1)
				continue
			}
			out[k] = rewriteRefs(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = rewriteRefs(e)
		}
		return out
	}
	return v
}

// strict closes every object schema that lists properties and says nothing of others
// (additionalProperties: false), as kubeconform's strict schemas do.
func strict(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = strict(e)
		}
		if _, has := v["properties"]; has {
			if _, set := v["additionalProperties"]; !set {
				if _, pres := v["x-kubernetes-preserve-unknown-fields"]; !pres {
					v["additionalProperties"] = false
				}
			}
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = strict(e)
		}
		return v
	}
	return v
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
