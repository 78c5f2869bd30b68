package storeserve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/synth"
	"github.com/bankml/bankml/internal/synthcache"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/store"
	"github.com/bankml/bankml/storeserve"
)

// do sends method path with body ("" for none) to the fixture's server.
func (f *fixture) do(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestAGETRouteNamesItsModelInTheQueryAsLlamaServersRouter: llama-server's router takes a GET's model from
// ?model=NAME (its proxy_get); the store server does too, and a GET without one is the clear 400 the POST
// routes give, saying how a GET names its model, never a JSON decoding error about a body a GET has not
// (but for /props, which without a model is the router's own, as llama-server's).
func TestAGETRouteNamesItsModelInTheQueryAsLlamaServersRouter(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	const required = "model is required: this server serves the store's models (GET /api/tags or /models lists them)"
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		want                     string // in the body
	}{
		{name: "GET /props names its model as ?model=", method: "GET", path: "/props?model=stories260K", status: 200, want: `"model_alias":"stories260K:latest"`},
		{name: "GET /slots names its model as ?model=", method: "GET", path: "/slots?model=tiny:q8_0", status: 200, want: `"n_ctx"`},
		{name: "a model named in another letter case answers", method: "GET", path: "/props?model=TINY:Q8_0", status: 200, want: `"model_alias":"tiny:q8_0"`},
		{name: "HEAD /props answers as its GET", method: "HEAD", path: "/props?model=stories260K", status: 200},
		{name: "the query's model comes before a body's", method: "GET", path: "/props?model=tiny:q8_0", body: `{"model":"stories260K"}`, status: 200, want: `"model_alias":"tiny:q8_0"`},
		{name: "a body sent with a GET still names the model", method: "GET", path: "/props", body: `{"model":"stories260K"}`, status: 200, want: `"model_alias":"stories260K:latest"`},
		{name: "GET /props without a model is the router's own, as llama-server's get_router_props", method: "GET", path: "/props", status: 200,
			want: `"role":"router"`},
		{name: "the router's /props says no model limit as max_instances 0", method: "GET", path: "/props", status: 200,
			want: `"max_instances":0`},
		{name: "GET /slots without a model is the same 400", method: "GET", path: "/slots", status: 400,
			want: required + "; a GET names it in the query: /slots?model=NAME"},
		{name: "an empty ?model= is no model", method: "GET", path: "/slots?model=", status: 400, want: required},
		{name: "a model the store lacks is a 404 naming it", method: "GET", path: "/props?model=nope", status: 404, want: `model 'nope' not found`},
		{name: "a POST without a model keeps its message", method: "POST", path: "/v1/completions", body: `{"prompt":"hi"}`, status: 400,
			want: `"message":"` + required + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := f.do(t, tc.method, tc.path, tc.body)
			if st != tc.status || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%s %s: %d %s, want %d with %q", tc.method, tc.path, st, b, tc.status, tc.want)
			}
			if strings.Contains(string(b), "unexpected end of JSON input") {
				t.Fatalf("%s %s: %s", tc.method, tc.path, b)
			}
		})
	}
}

// qwen3File is a tiny synthetic model with Qwen3's vocabulary and chat template (tools and thinking), kept
// between runs by internal/synthcache.
func qwen3File(t *testing.T) string {
	t.Helper()
	shape, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	shape.NLayer = 1
	return synthcache.File(t, "storeserve-qwen3", synth.Config{Arch: synth.ArchQwen3, Shape: shape,
		Weight: gguf.Q4_0, Embd: gguf.Q4_0, Output: gguf.Q4_0, Vocab: synthcache.Qwen3Vocab(t)})
}

// singleShow is the single-model server's (bankml serve FILE) answers to /api/show and /api/tags for path.
func singleShow(t *testing.T, path, name string, verbose bool) (show, tags map[string]any) {
	t.Helper()
	m, err := admit.Open(path, admit.Options{Pin: admit.AllowUnpinned, Chat: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	srv, err := serve.New(m, serve.Options{Threads: 1, Alias: []string{name}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	body := `{"model":"` + name + `"}`
	if verbose {
		body = `{"model":"` + name + `","verbose":true}`
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/api/show", strings.NewReader(body)))
	if rec.Code != 200 {
		t.Fatalf("single-model show: %d %s", rec.Code, rec.Body)
	}
	json.Unmarshal(rec.Body.Bytes(), &show)
	rec = httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/tags", nil))
	var list struct{ Models []map[string]any }
	json.Unmarshal(rec.Body.Bytes(), &list)
	return show, list.Models[0]
}

// TestShowAndTagsGiveAStoredModelsFactsAsTheSingleModelServerGivesThem: the store server's /api/show and
// /api/tags fill details (family, parameter_size, quantization_level), model_info, the tensors, the chat
// template and the capabilities from the stored file's header, as the single-model server does for the same
// file, without loading the model.
func TestShowAndTagsGiveAStoredModelsFactsAsTheSingleModelServerGivesThem(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	qwen := qwen3File(t)
	po := store.PullOptions{Mirror: f.models}
	po.Name = "qwen:tiny"
	if _, err := f.s.Pull(context.Background(), qwen, po); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, model, file string
		verbose           bool
		caps              []any // the capabilities the file's template gives
	}{
		{name: "a model without a chat template is capable of completion", model: "stories260K", file: testdata.Model(t, "stories260K.gguf"), caps: []any{"completion"}},
		{name: "a quantized model names its quantization level", model: "tiny:q8_0", file: testdata.Model(t, "derived/stories260K-Q8_0.gguf"), caps: []any{"completion"}},
		{name: "a verbose show gives the metadata's arrays", model: "tiny:q8_0", file: testdata.Model(t, "derived/stories260K-Q8_0.gguf"), verbose: true, caps: []any{"completion"}},
		{name: "Qwen3's template makes the model capable of tools and thinking", model: "qwen:tiny", file: qwen, caps: []any{"completion", "tools", "thinking"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantShow, wantTags := singleShow(t, tc.file, tc.model, tc.verbose)
			body := `{"model":"` + tc.model + `"}`
			if tc.verbose {
				body = `{"model":"` + tc.model + `","verbose":true}`
			}
			st, b := f.post(t, "/api/show", body)
			if st != 200 {
				t.Fatalf("show: %d %s", st, b)
			}
			var show map[string]any
			json.Unmarshal(b, &show)
			for _, k := range []string{"details", "model_info", "tensors", "template", "capabilities"} {
				if !reflect.DeepEqual(show[k], wantShow[k]) {
					t.Errorf("show's %s:\n%v\nthe single-model server's:\n%v", k, show[k], wantShow[k])
				}
			}
			if d, _ := show["details"].(map[string]any); d["family"] == "" || d["parameter_size"] == "" || d["quantization_level"] == "" {
				t.Errorf("details %v", d)
			}
			if !reflect.DeepEqual(show["capabilities"], tc.caps) {
				t.Errorf("capabilities %v, want %v", show["capabilities"], tc.caps)
			}
			var tags struct{ Models []map[string]any }
			json.Unmarshal(f.get(t, "/api/tags"), &tags)
			found := false
			for _, m := range tags.Models {
				if strings.EqualFold(m["name"].(string), tc.model) || strings.EqualFold(m["name"].(string), tc.model+":latest") {
					found = true
					if !reflect.DeepEqual(m["details"], wantTags["details"]) {
						t.Errorf("tags' details %v, the single-model server's %v", m["details"], wantTags["details"])
					}
				}
			}
			if !found {
				t.Errorf("/api/tags lacks %s", tc.model)
			}
		})
	}
	if l := f.r.Loaded(); len(l) != 0 {
		t.Fatalf("show and tags loaded %v", l)
	}
	t.Run("/api/ps gives a loaded model's details as /api/tags does", func(t *testing.T) {
		completion(t, f, "tiny:q8_0")
		_, wantTags := singleShow(t, testdata.Model(t, "derived/stories260K-Q8_0.gguf"), "tiny:q8_0", false)
		var ps struct{ Models []map[string]any }
		json.Unmarshal(f.get(t, "/api/ps"), &ps)
		if len(ps.Models) != 1 || !reflect.DeepEqual(ps.Models[0]["details"], wantTags["details"]) {
			t.Fatalf("ps %v, want details %v", ps.Models, wantTags["details"])
		}
	})
}

// TestShowsModelfileIsWhatBankmlShowPrintsWithoutTheStoresFolder: /api/show's modelfile is `bankml show
// --modelfile`'s (store.Modelfile: Ollama's comment naming the model, FROM its file, PARAMETER, SYSTEM,
// MESSAGE, LICENSE), with the store's folder scrubbed as in every answer of the store server; parameters are
// Ollama's lines and messages are listed; a file gone or damaged is the answer a request for the model gets.
func TestShowsModelfileIsWhatBankmlShowPrintsWithoutTheStoresFolder(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	mf := "FROM stories260K\nPARAMETER temperature 0.5\nPARAMETER stop a\nPARAMETER stop b\nSYSTEM Be brief.\nMESSAGE user hi\nMESSAGE assistant hello\nLICENSE \"\"\"MIT\"\"\"\n"
	if _, err := f.s.Create(context.Background(), "brief", strings.NewReader(mf), store.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m, err := f.s.Get("brief")
	if err != nil {
		t.Fatal(err)
	}
	st, b := f.post(t, "/api/show", `{"model":"brief"}`)
	if st != 200 {
		t.Fatalf("show: %d %s", st, b)
	}
	var show struct {
		Modelfile, Parameters, System, License string
		Messages                               []struct{ Role, Content string }
		Capabilities                           []string
	}
	json.Unmarshal(b, &show)
	for _, tc := range []struct {
		name, got, want string
	}{
		{name: "the modelfile is bankml show's with the store's folder scrubbed", got: show.Modelfile,
			want: strings.ReplaceAll(f.s.Modelfile(m), f.s.Root, "<store>")},
		{name: "the modelfile starts with Ollama's comment naming the model", got: show.Modelfile[:strings.Index(show.Modelfile, "\nFROM ")],
			want: "# Modelfile generated by \"bankml show\"\n# To build a new Modelfile based on this, replace FROM with:\n# FROM brief:latest\n"},
		{name: "parameters are Ollama's lines, sorted", got: show.Parameters,
			want: "stop                           \"a\"\nstop                           \"b\"\ntemperature                    0.5"},
		{name: "system is the SYSTEM", got: show.System, want: "Be brief."},
		{name: "license is the LICENSE", got: show.License, want: "MIT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", tc.got, tc.want)
			}
		})
	}
	for _, w := range []string{"FROM <store>/blobs/sha256-", "PARAMETER stop \"a\"", "PARAMETER temperature 0.5", "SYSTEM \"\"\"Be brief.\"\"\"", "MESSAGE user \"hi\"", "LICENSE \"\"\"MIT\"\"\""} {
		if !strings.Contains(show.Modelfile, w) {
			t.Errorf("modelfile lacks %q:\n%s", w, show.Modelfile)
		}
	}
	if strings.Contains(string(b), f.s.Root) {
		t.Errorf("show names the store's folder %s: %s", f.s.Root, b)
	}
	if len(show.Messages) != 2 || show.Messages[1].Role != "assistant" || show.Messages[1].Content != "hello" {
		t.Errorf("messages %+v", show.Messages)
	}
	t.Run("the request's system replaces the model's, as Ollama's", func(t *testing.T) {
		_, b := f.post(t, "/api/show", `{"model":"brief","system":"Be long."}`)
		if !strings.Contains(string(b), `"system":"Be long."`) {
			t.Fatalf("%s", b)
		}
	})
	t.Run("a model whose file is gone is Ollama's 404", func(t *testing.T) {
		if _, err := f.s.Copy("tiny:q8_0", "orphan"); err != nil {
			t.Fatal(err)
		}
		o, _ := f.s.Get("orphan")
		if err := os.Remove(f.s.BlobPath(o.Model.SHA256)); err != nil {
			t.Fatal(err)
		}
		st, b := f.post(t, "/api/show", `{"model":"orphan"}`)
		if st != 404 || string(b) != `{"error":"model 'orphan' not found"}` {
			t.Fatalf("%d %s", st, b)
		}
	})
}

// TestOllamasEmbeddingRoutesNeedNoFlagOnTheStoreServer: Ollama's /api/embed and /api/embeddings take any
// model with no flag, as Ollama's do; llama-server's and OpenAI's embedding routes keep llama-server's gate
// (--embeddings), as each model's llama-server would under llama-server's router.
func TestOllamasEmbeddingRoutesNeedNoFlagOnTheStoreServer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		embeddings bool // --embeddings
		path, body string
		status     int
		want       string
	}{
		{name: "Ollama's embed answers without --embeddings", path: "/api/embed", body: `{"model":"stories260K","input":"hi"}`, status: 200, want: `"embeddings":[[`},
		{name: "Ollama's legacy embeddings answers without --embeddings", path: "/api/embeddings", body: `{"model":"stories260K","prompt":"hi"}`, status: 200, want: `"embedding":[`},
		{name: "OpenAI's embeddings keeps llama-server's gate", path: "/v1/embeddings", body: `{"model":"stories260K","input":"hi"}`, status: 501, want: "Start it with `--embeddings`"},
		{name: "llama-server's /embedding keeps its gate", path: "/embedding", body: `{"model":"stories260K","content":"hi"}`, status: 501, want: "Start it with `--embeddings`"},
		{name: "with --embeddings llama-server's /embedding answers", embeddings: true, path: "/embedding", body: `{"model":"stories260K","content":"hi"}`, status: 200, want: `"embedding":[`},
		{name: "with --embeddings Ollama's embed answers the same", embeddings: true, path: "/api/embed", body: `{"model":"stories260K","input":"hi"}`, status: 200, want: `"embeddings":[[`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := storeserve.Options{}
			o.Serve.Embeddings = tc.embeddings
			f := newFixture(t, o)
			st, b := f.post(t, tc.path, tc.body)
			if st != tc.status || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%d %s, want %d with %q", st, b, tc.status, tc.want)
			}
		})
	}
}
