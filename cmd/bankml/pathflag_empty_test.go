package main

import (
	"strings"
	"testing"
	"time"
)

// TestAnEmptyFileInAListOrAnEmptyModelIsRefusedByName: an empty name among sha256's files, or serve's MODEL given
// as "", is refused naming the argument (kong's mappers made "" the working directory, which sha256 then tried
// to hash, and serve took an empty MODEL for none and served the whole store).
func TestAnEmptyFileInAListOrAnEmptyModelIsRefusedByName(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("BANKML_MODELS", t.TempDir()) // an empty store, should serve read "" as none
	t.Setenv("BANKML_MIRROR", "")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "sha256 of an empty file name is refused naming FILE",
			args: []string{"sha256", ""}, want: "bankml: sha256: <FILE> ...: the file name is empty (see bankml sha256 --help)\n"},
		{name: "sha256 of a list with an empty name in it is refused naming which one",
			args: []string{"sha256", "a.gguf", ""}, want: "bankml: sha256: <FILE> ...: file name 2 of 2 is empty (see bankml sha256 --help)\n"},
		{name: "receipt verify of an empty RECEIPT is refused naming it",
			args: []string{"receipt", "verify", ""}, want: "bankml: receipt verify: <RECEIPT>: the file name is empty (see bankml receipt verify --help)\n"},
		{name: "serve of an empty MODEL is refused, not read as serving the store",
			args: []string{"serve", "", "--listen", "127.0.0.1:0"}, want: "bankml: serve: [<MODEL>]: the model is empty: give a GGUF file or a model NAME[:TAG] (see bankml serve --help)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type result struct {
				code           int
				stdout, stderr string
			}
			done := make(chan result, 1)
			go func() {
				var r result
				r.code, r.stdout, r.stderr = runCLI(tc.args...)
				done <- r
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("%v still running after 30 s", tc.args)
			}
			code, stdout, stderr := r.code, r.stdout, r.stderr
			if code != 1 || stdout != "" || !strings.HasSuffix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr\n%s\nwant exit 1 and only %q", code, stdout, stderr, tc.want)
			}
		})
	}
	t.Run("sha256 of - and of real names still reads them", func(t *testing.T) {
		code, _, stderr := bankml(t, "sha256", "missing.gguf", "-")
		if code != 1 || strings.Contains(stderr, "empty") || !strings.Contains(stderr, "missing.gguf") {
			t.Errorf("exit %d, stderr\n%s", code, stderr)
		}
	})
}
