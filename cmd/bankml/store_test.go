package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/store"
)

// bankml runs the command line with the store in dir and no mirror from the environment.
func bankml(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, strings.NewReader(""), &o, &e)
	return code, o.String(), e.String()
}

func storeEnv(t *testing.T) (dir, models string) {
	t.Helper()
	models = testdata.ModelsDir(t)
	testdata.Model(t, "stories260K.gguf")
	dir = t.TempDir()
	t.Setenv("BANKML_MODELS", dir)
	t.Setenv("BANKML_MIRROR", "")
	return dir, models
}

func TestPullListShowCopyRemoveThroughTheCommandLine(t *testing.T) {
	dir, models := storeEnv(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(models)))
	defer srv.Close()
	if code, out, e := bankml(t, "pull", "stories260K", "--from", srv.URL); code != 0 || !strings.Contains(out, "pulled stories260K:latest: sha256 "+storiesSHA256) {
		t.Fatalf("pull: %d %q %q", code, out, e)
	}
	if code, out, _ := bankml(t, "list"); code != 0 || !strings.Contains(out, "stories260K:latest") || !strings.Contains(out, storiesSHA256[:12]) {
		t.Fatalf("list: %d %q", code, out)
	}
	code, out, _ := bankml(t, "show", "stories260k", "--json")
	var m store.Manifest
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil || m.Model.SHA256 != storiesSHA256 || m.Provenance.Kind != "catalog" {
		t.Fatalf("show --json: %d %q", code, out)
	}
	if code, _, e := bankml(t, "cp", "stories260K", "tale:v1"); code != 0 {
		t.Fatalf("cp: %d %q", code, e)
	}
	if code, _, e := bankml(t, "rm", "stories260K"); code != 0 {
		t.Fatalf("rm: %d %q", code, e)
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs", "sha256-"+storiesSHA256)); err != nil {
		t.Fatalf("rm took the blob tale:v1 still names: %v", err)
	}
	if code, _, e := bankml(t, "show", "stories260K"); code != 1 || !strings.Contains(e, "not found") {
		t.Fatalf("show of a removed model: %d %q", code, e)
	}
}

func TestPullOfAFileWithAWrongSHA256IsRefusedWithExitStatus2(t *testing.T) {
	_, models := storeEnv(t)
	code, _, e := bankml(t, "pull", filepath.Join(models, "stories260K.gguf"), "--sha256", strings.Repeat("ab", 32))
	if code != 2 || !strings.Contains(e, strings.Repeat("ab", 32)) || !strings.Contains(e, storiesSHA256) {
		t.Fatalf("exit %d, stderr %q: want 2 naming both digests", code, e)
	}
}

func TestRunOfAStoreNamePullsOnFirstUseAndEqualsRunOfTheFile(t *testing.T) {
	_, models := storeEnv(t)
	path := filepath.Join(models, "stories260K.gguf")
	code, want, e := bankml(t, "run", path, "-p", "Once upon a time", "-n", "12", "-t", "1", "--manifest", storiesSHA256)
	if code != 0 {
		t.Fatalf("run FILE: %d %q", code, e)
	}
	code, got, e := bankml(t, "run", "stories260K", "-p", "Once upon a time", "-n", "12", "-t", "1", "--from", models)
	if code != 0 || got != want || !strings.Contains(e, "pulled stories260K:latest") || !strings.Contains(e, "pinned") {
		t.Fatalf("run NAME: %d %q (want %q), stderr %q", code, got, want, e)
	}
	// A --manifest that disagrees with the store's pin is refused.
	code, _, e = bankml(t, "run", "stories260K", "-p", "x", "-n", "1", "--manifest", strings.Repeat("0", 64))
	if code != 2 || !strings.Contains(e, "of the file != "+strings.Repeat("0", 64)+" pinned by --manifest: refused") {
		t.Fatalf("a disagreeing --manifest: %d %q", code, e)
	}
}

func TestCreateFromAModelfileThroughTheCommandLine(t *testing.T) {
	_, models := storeEnv(t)
	mf := filepath.Join(t.TempDir(), "Modelfile")
	os.WriteFile(mf, []byte("FROM stories260K\nPARAMETER temperature 0.7\nPARAMETER num_gpu 1\nSYSTEM Be brief.\n"), 0o644)
	code, out, e := bankml(t, "create", "brief", "-f", mf, "--from", models)
	if code != 0 || !strings.Contains(out, "created brief:latest") || !strings.Contains(e, "num_gpu") {
		t.Fatalf("create: %d %q %q", code, out, e)
	}
	os.WriteFile(mf, []byte("FROM stories260K\nTEMPLATE {{ .Prompt }}\n"), 0o644)
	if code, _, e := bankml(t, "create", "tmpl", "-f", mf); code != 1 || !strings.Contains(e, "TEMPLATE is refused") { // a bad Modelfile is the user's input: 1
		t.Fatalf("TEMPLATE: %d %q", code, e)
	}
	os.WriteFile(mf, []byte("FROM stories260K\nPARAMETER mirostat 2\nPARAMETER repeat_last_n -5\n"), 0o644)
	if code, _, e := bankml(t, "create", "bad", "-f", mf); code != 1 || !strings.Contains(e, "repeat_last_n") {
		t.Fatalf("a parameter serve refuses: %d %q", code, e)
	}
	if code, out, _ := bankml(t, "show", "brief", "--modelfile"); code != 0 || !strings.Contains(out, "PARAMETER temperature 0.7") || !strings.Contains(out, `SYSTEM """Be brief."""`) {
		t.Fatalf("show --modelfile: %d %q", code, out)
	}
}

func TestServeWithoutAModelRefusesWhatDoesNotApplyToAStore(t *testing.T) {
	storeEnv(t)
	code, _, e := bankml(t, "serve", "-a", "x", "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(e, "without MODEL (serving the store)") {
		t.Fatalf("exit %d, stderr %q", code, e)
	}
}

// TestEmbedAndPerplexityTakeAStoreName: embed and perplexity resolve a NAME from the store as run and serve
// do (pulled on first use through the mirror), and give the same output as for the file's path.
func TestEmbedAndPerplexityTakeAStoreName(t *testing.T) {
	_, models := storeEnv(t)
	t.Setenv("BANKML_MIRROR", models)
	file := filepath.Join(models, "stories260K.gguf")
	text := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("Once upon a time there was a little girl. ", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args func(model string) []string
	}{
		{"embed", func(m string) []string { return []string{"embed", m, "-p", "Once upon a time", "-t", "1"} }},
		{"perplexity", func(m string) []string {
			return []string{"perplexity", m, text, "-c", "128", "--chunks", "2", "-t", "1"}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, byName, stderr := runCLI(c.args("stories260K")...)
			if code != 0 {
				t.Fatalf("%s stories260K: exit %d: %s", c.name, code, stderr)
			}
			code, byPath, stderr := runCLI(c.args(file)...)
			if code != 0 {
				t.Fatalf("%s %s: exit %d: %s", c.name, file, code, stderr)
			}
			if byName != byPath || byName == "" {
				t.Fatalf("%s by name:\n%s\nby path:\n%s", c.name, byName, byPath)
			}
		})
	}
}

func TestListShowsTheReadableModelsAndWarnsOfEachUnreadableManifestWithExitStatus0(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // on standard output
	}{
		{"the table", []string{"list"}, "stories260K:latest"},
		{"the JSON", []string{"list", "--json"}, `"name": "stories260K"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, models := storeEnv(t)
			if code, _, e := bankml(t, "pull", filepath.Join(models, "stories260K.gguf")); code != 0 {
				t.Fatalf("pull: %d %q", code, e)
			}
			p := filepath.Join(dir, "manifests", "broken", "latest.json")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(`{"schema":1,`), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, e := bankml(t, tc.args...)
			want := "warning: list: broken:latest is not listed: manifest " + p + ": unexpected end of JSON input\n"
			if code != 0 || !strings.Contains(out, tc.want) || e != want {
				t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant exit 0, %q on stdout and stderr %q", code, out, e, tc.want, want)
			}
		})
	}
}

func TestStoreAndPullErrorsCarryEachPrefixOnce(t *testing.T) {
	dir, models := storeEnv(t)
	file := filepath.Join(models, "stories260K.gguf")
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // connection refused from now on
	noMirror := filepath.Join(t.TempDir(), "no-mirror")
	wrong := strings.Repeat("ab", 32)
	unknownFrom := filepath.Join(t.TempDir(), "Modelfile")
	if err := os.WriteFile(unknownFrom, []byte("FROM nosuch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // standard error's last line, whole
	}{
		{"pull from a mirror that cannot be reached", []string{"pull", "stories260K", "--from", deadURL}, 1,
			"bankml: pull: store: stories260K:latest: " + deadURL + "/stories260K.gguf: dial tcp " + strings.TrimPrefix(deadURL, "http://") +
				": connect: connection refused (nothing downloaded): the mirror " + deadURL + " cannot be reached; check --from or $BANKML_MIRROR"},
		{"pull from a mirror folder without the file", []string{"pull", "stories260K", "--from", noMirror}, 1,
			"bankml: pull: store: stories260K:latest: the mirror " + noMirror + " is no folder (nothing downloaded): check --from or $BANKML_MIRROR, or unset it to download from the publisher"},
		{"pull of a local file with another sha256", []string{"pull", file, "--sha256", wrong}, 2,
			"bankml: pull: store: add stories260K:latest: refused: " + file + " has sha256 " + storiesSHA256 + ", not the expected " + wrong +
				" (nothing was stored; the copy was removed; the file itself is left as it is)"},
		{"run of a catalog model pulled from a mirror folder without it", []string{"run", "stories260K", "-p", "x", "--from", noMirror}, 1,
			"bankml: run: store: pull stories260K:latest: the mirror " + noMirror + " is no folder (nothing downloaded): check --from or $BANKML_MIRROR, or unset it to download from the publisher"},
		{"run of a name in neither the store nor the catalog", []string{"run", "nosuch", "-p", "x"}, 1,
			"bankml: run: nosuch is not a file, not in the store " + dir + ", and not in bankml's catalog (it has bonsai:1.7b, bonsai:8b, qwen3:0.6b, stories260K:latest, ternary-bonsai:8b)"},
		{"create from a name in neither the store nor the catalog", []string{"create", "x", "-f", unknownFrom}, 1, // as run's
			"bankml: create: store: Modelfile: FROM nosuch: not a file, not in the store " + dir + ", and not in bankml's catalog (it has bonsai:1.7b, bonsai:8b, qwen3:0.6b, stories260K:latest, ternary-bonsai:8b)"},
		{"rm of a name not in the store", []string{"rm", "nosuch"}, 1,
			"bankml: rm: store: nosuch:latest: not found in " + dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, e := bankml(t, tc.args...)
			lines := strings.Split(strings.TrimRight(e, "\n"), "\n")
			if got := lines[len(lines)-1]; code != tc.code || got != tc.want {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit %d and\n%s", code, got, tc.code, tc.want)
			}
		})
	}
}

// TestANameThatIsNeitherAFileNorAModelIsNamedOnce: a MODEL that is no file, no model of the store and no
// model of the catalog is refused in one sentence naming it once, as it was given, with the catalog's names.
func TestANameThatIsNeitherAFileNorAModelIsNamedOnce(t *testing.T) {
	dir, _ := storeEnv(t)
	const catalog = " (it has bonsai:1.7b, bonsai:8b, qwen3:0.6b, stories260K:latest, ternary-bonsai:8b)"
	for _, tc := range []struct {
		name string
		args []string
		want string // standard error's last line, whole
	}{
		{"run of a bare name", []string{"run", "nosuch", "-p", "x"},
			"bankml: run: nosuch is not a file, not in the store " + dir + ", and not in bankml's catalog" + catalog},
		{"run of a name with a tag", []string{"run", "nosuch:v2", "-p", "x"},
			"bankml: run: nosuch:v2 is not a file, not in the store " + dir + ", and not in bankml's catalog" + catalog},
		{"serve of a bare name", []string{"serve", "nosuch"},
			"bankml: serve: nosuch is not a file, not in the store " + dir + ", and not in bankml's catalog" + catalog},
		{"embed of a bare name", []string{"embed", "nosuch", "-p", "x"},
			"bankml: embed: nosuch is not a file, not in the store " + dir + ", and not in bankml's catalog" + catalog},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, e := bankml(t, tc.args...)
			lines := strings.Split(strings.TrimRight(e, "\n"), "\n")
			got := lines[len(lines)-1]
			if code != 1 || got != tc.want {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit 1 and\n%s", code, got, tc.want)
			}
			if n := strings.Count(got, "nosuch"); n != 1 {
				t.Fatalf("the name appears %d times in %q", n, got)
			}
		})
	}
}

// TestEveryPullErrorIsPrefixedWithPull: pull's errors start "pull: ", as cp's, rm's, show's and create's start
// with their command, whatever went wrong: a --name that is no model name (named as the flag, with no advice to
// give one), a missing file, a name the catalog lacks, an address without its sha256, a store that cannot open.
func TestEveryPullErrorIsPrefixedWithPull(t *testing.T) {
	dir, models := storeEnv(t)
	file := filepath.Join(models, "stories260K.gguf")
	missing := filepath.Join(dir, "missing.gguf")
	const badName = `a name is letters, digits, '.', '_' and '-' (at most 80, starting with a letter or digit)`
	notDir := filepath.Join(t.TempDir(), "file")
	dashed := filepath.Join(t.TempDir(), "-x.gguf")
	for _, p := range []string{notDir, dashed} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // standard error's last line, whole
	}{
		{"a --name with a slash", []string{"pull", file, "--name", "a/b"}, 1,
			`bankml: pull: store: --name: model name "a/b": ` + badName},
		{"a --name with an empty tag", []string{"pull", file, "--name", "x:"}, 1,
			`bankml: pull: store: --name: model name "x:": empty tag after ':'`},
		{"a file whose base name is no model name", []string{"pull", dashed}, 1,
			`bankml: pull: store: model name "-x": ` + badName + ` (give the model a name with --name NAME[:TAG])`},
		{"a missing file", []string{"pull", missing}, 1,
			"bankml: pull: store: " + missing + ": no such file, and not a model name"},
		{"a name the catalog lacks", []string{"pull", "nosuch"}, 1,
			"bankml: pull: store: nosuch:latest is not in bankml's catalog (it has bonsai:1.7b, bonsai:8b, qwen3:0.6b, stories260K:latest, ternary-bonsai:8b)"},
		{"an address without its sha256", []string{"pull", "https://example.invalid/x.gguf"}, 1,
			"bankml: pull: store: https://example.invalid/x.gguf: give its sha256 with --sha256 (the digest its publisher records; for Hugging Face, the file's LFS sha256)"},
		{"a store that cannot open", []string{"pull", file, "--models", notDir}, 1,
			"bankml: pull: store: the model store's folder " + notDir + " is a file, not a folder (from --models)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, e := bankml(t, tc.args...)
			lines := strings.Split(strings.TrimRight(e, "\n"), "\n")
			if got := lines[len(lines)-1]; code != tc.code || got != tc.want {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit %d and\n%s", code, got, tc.code, tc.want)
			}
		})
	}
}

// TestAFolderGivenAsTheModelIsSaidToBeAFolder: pull of a folder (bankml pull /tmp --name t1) said "/tmp: no
// such file, and not a model name" although /tmp exists; it says the path is a folder, not a GGUF file, and what
// pull takes (exit 1, a usage error as run's folder is), and so does a Modelfile's FROM of a folder.
func TestAFolderGivenAsTheModelIsSaidToBeAFolder(t *testing.T) {
	_, _ = storeEnv(t)
	folder := t.TempDir()
	modelfile := filepath.Join(t.TempDir(), "Modelfile")
	if err := os.WriteFile(modelfile, []byte("FROM "+folder+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const takes = " is a folder, not a GGUF file (give a GGUF file, a catalog NAME[:TAG], or an hf:// or http(s) address with --sha256)"
	for _, tc := range []struct {
		name string
		args []string
		want string // standard error's last line, whole
	}{
		{"pull of a folder", []string{"pull", folder}, "bankml: pull: store: " + folder + takes},
		{"pull of a folder with a name", []string{"pull", folder, "--name", "t1"}, "bankml: pull: store: " + folder + takes},
		{"pull of a folder with a trailing slash", []string{"pull", folder + "/"}, "bankml: pull: store: " + folder + "/" + takes},
		{"create from a folder", []string{"create", "t1", "-f", modelfile}, "bankml: create: store: Modelfile: FROM " + folder + takes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, e := bankml(t, tc.args...)
			lines := strings.Split(strings.TrimRight(e, "\n"), "\n")
			if got := lines[len(lines)-1]; code != 1 || got != tc.want {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit 1 and\n%s", code, got, tc.want)
			}
		})
	}
}

// TestAnAddressIsPulledFromItselfNotFromTheEnvironmentsMirror: with $BANKML_MIRROR set (for the catalog's files,
// docs/deploy.md), pull of an http(s) address with --sha256 was silently read from the mirror instead ("the
// mirror … has no x.gguf"), the address never tried. The address is what was asked for: it is read from the
// address; only --from on the command line reads it from a mirror, and catalog names still read
// $BANKML_MIRROR.
func TestAnAddressIsPulledFromItselfNotFromTheEnvironmentsMirror(t *testing.T) {
	_, models := storeEnv(t)
	t.Setenv("BANKML_MIRROR", models)
	data, err := os.ReadFile(filepath.Join(models, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "x.gguf", time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		url        string // the manifest's provenance url and mirror (exit 0), or standard error's last line
		mirror     string
		wantStderr string
	}{
		{name: "an address with the mirror in the environment", args: []string{"pull", srv.URL + "/files/x.gguf", "--sha256", storiesSHA256, "--name", "x1"},
			url: srv.URL + "/files/x.gguf"},
		{name: "an address that cannot be reached, with the mirror in the environment", args: []string{"pull", deadURL + "/files/x.gguf", "--sha256", storiesSHA256, "--name", "x2"}, code: 1,
			wantStderr: "bankml: pull: store: x2:latest: " + deadURL + "/files/x.gguf: dial tcp " + strings.TrimPrefix(deadURL, "http://") +
				": connect: connection refused (nothing downloaded): the source cannot be reached; to pull from a mirror instead (an http(s) URL or a folder holding the file), give --from URL|DIR (for a catalog name, $BANKML_MIRROR too)"},
		{name: "an address with --from", args: []string{"pull", deadURL + "/files/stories260K.gguf", "--sha256", storiesSHA256, "--name", "x3", "--from", models},
			url: deadURL + "/files/stories260K.gguf", mirror: models},
		{name: "a catalog name with the mirror in the environment", args: []string{"pull", "stories260K"},
			url: "https://huggingface.co/", mirror: models},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BANKML_MODELS", t.TempDir()) // a store without the file: it is fetched
			code, _, e := bankml(t, tc.args...)
			lines := strings.Split(strings.TrimRight(e, "\n"), "\n")
			if got := lines[len(lines)-1]; code != tc.code || (tc.code != 0 && got != tc.wantStderr) {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit %d and\n%s", code, got, tc.code, tc.wantStderr)
			}
			if tc.code != 0 {
				return
			}
			name := "stories260K"
			if i := slices.Index(tc.args, "--name"); i >= 0 {
				name = tc.args[i+1]
			}
			_, out, _ := bankml(t, "show", name, "--json")
			var m store.Manifest
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("show --json: %v %q", err, out)
			}
			if !strings.HasPrefix(m.Provenance.URL, tc.url) || m.Provenance.Mirror != tc.mirror {
				t.Fatalf("provenance url %q, mirror %q; want url %q…, mirror %q", m.Provenance.URL, m.Provenance.Mirror, tc.url, tc.mirror)
			}
		})
	}
}

// TestErrorsNameAStoredModelNotItsFile: an error about a model given by name (a cache type its heads do not fit, a
// file whose sha256 is not its pin) names the model, NAME:TAG, never the store's file for it (its blobs/ path or
// its sha256-HEX name), on every command that takes a store name.
func TestErrorsNameAStoredModelNotItsFile(t *testing.T) {
	_, models := storeEnv(t)
	t.Setenv("BANKML_MIRROR", models)
	const other = "4bf5fadb1c743f8174a38c5fd021bdcbad19e8d98e4692dee4bb722a906ce8af" // the corrupted file's sha256
	for _, c := range []struct {
		name    string
		corrupt bool // one byte of the stored file changed
		args    []string
		want    string // standard error's last line, whole
	}{
		{"run with a cache type the heads do not fit", false, []string{"run", "stories260K", "-ctk", "q8_0", "-p", "x"},
			"bankml: run: stories260K:latest: K cache type q8_0 with block size 32 does not divide n_embd_head_k=8"},
		{"serve with a cache type the heads do not fit", false, []string{"serve", "stories260K", "-ctv", "q4_0", "--port", "0"},
			"bankml: serve: stories260K:latest: V cache type q4_0 with block size 32 does not divide n_embd_head_v=8"},
		{"run of a stored file that is not its pin", true, []string{"run", "stories260K", "-p", "x"},
			"bankml: run: stories260K:latest sha256 " + other + " != pinned " + storiesSHA256 + ": refused"},
		{"embed of a stored file that is not its pin", true, []string{"embed", "stories260K", "-p", "x"},
			"bankml: embed: stories260K:latest sha256 " + other + " != pinned " + storiesSHA256 + ": refused"},
		{"perplexity of a stored file that is not its pin", true, []string{"perplexity", "stories260K", filepath.Join(models, "MANIFEST.md")},
			"bankml: perplexity: stories260K:latest sha256 " + other + " != pinned " + storiesSHA256 + ": refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append(c.args, "--models", dir)
			if code, _, e := bankml(t, "pull", "stories260K", "--models", dir); code != 0 {
				t.Fatalf("pull: %d %s", code, e)
			}
			if c.corrupt {
				blob := filepath.Join(dir, "blobs", "sha256-"+storiesSHA256)
				f, err := os.OpenFile(blob, os.O_WRONLY, 0)
				if err != nil {
					if err = os.Chmod(blob, 0o644); err == nil {
						f, err = os.OpenFile(blob, os.O_WRONLY, 0)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteAt([]byte("X"), 100000); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			code, _, stderr := bankml(t, args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if got := lines[len(lines)-1]; code != 2 || got != c.want {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit 2 and\n%s", code, got, c.want)
			}
			if strings.Contains(stderr, dir) || strings.Contains(stderr, "sha256-") {
				t.Fatalf("stderr names the store's file:\n%s", stderr)
			}
		})
	}
}

// TestAStoredModelTakesAManifestFileThatAgrees: --manifest FORK.json beside a model given by name is read as the
// manifest it is: an entry for the model's file (its name where it came from, stories260K.gguf) with the store's
// sha256 is accepted; one with another sha256, no entry, or a manifest that does not parse is refused (exit 2)
// saying how it disagrees; a manifest that cannot be read is an I/O error (exit 1).
func TestAStoredModelTakesAManifestFileThatAgrees(t *testing.T) {
	_, models := storeEnv(t)
	t.Setenv("BANKML_MIRROR", models)
	dir := t.TempDir()
	fork := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	entry := func(path, sha string) string {
		return `{"source_repo": "ggml-org/models", "files": [{"path": "` + path + `", "bytes": 1185376, "sha256": "` + sha + `"}]}`
	}
	other := strings.Repeat("0", 64)
	for _, c := range []struct {
		name     string
		manifest string
		code     int
		want     string // in standard error
	}{
		{"a manifest that pins the stored file", fork("good.json", entry("tinyllamas/stories260K.gguf", storiesSHA256)), 0, "pinned"},
		{"a manifest that pins it to another sha256", fork("other.json", entry("stories260K.gguf", other)), 2,
			"bankml: run: stories260K:latest: sha256 " + storiesSHA256 + " of the file != " + other + " pinned in the manifest " + filepath.Join(dir, "other.json") + ": refused"},
		{"a manifest without the stored file", fork("none.json", entry("other.gguf", storiesSHA256)), 2,
			"disagrees: stories260K.gguf has no sha256 record in none.json: unpinned, refused"},
		{"a manifest that does not parse", fork("bad.json", `{"files": []}`), 2, "bad manifest"},
		{"a manifest that cannot be read", filepath.Join(dir, "absent.json"), 1, "absent.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := bankml(t, "run", "stories260K", "-p", "Once", "-n", "2", "--manifest", c.manifest)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d, stderr\n%s\nwant exit %d and %q", code, stderr, c.code, c.want)
			}
		})
	}
}
