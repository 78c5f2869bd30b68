package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAManifestThatDisagreesWithAStoredModelNamesEachHash: a --manifest FORK.json pinning a stored model to another
// sha256 was refused as "X is pinned by its manifest to sha256 A; --manifest F disagrees: … sha256 A != pinned B",
// calling both hashes pinned. The refusal now says which is which: A of the file, B pinned in the manifest given
// (or by --manifest, for a digest); a manifest with no entry for the file still says so, with the file's hash.
func TestAManifestThatDisagreesWithAStoredModelNamesEachHash(t *testing.T) {
	_, models := storeEnv(t)
	t.Setenv("BANKML_MIRROR", models)
	dir := t.TempDir()
	other := strings.Repeat("0", 64)
	fork := func(name, path, sha string) string {
		p := filepath.Join(dir, name)
		body := `{"files": [{"path": "` + path + `", "bytes": 1185376, "sha256": "` + sha + `"}]}`
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	otherJSON, noneJSON := fork("other.json", "stories260K.gguf", other), fork("none.json", "other.gguf", storiesSHA256)
	for _, c := range []struct {
		name     string
		manifest string
		want     string // standard error's last line, whole
	}{
		{name: "a manifest file pinning another sha256 names the file's hash and the manifest's",
			manifest: otherJSON,
			want:     "bankml: run: stories260K:latest: sha256 " + storiesSHA256 + " of the file != " + other + " pinned in the manifest " + otherJSON + ": refused"},
		{name: "a digest that differs names the file's hash and the digest given",
			manifest: "sha256:" + other,
			want:     "bankml: run: stories260K:latest: sha256 " + storiesSHA256 + " of the file != " + other + " pinned by --manifest: refused"},
		{name: "a manifest without the file says so beside the file's hash",
			manifest: noneJSON,
			want:     "bankml: run: stories260K:latest (sha256 " + storiesSHA256 + " of the file): --manifest " + noneJSON + " disagrees: stories260K.gguf has no sha256 record in none.json: unpinned, refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := bankml(t, "run", "stories260K", "-p", "Once", "-n", "2", "--manifest", c.manifest)
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if got := lines[len(lines)-1]; code != 2 || got != c.want {
				t.Fatalf("exit %d, stderr\n%s\nwant exit 2 and the last line\n%s", code, stderr, c.want)
			}
		})
	}
}
