package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesSpecialWithAStoredModelsStop: -sp/--special with a stored model whose Modelfile gives stop is
// refused as -r with -sp is (the stop strings are matched on the text without control tokens, so the text
// printed could not carry them), naming the Modelfile's stop parameter; a stored model without stop runs with -sp.
func TestRunRefusesSpecialWithAStoredModelsStop(t *testing.T) {
	_, models := storeEnv(t)
	t.Setenv("BANKML_MIRROR", models)
	for name, mf := range map[string]string{
		"stopper": "FROM stories260K\nPARAMETER stop \"Lily\"\n",
		"plain":   "FROM stories260K\nPARAMETER num_predict 4\n",
	} {
		p := filepath.Join(t.TempDir(), name+".Modelfile")
		if err := os.WriteFile(p, []byte(mf), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, e := bankml(t, "create", name, "-f", p); code != 0 {
			t.Fatalf("create %s: %d %s", name, code, e)
		}
	}
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{name: "-sp with a Modelfile's stop is refused naming the stop parameter", args: []string{"stopper", "-p", "Once", "-n", "4", "-sp"}, code: 1,
			stderr: `run: --special (-sp) with stopper:latest's Modelfile PARAMETER stop ["Lily"]: the stop strings are found in the text without control tokens`},
		{name: "-sp with -r is refused as before", args: []string{"plain", "-p", "Once", "-r", "x", "-sp"}, code: 1,
			stderr: "-r/--reverse-prompt with --special (-sp)"},
		{name: "-r overriding the Modelfile's stop with -sp is refused for -r", args: []string{"stopper", "-p", "Once", "-r", "x", "-sp"}, code: 1,
			stderr: "-r/--reverse-prompt with --special (-sp)"},
		{name: "-sp with a stored model without stop runs", args: []string{"plain", "-p", "Once", "-sp", "-t", "1"}},
		{name: "the stored model's stop without -sp runs", args: []string{"stopper", "-p", "Once", "-n", "4", "-t", "1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, e := bankml(t, append([]string{"run"}, c.args...)...)
			if code != c.code || !strings.Contains(e, c.stderr) {
				t.Errorf("exit %d; want %d and stderr with %q; stderr:\n%s", code, c.code, c.stderr, e)
			}
		})
	}
}
