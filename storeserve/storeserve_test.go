package storeserve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/bankml/bankml/admit"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/pull"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/store"
	"github.com/bankml/bankml/storeserve"
)

// fixture is a store holding stories260K (pulled from the catalog through the test-data mirror) and its
// Q8_0 derivative (another file), and a router over it.
type fixture struct {
	s      *store.Store
	r      *storeserve.Router
	srv    *httptest.Server
	models string
}

func newFixture(t *testing.T, o storeserve.Options) *fixture {
	t.Helper()
	models := testdata.ModelsDir(t)
	testdata.Model(t, "stories260K.gguf")
	t.Setenv(pull.EnvMirror, "")
	s, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	po := store.PullOptions{Mirror: models, Fetch: pull.Options{Backoff: time.Millisecond}}
	if _, err := s.Pull(context.Background(), "stories260K", po); err != nil {
		t.Fatal(err)
	}
	q8 := po
	q8.Name = "tiny:q8_0"
	if _, err := s.Pull(context.Background(), models+"/derived/stories260K-Q8_0.gguf", q8); err != nil {
		t.Fatal(err)
	}
	o.Store, o.Pull = s, po
	o.Serve.Threads = 1
	r, err := storeserve.New(o)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{s: s, r: r, srv: httptest.NewServer(r.Handler()), models: models}
	t.Cleanup(func() { f.srv.Close(); r.Close() })
	return f
}

func (f *fixture) post(t *testing.T, path, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(f.srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (f *fixture) get(t *testing.T, path string) []byte {
	t.Helper()
	resp, err := http.Get(f.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

func completion(t *testing.T, f *fixture, model string) string {
	t.Helper()
	st, b := f.post(t, "/v1/completions", `{"model":"`+model+`","prompt":"Once upon a time","max_tokens":12,"temperature":0}`)
	if st != 200 {
		t.Fatalf("%s: %d %s", model, st, b)
	}
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	json.Unmarshal(b, &out)
	return out.Model + "|" + out.Choices[0].Text
}

func TestRequestsNameTheirModelWhichLoadsOnDemandAndEqualsTheSingleModelServer(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	if got := f.r.Loaded(); len(got) != 0 {
		t.Fatalf("loaded before any request: %v", got)
	}
	a := completion(t, f, "stories260K")
	b := completion(t, f, "tiny:q8_0")
	if !reflect.DeepEqual(f.r.Loaded(), []string{"stories260K:latest", "tiny:q8_0"}) {
		t.Fatalf("loaded %v", f.r.Loaded())
	}
	// The same answer as bankml serve of the file alone.
	m, err := admit.Open(testdata.Model(t, "stories260K.gguf"), admit.Options{Pin: admit.AllowUnpinned, Chat: true})
	if err != nil {
		t.Fatal(err)
	}
	single, err := serve.New(m, serve.Options{Threads: 1, Alias: []string{"stories260K:latest"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	defer single.Close()
	rec := httptest.NewRecorder()
	single.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/completions", strings.NewReader(`{"model":"stories260K","prompt":"Once upon a time","max_tokens":12,"temperature":0}`)))
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	json.Unmarshal(rec.Body.Bytes(), &out)
	if want := out.Model + "|" + out.Choices[0].Text; a != want {
		t.Fatalf("router %q, single-model server %q", a, want)
	}
	if a == b {
		t.Logf("the Q8_0 file answers as the F32 one: %q", b)
	}
	if st, body := f.post(t, "/v1/completions", `{"prompt":"x"}`); st != 400 || !bytes.Contains(body, []byte("model is required")) {
		t.Fatalf("no model: %d %s", st, body)
	}
	if st, body := f.post(t, "/api/generate", `{"model":"nosuch","prompt":"x"}`); st != 404 || string(body) != `{"error":"model 'nosuch' not found"}` {
		t.Fatalf("unknown model: %d %s", st, body)
	}
}

func TestMaxModelsEvictsTheLeastRecentlyUsedIdleModel(t *testing.T) {
	f := newFixture(t, storeserve.Options{MaxModels: 1})
	completion(t, f, "stories260K")
	completion(t, f, "tiny:q8_0")
	if got := f.r.Loaded(); !reflect.DeepEqual(got, []string{"tiny:q8_0"}) {
		t.Fatalf("loaded %v, want only tiny:q8_0", got)
	}
}

func TestMaxMemoryCountsModelFileAndKVBytes(t *testing.T) {
	// stories260K is 1185376 bytes, its Q8_0 379168, each with a KV cache of 2048 f16 cells (1310720 bytes):
	// each fits 4 MB, not both (4185984 bytes).
	f := newFixture(t, storeserve.Options{MaxMemory: 4_000_000})
	completion(t, f, "tiny:q8_0")
	completion(t, f, "stories260K")
	if got := f.r.Loaded(); !reflect.DeepEqual(got, []string{"stories260K:latest"}) {
		t.Fatalf("loaded %v", got)
	}
}

func TestKeepAliveZeroUnloadsAndAShortKeepAliveExpires(t *testing.T) {
	f := newFixture(t, storeserve.Options{KeepAlive: 150 * time.Millisecond})
	st, b := f.post(t, "/api/generate", `{"model":"stories260K","prompt":"Once","options":{"num_predict":2},"stream":false}`)
	if st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	var ps struct {
		Models []struct {
			Name      string    `json:"name"`
			ExpiresAt time.Time `json:"expires_at"`
		} `json:"models"`
	}
	json.Unmarshal(f.get(t, "/api/ps"), &ps)
	if len(ps.Models) != 1 || ps.Models[0].Name != "stories260K:latest" || time.Until(ps.Models[0].ExpiresAt) > time.Second {
		t.Fatalf("/api/ps %+v", ps)
	}
	time.Sleep(400 * time.Millisecond)
	if got := f.r.Loaded(); len(got) != 0 {
		t.Fatalf("still loaded after keep_alive: %v", got)
	}
	// keep_alive -1 keeps it; keep_alive 0 without a prompt unloads it (Ollama's done_reason "unload").
	if st, b := f.post(t, "/api/generate", `{"model":"stories260K","keep_alive":-1}`); st != 200 {
		t.Fatalf("load: %d %s", st, b)
	}
	time.Sleep(300 * time.Millisecond)
	if got := f.r.Loaded(); len(got) != 1 {
		t.Fatalf("keep_alive -1 did not keep it: %v", got)
	}
	st, b = f.post(t, "/api/generate", `{"model":"stories260K","keep_alive":0}`)
	if st != 200 || !bytes.Contains(b, []byte(`"done_reason":"unload"`)) || len(f.r.Loaded()) != 0 {
		t.Fatalf("unload: %d %s, loaded %v", st, b, f.r.Loaded())
	}
}

func TestRouterEndpointsListLoadAndUnload(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	if st, b := f.post(t, "/models/load", `{"model":"tiny:q8_0"}`); st != 200 {
		t.Fatalf("load: %d %s", st, b)
	}
	var list struct {
		Data []struct {
			ID     string                 `json:"id"`
			Status struct{ Value string } `json:"status"`
		} `json:"data"`
	}
	json.Unmarshal(f.get(t, "/models"), &list)
	got := map[string]string{}
	for _, d := range list.Data {
		got[d.ID] = d.Status.Value
	}
	if !reflect.DeepEqual(got, map[string]string{"stories260K:latest": "unloaded", "tiny:q8_0": "loaded"}) {
		t.Fatalf("GET /models %v", got)
	}
	if st, b := f.post(t, "/models/unload", `{"model":"tiny:q8_0"}`); st != 200 || len(f.r.Loaded()) != 0 {
		t.Fatalf("unload: %d %s", st, b)
	}
	if st, _ := f.post(t, "/models/unload", `{"model":"tiny:q8_0"}`); st != 400 {
		t.Fatalf("unloading a model not loaded: %d", st)
	}
}

func TestAModelBeingLoadedDoesNotBlockAnswersFromAnother(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	o := storeserve.Options{Admit: func(path, sha string) (*admit.Model, error) {
		if sha == "ff8701a45da28293b7af11a695ab33575b692e9b109a2eae6238c906c31415da" { // the Q8_0 file loads slowly
			<-release
		}
		return admit.Open(path, admit.Options{Manifest: sha, Pin: admit.RequirePin, Chat: true})
	}}
	f := newFixture(t, o)
	defer once.Do(func() { close(release) })
	completion(t, f, "stories260K")
	slow := make(chan string, 1)
	go func() { slow <- completion(t, f, "tiny:q8_0") }()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	for range 3 {
		completion(t, f, "stories260K")
	}
	select {
	case <-slow:
		t.Fatal("the slow load finished before it was released")
	default:
	}
	t.Logf("3 answers from stories260K in %v while tiny:q8_0 was loading", time.Since(start))
	var list struct {
		Data []struct {
			ID     string                 `json:"id"`
			Status struct{ Value string } `json:"status"`
		} `json:"data"`
	}
	json.Unmarshal(f.get(t, "/models"), &list)
	for _, d := range list.Data {
		if d.ID == "tiny:q8_0" && d.Status.Value != "loading" {
			t.Errorf("tiny:q8_0 status %q while loading", d.Status.Value)
		}
	}
	once.Do(func() { close(release) })
	if got := <-slow; !strings.HasPrefix(got, "tiny:q8_0|") {
		t.Fatalf("slow answer %q", got)
	}
}

func TestOllamaStoreRoutes(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	var tags struct {
		Models []struct{ Name, Digest string } `json:"models"`
	}
	json.Unmarshal(f.get(t, "/api/tags"), &tags)
	if len(tags.Models) != 2 || tags.Models[0].Name != "stories260K:latest" || tags.Models[0].Digest != "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d" {
		t.Fatalf("/api/tags %+v", tags)
	}
	if st, b := f.post(t, "/api/copy", `{"source":"stories260K","destination":"tale:v1"}`); st != 200 {
		t.Fatalf("copy: %d %s", st, b)
	}
	st, b := f.post(t, "/api/create", `{"model":"brief","from":"tale:v1","system":"Be brief.","parameters":{"temperature":0.5,"stop":["a","b"]},"stream":false}`)
	if st != 200 || !bytes.Contains(b, []byte(`"status":"success"`)) {
		t.Fatalf("create: %d %s", st, b)
	}
	m, err := f.s.Get("brief")
	if err != nil || m.System != "Be brief." || !reflect.DeepEqual(m.Parameters["stop"], []string{"a", "b"}) {
		t.Fatalf("created %+v %v", m, err)
	}
	if st, b := f.post(t, "/api/create", `{"model":"t","from":"stories260K","template":"{{ .Prompt }}"}`); st != 400 || !bytes.Contains(b, []byte("TEMPLATE is refused")) {
		t.Fatalf("create with a template: %d %s", st, b)
	}
	st, b = f.post(t, "/api/show", `{"model":"brief"}`)
	if st != 200 || !bytes.Contains(b, []byte(`"system":"Be brief."`)) || !bytes.Contains(b, []byte("temperature")) {
		t.Fatalf("show: %d %s", st, b)
	}
	req, _ := http.NewRequest(http.MethodDelete, f.srv.URL+"/api/delete", strings.NewReader(`{"model":"tale:v1"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("delete: %v %v", resp, err)
	}
	resp.Body.Close()
	if st, _ := f.post(t, "/api/show", `{"model":"tale:v1"}`); st != 404 {
		t.Fatalf("show after delete: %d", st)
	}
}

func TestOllamaPullStreamsProgressAsOllama(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	if err := f.s.Remove("stories260K"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(f.srv.URL+"/api/pull", "application/json", strings.NewReader(`{"model":"stories260K"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var statuses []string
	var last struct {
		Digest           string
		Total, Completed int64
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var line struct {
			Status           string `json:"status"`
			Digest           string `json:"digest"`
			Total, Completed int64
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if len(statuses) == 0 || statuses[len(statuses)-1] != line.Status {
			statuses = append(statuses, line.Status)
		}
		if line.Digest != "" {
			last.Digest, last.Total, last.Completed = line.Digest, line.Total, line.Completed
		}
	}
	want := []string{"pulling manifest", "pulling 270cba1bd510", "verifying sha256 digest", "writing manifest", "success"}
	if !reflect.DeepEqual(statuses, want) || last.Digest != "sha256:270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d" || last.Total != 1185376 || last.Completed != 1185376 {
		t.Fatalf("statuses %q, last progress %+v", statuses, last)
	}
	if resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
}

func TestAModelfilesSettingsApplyToOllamaRequestsAsOllamaAppliesThem(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	if _, err := f.s.Create(context.Background(), "brief", strings.NewReader("FROM stories260K\nSYSTEM Be brief.\nPARAMETER num_predict 5\nPARAMETER temperature 0\nMESSAGE user Hi\nMESSAGE assistant Hello\n"), store.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	chat := func(body string) (string, int) {
		st, b := f.post(t, "/api/chat", body)
		if st != 200 {
			t.Fatalf("%d %s", st, b)
		}
		var out struct {
			Message   struct{ Content string } `json:"message"`
			EvalCount int                      `json:"eval_count"`
		}
		json.Unmarshal(b, &out)
		return out.Message.Content, out.EvalCount
	}
	got, n := chat(`{"model":"brief","messages":[{"role":"user","content":"Tell me a story."}],"stream":false}`)
	want, wn := chat(`{"model":"stories260K","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},{"role":"user","content":"Tell me a story."}],"options":{"num_predict":5,"temperature":0},"stream":false}`)
	if got != want || n != 5 || wn != 5 {
		t.Fatalf("brief answered %q (%d tokens); stories260K with the settings spelt out %q (%d)", got, n, want, wn)
	}
	// A request's own option wins over the model's.
	if _, n := chat(`{"model":"brief","messages":[{"role":"user","content":"Tell me a story."}],"options":{"num_predict":2},"stream":false}`); n != 2 {
		t.Fatalf("num_predict 2 gave %d tokens", n)
	}
}

func TestTheModelListsLeaveOutAnUnreadableManifestAndServeTheOthers(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	writeBrokenManifest(t, f.s.Root)
	for _, tc := range []struct {
		path string
		want string // a model the answer lists
	}{
		{"/api/tags", `"name":"tiny:q8_0"`},
		{"/models", `"id":"tiny:q8_0"`},
		{"/v1/models", `"id":"stories260K:latest"`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := http.Get(f.srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), tc.want) || strings.Contains(string(b), "broken") {
				t.Fatalf("GET %s: %d %s; want 200 listing %s and not broken:latest", tc.path, resp.StatusCode, b, tc.want)
			}
		})
	}
}

func TestAWrongMethodOrAnUnknownPathIsAnsweredAsTheSingleModelServerAnswersItWithoutLoadingAModel(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	const llamaNotFound = `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`
	for _, tc := range []struct {
		method, path string
		status       int
		body         string
		allow        string // the Allow header (gin's, on Ollama's 405)
	}{
		{"GET", "/v1/chat/completions", 404, llamaNotFound, ""},
		{"PUT", "/v1/completions", 404, llamaNotFound, ""},
		{"GET", "/completion", 404, llamaNotFound, ""},
		{"GET", "/tokenize", 404, llamaNotFound, ""},
		{"GET", "/v1/embeddings", 404, llamaNotFound, ""},
		{"GET", "/models/load", 404, llamaNotFound, ""},
		{"DELETE", "/health", 404, llamaNotFound, ""},
		{"POST", "/v1/images/generations", 404, llamaNotFound, ""},
		{"GET", "/api/chat", 405, "405 method not allowed", "POST"},
		{"GET", "/api/generate", 405, "405 method not allowed", "POST"},
		{"GET", "/api/pull", 405, "405 method not allowed", "POST"},
		{"POST", "/api/tags", 405, "405 method not allowed", "HEAD, GET"},
		{"GET", "/api/delete", 405, "405 method not allowed", "DELETE"},
		{"GET", "/api/nope", 404, `{"error":"404 page not found"}`, ""},
		{"POST", "/api/push", 404, `{"error":"POST /api/push: bankml serve does not serve this Ollama route (no accounts, pushes, blob uploads or aliases)"}`, ""},
		{"HEAD", "/health", 200, "", ""},
		{"HEAD", "/api/tags", 200, "", ""},
		{"HEAD", "/", 200, "", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, f.srv.URL+tc.path, strings.NewReader(`{"model":"stories260K"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || string(b) != tc.body || resp.Header.Get("Allow") != tc.allow {
				t.Fatalf("%d %q (Allow %q), want %d %q (Allow %q)", resp.StatusCode, b, resp.Header.Get("Allow"), tc.status, tc.body, tc.allow)
			}
			if l := f.r.Loaded(); len(l) != 0 {
				t.Fatalf("loaded %v for a request no route takes", l)
			}
		})
	}
}

// TestTheAPIKeyIsCheckedBeforeRoutingAsOnTheSingleModelServer: with --api-key the store server checks the
// key before it routes (llama-server's pre-routing middleware_validate_api_key, which its router mode shares):
// a request without the key gets llama-server's 401 (under /api/ Ollama's error shape) whatever its path or
// method, the store's own routes included; only /health, /v1/health and / are public.
func TestTheAPIKeyIsCheckedBeforeRoutingAsOnTheSingleModelServer(t *testing.T) {
	f := newFixture(t, storeserve.Options{Serve: serve.Options{APIKey: "k"}})
	const invalid = `{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}`
	const ollamaInvalid = `{"error":"Invalid API Key"}`
	const llamaNotFound = `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`
	for _, tc := range []struct {
		name, method, path, key string
		status                  int
		body                    string
	}{
		{"an unknown path without the key is a 401, not a 404", "GET", "/nope", "", 401, invalid},
		{"a wrong method without the key is a 401, not a 404", "GET", "/v1/chat/completions", "", 401, invalid},
		{"a wrong method under /api/ without the key is Ollama's 401, not its 405", "GET", "/api/chat", "", 401, ollamaInvalid},
		{"an unknown path under /api/ without the key is Ollama's 401", "POST", "/api/push", "", 401, ollamaInvalid},
		{"a model's route without the key is a 401 before any model loads", "POST", "/v1/completions", "", 401, invalid},
		{"the router's model list needs the key", "GET", "/v1/models", "", 401, invalid},
		{"loading a model needs the key", "POST", "/models/load", "", 401, invalid},
		{"the store's tags need the key", "GET", "/api/tags", "", 401, ollamaInvalid},
		{"pulling needs the key", "POST", "/api/pull", "", 401, ollamaInvalid},
		{"deleting needs the key", "DELETE", "/api/delete", "", 401, ollamaInvalid},
		{"a wrong key is a 401", "GET", "/v1/models", "Bearer nope", 401, invalid},
		{"health is public", "GET", "/health", "", 200, `{"status":"ok"}`},
		{"v1 health is public", "GET", "/v1/health", "", 200, `{"status":"ok"}`},
		{"the root is public", "GET", "/", "", 200, "Ollama is running"},
		{"with the key an unknown path is llama-server's 404", "GET", "/nope", "Bearer k", 404, llamaNotFound},
		{"with the key a wrong method is llama-server's 404", "GET", "/v1/chat/completions", "Bearer k", 404, llamaNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, f.srv.URL+tc.path, strings.NewReader(`{"model":"stories260K"}`))
			if err != nil {
				t.Fatal(err)
			}
			if tc.key != "" {
				req.Header.Set("Authorization", tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || string(b) != tc.body {
				t.Fatalf("%s %s: %d %q, want %d %q", tc.method, tc.path, resp.StatusCode, b, tc.status, tc.body)
			}
			if l := f.r.Loaded(); len(l) != 0 {
				t.Fatalf("loaded %v for a request without the key", l)
			}
		})
	}
	if _, err := f.s.Get("stories260K"); err != nil {
		t.Fatalf("the store lost a model to requests without the key: %v", err)
	}
}

// TestTheStoreServerGuardsItsRoutesAsTheSingleModelServer: the store server's own routes are behind the model
// server's guards (serve.Guards, under --cors-origin and --api-key), in its order: a loopback request naming
// another Host (DNS rebinding) and a page of another site get the single-model server's 403 before any key
// check, route or load (nothing is deleted, pulled or loaded); an OPTIONS preflight is answered at once as the
// single-model server answers it; requests without an Origin, from loopback pages and from the extra origins
// still work, a forwarded one carrying the CORS headers once.
func TestTheStoreServerGuardsItsRoutesAsTheSingleModelServer(t *testing.T) {
	o := serve.Options{Threads: 1, APIKey: "k", CORSOrigins: []string{"https://ui.example:3000"}}
	f := newFixture(t, storeserve.Options{Serve: o})
	m, err := admit.Open(testdata.Model(t, "stories260K.gguf"), admit.Options{Pin: admit.AllowUnpinned, Chat: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	single, err := serve.New(m, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { single.Close() })
	singleSrv := httptest.NewServer(single.Handler())
	t.Cleanup(singleSrv.Close)

	const evil = "https://evil.example"
	const body = `{"model":"stories260K","prompt":"Once upon a time","max_tokens":2,"temperature":0}`
	type answer struct {
		status int
		body   string
		header http.Header // the CORS headers and Content-Type
	}
	do := func(t *testing.T, url, method, path, origin, host string, key bool) answer {
		t.Helper()
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if host != "" {
			req.Host = host
		}
		if key {
			req.Header.Set("Authorization", "Bearer k")
		}
		if method == http.MethodOptions {
			req.Header.Set("Access-Control-Request-Method", "POST")
			req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h := http.Header{}
		for _, k := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Access-Control-Allow-Methods", "Access-Control-Allow-Headers", "Vary", "Content-Type"} {
			if v := resp.Header.Values(k); len(v) > 0 {
				h[k] = v
			}
		}
		return answer{resp.StatusCode, string(b), h}
	}
	for _, tc := range []struct {
		name, method, path, origin, host string
		noKey                            bool
		status                           int
		acao                             string // Access-Control-Allow-Origin wanted ("": none)
		body                             string // a part of the body wanted ("": any)
		asSingle                         bool   // the single-model server answers the same status, body and headers
	}{
		{"a cross-origin DELETE /api/delete from another site's page is refused and nothing is deleted", "DELETE", "/api/delete", evil, "", false, 403, "", "", true},
		{"a cross-origin POST /api/pull from another site's page is refused", "POST", "/api/pull", evil, "", false, 403, "", "", true},
		{"a cross-origin POST /models/load from another site's page is refused and nothing loads", "POST", "/models/load", evil, "", false, 403, "", "permission_error", true},
		{"a cross-origin completion from another site's page is refused before its model loads", "POST", "/v1/completions", evil, "", false, 403, "", "--cors-origin", true},
		{"another site's page cannot read the store's model list", "GET", "/v1/models", evil, "", false, 403, "", "permission_error", true},
		{"another site's page is refused before the API key is checked", "GET", "/api/tags", evil, "", true, 403, "", "", true},
		{"another site's preflight is refused", "OPTIONS", "/v1/chat/completions", evil, "", true, 403, "", "permission_error", true},
		{"a request with Host: evil.example to a loopback listener is refused", "GET", "/api/tags", "", "evil.example", false, 403, "", "", true},
		{"a rebound Host cannot delete a model", "DELETE", "/api/delete", "", "evil.example:8080", false, 403, "", "", true},
		{"a rebound Host on a llama-server route is refused with the reason", "POST", "/models/load", "", "evil.example:8080", false, 403, "", "DNS rebinding", true},
		{"a rebound Host is refused before the API key is checked", "GET", "/v1/models", "", "evil.example", true, 403, "", "DNS rebinding", true},
		{"an OPTIONS preflight to /v1/chat/completions answers as the single-model server does", "OPTIONS", "/v1/chat/completions", "http://localhost:5173", "", true, 200, "http://localhost:5173", "", true},
		{"a preflight to a store route is answered before routing", "OPTIONS", "/api/delete", "http://127.0.0.1:3000", "", true, 200, "http://127.0.0.1:3000", "", true},
		{"a preflight from an extra origin is answered", "OPTIONS", "/models/load", "https://ui.example:3000", "", true, 200, "https://ui.example:3000", "", true},
		{"a preflight without an Origin is answered", "OPTIONS", "/v1/models", "", "", true, 200, "", "", true},
		{"a same-origin request (no Origin) lists the store", "GET", "/api/tags", "", "", false, 200, "", "stories260K:latest", false},
		{"a loopback page reads the store's model list", "GET", "/v1/models", "http://localhost:5173", "", false, 200, "http://localhost:5173", "stories260K:latest", false},
		{"an extra origin (--cors-origin) reads the store's tags", "GET", "/api/tags", "https://ui.example:3000", "", false, 200, "https://ui.example:3000", "stories260K:latest", false},
		{"an allowed page still needs the API key", "GET", "/api/tags", "http://localhost:5173", "", true, 401, "http://localhost:5173", "Invalid API Key", true},
		{"localhost may be named on a loopback listener", "GET", "/api/tags", "", "localhost:8080", false, 200, "", "stories260K:latest", false},
		{"the extra origin's host may be named on a loopback listener", "GET", "/api/tags", "", "ui.example:8080", false, 200, "", "stories260K:latest", false},
		{"a loopback page's completion is forwarded and carries the CORS headers once", "POST", "/v1/completions", "http://127.0.0.1:3000", "", false, 200, "http://127.0.0.1:3000", `"text_completion"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.r.Loaded()
			got := do(t, f.srv.URL, tc.method, tc.path, tc.origin, tc.host, !tc.noKey)
			if got.status != tc.status || got.header.Get("Access-Control-Allow-Origin") != tc.acao || !strings.Contains(got.body, tc.body) {
				t.Fatalf("%s %s (Origin %q, Host %q): %d %v %q; want %d, Access-Control-Allow-Origin %q, a body with %q",
					tc.method, tc.path, tc.origin, tc.host, got.status, got.header, got.body, tc.status, tc.acao, tc.body)
			}
			if got.header.Get("Access-Control-Allow-Credentials") != "" {
				t.Fatalf("credentials allowed: %v", got.header)
			}
			if tc.acao != "" && !reflect.DeepEqual(got.header.Values("Vary"), []string{"Origin"}) {
				t.Fatalf("Vary %q, want Origin once", got.header.Values("Vary"))
			}
			if tc.status == 403 {
				if strings.HasPrefix(tc.path, "/api/") && got.body != "" {
					t.Fatalf("under /api/ a refusal is Ollama's bare 403, got %q", got.body)
				}
				if after := f.r.Loaded(); !reflect.DeepEqual(after, before) {
					t.Fatalf("a refused request changed the loaded models from %v to %v", before, after)
				}
			}
			if tc.asSingle {
				if want := do(t, singleSrv.URL, tc.method, tc.path, tc.origin, tc.host, !tc.noKey); !reflect.DeepEqual(got, want) {
					t.Fatalf("store server %+v, single-model server %+v", got, want)
				}
			}
		})
	}
	for _, name := range []string{"stories260K", "tiny:q8_0"} {
		if _, err := f.s.Get(name); err != nil {
			t.Fatalf("the store lost %s to refused requests: %v", name, err)
		}
	}
}

// TestAMalformedCORSOriginIsRefusedByNew: the store server refuses a malformed --cors-origin, naming it, as
// the single-model server does.
func TestAMalformedCORSOriginIsRefusedByNew(t *testing.T) {
	s, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := storeserve.New(storeserve.Options{Store: s, Serve: serve.Options{CORSOrigins: []string{"http://a/b"}}})
	if err == nil {
		r.Close()
		t.Fatal("storeserve.New took the malformed origin http://a/b")
	}
	if !strings.Contains(err.Error(), `"http://a/b"`) {
		t.Fatalf("the error does not name the origin: %v", err)
	}
}

// TestTheStoreServerDropsAStalledBodyAfterItsTimeout: bankml serve without a MODEL runs the store's routes
// on serve.NewHTTPServer, so -to/--timeout bounds each socket read as on the single-model server: a client
// that announces a body and then sends nothing is answered within about the timeout, with "Connection:
// close", and dropped.
func TestTheStoreServerDropsAStalledBodyAfterItsTimeout(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	const d = 300 * time.Millisecond
	hs := serve.NewHTTPServer(f.r.Handler(), d, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	for _, c := range []struct{ name, path string }{
		{"a stalled body to a store route is answered and dropped", "/api/show"},
		{"a stalled body to a model route is answered and dropped", "/v1/chat/completions"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			req := "POST " + c.path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\": "
			if _, err := conn.Write([]byte(req)); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(20 * d))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer within %v: %v", 20*d, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !resp.Close {
				t.Errorf("answer %d %s (close %v); want 400 and Connection: close, as the single-model server", resp.StatusCode, body, resp.Close)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after the answer: %v, want the connection closed (EOF)", err)
			}
		})
	}
}

// TestACacheTypeTheModelsHeadsDoNotFitIsA400BeforeTheFileIsHashed: with -ctk q8_0 (or -ctv q4_0), a model
// whose heads (8 values) are not a multiple of the type's 32-value block cannot run; the request is a 400
// naming the model and the type, refused from the file's header before admission hashes the file (the
// admission is never called), with no server path in the answer, and the next request gets the same answer.
func TestACacheTypeTheModelsHeadsDoNotFitIsA400BeforeTheFileIsHashed(t *testing.T) {
	for _, c := range []struct {
		name, path, body string
		types            model.CacheTypes
		want             string
	}{
		{"an OpenAI chat with -ctk q8_0 is a 400 naming the model and the type", "/v1/chat/completions", `{"model": "stories260K", "messages": [{"role": "user", "content": "hi"}]}`,
			model.CacheTypes{K: gguf.Q8_0}, "model 'stories260K:latest' cannot run with this server's KV cache types (-ctk q8_0 -ctv f16): K cache type q8_0 with block size 32 does not divide n_embd_head_k=8"},
		{"an Ollama generate with -ctv q4_0 is a 400 naming V's type", "/api/generate", `{"model": "tiny:q8_0", "prompt": "hi", "stream": false}`,
			model.CacheTypes{V: gguf.Q4_0}, "model 'tiny:q8_0' cannot run with this server's KV cache types (-ctk f16 -ctv q4_0): V cache type q4_0 with block size 32 does not divide n_embd_head_v=8"},
		{"llama-server's router load is refused the same way", "/models/load", `{"model": "stories260K"}`,
			model.CacheTypes{K: gguf.Q4_0, V: gguf.Q8_0}, "(-ctk q4_0 -ctv q8_0): K cache type q4_0 with block size 32 does not divide n_embd_head_k=8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			admitted := 0
			f := newFixture(t, storeserve.Options{Serve: serve.Options{CacheTypes: c.types}, Admit: func(path, sha string) (*admit.Model, error) {
				admitted++
				return admit.Open(path, admit.Options{Manifest: sha, Pin: admit.RequirePin, Chat: true})
			}})
			for range 2 {
				status, body := f.post(t, c.path, c.body)
				if status != http.StatusBadRequest || !strings.Contains(string(body), c.want) || strings.Contains(string(body), f.s.Root) {
					t.Fatalf("%d %s; want 400 with %q and no path under %s", status, body, c.want, f.s.Root)
				}
			}
			if admitted != 0 || len(f.r.Loaded()) != 0 {
				t.Fatalf("admission ran %d times (the file hashed), loaded %v", admitted, f.r.Loaded())
			}
		})
	}
}

// TestTheStoreServerServesMetricsUnderLlamaServersNamesByModel: GET /metrics answers without naming a model,
// under llama-server's names as the single-model server does (serve.Metrics), each model's series under a
// model label; one completion moves its model's counters, and they stay when the model is unloaded.
func TestTheStoreServerServesMetricsUnderLlamaServersNamesByModel(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	resp, err := http.Get(f.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(f.r.Loaded()) != 0 {
		t.Fatalf("GET /metrics before any model: %d, loaded %v; want 200 and none loaded", resp.StatusCode, f.r.Loaded())
	}
	st, b := f.post(t, "/v1/completions", `{"model":"stories260K","prompt":"Once upon a time","max_tokens":7,"temperature":0}`)
	if st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	var answer struct {
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &answer); err != nil || answer.Usage.CompletionTokens == 0 {
		t.Fatalf("%v: %s", err, b)
	}
	m := string(f.get(t, "/metrics"))
	const model = `{model="stories260K:latest"}`
	for _, want := range []string{
		"# TYPE llamacpp:prompt_tokens_total counter",
		"# TYPE llamacpp:tokens_predicted_seconds_total counter",
		"llamacpp:tokens_predicted_total" + model + " " + strconv.Itoa(answer.Usage.CompletionTokens) + "\n",
		"llamacpp:prompt_tokens_total" + model + " " + strconv.Itoa(answer.Usage.PromptTokens) + "\n",
		// metrics_post_decode's largest slot.prompt.n_tokens(): the last sampled token is never decoded.
		"llamacpp:n_tokens_max" + model + " " + strconv.Itoa(answer.Usage.PromptTokens+answer.Usage.CompletionTokens-1) + "\n",
		"llamacpp:requests_processing" + model + " 0\n",
		"llamacpp:requests_deferred" + model + " 0\n",
		`bankml:http_requests_total{code="200",model="stories260K:latest",route="/v1/completions"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, m)
		}
	}
	if _, err := f.r.Unload("stories260K"); err != nil {
		t.Fatal(err)
	}
	m = string(f.get(t, "/metrics"))
	if want := "llamacpp:tokens_predicted_total" + model + " " + strconv.Itoa(answer.Usage.CompletionTokens) + "\n"; !strings.Contains(m, want) {
		t.Errorf("after the unload /metrics lacks %q:\n%s", want, m)
	}
	if strings.Contains(m, "llamacpp:requests_processing"+model) {
		t.Errorf("after the unload /metrics still reads the unloaded model's slots:\n%s", m)
	}
}

// TestAModelTheStoreLacksIsOllamasNotFoundAndIsNeverPulled: a request naming a model the store does not hold
// is answered as Ollama answers it (404, worded per route, naming the model as the request named it), even
// when the catalog has the model and the mirror serves it: only an explicit pull downloads. A manifest whose
// file is gone is a model not found too, and a manifest that does not read is a 500; no answer names a path
// of the server.
func TestAModelTheStoreLacksIsOllamasNotFoundAndIsNeverPulled(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	if err := f.s.Remove("stories260K"); err != nil { // a catalog model the mirror serves
		t.Fatal(err)
	}
	if _, err := f.s.Copy("tiny:q8_0", "orphan"); err != nil {
		t.Fatal(err)
	}
	orphan, err := f.s.Get("orphan")
	if err != nil {
		t.Fatal(err)
	}
	// orphan's manifest names a file that is gone (tiny:q8_0 keeps its manifest, so it loses its file too).
	if err := os.Remove(f.s.BlobPath(orphan.Model.SHA256)); err != nil {
		t.Fatal(err)
	}
	writeBrokenManifest(t, f.s.Root)
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string // the whole body
	}{
		{"Ollama's chat names the model as the request named it", "/api/chat", `{"model":"stories260K","messages":[{"role":"user","content":"hi"}]}`, 404, `{"error":"model 'stories260K' not found"}`},
		{"Ollama's generate answers the same", "/api/generate", `{"model":"stories260K:latest","prompt":"hi"}`, 404, `{"error":"model 'stories260K:latest' not found"}`},
		{"Ollama's embed answers with its scheduler's words", "/api/embed", `{"model":"stories260K","input":"hi"}`, 404, `{"error":"model \"stories260K\" not found, try pulling it first"}`},
		{"Ollama's legacy embeddings answers the same", "/api/embeddings", `{"model":"stories260K","prompt":"hi"}`, 404, `{"error":"model \"stories260K\" not found, try pulling it first"}`},
		{"an OpenAI chat is a 404 in llama-server's error shape", "/v1/chat/completions", `{"model":"stories260K","messages":[{"role":"user","content":"hi"}]}`, 404, `{"error":{"code":404,"message":"model 'stories260K' not found","type":"not_found_error"}}`},
		{"llama-server's router load does not pull either", "/models/load", `{"model":"stories260K"}`, 404, `{"error":{"code":404,"message":"model 'stories260K' not found","type":"not_found_error"}}`},
		{"a manifest whose file is gone is a model not found", "/api/generate", `{"model":"orphan","prompt":"hi"}`, 404, `{"error":"model 'orphan' not found"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := f.post(t, tc.path, tc.body)
			if st != tc.status || string(b) != tc.want {
				t.Fatalf("%d %s, want %d %s", st, b, tc.status, tc.want)
			}
		})
	}
	t.Run("a manifest that does not read is a 500 naming the model and no path of the server", func(t *testing.T) {
		st, b := f.post(t, "/api/generate", `{"model":"broken","prompt":"hi"}`)
		if st != 500 || !strings.Contains(string(b), "broken:latest") || strings.Contains(string(b), f.s.Root) {
			t.Fatalf("%d %s; want 500 naming broken:latest and not %s", st, b, f.s.Root)
		}
	})
	if _, err := f.s.Get("stories260K"); err == nil {
		t.Fatal("a request pulled stories260K into the store")
	}
	if _, err := os.Stat(f.s.BlobPath("270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d")); err == nil {
		t.Fatal("a request downloaded stories260K's file")
	}
	if l := f.r.Loaded(); len(l) != 0 {
		t.Fatalf("loaded %v", l)
	}
	// An explicit pull still brings it in, and then it answers.
	if st, b := f.post(t, "/api/pull", `{"model":"stories260K","stream":false}`); st != 200 {
		t.Fatalf("pull: %d %s", st, b)
	}
	completion(t, f, "stories260K")
}

// TestAModelRemovedFromTheStoreWhileServedIsNotFoundAndTheOthersKeepAnswering: `bankml rm` (store.Remove)
// of a model the store server has loaded: the other models keep answering, a request for the removed one is
// Ollama's 404 (not a 503), the removed model is unloaded (it was idle), and a model removed while a request
// holds it is unloaded when that request ends (which, its file gone, gets no receipt).
func TestAModelRemovedFromTheStoreWhileServedIsNotFoundAndTheOthersKeepAnswering(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	completion(t, f, "stories260K")
	completion(t, f, "tiny:q8_0")
	if err := f.s.Remove("stories260K"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string // a part of the body
	}{
		{"the removed model is Ollama's 404 on Ollama's chat", "/api/chat", `{"model":"stories260K","messages":[{"role":"user","content":"hi"}],"stream":false}`, 404, `{"error":"model 'stories260K' not found"}`},
		{"the removed model is a 404 on the OpenAI routes", "/v1/completions", `{"model":"stories260K","prompt":"Once","max_tokens":2}`, 404, `"message":"model 'stories260K' not found"`},
		{"another model keeps answering on the OpenAI routes", "/v1/completions", `{"model":"tiny:q8_0","prompt":"Once","max_tokens":2}`, 200, `"text_completion"`},
		{"another model keeps answering on Ollama's routes", "/api/generate", `{"model":"tiny:q8_0","prompt":"Once","options":{"num_predict":2},"stream":false}`, 200, `"done":true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := f.post(t, tc.path, tc.body)
			if st != tc.status || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%d %s, want %d with %s", st, b, tc.status, tc.want)
			}
		})
	}
	if got := f.r.Loaded(); !reflect.DeepEqual(got, []string{"tiny:q8_0"}) {
		t.Fatalf("loaded %v, want only tiny:q8_0 (the removed model unloaded)", got)
	}
	for _, p := range []string{"/health", "/api/tags", "/api/ps", "/v1/models"} {
		resp, err := http.Get(f.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s after the removal: %d", p, resp.StatusCode)
		}
	}

	t.Run("a model removed while a request holds it is unloaded when the request ends", func(t *testing.T) {
		// A streamed answer holds tiny:q8_0 while it is removed.
		resp, err := http.Post(f.srv.URL+"/api/generate", "application/json", strings.NewReader(`{"model":"tiny:q8_0","prompt":"Once","options":{"num_predict":64,"temperature":0}}`))
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadBytes('\n'); err != nil { // the first token: the request holds the model
			t.Fatal(err)
		}
		if err := f.s.Remove("tiny:q8_0"); err != nil {
			t.Fatal(err)
		}
		if st, b := f.post(t, "/api/generate", `{"model":"tiny:q8_0","prompt":"x"}`); st != 404 {
			t.Fatalf("a new request for the removed model: %d %s, want 404", st, b)
		}
		// The answer's file is gone before its receipt: the model server's per-answer re-check refuses the
		// receipt (docs/serve.md, Admission), with an error line that names no server path.
		rest, _ := io.ReadAll(br)
		resp.Body.Close()
		if bytes.Contains(rest, []byte(f.s.Root)) || !bytes.Contains(rest, []byte(`"error":"model file re-check failed: stat of the model file: no such file or directory`)) {
			t.Fatalf("the request in flight ended with %s", rest[bytes.LastIndexByte(rest[:len(rest)-1], '\n')+1:])
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(f.r.Loaded()) != 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := f.r.Loaded(); len(got) != 0 {
			t.Fatalf("loaded %v after the request ended, want none", got)
		}
	})
}

// TestLimitsSayTheEffectiveValuesAndNewRefusesNegativeOnes: the banner's words for the keep-alive and the
// limits are the values in force (0 is "no limit", never a bare 0), and a negative limit is refused by New
// naming it.
func TestLimitsSayTheEffectiveValuesAndNewRefusesNegativeOnes(t *testing.T) {
	s, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		o    storeserve.Options
		want string // Limits(), or the error's text
	}{
		{"the defaults are 5 minutes and no limits", storeserve.Options{}, "keep-alive 5m0s, max models no limit, max memory no limit"},
		{"set limits are said as set", storeserve.Options{KeepAlive: time.Minute, MaxModels: 2, MaxMemory: 1 << 30}, "keep-alive 1m0s, max models 2, max memory 1073741824 bytes"},
		{"keep-alive 0 unloads once idle", storeserve.Options{NoKeepAlive: true}, "keep-alive 0s (unloaded once idle), max models no limit, max memory no limit"},
		{"a negative keep-alive keeps models forever", storeserve.Options{KeepAlive: -1}, "keep-alive forever, max models no limit, max memory no limit"},
		{"a negative max models is refused naming it", storeserve.Options{MaxModels: -1}, "storeserve: max models -1: give 0 (no limit) or a count of models"},
		{"a negative max memory is refused naming it", storeserve.Options{MaxMemory: -5}, "storeserve: max memory -5: give 0 (no limit) or a number of bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.o.Store = s
			r, err := storeserve.New(c.o)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = r.Limits()
				r.Close()
			}
			if got != c.want {
				t.Fatalf("%q, want %q", got, c.want)
			}
		})
	}
}

// TestTheStoreServerLogsOneLinePerRequestNamingItsModel: the store server logs each request once (a request
// forwarded to a model's server is not logged again by it), with method, path, status and, for a model's
// route, the model; never the request's content.
func TestTheStoreServerLogsOneLinePerRequestNamingItsModel(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return buf.Write(p) })
	f := newFixture(t, storeserve.Options{Log: slog.New(slog.NewJSONHandler(w, nil))})
	lines := func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" {
				out = append(out, m)
			}
		}
		return out
	}
	const secret = "PURPLE-ELEPHANT-7"
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		model                    any // the line's model (nil: none)
	}{
		{"a forwarded completion is logged once, naming its model", "POST", "/v1/completions", `{"model":"stories260K","prompt":"` + secret + `","max_tokens":2}`, 200, "stories260K:latest"},
		{"a forwarded Ollama chat names its model", "POST", "/api/chat", `{"model":"tiny:q8_0","messages":[{"role":"user","content":"` + secret + `"}],"stream":false,"options":{"num_predict":2}}`, 200, "tiny:q8_0"},
		{"a model the store lacks is logged as its 404", "POST", "/api/generate", `{"model":"nosuch","prompt":"` + secret + `"}`, 404, nil},
		{"a store route is logged", "GET", "/api/tags", "", 200, nil},
		{"an unknown path is logged", "GET", "/nope", "", 404, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(lines())
			req, _ := http.NewRequest(c.method, f.srv.URL+c.path, strings.NewReader(c.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got := lines()[before:]
			for deadline := time.Now().Add(2 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
				got = lines()[before:]
			}
			if resp.StatusCode != c.status || len(got) != 1 {
				t.Fatalf("%d, %d request lines %v; want %d and one line", resp.StatusCode, len(got), got, c.status)
			}
			if l := got[0]; l["method"] != c.method || l["path"] != c.path || l["status"] != float64(c.status) || l["model"] != c.model {
				t.Fatalf("log line %v; want %s %s %d model %v", l, c.method, c.path, c.status, c.model)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(buf.String(), secret) {
		t.Fatalf("the log holds a request's content:\n%s", buf.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestAModelNamedInAnotherLetterCaseAnswersOnEveryRoute: the store's names compare case-insensitively, as
// Ollama's, on its routes and on the model server it forwards to.
func TestAModelNamedInAnotherLetterCaseAnswersOnEveryRoute(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	for _, c := range []struct{ name, path, body string }{
		{"Ollama's chat", "/api/chat", `{"model":"TINY:Q8_0","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_predict":2}}`},
		{"Ollama's generate", "/api/generate", `{"model":"Stories260k","prompt":"Once","stream":false,"options":{"num_predict":2}}`},
		{"OpenAI completions", "/v1/completions", `{"model":"STORIES260K:LATEST","prompt":"Once","max_tokens":2}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if st, b := f.post(t, c.path, c.body); st != 200 {
				t.Fatalf("%d %s", st, b)
			}
		})
	}
}

// TestANameCopiedOverWhileLoadedAnswersWithItsNewFile: `bankml cp` over a loaded model's name (as a pull of
// another file under it): the next request for the name is answered by the file the manifest now names,
// pinned to its sha256, and the old file's model is unloaded.
func TestANameCopiedOverWhileLoadedAnswersWithItsNewFile(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	sha := func(name string) string {
		st, b := f.post(t, "/v1/completions", `{"model":"`+name+`","prompt":"Once","max_tokens":2}`)
		if st != 200 {
			t.Fatalf("%s: %d %s", name, st, b)
		}
		var out struct {
			Receipt struct {
				ModelSHA256 string `json:"model_sha256"`
			} `json:"bankml_receipt"`
		}
		json.Unmarshal(b, &out)
		return out.Receipt.ModelSHA256
	}
	const stories, q8 = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d", "ff8701a45da28293b7af11a695ab33575b692e9b109a2eae6238c906c31415da"
	if got := sha("stories260K"); got != stories {
		t.Fatalf("before: %s", got)
	}
	if _, err := f.s.Copy("tiny:q8_0", "stories260K"); err != nil {
		t.Fatal(err)
	}
	if got := sha("stories260K"); got != q8 {
		t.Fatalf("after the copy stories260K answered with the file %s, want %s", got, q8)
	}
	if got := f.r.Loaded(); !reflect.DeepEqual(got, []string{"stories260K:latest"}) {
		t.Fatalf("loaded %v", got)
	}
}

// writeBrokenManifest writes the store at root a manifest broken:latest that does not parse.
func writeBrokenManifest(t *testing.T, root string) {
	t.Helper()
	p := root + "/manifests/broken/latest.json"
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"schema":1,`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestABodyThatDoesNotDecodeIsA400AndUnloadsNothing: a keep_alive or messages Ollama would refuse is a 400
// naming the fault; a partial decode must not read as the unload request (keep_alive 0, no messages).
func TestABodyThatDoesNotDecodeIsA400AndUnloadsNothing(t *testing.T) {
	f := newFixture(t, storeserve.Options{KeepAlive: -1})
	if st, b := f.post(t, "/api/generate", `{"model":"stories260K","prompt":"Once","options":{"num_predict":1},"stream":false}`); st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	for _, tc := range []struct{ name, path, body, want string }{
		{"a keep_alive that is no duration", "/api/chat", `{"model":"stories260K","keep_alive":"abc","messages":[{"role":"user","content":"Hi"}],"stream":false}`, `invalid duration`},
		{"keep_alive 0 with messages that are no list", "/api/chat", `{"model":"stories260K","keep_alive":0,"messages":"notalist"}`, `invalid request`},
		{"keep_alive 0 with a prompt that is no string", "/api/generate", `{"model":"stories260K","keep_alive":0,"prompt":5}`, `invalid request`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := f.post(t, tc.path, tc.body)
			if st != http.StatusBadRequest || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%d %s, want 400 with %q", st, b, tc.want)
			}
			if got := f.r.Loaded(); len(got) != 1 {
				t.Fatalf("loaded after the refusal: %v, want stories260K still loaded", got)
			}
		})
	}
}

// TestAClientPullsAndCreatesByModelNameOnly: POST /api/pull and /api/create's "from" take model names; a
// file of the server, a URL or a name with a line break (a second Modelfile command) is a 400 that stores
// nothing and says nothing of the server's files.
func TestAClientPullsAndCreatesByModelNameOnly(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	file := f.models + "/stories260K.gguf"
	for _, tc := range []struct{ name, path, body string }{
		{"a pull of a file on the server", "/api/pull", `{"model":"` + file + `","stream":false}`},
		{"a pull of /etc/passwd", "/api/pull", `{"model":"/etc/passwd","stream":false}`},
		{"a pull of a relative .gguf", "/api/pull", `{"model":"my.gguf","stream":false}`},
		{"a pull of a URL", "/api/pull", `{"model":"http://127.0.0.1:1/x.gguf","stream":false}`},
		{"a pull of an hf:// address", "/api/pull", `{"model":"hf://a/b/c.gguf","stream":false}`},
		{"a create from a file on the server", "/api/create", `{"model":"x","from":"` + file + `","stream":false}`},
		{"a create whose from smuggles a second command", "/api/create", `{"model":"x","from":"stories260K\nADAPTER /etc/passwd","stream":false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := f.s.List()
			if err != nil {
				t.Fatal(err)
			}
			st, b := f.post(t, tc.path, tc.body)
			if st != http.StatusBadRequest || !bytes.Contains(b, []byte("is no model name")) || bytes.Contains(b, []byte("passwd is not")) {
				t.Fatalf("%d %s, want 400 'is no model name'", st, b)
			}
			after, err := f.s.List()
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(before) {
				t.Fatalf("the store went from %d to %d models", len(before), len(after))
			}
		})
	}
}

// TestAPullErrorNamesNoMirrorFolder: a catalog model the mirror folder lacks is refused without the folder's
// path in the body (it is a path of the server, like the store's).
func TestAPullErrorNamesNoMirrorFolder(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	st, b := f.post(t, "/api/pull", `{"model":"bonsai:1.7b","stream":false}`)
	if st == http.StatusOK || !bytes.Contains(b, []byte(`has no Bonsai`)) || bytes.Contains(b, []byte(f.models)) {
		t.Fatalf("%d %s: want the mirror's refusal without %s", st, b, f.models)
	}
}

// TestAModelLargerThanMaxMemoryIsNoRetryableBusy: a model whose file alone exceeds --max-memory can never be
// loaded: a 500 naming both sizes, not the 503 that invites a retry.
func TestAModelLargerThanMaxMemoryIsNoRetryableBusy(t *testing.T) {
	f := newFixture(t, storeserve.Options{MaxMemory: 1_000_000})
	st, b := f.post(t, "/api/generate", `{"model":"stories260K","prompt":"Once","options":{"num_predict":1},"stream":false}`)
	if st != http.StatusInternalServerError || !bytes.Contains(b, []byte("exceed this server's --max-memory of 1000000 bytes")) {
		t.Fatalf("%d %s; want 500 naming --max-memory", st, b)
	}
}

// TestALoadWaitsForTheBusyModelItMustEvictAsOllamasScheduler: with --max-models 1 and the one loaded model
// busy, a request for another model waits (Ollama's scheduler: no 503) while the busy model drains — a new
// request for it queues behind the load — and is answered once the busy model's last request ends; a waiting
// request whose client gives up leaves the busy model taking requests again.
func TestALoadWaitsForTheBusyModelItMustEvictAsOllamasScheduler(t *testing.T) {
	f := newFixture(t, storeserve.Options{MaxModels: 1})
	type result struct {
		st   int
		body string
	}
	post := func(ctx context.Context, model string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			body := `{"model":"` + model + `","prompt":"Once","stream":false,"options":{"num_predict":2}}`
			req, _ := http.NewRequestWithContext(ctx, "POST", f.srv.URL+"/api/generate", strings.NewReader(body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				ch <- result{0, err.Error()}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ch <- result{resp.StatusCode, string(b)}
		}()
		return ch
	}
	pending := func(t *testing.T, name string, ch <-chan result) {
		t.Helper()
		select {
		case r := <-ch:
			t.Fatalf("%s answered %d %s while the loaded model was busy, want it to wait", name, r.st, r.body)
		case <-time.After(300 * time.Millisecond):
		}
	}
	answered := func(t *testing.T, name string, ch <-chan result) {
		t.Helper()
		select {
		case r := <-ch:
			if r.st != 200 {
				t.Fatalf("%s: %d %s", name, r.st, r.body)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no answer 20 s after the busy model's request ended", name)
		}
	}

	t.Run("the other model waits and the busy one's new requests queue behind it", func(t *testing.T) {
		release, err := f.r.Hold(context.Background(), "tiny:q8_0")
		if err != nil {
			t.Fatal(err)
		}
		other := post(context.Background(), "stories260K")
		pending(t, "stories260K", other)
		same := post(context.Background(), "tiny:q8_0")
		pending(t, "a new request for the draining model", same)
		release()
		answered(t, "stories260K", other)
		answered(t, "the new request for the drained model", same)
		if got := f.r.Loaded(); !reflect.DeepEqual(got, []string{"tiny:q8_0"}) {
			t.Fatalf("loaded %v, want tiny:q8_0 (loaded again for the queued request)", got)
		}
	})

	t.Run("a waiting request whose client gives up leaves the busy model taking requests", func(t *testing.T) {
		release, err := f.r.Hold(context.Background(), "tiny:q8_0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		select {
		case r := <-post(ctx, "stories260K"):
			if r.st != 0 {
				t.Fatalf("the request answered %d %s before its client gave up", r.st, r.body)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the client's deadline did not end the wait")
		}
		answered(t, "tiny:q8_0 while held, after the waiting request gave up", post(context.Background(), "tiny:q8_0"))
		release()
		if got := f.r.Loaded(); !reflect.DeepEqual(got, []string{"tiny:q8_0"}) {
			t.Fatalf("loaded %v, want tiny:q8_0 still", got)
		}
	})
}

// TestAModelWhoseManifestDoesNotReadIsTheSame500OnEveryRoute: the store server looks every model up one way, so a
// manifest that does not read is the same server-side error wherever a request names its model (Ollama's show,
// copy, chat and generate, the OpenAI routes): a 500 naming the model and no path of the server, where /api/show
// and /api/copy answered 404 as for a model the store lacks. A model the store lacks is still Ollama's 404 on
// each, and a name that is no model name the 400 Ollama's show gives it. DELETE /api/delete of the broken name
// removes the manifest, as `bankml rm` mends it, and the name is a 404 from then on.
func TestAModelWhoseManifestDoesNotReadIsTheSame500OnEveryRoute(t *testing.T) {
	f := newFixture(t, storeserve.Options{})
	writeBrokenManifest(t, f.s.Root)
	st, b := f.post(t, "/api/chat", `{"model":"broken","messages":[{"role":"user","content":"hi"}]}`)
	var chat struct{ Error string }
	if err := json.Unmarshal(b, &chat); err != nil || st != 500 || !strings.HasPrefix(chat.Error, "model 'broken:latest': its manifest does not read: ") || strings.Contains(chat.Error, f.s.Root) {
		t.Fatalf("/api/chat: %d %s; want a 500 naming broken:latest and not %s", st, b, f.s.Root)
	}
	ollama, _ := json.Marshal(map[string]string{"error": chat.Error})
	openai, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 500, "message": chat.Error, "type": "server_error"}})
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string // the whole body
	}{
		{"Ollama's show of the broken model is chat's 500", "/api/show", `{"model":"broken"}`, 500, string(ollama)},
		{"Ollama's show names it by its tag too", "/api/show", `{"model":"broken:latest"}`, 500, string(ollama)},
		{"Ollama's copy from the broken model is chat's 500", "/api/copy", `{"source":"broken","destination":"copy"}`, 500, string(ollama)},
		{"Ollama's generate is chat's 500", "/api/generate", `{"model":"broken","prompt":"hi"}`, 500, string(ollama)},
		{"an OpenAI chat is the 500 in llama-server's shape", "/v1/chat/completions", `{"model":"broken","messages":[{"role":"user","content":"hi"}]}`, 500, string(openai)},
		{"Ollama's show of a model the store lacks is still its 404", "/api/show", `{"model":"nosuch"}`, 404, `{"error":"model 'nosuch' not found"}`},
		{"Ollama's copy from a model the store lacks is still its 404", "/api/copy", `{"source":"nosuch","destination":"copy"}`, 404, `{"error":"model 'nosuch' not found"}`},
		{"Ollama's show of no model name is a 400, as Ollama's", "/api/show", `{"model":"a/b"}`, 400,
			`{"error":"model name \"a/b\": a name is letters, digits, '.', '_' and '-' (at most 80, starting with a letter or digit)"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := f.post(t, tc.path, tc.body)
			if st != tc.status || string(b) != tc.want {
				t.Fatalf("%d %s, want %d %s", st, b, tc.status, tc.want)
			}
		})
	}
	t.Run("DELETE /api/delete of the broken model removes its manifest", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodDelete, f.srv.URL+"/api/delete", strings.NewReader(`{"model":"broken"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s, want 200", resp.StatusCode, b)
		}
		if st, b := f.post(t, "/api/show", `{"model":"broken"}`); st != 404 {
			t.Fatalf("/api/show after the delete: %d %s, want 404", st, b)
		}
	})
}

// TestLoadsWaitingForRoomDoNotWaitOnOneAnother: with --max-models 1 and nothing loaded, requests for two models
// at once are answered one after the other; a load still waiting for room did not count as holding it, where
// each waited on the other and neither loaded until its client gave up.
func TestLoadsWaitingForRoomDoNotWaitOnOneAnother(t *testing.T) {
	f := newFixture(t, storeserve.Options{MaxModels: 1, NoKeepAlive: true})
	for round := range 6 {
		var wg sync.WaitGroup
		errs := make(chan string, 2)
		for _, m := range []string{"stories260K", "tiny:q8_0"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				body := `{"model":"` + m + `","prompt":"Once","stream":false,"options":{"num_predict":2}}`
				req, _ := http.NewRequestWithContext(ctx, "POST", f.srv.URL+"/api/generate", strings.NewReader(body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- fmt.Sprintf("round %d, %s: %v", round, m, err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Sprintf("round %d, %s: %d %s", round, m, resp.StatusCode, b)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	}
}
