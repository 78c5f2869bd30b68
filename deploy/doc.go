// Package deploy holds bankml's deployment past one machine and the tests that check it: the container
// image ko builds (.ko.yaml), the Helm chart (helm/bankml) and docs/deploy.md's recipes.
//
// # Design record
//
// What. A separate Go module (deploy/go.mod), so that the tools it pins as Go tools (go.mod's tool
// directives: github.com/google/ko v0.19.1, helm.sh/helm/v3 v3.22.0, github.com/yannh/kubeconform v0.8.0)
// and their large dependency graphs stay out of bankml's own module. Its tests (run by scripts/test.sh):
// `helm lint --strict`, checks of the rendered objects (the ServiceMonitor, the probes, -c, the claim), and
// `helm template | kubeconform -strict` over the chart, offline, with JSON schemas generated from Go
// modules (Kubernetes' OpenAPI v3 documents embedded by k8s.io/client-go's openapitest
// package, and the ServiceMonitor CRD of github.com/prometheus-operator/prometheus-operator v0.85.0); and
// `ko build ./cmd/bankml` pushed to an in-memory registry (go-containerregistry's pkg/registry) over a base
// image the test makes, then the image's binary checked static and run, its user non-root.
//
// Follows. kubeconform's schema layout ({{ .ResourceKind }}{{ .KindSuffix }}.json) and its strict variant
// (openapi2jsonschema's: every object schema with properties closed by additionalProperties: false).
//
// Deliberate differences. The chart is validated, not deployed (no cluster here). The schemas are those of
// the Kubernetes version client-go v0.37.0 embeds, not a version picked with -kubernetes-version.
package deploy
