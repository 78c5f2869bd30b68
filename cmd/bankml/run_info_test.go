package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/quant"
)

// TestRunPrintsTheMatchInfoLineOnlyForAModelReadyToRun: run printed "run: info: answers are exact against …" (on a
// CPU whose ggml pick bankml does not model) before it pulled and admitted the model, so a stored model whose
// pull failed or whose file was damaged showed the line and then its error. The line now follows the model's
// admission, and a run that starts still prints it.
func TestRunPrintsTheMatchInfoLineOnlyForAModelReadyToRun(t *testing.T) {
	m, err := quant.ResolveMatch("auto")
	if err != nil {
		t.Fatal(err)
	}
	if m.Note == "" {
		t.Skipf("ggml's pick on this CPU (%s) is modelled: run prints no info line here", m.Auto)
	}
	const line = "run: info: " // the line's start, its text is match.go's
	dir, models := storeEnv(t)
	noMirror := filepath.Join(t.TempDir(), "no-mirror")
	for _, c := range []struct {
		name    string
		args    []string
		prepare func(t *testing.T)
		code    int
		want    string // standard error's last line
	}{
		{name: "a pull from a mirror without the model prints only its error",
			args: []string{"run", "stories260K", "-p", "x", "-n", "1", "--from", noMirror}, code: 1,
			want: "bankml: run: store: pull stories260K:latest: the mirror " + noMirror + " is no folder (nothing downloaded): check --from or $BANKML_MIRROR, or unset it to download from the publisher"},
		{name: "a stored model whose file is cut short prints only its error",
			args: []string{"run", "stories260K", "-p", "x", "-n", "1"}, code: 2,
			prepare: func(t *testing.T) {
				if code, _, e := bankml(t, "pull", "stories260K", "--from", models); code != 0 {
					t.Fatalf("pull: %d %q", code, e)
				}
				if err := os.Truncate(filepath.Join(dir, "blobs", "sha256-"+storiesSHA256), 600000); err != nil {
					t.Fatal(err)
				}
			},
			want: "bankml: run: store: stories260K:latest: its model file " + filepath.Join(dir, "blobs", "sha256-"+storiesSHA256) +
				" has 600000 bytes, not the 1185376 its manifest records (cut short or damaged: pull it again)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.prepare != nil {
				c.prepare(t)
			}
			code, _, stderr := bankml(t, c.args...)
			if code != c.code || lastLine(stderr) != c.want || strings.Contains(stderr, line) {
				t.Fatalf("exit %d, stderr\n%s\nwant exit %d, no %q line, and last\n%s", code, stderr, c.code, line, c.want)
			}
		})
	}
	t.Run("a model ready to run prints the line after its admission", func(t *testing.T) {
		code, _, stderr := bankml(t, "run", storiesPath(t), "-p", "x", "-n", "1")
		admitted, info := strings.Index(stderr, "admitted: "), strings.Index(stderr, line+m.Note)
		if code != 0 || admitted < 0 || info < admitted {
			t.Fatalf("exit %d, stderr\n%s\nwant exit 0 and the info line after the admitted line", code, stderr)
		}
	})
}

// TestServePrintsTheMatchInfoLineOnlyForAModelReadyToServe: serve NAME printed the same info line before it
// pulled and admitted the model; it now comes after the admission, so a refused model prints only its error.
func TestServePrintsTheMatchInfoLineOnlyForAModelReadyToServe(t *testing.T) {
	m, err := quant.ResolveMatch("auto")
	if err != nil {
		t.Fatal(err)
	}
	if m.Note == "" {
		t.Skipf("ggml's pick on this CPU (%s) is modelled: serve prints no info line here", m.Auto)
	}
	const line = "serve: info: "
	dir, models := storeEnv(t)
	noMirror := filepath.Join(t.TempDir(), "no-mirror")
	t.Run("a pull from a mirror without the model prints only its error", func(t *testing.T) {
		code, _, stderr := bankml(t, "serve", "stories260K", "--port", "0", "--from", noMirror)
		if code != 1 || !strings.Contains(stderr, "is no folder") || strings.Contains(stderr, line) {
			t.Fatalf("exit %d, stderr\n%s\nwant exit 1, the mirror's error and no %q line", code, stderr, line)
		}
	})
	t.Run("a stored model whose file is cut short prints only its error", func(t *testing.T) {
		if code, _, e := bankml(t, "pull", "stories260K", "--from", models); code != 0 {
			t.Fatalf("pull: %d %q", code, e)
		}
		if err := os.Truncate(filepath.Join(dir, "blobs", "sha256-"+storiesSHA256), 600000); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := bankml(t, "serve", "stories260K", "--port", "0")
		if code != 2 || !strings.Contains(stderr, "has 600000 bytes") || strings.Contains(stderr, line) {
			t.Fatalf("exit %d, stderr\n%s\nwant exit 2, the file's error and no %q line", code, stderr, line)
		}
	})
}
