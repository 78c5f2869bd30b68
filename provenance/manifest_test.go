package provenance

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	hashA = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"
	hashB = "4cd29bbe9cb3b735750837816a43c3dd4b473dbd658e8612816f7c4d3926ac21"
)

// TestParseManifestAcceptsEveryDocumentedShape: the importer's and the converter's FORK.json, the minimal
// files-only contract, and the synonyms and spellings docs/manifest.md allows.
func TestParseManifestAcceptsEveryDocumentedShape(t *testing.T) {
	for _, tc := range []struct {
		name string
		json string
		want Manifest
	}{
		{
			"importer",
			`{"source_repo": "prism-ml/Bonsai-8B-gguf", "source_url": "https://example.org/prism-ml/Bonsai-8B-gguf",
			  "source_revision": "abc123", "licence_tag": "apache-2.0", "imported_at_utc": "2026-10-01T12:00:00Z",
			  "pinned_from": "lfs", "files": [{"path": "Bonsai-8B-Q1_0.gguf", "bytes": 1160000000, "sha256": "` + hashA + `"}]}`,
			Manifest{Source: "prism-ml/Bonsai-8B-gguf", URL: "https://example.org/prism-ml/Bonsai-8B-gguf", Revision: "abc123",
				Files: []Entry{{"Bonsai-8B-Q1_0.gguf", 1160000000, hashA}}},
		},
		{
			"converter",
			`{"kind": "conversion", "source": "HuggingFaceTB/SmolLM2-135M-Instruct", "converter": "bankml convert",
			  "converted_at_utc": "2026-10-01T12:00:00Z", "oracle": "convert_hf_to_gguf.py",
			  "inputs": [{"path": "model.safetensors", "bytes": 269060552, "sha256": "` + hashB + `"}],
			  "files": [{"path": "SmolLM2-135M-Instruct-F16.gguf", "bytes": 270898880, "sha256": "` + hashA + `"}]}`,
			Manifest{Kind: "conversion", Source: "HuggingFaceTB/SmolLM2-135M-Instruct",
				Files:  []Entry{{"SmolLM2-135M-Instruct-F16.gguf", 270898880, hashA}},
				Inputs: []Entry{{"model.safetensors", 269060552, hashB}}},
		},
		{
			"source object",
			`{"source": {"repo": "o/r", "url": "https://example.org/o/r", "revision": "r1"}, "files": [{"path": "a.gguf", "sha256": "` + hashA + `"}]}`,
			Manifest{Source: "o/r", URL: "https://example.org/o/r", Revision: "r1", Files: []Entry{{"a.gguf", -1, hashA}}},
		},
		{
			"files only, key order free, no size",
			`{"files": [{"sha256": "` + hashA + `", "path": "a.gguf"}]}`,
			Manifest{Files: []Entry{{"a.gguf", -1, hashA}}},
		},
		{
			"size synonym, upper-case hex, sha256: prefix, revision synonym, nulls, unknown keys",
			`{"revision": "r2", "source_url": null, "extra": [1, {"x": 2}], "files": [
			   {"path": "dir/a.gguf", "size": 12, "sha256": "` + strings.ToUpper(hashA) + `"},
			   {"path": "dir\\b.gguf", "bytes": 0, "size": 0, "sha256": "sha256:` + hashB + `", "note": "x"}]}`,
			Manifest{Revision: "r2", Files: []Entry{{"dir/a.gguf", 12, hashA}, {`dir\b.gguf`, 0, hashB}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseManifest([]byte(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*m, tc.want) {
				t.Errorf("got  %+v\nwant %+v", *m, tc.want)
			}
		})
	}
}

// TestParseManifestRefusesMalformedManifestsClearly: each error wraps ErrBadManifest and says what and where.
func TestParseManifestRefusesMalformedManifestsClearly(t *testing.T) {
	entry := func(fields string) string { return `{"files": [` + fields + `]}` }
	for _, tc := range []struct {
		name, json, want string
	}{
		{"empty input", ``, "not valid JSON"},
		{"malformed JSON", `{"files": [}`, "not valid JSON: invalid character"},
		{"truncated JSON", `{"files": [`, "not valid JSON: unexpected EOF"},
		{"trailing data", `{"files": []} {}`, "not valid JSON: data after the JSON value"},
		{"top level array", `[{"path": "a", "sha256": "` + hashA + `"}]`, "the top level is an array, want an object"},
		{"top level null", `null`, "the top level is null, want an object"},
		{"missing files", `{"source_repo": "o/r"}`, `no "files" array`},
		{"files not an array", `{"files": {"path": "a"}}`, `"files" is an object, want an array of objects`},
		{"files null", `{"files": null}`, `"files" is null, want an array of objects`},
		{"files empty", `{"files": []}`, `"files" array is empty`},
		{"entry not an object", entry(`"a.gguf"`), `files[0]: bad manifest: a string, want an object`},
		{"entry without path", entry(`{"sha256": "` + hashA + `"}`), `files[0]: bad manifest: no "path"`},
		{"entry with a numeric path", entry(`{"path": 7, "sha256": "` + hashA + `"}`), `"path" is a number, want a string`},
		{"entry without sha256", entry(`{"path": "a.gguf"}`), `files[0]: "a.gguf": bad manifest: no "sha256"`},
		{"bad hex: 63 digits", entry(`{"path": "a.gguf", "sha256": "` + hashA[:63] + `"}`), `sha256 "` + hashA[:63] + `" is not 64 hex digits`},
		{"bad hex: not a hex digit", entry(`{"path": "a.gguf", "sha256": "` + hashA[:63] + `z"}`), `is not 64 hex digits`},
		{"bad hex in the second entry", entry(`{"path": "a.gguf", "sha256": "` + hashA + `"}, {"path": "b.gguf", "sha256": "xyz"}`), `files[1]: "b.gguf"`},
		{"sha256 not a string", entry(`{"path": "a.gguf", "sha256": 5}`), `"sha256" is a number, want a string`},
		{"negative size", entry(`{"path": "a.gguf", "bytes": -1, "sha256": "` + hashA + `"}`), `"bytes" is -1, want a non-negative integer`},
		{"fractional size", entry(`{"path": "a.gguf", "size": 1.5, "sha256": "` + hashA + `"}`), `"size" is 1.5, want a non-negative integer`},
		{"size as a string", entry(`{"path": "a.gguf", "bytes": "12", "sha256": "` + hashA + `"}`), `"bytes" is "12"`},
		{"bytes and size differ", entry(`{"path": "a.gguf", "bytes": 1, "size": 2, "sha256": "` + hashA + `"}`), `"bytes" 1 and "size" 2 differ`},
		{"source a number", `{"source": 3, "files": [{"path": "a", "sha256": "` + hashA + `"}]}`, `"source" is a number, want a string or an object`},
		{"source_repo a number", `{"source_repo": 3, "files": [{"path": "a", "sha256": "` + hashA + `"}]}`, `"source_repo" is a number, want a string`},
		{"bad inputs entry", `{"inputs": [{"path": "x"}], "files": [{"path": "a", "sha256": "` + hashA + `"}]}`, `inputs[0]: "x": bad manifest: no "sha256"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseManifest([]byte(tc.json))
			if err == nil {
				t.Fatalf("accepted: %+v", m)
			}
			if !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q; want ErrBadManifest and %q", err, tc.want)
			}
		})
	}
}

func TestReadManifestNamesTheFileAndCapsTheSize(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadManifest(filepath.Join(dir, "absent.json")); !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrBadManifest) {
		t.Errorf("absent manifest: %v; want an OS error, not a bad manifest", err)
	}
	bad := filepath.Join(dir, "bad.FORK.json")
	if err := os.WriteFile(bad, []byte(`{"files": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(bad); !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad manifest: %v; want ErrBadManifest naming %s", err, bad)
	}
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, make([]byte, MaxManifestBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(huge); !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("huge manifest: %v", err)
	}
}

func TestLookupMatchesByBaseName(t *testing.T) {
	m := &Manifest{Files: []Entry{{"models/a.gguf", -1, hashA}, {`win\b.gguf`, -1, hashB}, {"a.gguf.part", -1, hashB}, {"a.gguf", -1, hashA}}}
	if got := m.Lookup("a.gguf"); len(got) != 2 || got[0].Path != "models/a.gguf" || got[1].Path != "a.gguf" {
		t.Errorf("a.gguf: %+v", got)
	}
	if got := m.Lookup("b.gguf"); len(got) != 1 || got[0].SHA256 != hashB {
		t.Errorf("b.gguf: %+v", got)
	}
	if got := m.Lookup("A.gguf"); len(got) != 0 {
		t.Errorf("matching is case-sensitive: %+v", got)
	}
}
