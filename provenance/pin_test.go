package provenance

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/testdata"
)

// The stories260K file's size and sha256 as MANIFEST.md records them (an external record).
const (
	storiesSize = 1185376
	storiesSum  = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"
)

// fixture is a temporary folder holding a real model, a copy of it with one byte changed (same base name, in a
// subfolder) and helpers to write manifests beside them.
type fixture struct {
	dir, good, changed string
	changedSum         string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	src := testdata.Model(t, "stories260K.gguf")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fx := &fixture{dir: dir, good: src, changed: filepath.Join(dir, "changed", "stories260K.gguf")}
	data[len(data)/2] ^= 0x01 // one bit of one byte
	if err := os.MkdirAll(filepath.Dir(fx.changed), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fx.changed, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if fx.changedSum, err = SHA256File(fx.changed, nil); err != nil {
		t.Fatal(err)
	}
	return fx
}

// manifest writes a manifest named name holding body and returns its path.
func (fx *fixture) manifest(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(fx.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const storiesFork = `{"source_repo": "karpathy/tinyllamas", "source_revision": "9a9e5e751dbb0d5dd49ba1f34a0a142e8c31e430",
  "files": [{"path": "tinyllamas/stories260K.gguf", "bytes": 1185376, "sha256": "` + storiesSum + `"},
            {"path": "other.gguf", "bytes": 1, "sha256": "` + hashB + `"}]}`

func TestPinAdmitsTheFileItsManifestNames(t *testing.T) {
	fx := newFixture(t)
	fork := fx.manifest(t, "FORK.json", storiesFork)
	res, err := Pin(fx.good, fork, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Verdict: VerdictPinned, Pinned: true, File: fx.good, Name: "stories260K.gguf", SHA256: storiesSum,
		Size: storiesSize, Want: storiesSum, WantSize: storiesSize, Manifest: fork, Source: "karpathy/tinyllamas",
		Revision: "9a9e5e751dbb0d5dd49ba1f34a0a142e8c31e430"}
	if res != want {
		t.Errorf("got  %+v\nwant %+v", res, want)
	}
}

// TestPinRefusesAOneByteChangeNamingBothHashes is the acceptance test.
func TestPinRefusesAOneByteChangeNamingBothHashes(t *testing.T) {
	fx := newFixture(t)
	fork := fx.manifest(t, "stories260K.gguf.FORK.json", storiesFork)
	for _, m := range []string{fork, storiesSum, "sha256:" + storiesSum} {
		res, err := Pin(fx.changed, m, nil)
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("manifest %s: err %v; want a refusal", m, err)
		}
		want := "stories260K.gguf sha256 " + fx.changedSum + " != pinned " + storiesSum + ": refused"
		if err.Error() != want || res.Reason != want {
			t.Errorf("manifest %s:\n got %q\nwant %q", m, err, want)
		}
		if res.Pinned || res.Verdict != VerdictRefuse || res.SHA256 != fx.changedSum || res.Want != storiesSum {
			t.Errorf("manifest %s: result %+v", m, res)
		}
	}
}

func TestPinRefusesAFileTheManifestDoesNotName(t *testing.T) {
	fx := newFixture(t)
	fork := fx.manifest(t, "FORK.json", `{"files": [{"path": "other.gguf", "sha256": "`+hashB+`"}],
		"inputs": [{"path": "stories260K.gguf", "sha256": "`+storiesSum+`"}]}`)
	res, err := Pin(fx.good, fork, nil)
	want := "stories260K.gguf has no sha256 record in FORK.json: unpinned, refused"
	if !errors.Is(err, ErrRefused) || err.Error() != want {
		t.Fatalf("err %v; want %q (inputs never pin)", err, want)
	}
	if res.SHA256 != storiesSum || res.Want != "" || res.Verdict != VerdictRefuse {
		t.Errorf("the file is still hashed, with no pin: %+v", res)
	}
}

// TestPinVerdicts covers the rest of docs/manifest.md's verdict table, one row each.
func TestPinVerdicts(t *testing.T) {
	fx := newFixture(t)
	entry := func(path, size, sum string) string {
		return `{"files": [{"path": "` + path + `", "bytes": ` + size + `, "sha256": "` + sum + `"}]}`
	}
	for _, tc := range []struct {
		name     string
		file     string
		manifest string // a body written to FORK.json, or (if asArg) the argument itself
		asArg    bool
		verdict  string
		refused  bool   // errors.Is(err, ErrRefused)
		badMan   bool   // errors.Is(err, ErrBadManifest)
		ioErr    bool   // an error that is not a refusal
		want     string // in the error (or Reason)
	}{
		{"bare digest, upper case", fx.good, strings.ToUpper(storiesSum), true, VerdictPinned, false, false, false, ""},
		{"Ollama digest", fx.good, "sha256:" + storiesSum, true, VerdictPinned, false, false, false, ""},
		{"digest pins whatever the name", fx.changed, "sha256:" + fx.changedSum, true, VerdictPinned, false, false, false, ""},
		{"windows path in the manifest", fx.good, `{"files": [{"path": "a\\b\\stories260K.gguf", "sha256": "` + storiesSum + `"}]}`, false, VerdictPinned, false, false, false, ""},
		{"no manifest: hashed, unpinned, no error", fx.good, "", true, VerdictUnpinned, false, false, false, "no manifest given"},
		{"hash and size differ", fx.good, entry("stories260K.gguf", "5", hashB), false, VerdictRefuse, true, false, false,
			"stories260K.gguf sha256 " + storiesSum + " != pinned " + hashB + " (1185376 bytes, pinned 5): refused"},
		{"hash matches, size does not", fx.good, entry("stories260K.gguf", "5", storiesSum), false, VerdictRefuse, true, false, false,
			"matches the pin, but the file is 1185376 bytes and FORK.json says 5: inconsistent, refused"},
		{"ambiguous entries", fx.good, `{"files": [{"path": "a/stories260K.gguf", "sha256": "` + storiesSum + `"},
			{"path": "b/stories260K.gguf", "sha256": "` + hashB + `"}]}`, false, VerdictRefuse, true, false, false, "ambiguous, refused"},
		{"agreeing duplicate entries", fx.good, `{"files": [{"path": "a/stories260K.gguf", "sha256": "` + storiesSum + `"},
			{"path": "b/stories260K.gguf", "bytes": 1185376, "sha256": "` + storiesSum + `"}]}`, false, VerdictPinned, false, false, false, ""},
		{"malformed manifest", fx.good, `{"files": [`, false, VerdictRefuse, true, true, false, "bad manifest: not valid JSON"},
		{"bad hex", fx.good, entry("stories260K.gguf", "1", "12"), false, VerdictRefuse, true, true, false, `sha256 "12" is not 64 hex digits`},
		{"missing file", filepath.Join(fx.dir, "absent.gguf"), storiesSum, true, "", false, false, true, "no such file"},
		{"missing manifest", fx.good, filepath.Join(fx.dir, "absent.FORK.json"), true, "", false, false, true, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arg := tc.manifest
			if !tc.asArg {
				arg = fx.manifest(t, "FORK.json", tc.manifest)
			}
			res, err := Pin(tc.file, arg, nil)
			if errors.Is(err, ErrRefused) != tc.refused || errors.Is(err, ErrBadManifest) != tc.badMan || (err != nil && !tc.refused) != tc.ioErr {
				t.Fatalf("err %v; want refused=%v bad-manifest=%v io=%v", err, tc.refused, tc.badMan, tc.ioErr)
			}
			if tc.ioErr {
				if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err %v; want an OS not-exist error", err)
				}
				return
			}
			if res.Verdict != tc.verdict || res.Pinned != (tc.verdict == VerdictPinned) {
				t.Errorf("verdict %q pinned %v; want %q (%+v)", res.Verdict, res.Pinned, tc.verdict, res)
			}
			if !strings.Contains(res.Reason, tc.want) || (err != nil && err.Error() != res.Reason) {
				t.Errorf("reason %q, err %v; want %q", res.Reason, err, tc.want)
			}
			if res.SHA256 == "" && !tc.badMan {
				t.Errorf("the file was not hashed: %+v", res)
			}
		})
	}
}

// TestCheckIsPinWithoutTheHash: a loader that hashed the file while streaming it gets the same verdict.
func TestCheckIsPinWithoutTheHash(t *testing.T) {
	m, err := ParseManifest([]byte(storiesFork))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(Result{Name: "stories260K.gguf", SHA256: storiesSum, Size: storiesSize}, m.Lookup("stories260K.gguf"), "FORK.json")
	if err != nil || !res.Pinned || res.WantSize != storiesSize {
		t.Fatalf("%+v, %v", res, err)
	}
	res, err = Check(Result{Name: "x.gguf", SHA256: storiesSum, Size: 1}, m.Lookup("x.gguf"), "FORK.json")
	if !errors.Is(err, ErrRefused) || res.Pinned {
		t.Fatalf("%+v, %v", res, err)
	}
}

func TestResultJSONHasTheDocumentedKeys(t *testing.T) {
	b, err := json.Marshal(Result{Verdict: VerdictRefuse, File: "f", Name: "f", SHA256: storiesSum, Size: 3, Want: hashB,
		WantSize: -1, Manifest: "FORK.json", Source: "o/r", Revision: "r", Reason: "why"})
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"verdict", "pinned", "file", "name", "sha256", "size", "pinned_sha256", "pinned_size", "manifest", "source", "revision", "reason"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("no %q in %s", k, b)
		}
	}
}
