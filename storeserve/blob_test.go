package storeserve_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bankml/bankml/storeserve"
)

// TestAStoredFileCutShortIsA500SayingWhatIsWrong: a model whose file was cut short since it was pulled is not
// admitted and retried (a 503 would tell the client to come back): it is a 500 naming the model and both sizes
// and saying to pull it again, with no path of the server in it, on every route.
func TestAStoredFileCutShortIsA500SayingWhatIsWrong(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	man, err := f.s.Get("tiny:q8_0")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(f.s.BlobPath(man.Model.SHA256), man.Model.Size/2); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("model 'tiny:q8_0' cannot be loaded: its model file has %d bytes, not the %d its manifest records (cut short or damaged: pull it again)", man.Model.Size/2, man.Model.Size)
	for _, tc := range []struct{ name, path, body string }{
		{"Ollama's generate", "/api/generate", `{"model":"tiny:q8_0","prompt":"hi"}`},
		{"Ollama's chat", "/api/chat", `{"model":"tiny:q8_0","messages":[{"role":"user","content":"hi"}]}`},
		{"an OpenAI chat", "/v1/chat/completions", `{"model":"tiny:q8_0","messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := f.post(t, tc.path, tc.body)
			if st != 500 || !strings.Contains(string(b), want) || strings.Contains(string(b), f.s.Root) {
				t.Fatalf("%d %s\nwant 500 containing %q and no %s", st, b, want, f.s.Root)
			}
		})
	}
}

// TestPropsNamesTheModelFileWithoutTheStoresFolder: GET /props?model=NAME forwards to the model's server,
// whose model_path is the stored file named as the store server names its files (<store>/blobs/sha256-HEX),
// never the server's folder.
func TestPropsNamesTheModelFileWithoutTheStoresFolder(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	man, err := f.s.Get("tiny:q8_0")
	if err != nil {
		t.Fatal(err)
	}
	st, b := f.do(t, "GET", "/props?model=tiny:q8_0", "")
	var props struct {
		ModelPath string `json:"model_path"`
	}
	if err := json.Unmarshal(b, &props); st != 200 || err != nil {
		t.Fatalf("%d %s: %v", st, b, err)
	}
	if want := "<store>" + strings.TrimPrefix(f.s.BlobPath(man.Model.SHA256), f.s.Root); props.ModelPath != want || strings.Contains(string(b), f.s.Root) {
		t.Fatalf("model_path %q, want %q (and no %s in the answer)", props.ModelPath, want, f.s.Root)
	}
}
