package deploy

import (
	"bytes"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// renderChart runs helm template over the chart with args and returns the objects by kind (the last of
// each kind), or helm's standard error when it fails.
func renderChart(t *testing.T, args ...string) (map[string]map[string]any, string) {
	t.Helper()
	cmd := exec.Command(tool(t, "helm"), append([]string{"template", "t", "helm/bankml"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, errb.String()
	}
	objs := map[string]map[string]any{}
	for _, doc := range strings.Split(out.String(), "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, doc)
		}
		if k, ok := o["kind"].(string); ok {
			objs[k] = o
		}
	}
	return objs, ""
}

// dig follows keys (and list indexes) into a decoded object.
func dig(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// TestServiceMonitorRendersOnlyWhereTheClusterHasIt: the ServiceMonitor is off by default (a cluster
// without the Prometheus Operator refuses the kind: "no matches for kind ServiceMonitor"); enabled, it
// renders where the cluster has monitoring.coreos.com/v1/ServiceMonitor and fails naming the value and
// the missing API where it does not.
func TestServiceMonitorRendersOnlyWhereTheClusterHasIt(t *testing.T) {
	for _, c := range []struct {
		name    string
		args    []string
		want    bool   // a ServiceMonitor is rendered
		wantErr string // helm template fails with this
	}{
		{name: "the defaults render no ServiceMonitor"},
		{name: "enabled on a cluster with the Prometheus Operator's API, it is rendered",
			args: []string{"--set", "serviceMonitor.enabled=true", "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor"}, want: true},
		{name: "enabled on a cluster without the API, the chart fails naming serviceMonitor.enabled and the missing API",
			args:    []string{"--set", "serviceMonitor.enabled=true"},
			wantErr: "serviceMonitor.enabled is true but the cluster has no monitoring.coreos.com/v1 ServiceMonitor"},
		{name: "disabled on a cluster with the API, it is not rendered",
			args: []string{"--set", "serviceMonitor.enabled=false", "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs, errText := renderChart(t, c.args...)
			if c.wantErr != "" {
				if !strings.Contains(errText, c.wantErr) {
					t.Fatalf("helm template: error %q, want one containing %q", errText, c.wantErr)
				}
				return
			}
			if errText != "" {
				t.Fatalf("helm template: %s", errText)
			}
			if _, got := objs["ServiceMonitor"]; got != c.want {
				t.Fatalf("ServiceMonitor rendered: %v, want %v", got, c.want)
			}
		})
	}
}

// TestLivenessDoesNotReadHealth: /health is 503 while a changed model file is hashed again (minutes for a
// multi-GB file) or no longer matches its pin; readiness reads it (the pod leaves the Service), liveness
// and startup read / (200 while the process serves), so a re-hash does not restart the pod.
func TestLivenessDoesNotReadHealth(t *testing.T) {
	objs, errText := renderChart(t)
	if errText != "" {
		t.Fatalf("helm template: %s", errText)
	}
	serve := dig(objs["Deployment"], "spec", "template", "spec", "containers", 0)
	for _, c := range []struct {
		name  string
		probe string
		path  string
	}{
		{name: "the liveness probe asks / (not /health's 503 during a re-hash)", probe: "livenessProbe", path: "/"},
		{name: "the startup probe asks / (answering at all means admitted)", probe: "startupProbe", path: "/"},
		{name: "the readiness probe asks /health", probe: "readinessProbe", path: "/health"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := dig(serve, c.probe, "httpGet", "path"); got != c.path {
				t.Fatalf("%s path %v, want %q", c.probe, got, c.path)
			}
		})
	}
}

// TestDefaultContextFitsTheDefaultMemoryLimit: the default -c is set, not 0 (the training context, whose
// f16 KV cache of an 8B outgrows the default limit), and its f16 KV cache for an 8B qwen3 (bonsai:8b's
// shapes: 36 layers, 8 KV heads of 128) fits resources.limits.memory beside ternary-bonsai:8b's weights
// (the catalog's largest, 2310125920 bytes) and half a GiB for the rest, as values.yaml says.
func TestDefaultContextFitsTheDefaultMemoryLimit(t *testing.T) {
	objs, errText := renderChart(t)
	if errText != "" {
		t.Fatalf("helm template: %s", errText)
	}
	serve := dig(objs["Deployment"], "spec", "template", "spec", "containers", 0)
	args, _ := dig(serve, "args").([]any)
	i := slices.Index(args, any("-c"))
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("no -c in %v", args)
	}
	ctx, err := strconv.Atoi(args[i+1].(string))
	if err != nil {
		t.Fatalf("-c %v: %v", args[i+1], err)
	}
	limitText, _ := dig(serve, "resources", "limits", "memory").(string)
	limit, err := binaryQuantity(limitText)
	if err != nil {
		t.Fatalf("resources.limits.memory %q: %v", limitText, err)
	}
	const kvPerToken = 36 * 8 * 128 * 2 * 2 // layers x KV heads x head size x (K, V) x f16
	need := int64(ctx)*kvPerToken + 2310125920 + 1<<29
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{name: "the default -c is not 0 (the model's training context)", ok: ctx > 0},
		{name: "the default -c's f16 KV cache, the weights and half a GiB fit the default memory limit", ok: need <= limit},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !c.ok {
				t.Fatalf("-c %d, limit %s: %d bytes needed, %d allowed", ctx, limitText, need, limit)
			}
		})
	}
}

// TestPersistenceAccessModesReachTheClaim: replicaCount > 1 needs a ReadWriteMany claim, which
// persistence.accessModes asks for; the default stays ReadWriteOnce.
func TestPersistenceAccessModesReachTheClaim(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want []any
	}{
		{name: "the default claim is ReadWriteOnce", want: []any{"ReadWriteOnce"}},
		{name: "persistence.accessModes ReadWriteMany reaches the claim", args: []string{"--set", "replicaCount=2,persistence.accessModes={ReadWriteMany}"}, want: []any{"ReadWriteMany"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs, errText := renderChart(t, c.args...)
			if errText != "" {
				t.Fatalf("helm template: %s", errText)
			}
			if got, _ := dig(objs["PersistentVolumeClaim"], "spec", "accessModes").([]any); !slices.Equal(got, c.want) {
				t.Fatalf("accessModes %v, want %v", got, c.want)
			}
		})
	}
}

// binaryQuantity reads a Kubernetes quantity with a binary suffix (Ki, Mi, Gi, Ti) or none, in bytes.
func binaryQuantity(q string) (int64, error) {
	mult := int64(1)
	for i, suf := range []string{"Ki", "Mi", "Gi", "Ti"} {
		if strings.HasSuffix(q, suf) {
			q, mult = strings.TrimSuffix(q, suf), 1<<(10*(i+1))
			break
		}
	}
	n, err := strconv.ParseInt(q, 10, 64)
	return n * mult, err
}
