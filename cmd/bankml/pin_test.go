package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/testdata"
)

// stories260K.gguf's sha256 as ../shared/models/MANIFEST.md records it.
const storiesSHA256 = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"

// TestSha256PrintsTheModelsManifestHashes: sha256sum's format, one line per file, the hashes MANIFEST.md records.
func TestSha256PrintsTheModelsManifestHashes(t *testing.T) {
	dir := testdata.ModelsDir(t)
	files := map[string]string{
		"stories260K.gguf":              storiesSHA256,
		"llama-2-tiny-random.gguf":      "81f226c62d28ed4a1a9b9fa080fcd9f0cc40e0f9d5680036583ff98fbcd035cb",
		"derived/stories260K-Q4_0.gguf": "fd93abd9957992763c863e7e3f30934baf1e7a2e31b6c911a720cd109daed40d",
	}
	args := []string{"sha256"}
	var want strings.Builder
	for _, rel := range []string{"stories260K.gguf", "llama-2-tiny-random.gguf", "derived/stories260K-Q4_0.gguf"} {
		p := filepath.Join(dir, rel)
		args = append(args, p)
		want.WriteString(files[rel] + "  " + p + "\n")
	}
	code, out, stderr := runCLI(args...)
	if code != 0 || out != want.String() || stderr != "" {
		t.Fatalf("exit %d\nstdout %q\nwant   %q\nstderr %q", code, out, want.String(), stderr)
	}
}

func TestSha256OfAMissingFileExits1(t *testing.T) {
	model := storiesPath(t)
	absent := filepath.Join(t.TempDir(), "absent.gguf")
	code, out, stderr := runCLI("sha256", absent)
	if code != 1 || out != "" || !strings.Contains(stderr, "no such file") {
		t.Errorf("one file: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, stderr = runCLI("sha256", absent, model)
	if code != 1 || out != storiesSHA256+"  "+model+"\n" || !strings.Contains(stderr, "1 of 2 files") {
		t.Errorf("two files: exit %d, stdout %q, stderr %q; want the readable one hashed", code, out, stderr)
	}
}

// TestPinExitStatus: 0 pinned, 2 refused (one byte changed: both hashes named; unpinned; bad manifest),
// 1 I/O error; the manifest may be a FORK.json, a bare sha256 or an Ollama digest.
func TestPinExitStatus(t *testing.T) {
	model := storiesPath(t)
	dir := t.TempDir()
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	data[1000] ^= 0x80
	changed := filepath.Join(dir, "stories260K.gguf")
	if err := os.WriteFile(changed, data, 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fork := write("FORK.json", `{"source_repo": "karpathy/tinyllamas", "source_revision": "r1",
		"files": [{"path": "stories260K.gguf", "bytes": 1185376, "sha256": "`+storiesSHA256+`"}]}`)
	other := write("other.FORK.json", `{"files": [{"path": "x.gguf", "sha256": "`+storiesSHA256+`"}]}`)
	bad := write("bad.FORK.json", `{"files": [{"path": "stories260K.gguf", "sha256": "abc"}]}`)

	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		out, err []string // substrings of stdout and stderr
	}{
		{"pinned by FORK.json", []string{model, "--manifest", fork}, 0,
			[]string{"pinned " + storiesSHA256 + "  " + model + "\n", "source karpathy/tinyllamas revision r1\n"}, nil},
		{"pinned by --fork", []string{model, "--fork", fork}, 0, []string{"pinned " + storiesSHA256}, nil},
		{"pinned by a bare sha256", []string{model, "--manifest", storiesSHA256}, 0, []string{"pinned " + storiesSHA256}, nil},
		{"pinned by an Ollama digest", []string{model, "--manifest", "sha256:" + storiesSHA256}, 0, []string{"pinned " + storiesSHA256}, nil},
		{"one byte changed", []string{changed, "--manifest", fork}, 2, nil,
			[]string{"bankml: pin: stories260K.gguf sha256 ", " != pinned " + storiesSHA256 + ": refused"}},
		{"one byte changed, digest", []string{changed, "--manifest", "sha256:" + storiesSHA256}, 2, nil, []string{" != pinned " + storiesSHA256}},
		{"unpinned", []string{model, "--manifest", other}, 2, nil,
			[]string{"stories260K.gguf has no sha256 record in other.FORK.json: unpinned, refused"}},
		{"bad manifest", []string{model, "--manifest", bad}, 2, nil, []string{`bad manifest`, `sha256 "abc" is not 64 hex digits`}},
		{"missing manifest", []string{model, "--manifest", filepath.Join(dir, "absent.json")}, 1, nil, []string{"no such file"}},
		{"missing file", []string{filepath.Join(dir, "absent.gguf"), "--manifest", fork}, 1, nil, []string{"no such file"}},
		{"no manifest flag", []string{model}, 1, nil, []string{"--manifest"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runCLI(append([]string{"pin"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stdout %q, stderr %q", code, tc.code, out, stderr)
			}
			for _, s := range tc.out {
				if !strings.Contains(out, s) {
					t.Errorf("stdout %q lacks %q", out, s)
				}
			}
			for _, s := range tc.err {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q lacks %q", stderr, s)
				}
			}
		})
	}

	// The refusal names the changed file's own hash too.
	sum := strings.Fields(func() string { _, o, _ := runCLI("sha256", changed); return o }())[0]
	if _, _, stderr := runCLI("pin", changed, "--manifest", fork); !strings.Contains(stderr, "sha256 "+sum+" != pinned") {
		t.Errorf("stderr %q does not name the file's hash %s", stderr, sum)
	}
}

func TestPinJSONIsOneObjectWhateverTheVerdict(t *testing.T) {
	model := storiesPath(t)
	for _, tc := range []struct {
		manifest, verdict string
		code              int
	}{
		{storiesSHA256, "pinned", 0},
		{strings.Repeat("0", 64), "refuse", 2},
	} {
		code, out, _ := runCLI("pin", model, "--manifest", tc.manifest, "--json")
		var res map[string]any
		if err := json.Unmarshal([]byte(out), &res); err != nil || code != tc.code {
			t.Fatalf("exit %d, stdout %q: %v", code, out, err)
		}
		if res["verdict"] != tc.verdict || res["sha256"] != storiesSHA256 || res["size"] != float64(1185376) {
			t.Errorf("%s: %v", tc.manifest, res)
		}
	}
}

// TestAManifestDigestThatIsNoDigestIsAUsageError: a --manifest starting "sha256:" without 64 hex digits after it
// is a bad flag value, exit 1 naming the flag on every command that takes --manifest (docs/cli.md's table), a
// store model's too, where it exited 2 as a refused pin; a manifest file that does not parse is still a file
// that cannot be used, 2, as docs/manifest.md's table says.
func TestAManifestDigestThatIsNoDigestIsAUsageError(t *testing.T) {
	_, models := storeEnv(t)
	model := filepath.Join(models, "stories260K.gguf")
	if code, _, e := bankml(t, "pull", model); code != 0 {
		t.Fatalf("pull: %d %s", code, e)
	}
	text := filepath.Join(t.TempDir(), "text.txt")
	badJSON := filepath.Join(t.TempDir(), "bad.json")
	for _, p := range []string{text, badJSON} {
		if err := os.WriteFile(p, []byte("Once upon a time\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const bad = `--manifest "sha256:zz": not a sha256 digest: want sha256: and 64 hex digits`
	for _, c := range []struct {
		name string
		args []string
		code int
		want string // standard error's last line, whole
	}{
		{"run", []string{"run", model, "-p", "Once", "--manifest", "sha256:zz"}, 1, "bankml: run: " + bad},
		{"serve", []string{"serve", model, "--port", "0", "--manifest", "sha256:zz"}, 1, "bankml: serve: " + bad},
		{"embed", []string{"embed", model, "-p", "Once", "--manifest", "sha256:zz"}, 1, "bankml: embed: " + bad},
		{"perplexity", []string{"perplexity", model, text, "--manifest", "sha256:zz"}, 1, "bankml: perplexity: " + bad},
		{"pin", []string{"pin", model, "--manifest", "sha256:zz"}, 1, "bankml: pin: " + bad},
		{"pin --json", []string{"pin", model, "--json", "--manifest", "sha256:zz"}, 1, "bankml: pin: " + bad},
		{"run of a store model", []string{"run", "stories260K", "-p", "Once", "--manifest", "sha256:zz"}, 1, "bankml: run: " + bad},
		{"a digest one hex digit short", []string{"pin", model, "--manifest", "sha256:" + storiesSHA256[:63]}, 1,
			`bankml: pin: --manifest "sha256:` + storiesSHA256[:63] + `": not a sha256 digest: want sha256: and 64 hex digits`},
		{"a manifest file that is no JSON is still 2", []string{"pin", model, "--manifest", badJSON}, 2,
			"bankml: pin: manifest " + badJSON + ": bad manifest: not valid JSON: invalid character 'O' looking for beginning of value: refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := bankml(t, c.args...)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if got := lines[len(lines)-1]; code != c.code || got != c.want {
				t.Fatalf("exit %d, stderr's last line\n%s\nwant exit %d and\n%s", code, got, c.code, c.want)
			}
		})
	}
}
