package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lastLine is standard error's last line.
func lastLine(stderr string) string {
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestEveryStoreCommandNamesItselfAndTheFolderWhenTheStoreCannotBeOpened(t *testing.T) {
	storeEnv(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	modelfile := filepath.Join(t.TempDir(), "Modelfile")
	if err := os.WriteFile(modelfile, []byte("FROM stories260K\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	isFile := "store: the model store's folder " + file + " is a file, not a folder (from $BANKML_MODELS)"
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string // standard error's last line, whole
	}{
		{name: "list names itself and the folder", args: []string{"list"}, want: "bankml: list: " + isFile},
		{name: "list --json names itself and the folder", args: []string{"list", "--json"}, want: "bankml: list: " + isFile},
		{name: "cp names itself and the folder", args: []string{"cp", "a", "b"}, want: "bankml: cp: " + isFile},
		{name: "rm names itself and the folder", args: []string{"rm", "a"}, want: "bankml: rm: " + isFile},
		{name: "show names itself and the folder", args: []string{"show", "a"}, want: "bankml: show: " + isFile},
		{name: "create names itself and the folder", args: []string{"create", "a", "-f", modelfile}, want: "bankml: create: " + isFile},
		{name: "pull names itself and the folder", args: []string{"pull", "stories260K"}, want: "bankml: pull: " + isFile},
		{name: "a --models folder beneath a file names the flag and the file", args: []string{"list", "--models", filepath.Join(file, "models")},
			want: "bankml: list: store: the model store's folder " + filepath.Join(file, "models") + " cannot be used: " + file + " is a file, not a folder (from --models)"},
		{name: "the default folder beneath a file says it is the default", env: map[string]string{"BANKML_MODELS": "", "XDG_DATA_HOME": file}, args: []string{"list"},
			want: "bankml: list: store: the model store's folder " + filepath.Join(file, "bankml", "models") + " cannot be used: " + file +
				" is a file, not a folder (the default; --models DIR or $BANKML_MODELS names another)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BANKML_MODELS", file)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, e := bankml(t, tc.args...)
			if got := lastLine(e); code != 1 || got != tc.want {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit 1 and\n%s", code, got, tc.want)
			}
		})
	}
}

func TestEveryStoreCommandNamesAnUnreadableStoreFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every folder")
	}
	storeEnv(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	t.Setenv("BANKML_MODELS", dir)
	want := ": store: the model store's folder " + dir + " cannot be used: mkdir " + filepath.Join(dir, "blobs") + ": permission denied (from $BANKML_MODELS)"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{name: "list says so", args: []string{"list"}},
		{name: "show says so", args: []string{"show", "a"}},
		{name: "rm says so", args: []string{"rm", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, e := bankml(t, tc.args...)
			if got, w := lastLine(e), "bankml: "+tc.args[0]+want; code != 1 || got != w {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit 1 and\n%s", code, got, w)
			}
		})
	}
}

func TestARePullOfACatalogNameAsksItsSourceAndFailsWhenItCannotBeReached(t *testing.T) {
	_, models := storeEnv(t)
	if code, _, e := bankml(t, "pull", "stories260K", "--from", models); code != 0 {
		t.Fatalf("first pull: %d %q", code, e)
	}
	noFolder := filepath.Join(t.TempDir(), "no-mirror")
	empty := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		mirror string // $BANKML_MIRROR
		code   int
		want   string // standard error's last line, whole (exit 1), or the provenance's mirror (exit 0)
	}{
		{name: "a --from folder that is not there fails", args: []string{"pull", "stories260K", "--from", noFolder}, code: 1,
			want: "bankml: pull: store: stories260K:latest: the mirror " + noFolder + " is no folder (the file already in the store is left as it is): check --from or $BANKML_MIRROR, or unset it to download from the publisher"},
		{name: "a $BANKML_MIRROR without the file fails", args: []string{"pull", "stories260K"}, mirror: empty, code: 1,
			want: "bankml: pull: store: stories260K:latest: the mirror " + empty + " has no stories260K.gguf (the file already in the store is left as it is): give --from a mirror that holds it, or unset $BANKML_MIRROR to download from the publisher"},
		{name: "a $BANKML_MIRROR that holds it passes and is recorded", args: []string{"pull", "stories260K"}, mirror: models, want: models},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BANKML_MIRROR", tc.mirror)
			code, out, e := bankml(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, stdout %q, stderr %q: want exit %d", code, out, e, tc.code)
			}
			if tc.code != 0 {
				if got := lastLine(e); got != tc.want || out != "" {
					t.Fatalf("stdout %q, stderr's last line\n%s\nwant nothing on stdout and\n%s", out, got, tc.want)
				}
				return
			}
			if _, show, _ := bankml(t, "show", "stories260K"); !strings.Contains(show, "    mirror    "+tc.want+"\n") {
				t.Fatalf("show after the re-pull:\n%s\nwant the mirror %s", show, tc.want)
			}
		})
	}
}

func TestRunOfAStoredModelWhoseFileIsCutShortNamesTheModelTheFileAndBothSizes(t *testing.T) {
	dir, models := storeEnv(t)
	if code, _, e := bankml(t, "pull", "stories260K", "--from", models); code != 0 {
		t.Fatalf("pull: %d %q", code, e)
	}
	blob := filepath.Join(dir, "blobs", "sha256-"+storiesSHA256)
	if err := os.Truncate(blob, 600000); err != nil {
		t.Fatal(err)
	}
	const cut = " has 600000 bytes, not the 1185376 its manifest records (cut short or damaged: pull it again)"
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "run says which model and which file, and is refused as a file that is no whole GGUF", args: []string{"run", "stories260K", "-p", "x", "-n", "1"}, code: 2,
			want: "bankml: run: store: stories260K:latest: its model file " + blob + cut},
		{name: "cp names the model copied and its file", args: []string{"cp", "stories260K", "other"}, code: 1,
			want: "bankml: cp: store: stories260K:latest: its model file " + blob + cut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, e := bankml(t, tc.args...)
			if got := lastLine(e); code != tc.code || got != tc.want {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit %d and\n%s", code, got, tc.code, tc.want)
			}
		})
	}
}
