package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/admit"
	"github.com/bankml/bankml/serve"
	"github.com/bankml/bankml/store"
	"github.com/bankml/bankml/storeserve"
)

// TestRunAppliesAStoredModelsModelfileAsServeDoes: `bankml run NAME` of a model made by `bankml create NAME -f
// Modelfile` takes the Modelfile's PARAMETERs (stop, num_predict, num_ctx, temperature, seed, ...) and, with
// --chat, its SYSTEM and MESSAGEs, exactly as bankml serve's Ollama API applies them beneath a request's
// options (serve.ModelDefaults), and the flags given on the command line override them one by one, as a
// request's options do: each run prints the text serve answers for the same request, whose options spell out
// run's own defaults where the Modelfile sets nothing (Ollama's differ) and the flags given.
func TestRunAppliesAStoredModelsModelfileAsServeDoes(t *testing.T) {
	dir, models := storeEnv(t)
	t.Setenv("BANKML_MIRROR", models)
	write := func(name, text string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, mf := range map[string]string{
		"lily": "FROM stories260K\nPARAMETER stop \"Lily\"\nPARAMETER num_predict 40\nPARAMETER num_ctx 256\nSYSTEM You tell short stories.\n",
		"warm": "FROM stories260K\nPARAMETER temperature 0.9\nPARAMETER seed 42\nPARAMETER top_k 20\nPARAMETER num_predict 24\n" +
			"MESSAGE user Hello\nMESSAGE assistant Once upon a time\n",
		"short": "FROM stories260K\nPARAMETER num_ctx 200\nPARAMETER repeat_last_n -1\nPARAMETER repeat_penalty 1.3\n",
	} {
		if code, _, e := bankml(t, "create", name, "-f", write(name+".Modelfile", mf)); code != 0 {
			t.Fatalf("create %s: %d %s", name, code, e)
		}
	}
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	servers := map[string]string{} // model -> URL of a serve of it, as bankml serve NAME serves it
	for _, name := range []string{"lily", "warm", "short"} {
		man, err := st.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := admit.Open(st.BlobPath(man.Model.SHA256), admit.Options{Manifest: man.Model.SHA256, Chat: true})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		s, err := serve.New(m, serve.Options{Threads: 1, Version: "test", Alias: []string{man.Ref()}, Defaults: storeserve.Defaults(man)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ts := httptest.NewServer(s.Handler())
		defer ts.Close()
		servers[name] = ts.URL
	}
	// run's defaults where Ollama's differ (temperature 0.8, top_p 0.9, min_p 0, repeat_penalty 1.1): a request
	// spells them out unless the Modelfile (or a flag) sets them.
	runDefaults := map[string]any{"temperature": 0, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1}
	long := strings.Repeat("Once upon a time there was a girl. ", 30) // over 256 tokens, under 512
	for _, c := range []struct {
		name    string
		model   string
		args    []string       // run's, after MODEL
		options map[string]any // the request's, over runDefaults; a nil value drops the default
		chat    []map[string]string
		code    int    // run's exit status; not 0: serve answers 400 too
		err     string // then in run's standard error
	}{
		{name: "a plain run stops at the Modelfile's stop within its num_predict", model: "lily", args: []string{"-p", "Once upon a time"}},
		{name: "a chat takes the Modelfile's SYSTEM", model: "lily", args: []string{"--chat", "-st", "-p", "Tell me a story"},
			chat: []map[string]string{{"role": "user", "content": "Tell me a story"}}},
		{name: "--system replaces the Modelfile's SYSTEM", model: "lily", args: []string{"--chat", "-st", "--system", "Be brief.", "-p", "Tell me a story"},
			chat: []map[string]string{{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Tell me a story"}}},
		{name: "-n overrides num_predict", model: "lily", args: []string{"-p", "Once upon a time", "-n", "5"}, options: map[string]any{"num_predict": 5}},
		{name: "-r overrides stop", model: "lily", args: []string{"-p", "Once upon a time", "-r", "park"}, options: map[string]any{"stop": []string{"park"}}},
		{name: "num_ctx bounds prompt and answer", model: "lily", args: []string{"-p", "Once upon a time", "-n", "-1", "-r", "zebra"},
			options: map[string]any{"num_predict": -1, "stop": []string{"zebra"}}},
		{name: "num_ctx refuses a longer prompt", model: "lily", args: []string{"-p", long}, code: 1, err: "num_ctx"},
		{name: "-c overrides num_ctx", model: "lily", args: []string{"-p", long, "-c", "512"}, options: map[string]any{"num_ctx": 512}},
		{name: "temperature, seed and top_k draw as serve draws", model: "warm", args: []string{"-p", "Once upon a time"},
			options: map[string]any{"temperature": nil}},
		{name: "--temp and -s override temperature and seed", model: "warm", args: []string{"-p", "Once upon a time", "--temp", "0.5", "-s", "7"},
			options: map[string]any{"temperature": 0.5, "seed": 7}},
		{name: "a chat takes the Modelfile's MESSAGEs", model: "warm", args: []string{"--chat", "-st", "-p", "Tell me more"},
			options: map[string]any{"temperature": nil}, chat: []map[string]string{{"role": "user", "content": "Tell me more"}}},
		{name: "repeat_last_n -1 is num_ctx", model: "short", args: []string{"-p", "Once upon a time", "-n", "-1"},
			options: map[string]any{"num_predict": -1, "repeat_penalty": nil}},
		{name: "--repeat-last-n overrides repeat_last_n", model: "short", args: []string{"-p", "Once upon a time", "-n", "-1", "--repeat-last-n", "8"},
			options: map[string]any{"num_predict": -1, "repeat_penalty": nil, "repeat_last_n": 8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := map[string]any{}
			for k, v := range runDefaults {
				opts[k] = v
			}
			for k, v := range c.options {
				if v == nil {
					delete(opts, k)
				} else {
					opts[k] = v
				}
			}
			body := map[string]any{"model": c.model + ":latest", "stream": false, "options": opts}
			route := "/api/generate"
			if c.chat != nil {
				route, body["messages"] = "/api/chat", c.chat
			} else {
				body["prompt"], body["raw"] = c.args[1], true
			}
			b, _ := json.Marshal(body)
			resp, err := http.Post(servers[c.model]+route, "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			var a struct {
				Response string
				Message  struct{ Content string }
				Error    string
			}
			err = json.NewDecoder(resp.Body).Decode(&a)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			args := append([]string{"run", c.model, "-t", "1"}, c.args...)
			if c.chat == nil {
				args = append(args, "--no-display-prompt")
			}
			code, stdout, stderr := bankml(t, args...)
			if c.code != 0 {
				if resp.StatusCode != 400 || code != c.code || !strings.Contains(stderr, c.err) {
					t.Fatalf("serve: %d %q; run: exit %d, stderr %s; want 400 and exit %d naming %q", resp.StatusCode, a.Error, code, stderr, c.code, c.err)
				}
				return
			}
			if resp.StatusCode != 200 {
				t.Fatalf("serve: %d %s", resp.StatusCode, a.Error)
			}
			want := a.Response + "\n"
			if c.chat != nil {
				want = a.Message.Content
				if want != "" && !strings.HasSuffix(want, "\n") {
					want += "\n"
				}
			}
			if code != 0 || stdout != want {
				t.Fatalf("bankml %s: exit %d, printed\n%q\nserve answers\n%q\nstderr: %s", strings.Join(args, " "), code, stdout, want, stderr)
			}
		})
	}
}
