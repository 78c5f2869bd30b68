package serve

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestModelNames checks how -a/--alias values become the served name and the alias set, as arg.cpp:3007
// collects them (string_strip, empty ones skipped, a std::set) and server-context.cpp:1372 picks the name.
func TestModelNames(t *testing.T) {
	for _, c := range []struct {
		alias   []string
		name    string
		aliases []string
	}{
		{nil, "f.gguf", []string{}},
		{[]string{"", " \t"}, "f.gguf", []string{}},
		{[]string{"zeta", " alpha ", "zeta"}, "alpha", []string{"alpha", "zeta"}},
		{[]string{"B", "a"}, "B", []string{"B", "a"}},         // std::set orders by bytes: "B" < "a"
		{[]string{"\u00a0x"}, "\u00a0x", []string{"\u00a0x"}}, // std::isspace strips ASCII white space only
	} {
		name, aliases := modelNames("f.gguf", c.alias)
		if name != c.name || !slices.Equal(aliases, c.aliases) {
			t.Errorf("modelNames(%q) = %q, %q; want %q, %q", c.alias, name, aliases, c.name, c.aliases)
		}
	}
}

// TestAlias serves stories260K with -a and checks that the first alias is the name in every place
// llama-server puts its model_name (/v1/models, /props, the answers' "model"), that /v1/models lists the
// aliases, and that Ollama's API lists the name and takes the file's name and every alias.
func TestAlias(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Alias: []string{"tiny", "stories:260k"}})
	const want = "stories:260k" // the set's first
	field := func(path string, body []byte, get func(map[string]any) any) any {
		t.Helper()
		var st int
		var b []byte
		if body == nil {
			st, b = ts.get(t, path)
		} else {
			st, b = ts.post(t, path, body)
		}
		if st != 200 {
			t.Fatalf("%s: %d %s", path, st, b)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return get(m)
	}
	first := func(key string) func(map[string]any) any {
		return func(m map[string]any) any { return m[key].([]any)[0].(map[string]any) }
	}
	for _, c := range []struct {
		what string
		path string
		body []byte
		get  func(map[string]any) any
		want any
	}{
		{"/v1/models data[0].id", "/v1/models", nil, func(m map[string]any) any { return first("data")(m).(map[string]any)["id"] }, want},
		{"/v1/models data[0].aliases", "/v1/models", nil, func(m map[string]any) any { return first("data")(m).(map[string]any)["aliases"] }, []any{"stories:260k", "tiny"}},
		{"/v1/models models[0].name", "/v1/models", nil, func(m map[string]any) any { return first("models")(m).(map[string]any)["name"] }, want},
		{"/props model_alias", "/props", nil, func(m map[string]any) any { return m["model_alias"] }, want},
		{"/v1/completions model", "/v1/completions", []byte(`{"prompt":"x","max_tokens":1}`), func(m map[string]any) any { return m["model"] }, want},
		{"/v1/chat/completions model", "/v1/chat/completions", []byte(`{"model":"other","messages":[{"role":"user","content":"x"}],"max_tokens":1}`), func(m map[string]any) any { return m["model"] }, want},
		{"/completion model", "/completion", []byte(`{"prompt":"x","n_predict":1}`), func(m map[string]any) any { return m["model"] }, want},
		{"/api/tags models[0].name", "/api/tags", nil, func(m map[string]any) any { return first("models")(m).(map[string]any)["name"] }, want},
		{"/api/generate by file name", "/api/generate", []byte(`{"model":"stories260K.gguf","prompt":"x","stream":false,"options":{"num_predict":1}}`), func(m map[string]any) any { return m["model"] }, "stories260K.gguf"},
		{"/api/generate by alias", "/api/generate", []byte(`{"model":"tiny:latest","prompt":"x","stream":false,"options":{"num_predict":1}}`), func(m map[string]any) any { return m["model"] }, "tiny:latest"},
	} {
		t.Run(c.what, func(t *testing.T) {
			got := field(c.path, c.body, c.get)
			if g, _ := json.Marshal(got); string(g) != string(mustJSON(t, c.want)) {
				t.Errorf("%s = %s, want %s", c.what, g, mustJSON(t, c.want))
			}
		})
	}
	if st, b := ts.post(t, "/api/generate", []byte(`{"model":"other","prompt":"x","stream":false}`)); st != 404 {
		t.Errorf("/api/generate naming another model: %d %s, want 404", st, b)
	}
}

// TestOllamaModelNameTags checks the names /api/chat and /api/generate accept: a served name or alias,
// with Ollama's default tag ":latest" filled in only for a name without a tag (as Ollama's ParseName fills
// it), so "my-model:v2:latest" is not "my-model:v2" (404) while "tiny" and "tiny:latest" are the same; letter
// case does not count, as in Ollama (the store server loads "TINY:Q8_0" as tiny:q8_0 and its model server must
// take the name).
func TestOllamaModelNameTags(t *testing.T) {
	a := &ollamaAPI{model: ollamaModel{Name: "stories260K.gguf", Names: []string{"stories260K.gguf", "my-model:v2", "tiny", "ns/base:latest"}}}
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"stories260K.gguf", true},
		{"stories260K.gguf:latest", true},
		{"tiny", true},
		{"tiny:latest", true},
		{"tiny:v1", false},
		{"my-model:v2", true},
		{"my-model:v2:latest", false},
		{"my-model", false},
		{"my-model:latest", false},
		{"ns/base", true},
		{"ns/base:latest", true},
		{"ns/base:v2", false},
		{"other", false},
		{"STORIES260K.GGUF", true},
		{"Tiny:LATEST", true},
		{"MY-MODEL:V2", true},
		{"NS/Base", true},
		{"TINY:V1", false},
	} {
		rec := httptest.NewRecorder()
		if got := a.modelName(rec, c.name); got != c.ok {
			t.Errorf("%q: accepted %v, want %v (%d %s)", c.name, got, c.ok, rec.Code, rec.Body)
		} else if !got && rec.Code != 404 {
			t.Errorf("%q: %d, want 404", c.name, rec.Code)
		}
	}
}
