package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/pull"
)

// TestCreateExitsOneForAModelfileItRefuses: every Modelfile create refuses is the user's input error and
// exits 1, as a bad flag value and a FROM that names nothing do (docs/cli.md, "Exit status"); only a FROM file
// that cannot be used (no GGUF) is 2.
func TestCreateExitsOneForAModelfileItRefuses(t *testing.T) {
	model := storiesPath(t)
	dir := t.TempDir()
	t.Setenv("BANKML_MODELS", filepath.Join(dir, "store"))
	t.Setenv(pull.EnvMirror, "")
	garbage := filepath.Join(dir, "garbage.gguf")
	if err := os.WriteFile(garbage, []byte("no GGUF\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name, modelfile string
		code            int
		msg             string
	}{
		{name: "a PARAMETER value that does not parse exits 1 naming the parameter",
			modelfile: "FROM " + model + "\nPARAMETER temperature hot\n", code: 1, msg: "PARAMETER temperature hot"},
		{name: "an unknown PARAMETER exits 1 naming it",
			modelfile: "FROM " + model + "\nPARAMETER no_such_option 1\n", code: 1, msg: "no_such_option"},
		{name: "a TEMPLATE bankml does not take exits 1",
			modelfile: "FROM " + model + "\nTEMPLATE {{ .Prompt }}\n", code: 1, msg: "TEMPLATE is refused"},
		{name: "a Modelfile without FROM exits 1",
			modelfile: "PARAMETER temperature 0.5\n", code: 1, msg: "no FROM"},
		{name: "a FROM that names nothing exits 1",
			modelfile: "FROM nonexistent:7b\n", code: 1, msg: "nonexistent:7b"},
		{name: "a FROM file that is no GGUF still exits 2",
			modelfile: "FROM " + garbage + "\n", code: 2, msg: "not a GGUF file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mf := filepath.Join(dir, "Modelfile."+string(rune('a'+i)))
			if err := os.WriteFile(mf, []byte(tc.modelfile), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runCLIInput("", "create", "x", "-f", mf)
			if code != tc.code || !strings.Contains(stderr, tc.msg) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.msg)
			}
		})
	}
}
