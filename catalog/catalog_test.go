package catalog_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/bankml/bankml/catalog"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/pull"
)

func TestEveryEntryNamesAFixedRevisionASizeAndASHA256WithItsSource(t *testing.T) {
	hex40, hex64 := regexp.MustCompile(`^[0-9a-f]{40}$`), regexp.MustCompile(`^[0-9a-f]{64}$`)
	seen := map[string]bool{}
	for _, e := range catalog.All() {
		if !hex40.MatchString(e.Revision) || !hex64.MatchString(e.SHA256) || e.Size <= 0 || e.Source == "" || e.License == "" {
			t.Errorf("%s: revision %q, sha256 %q, size %d, source %q, license %q", e.Ref(), e.Revision, e.SHA256, e.Size, e.Source, e.License)
		}
		if want := "https://huggingface.co/" + e.Repo + "/resolve/" + e.Revision + "/" + e.File; e.URL() != want {
			t.Errorf("%s: URL %s", e.Ref(), e.URL())
		}
		if seen[strings.ToLower(e.Ref())] {
			t.Errorf("%s listed twice", e.Ref())
		}
		seen[strings.ToLower(e.Ref())] = true
		if got, err := catalog.Lookup(strings.ToUpper(e.Ref())); err != nil || got != e {
			t.Errorf("Lookup(%s): %+v %v", strings.ToUpper(e.Ref()), got, err)
		}
	}
	t.Logf("%d entries", len(seen))
}

// TestStories260KIsTheFileOfTheTestData checks the catalog's stories260K digest and size against the file
// itself (../shared/models/stories260K.gguf, which MANIFEST.md traces to ggml-org/models).
func TestStories260KIsTheFileOfTheTestData(t *testing.T) {
	e, err := catalog.Lookup("stories260K")
	if err != nil {
		t.Fatal(err)
	}
	sum, n, err := pull.Sum(testdata.Model(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if sum != e.SHA256 || n != e.Size || e.BaseName() != "stories260K.gguf" {
		t.Fatalf("catalog %s %d %s, file %s %d", e.SHA256, e.Size, e.BaseName(), sum, n)
	}
}

func TestNamesParseAsOllamasWithTheDefaultTagLatest(t *testing.T) {
	for _, c := range []struct{ in, name, tag, err string }{
		{"stories260K", "stories260K", "latest", ""},
		{"qwen3:0.6b", "qwen3", "0.6b", ""},
		{"qwen3:", "", "", "empty tag"},
		{":x", "", "", "empty name"},
		{"a b", "", "", "a name is letters"},
		{"x:y:z", "", "", "a tag is letters"},
	} {
		n, tg, err := catalog.ParseRef(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || n != c.name || tg != c.tag {
			t.Errorf("%q: %q %q %v", c.in, n, tg, err)
		}
	}
	if _, err := catalog.Lookup("nosuch"); err == nil || !strings.Contains(err.Error(), "bonsai:8b") {
		t.Errorf("Lookup of an unknown name: %v", err)
	}
}
