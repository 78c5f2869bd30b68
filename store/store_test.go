package store_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/pull"
	"github.com/bankml/bankml/store"
)

const storiesSHA = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"

func newStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	models := testdata.ModelsDir(t)
	testdata.Model(t, "stories260K.gguf")
	t.Setenv(pull.EnvMirror, "")
	s, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s, models
}

func opts(mirror string) store.PullOptions {
	return store.PullOptions{Mirror: mirror, Fetch: pull.Options{Backoff: time.Millisecond}}
}

func TestPullOfACatalogNameFromAMirrorServerWritesAPinnedManifest(t *testing.T) {
	s, models := newStore(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(models)))
	defer srv.Close()
	m, err := s.Pull(context.Background(), "stories260K", opts(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	if m.Ref() != "stories260K:latest" || m.Model.SHA256 != storiesSHA || m.Model.Size != 1185376 ||
		m.Provenance.Kind != "catalog" || m.Provenance.Mirror != srv.URL ||
		!strings.Contains(m.Provenance.URL, "ggml-org/models/resolve/499bc8821c6b12b4e53c5bffcb21ec206f212d81/tinyllamas/stories260K.gguf") {
		t.Fatalf("manifest %+v", m)
	}
	got, err := s.Get("STORIES260k") // names compare case-insensitively
	if err != nil || got.Model.SHA256 != storiesSHA {
		t.Fatalf("Get: %+v %v", got, err)
	}
	if sum, _, _ := pull.Sum(s.BlobPath(storiesSHA)); sum != storiesSHA {
		t.Fatalf("blob sha256 %s", sum)
	}
	// A second pull asks the source again, as ollama pull re-reads the manifest: with the server gone it fails
	// (errors_test.go has the cases).
	srv.Close()
	if _, err := s.Pull(context.Background(), "stories260K:latest", opts(srv.URL)); err == nil {
		t.Fatalf("second pull from a server that is gone passed")
	}
}

func TestPullOfAnUnknownNameListsTheCatalog(t *testing.T) {
	s, _ := newStore(t)
	_, err := s.Pull(context.Background(), "llama9:70b", opts(""))
	if err == nil || !strings.Contains(err.Error(), "not in bankml's catalog") || !strings.Contains(err.Error(), "stories260K:latest") {
		t.Fatalf("error %v", err)
	}
}

func TestPullOfAURLNeedsItsSHA256AndVerifiesIt(t *testing.T) {
	s, models := newStore(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(models)))
	defer srv.Close()
	u := srv.URL + "/derived/stories260K-Q8_0.gguf"
	if _, err := s.Pull(context.Background(), u, opts("")); err == nil || !strings.Contains(err.Error(), "--sha256") {
		t.Fatalf("without --sha256: %v", err)
	}
	o := opts("")
	o.SHA256 = strings.Repeat("0", 64)
	var de *pull.DigestError
	if _, err := s.Pull(context.Background(), u, o); !errors.As(err, &de) {
		t.Fatalf("a wrong --sha256: %v", err)
	}
	o.SHA256 = "sha256:ff8701a45da28293b7af11a695ab33575b692e9b109a2eae6238c906c31415da"
	m, err := s.Pull(context.Background(), u, o)
	if err != nil {
		t.Fatal(err)
	}
	if m.Ref() != "stories260K-Q8_0:latest" || m.Provenance.Kind != "url" || m.Provenance.DigestSource != "given with --sha256" || m.Model.Size != 379168 {
		t.Fatalf("manifest %+v", m)
	}
}

func TestHFAddressesResolveToHuggingFaceURLs(t *testing.T) {
	for _, c := range []struct{ in, url, rev string }{
		{"hf://prism-ml/Bonsai-8B-gguf/Bonsai-8B-Q1_0.gguf", "https://huggingface.co/prism-ml/Bonsai-8B-gguf/resolve/main/Bonsai-8B-Q1_0.gguf", "main"},
		{"hf://ggml-org/models@499bc88/tinyllamas/stories260K.gguf", "https://huggingface.co/ggml-org/models/resolve/499bc88/tinyllamas/stories260K.gguf", "499bc88"},
	} {
		u, _, rev, err := store.ParseHF(c.in)
		if err != nil || u != c.url || rev != c.rev {
			t.Errorf("%s: %s %s %v", c.in, u, rev, err)
		}
	}
	if _, _, _, err := store.ParseHF("hf://owner/repo"); err == nil {
		t.Error("hf://owner/repo (no file) was accepted")
	}
}

func TestPullOfALocalFileHashesItAndCopyAndRemoveKeepTheBlobWhileNamed(t *testing.T) {
	s, models := newStore(t)
	o := opts("")
	o.Name = "tiny:f32"
	m, err := s.Pull(context.Background(), filepath.Join(models, "stories260K.gguf"), o)
	if err != nil {
		t.Fatal(err)
	}
	if m.Model.SHA256 != storiesSHA || m.Provenance.Kind != "file" || m.Provenance.DigestSource != "computed from the local file when it was added" {
		t.Fatalf("manifest %+v", m)
	}
	if _, err := s.Copy("tiny:f32", "story"); err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, m := range list {
		refs = append(refs, m.Ref())
	}
	if !reflect.DeepEqual(refs, []string{"story:latest", "tiny:f32"}) {
		t.Fatalf("list %v", refs)
	}
	if err := s.Remove("tiny:f32"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.BlobPath(storiesSHA)); err != nil {
		t.Fatalf("the blob went while story still names it: %v", err)
	}
	if err := s.Remove("story"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.BlobPath(storiesSHA)); !os.IsNotExist(err) {
		t.Fatalf("the blob stayed with no manifest naming it: %v", err)
	}
	if _, err := s.Get("story"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get after Remove: %v", err)
	}
}

func TestCreateFromAModelfileMapsOllamaCommands(t *testing.T) {
	s, models := newStore(t)
	mf := `# a story teller
FROM stories260K
PARAMETER temperature 0.5
PARAMETER num_ctx 256
PARAMETER stop "<|end|>"
PARAMETER stop "###"
PARAMETER seed 42
SYSTEM You tell short stories.
MESSAGE user Hello
MESSAGE assistant Once upon a time
LICENSE """MIT"""
`
	var checked map[string]any
	m, err := s.Create(context.Background(), "teller:v1", strings.NewReader(mf), store.CreateOptions{
		Pull:            opts(models),
		CheckParameters: func(p map[string]any) error { checked = p; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"temperature": float32(0.5), "num_ctx": int64(256), "stop": []string{"<|end|>", "###"}, "seed": int64(42)}
	if !reflect.DeepEqual(m.Parameters, want) || !reflect.DeepEqual(checked, want) {
		t.Fatalf("parameters %#v (checked %#v), want %#v", m.Parameters, checked, want)
	}
	if m.System != "You tell short stories." || len(m.Messages) != 2 || m.Messages[1] != (store.Message{Role: "assistant", Content: "Once upon a time"}) ||
		!reflect.DeepEqual(m.License, []string{"MIT"}) || m.Model.SHA256 != storiesSHA || m.Provenance.Kind != "create" || m.Provenance.From != "stories260K" {
		t.Fatalf("manifest %+v", m)
	}
	// FROM a store model inherits its settings; a new PARAMETER overrides one.
	m2, err := s.Create(context.Background(), "teller:v2", strings.NewReader("FROM teller:v1\nPARAMETER temperature 0.9\n"), store.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m2.Parameters["temperature"] != float32(0.9) || m2.Parameters["seed"] != int64(42) || m2.System != "You tell short stories." {
		t.Fatalf("inherited %+v", m2)
	}
}

func TestCreateFromAFileRelativeToTheModelfile(t *testing.T) {
	s, models := newStore(t)
	m, err := s.Create(context.Background(), "q4", strings.NewReader("FROM ./derived/stories260K-Q4_0.gguf\n"), store.CreateOptions{Dir: models})
	if err != nil {
		t.Fatal(err)
	}
	if m.Model.SHA256 != "fd93abd9957992763c863e7e3f30934baf1e7a2e31b6c911a720cd109daed40d" || m.Provenance.Kind != "create" {
		t.Fatalf("manifest %+v", m)
	}
}

func TestCreateRefusesWhatBankmlDoesNotCarryOut(t *testing.T) {
	s, models := newStore(t)
	for _, c := range []struct{ name, mf, want string }{
		{"TEMPLATE", "FROM stories260K\nTEMPLATE \"{{ .Prompt }}\"\n", "TEMPLATE is refused"},
		{"ADAPTER", "FROM stories260K\nADAPTER ./lora.gguf\n", "ADAPTER is refused"},
		{"an unknown parameter", "FROM stories260K\nPARAMETER warmth 3\n", "unknown parameter 'warmth'"},
		{"a badly typed parameter", "FROM stories260K\nPARAMETER top_k many\n", "invalid int value"},
		{"no FROM", "SYSTEM hi\n", "no FROM"},
		{"an unknown FROM", "FROM nosuchmodel\n", "not in bankml's catalog"},
		{"a parameter the server refuses", "FROM stories260K\nPARAMETER mirostat_eta 0.1\nPARAMETER num_gpu 1\n", "num_gpu: nope"},
	} {
		_, err := s.Create(context.Background(), "x", strings.NewReader(c.mf), store.CreateOptions{
			Pull: opts(models),
			CheckParameters: func(p map[string]any) error {
				if _, ok := p["num_gpu"]; ok {
					return errors.New("num_gpu: nope")
				}
				return nil
			},
		})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := s.Get("x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused Modelfile left a manifest: %v", err)
	}
}

func TestPullOfAnHFAddressWithItsSHA256ReadsTheMirror(t *testing.T) {
	s, models := newStore(t)
	o := opts(models)
	o.SHA256 = storiesSHA
	m, err := s.Pull(context.Background(), "hf://ggml-org/models@499bc8821c6b12b4e53c5bffcb21ec206f212d81/tinyllamas/stories260K.gguf", o)
	if err != nil {
		t.Fatal(err)
	}
	if m.Ref() != "stories260K:latest" || m.Provenance.Kind != "hf" || m.Provenance.Repo != "ggml-org/models" ||
		m.Provenance.Revision != "499bc8821c6b12b4e53c5bffcb21ec206f212d81" || m.Model.SHA256 != storiesSHA {
		t.Fatalf("manifest %+v", m)
	}
	if _, err := s.Pull(context.Background(), "hf://ggml-org/models/tinyllamas/stories260K.gguf", opts(models)); err == nil || !strings.Contains(err.Error(), "--sha256") {
		t.Fatalf("hf:// without --sha256: %v", err)
	}
}

func TestPullOfAFileThatIsNotGGUFStoresNothing(t *testing.T) {
	s, _ := newStore(t)
	notGGUF := filepath.Join(t.TempDir(), "notes.gguf")
	if err := os.WriteFile(notGGUF, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := s.Pull(context.Background(), notGGUF, opts(""))
	if err == nil || !strings.Contains(err.Error(), "is not a GGUF file") {
		t.Fatalf("pull of a text file: %v, want a refusal saying it is not a GGUF file", err)
	}
	if ms, err := s.List(); err != nil || len(ms) != 0 {
		t.Fatalf("the store lists %d models (%v) after a refused pull", len(ms), err)
	}
	blobs, err := os.ReadDir(s.BlobsDir())
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(blobs) != 0 {
		t.Fatalf("blobs left after a refused pull: %v", blobs)
	}
}

func TestListReturnsEveryReadableModelAndNamesEachUnreadableManifestWithItsReason(t *testing.T) {
	for _, tc := range []struct {
		name     string
		manifest string // the content of manifests/broken/latest.json
		reason   string // what the error must say after the manifest's path
	}{
		{"a truncated manifest", `{"schema":1,`, "unexpected end of JSON input"},
		{"an empty manifest", ``, "unexpected end of JSON input"},
		{"a manifest of another schema", `{"schema":7,"name":"broken","tag":"latest"}`, "schema 7, this bankml reads 1"},
		{"a manifest whose parameters do not type", `{"schema":1,"name":"broken","tag":"latest","parameters":{"temperature":"hot"}}`, "parameters: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, models := newStore(t)
			o := opts("")
			o.Name = "good"
			if _, err := s.Pull(context.Background(), filepath.Join(models, "stories260K.gguf"), o); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(s.Root, "manifests", "broken", "latest.json")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tc.manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			list, err := s.List()
			if len(list) != 1 || list[0].Ref() != "good:latest" {
				t.Fatalf("List gave %d models (%v), want good:latest", len(list), err)
			}
			var ue *store.UnreadableError
			if !errors.As(err, &ue) || len(ue.Manifests) != 1 || ue.Manifests[0].Ref != "broken:latest" {
				t.Fatalf("List's error %v (%T), want an UnreadableError naming broken:latest", err, err)
			}
			want := "store: broken:latest: manifest " + p + ": " + tc.reason
			if !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("error %q, want it to start %q", err, want)
			}
			if err := s.Remove("broken"); err != nil {
				t.Fatalf("Remove of the unreadable model: %v", err)
			}
			if list, err := s.List(); err != nil || len(list) != 1 {
				t.Fatalf("after Remove: %d models, %v", len(list), err)
			}
			if _, err := os.Stat(s.BlobPath(storiesSHA)); err != nil {
				t.Fatalf("Remove of an unreadable manifest took good:latest's file: %v", err)
			}
		})
	}
}

func TestAModelfileThatEndsInsideAQuotedValueIsRefusedNamingTheLineItBeginsOn(t *testing.T) {
	for _, tc := range []struct {
		name, modelfile, want string
	}{
		{"an unterminated triple-quoted SYSTEM", "FROM stories260K\nPARAMETER temperature 0.5\nSYSTEM \"\"\"You are\na bot\n",
			`store: Modelfile: line 3: the """ string begun there is never closed (SYSTEM """You are): unexpected EOF`},
		{"an unterminated triple quote after a closed one", "FROM stories260K\nSYSTEM \"\"\"one\ntwo\"\"\"\n\n# a comment\nLICENSE \"\"\"MIT\n\nmore text\n",
			`store: Modelfile: line 6: the """ string begun there is never closed (LICENSE """MIT): unexpected EOF`},
		{"an unterminated double quote on the first line", "SYSTEM \"hello\nFROM stories260K\n",
			`store: Modelfile: line 1: the " string begun there is never closed (SYSTEM "hello): unexpected EOF`},
		{"a CRLF Modelfile", "FROM stories260K\r\nMESSAGE user \"\"\"hi\r\n",
			`store: Modelfile: line 2: the """ string begun there is never closed (MESSAGE user """hi): unexpected EOF`},
		{"a last command with no value", "FROM stories260K\nPARAMETER temperature",
			`store: Modelfile: line 2: PARAMETER has no value: unexpected EOF`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Create(context.Background(), "m", strings.NewReader(tc.modelfile), store.CreateOptions{})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v\nwant     %s", err, tc.want)
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("error %v does not wrap io.ErrUnexpectedEOF", err)
			}
		})
	}
}

// TestResolveOfANameInNeitherTheStoreNorTheCatalogNamesItOnce: Resolve's error for a model it cannot find
// or pull names the model once (as NAME:TAG), the store's folder and the catalog's models, and wraps
// ErrNotFound.
func TestResolveOfANameInNeitherTheStoreNorTheCatalogNamesItOnce(t *testing.T) {
	s, _ := newStore(t)
	for _, tc := range []struct{ name, ref, want string }{
		{"a bare name takes the tag latest", "nosuch", "store: nosuch:latest: not in " + s.Root + ", and not in bankml's catalog (it has bonsai:1.7b, bonsai:8b, qwen3:0.6b, stories260K:latest, ternary-bonsai:8b)"},
		{"a name with a tag keeps it", "nosuch:v2", "store: nosuch:v2: not in " + s.Root + ", and not in bankml's catalog (it has bonsai:1.7b, bonsai:8b, qwen3:0.6b, stories260K:latest, ternary-bonsai:8b)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.Resolve(context.Background(), tc.ref, opts(""))
			var nf *store.NotFoundError
			if err == nil || err.Error() != tc.want || !errors.Is(err, store.ErrNotFound) || !errors.As(err, &nf) {
				t.Fatalf("error %v\nwant %s (a *store.NotFoundError wrapping ErrNotFound)", err, tc.want)
			}
		})
	}
}

// TestCreateFromANameInNeitherTheStoreNorTheCatalogNamesItOnce: Create's error for a FROM that is no file,
// no stored and no catalog model is one sentence naming it once, as the Modelfile wrote it, with the store's
// folder and the catalog's models, and wraps ErrNotFound.
func TestCreateFromANameInNeitherTheStoreNorTheCatalogNamesItOnce(t *testing.T) {
	s, models := newStore(t)
	const cat = " (it has bonsai:1.7b, bonsai:8b, qwen3:0.6b, stories260K:latest, ternary-bonsai:8b)"
	for _, tc := range []struct{ name, mf, want string }{
		{"a bare name", "FROM nosuch\n", "store: Modelfile: FROM nosuch: not a file, not in the store " + s.Root + ", and not in bankml's catalog" + cat},
		{"a name with a tag", "FROM nosuch:v2\n", "store: Modelfile: FROM nosuch:v2: not a file, not in the store " + s.Root + ", and not in bankml's catalog" + cat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Create(context.Background(), "x", strings.NewReader(tc.mf), store.CreateOptions{Pull: opts(models)})
			if err == nil || err.Error() != tc.want || !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("error %v\nwant %s (wrapping ErrNotFound)", err, tc.want)
			}
		})
	}
}
