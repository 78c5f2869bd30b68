package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/bankml/bankml/sample"
)

// decodeOptions decodes an options object as the handlers receive it (inside
// api.ChatRequest / api.GenerateRequest: map[string]any).
func decodeOptions(t *testing.T, js string) map[string]any {
	t.Helper()
	var req api.GenerateRequest
	if err := json.Unmarshal([]byte(`{"model":"m","options":`+js+`}`), &req); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return req.Options
}

// TestOllamaDefaultsAreOllamas checks the defaults against Ollama's own
// api.DefaultOptions (the specification of what a client gets without
// options).
func TestOllamaDefaultsAreOllamas(t *testing.T) {
	d := api.DefaultOptions()
	s, err := parseOllamaOptions(nil, sample.DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	checkMapped(t, "defaults", s, d)
	if s.NumCtx != 0 {
		t.Errorf("num_ctx %d, want 0 (the server's)", s.NumCtx)
	}
}

// checkMapped compares the settings with Ollama's parse of the same options.
func checkMapped(t *testing.T, name string, s ollamaSettings, o api.Options) {
	t.Helper()
	p := s.Sampling
	seed := uint32(o.Seed)
	wantPredict := o.NumPredict
	if wantPredict <= 0 {
		wantPredict = -1
	}
	for _, c := range []struct {
		field     string
		got, want any
	}{
		{"temperature", p.Temp, max(0, o.Temperature)},
		{"top_k", p.TopK, int32(max(0, o.TopK))},
		{"top_p", p.TopP, max(0, min(1, o.TopP))},
		{"min_p", p.MinP, max(0, min(1, o.MinP))},
		{"typical_p", p.TypicalP, o.TypicalP},
		{"repeat_penalty", p.PenaltyRepeat, o.RepeatPenalty},
		{"repeat_last_n", p.PenaltyLastN, int32(o.RepeatLastN)},
		{"presence_penalty", p.PenaltyPresent, o.PresencePenalty},
		{"frequency_penalty", p.PenaltyFreq, o.FrequencyPenalty},
		{"seed", p.Seed, seed},
		{"num_predict", s.NPredict, wantPredict},
		{"stop", strings.Join(s.Stop, "\x00"), strings.Join(o.Stop, "\x00")},
	} {
		if c.got != c.want {
			t.Errorf("%s: %s = %v, want %v", name, c.field, c.got, c.want)
		}
	}
}

// TestOllamaOptionsMapAsOllamaReadsThem maps option objects and compares
// every mapped field with api.Options.FromMap's reading of the same object
// (Ollama's own parser) on top of api.DefaultOptions.
func TestOllamaOptionsMapAsOllamaReadsThem(t *testing.T) {
	for _, js := range []string{
		`{}`,
		`{"temperature":0}`,
		`{"temperature":1.5,"top_k":1,"top_p":0.5,"min_p":0.1,"typical_p":0.7}`,
		`{"repeat_penalty":1.3,"repeat_last_n":16,"presence_penalty":0.5,"frequency_penalty":-0.25}`,
		`{"seed":42,"num_predict":7,"stop":["\n\n","END"]}`,
		`{"seed":-1,"num_predict":-1}`,
		`{"num_predict":-2,"top_k":128,"top_p":1}`,
		`{"seed":4294967294,"top_k":0,"min_p":0}`,
		`{"temperature":null,"seed":3}`,
		`{"num_keep":5,"num_gpu":0,"main_gpu":0,"use_mmap":true,"mirostat":0,"tfs_z":1,"mirostat_tau":5,"mirostat_eta":0.1,"penalize_newline":true}`,
		`{"num_thread":4,"num_batch":512,"num_ctx":2048,"num_gpu":-1,"use_mmap":false,"temperature":0.2}`,
		`{"mirostat":2,"tfs_z":0.5,"temprature":0.1,"rope_frequency_base":10000,"use_mlock":"x","top_k":7}`,
		`{"top_k":40.5,"num_predict":3.9,"repeat_last_n":-0.5,"seed":7.99}`,
	} {
		opts := decodeOptions(t, js)
		s, err := parseOllamaOptions(opts, sample.DefaultParams())
		if err != nil {
			t.Errorf("%s: %v", js, err)
			continue
		}
		o := api.DefaultOptions()
		if err := o.FromMap(opts); err != nil {
			t.Fatalf("%s: Ollama refuses it: %v", js, err)
		}
		checkMapped(t, js, s, o)
	}
}

// TestOllamaOptionsKeepTheServersOtherParams: what Ollama does not name
// stays the server's (llama-server's sampler order, DRY, XTC, ...).
func TestOllamaOptionsKeepTheServersOtherParams(t *testing.T) {
	base := sample.DefaultParams()
	base.DryMultiplier = 0.8
	base.XTCProbability = 0.5
	base.Samplers = []sample.Type{sample.TopK, sample.Temperature}
	s, err := parseOllamaOptions(decodeOptions(t, `{"top_k":3}`), base)
	if err != nil {
		t.Fatal(err)
	}
	if s.Sampling.DryMultiplier != 0.8 || s.Sampling.XTCProbability != 0.5 || len(s.Sampling.Samplers) != 2 {
		t.Errorf("server params not kept: %+v", s.Sampling)
	}
}

// TestOllamaNumCtx: num_ctx as Ollama's scheduler takes it (below 4 is 4,
// server/sched.go:110), its fraction dropped as api.Options.FromMap drops it.
func TestOllamaNumCtx(t *testing.T) {
	for _, c := range []struct {
		js   string
		want int
	}{
		{`{}`, 0}, {`{"num_ctx":null}`, 0}, {`{"num_ctx":256}`, 256}, {`{"num_ctx":100.7}`, 100},
		{`{"num_ctx":3}`, 4}, {`{"num_ctx":0}`, 4}, {`{"num_ctx":-5}`, 4},
	} {
		s, err := parseOllamaOptions(decodeOptions(t, c.js), sample.DefaultParams())
		if err != nil || s.NumCtx != c.want {
			t.Errorf("%s: num_ctx %d (%v), want %d", c.js, s.NumCtx, err, c.want)
		}
	}
}

// TestOllamaRepeatLastNIsNumCtx checks repeat_last_n -1, which Ollama defines as num_ctx (docs/modelfile.md:
// "-1 = num_ctx"): the request's num_ctx when given (one past the slot's context is the slot's), else the slot's
// context; other values are kept, and an end-to-end request with it is answered.
func TestOllamaRepeatLastNIsNumCtx(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{NCtx: 512})
	a := &ollamaAPI{s: ts.Server}
	for _, c := range []struct {
		js   string
		want int32
	}{
		{`{"repeat_last_n":-1}`, 512},
		{`{"repeat_last_n":-1,"num_ctx":300}`, 300},
		{`{"repeat_last_n":-1,"num_ctx":2}`, 4},
		{`{"repeat_last_n":-1,"num_ctx":512}`, 512},
		{`{"repeat_last_n":-1,"num_ctx":8192}`, 512}, // clamped to the slot's context, as Ollama clamps it
		{`{"repeat_last_n":-1.5}`, 512},              // the fraction dropped toward zero, as FromMap drops it
		{`{"repeat_last_n":0}`, 0},
		{`{"repeat_last_n":16,"num_ctx":300}`, 16},
		{`{}`, 64},
	} {
		rec := httptest.NewRecorder()
		s, ok := a.settings(rec, decodeOptions(t, c.js))
		if !ok {
			t.Errorf("%s: refused: %s", c.js, rec.Body)
			continue
		}
		if s.Sampling.PenaltyLastN != c.want {
			t.Errorf("%s: repeat_last_n %d, want %d", c.js, s.Sampling.PenaltyLastN, c.want)
		}
	}
	body := `{"model":"stories260K.gguf","stream":false,"prompt":"x","options":{"num_predict":2,"repeat_last_n":-1,"repeat_penalty":1.5}}`
	if st, b := ts.post(t, "/api/generate", []byte(body)); st != 200 {
		t.Errorf("%s: %d %s, want 200", body, st, b)
	}
}

// TestOllamaOptionsIgnored: the options Ollama accepts but bankml does not
// apply (api.Runner's, num_keep) and the names api.Options does not have
// (which Ollama ignores with a warning) are accepted and listed, in name
// order, for the server's log line.
func TestOllamaOptionsIgnored(t *testing.T) {
	for _, c := range []struct {
		js   string
		want []string
	}{
		{`{"temperature":0.5,"top_k":3,"stop":["x"],"num_ctx":64,"num_predict":5}`, nil},
		{`{"num_thread":8}`, []string{"num_thread"}},
		{`{"num_thread":8,"num_ctx":2048,"num_batch":256,"num_gpu":99,"main_gpu":0,"use_mmap":true,"num_keep":4}`,
			[]string{"main_gpu", "num_batch", "num_gpu", "num_keep", "num_thread", "use_mmap"}},
		{`{"mirostat":2,"mirostat_tau":5,"tfs_z":0.9,"use_mlock":true,"numa":false,"low_vram":true}`,
			[]string{"low_vram", "mirostat", "mirostat_tau", "numa", "tfs_z", "use_mlock"}},
		{`{"temprature":0.1,"num_thread":null,"rope_frequency_base":"x"}`, []string{"rope_frequency_base", "temprature"}},
	} {
		s, err := parseOllamaOptions(decodeOptions(t, c.js), sample.DefaultParams())
		if err != nil {
			t.Errorf("%s: %v", c.js, err)
			continue
		}
		var got []string
		for _, e := range s.Ignored {
			name, _, _ := strings.Cut(e, " (")
			got = append(got, name)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: ignored %q, want %v", c.js, s.Ignored, c.want)
		}
	}
}

// TestOllamaOptionsWrongTypeIsOllamasError: a value of the wrong type for an
// option of api.Options is refused with the error Ollama's own
// api.Options.FromMap gives for it.
func TestOllamaOptionsWrongTypeIsOllamasError(t *testing.T) {
	for _, js := range []string{
		`{"top_k":"40"}`, `{"temperature":"hot"}`, `{"num_thread":"4"}`, `{"num_ctx":true}`, `{"use_mmap":1}`,
		`{"stop":"x"}`, `{"stop":["a",1]}`, `{"num_predict":[1]}`, `{"seed":{}}`,
	} {
		opts := decodeOptions(t, js)
		want := new(api.Options).FromMap(opts)
		if want == nil {
			t.Fatalf("%s: Ollama accepts it", js)
		}
		_, err := parseOllamaOptions(opts, sample.DefaultParams())
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Ollama != want.Error() || optionMessage(err) != want.Error() {
			t.Errorf("%s: %v, want Ollama's %q", js, err, want)
		}
	}
}

// TestOllamaOptionsRefusedNameTheOption: every refusal is an error naming
// the option (the 400's message).
func TestOllamaOptionsRefusedNameTheOption(t *testing.T) {
	for _, c := range []struct{ js, option string }{
		{`{"top_k":"40"}`, "top_k"},
		{`{"temperature":"hot"}`, "temperature"},
		{`{"temperature":1e300}`, "temperature"},
		{`{"seed":4294967296}`, "seed"},
		{`{"seed":-2147483649}`, "seed"},
		{`{"top_k":1e12}`, "top_k"},
		{`{"num_ctx":3e9}`, "num_ctx"},
		{`{"stop":"x"}`, "stop"},
		{`{"stop":["a",1]}`, "stop"},
		{`{"stop":[""]}`, "stop"},
		{`{"repeat_penalty":0}`, "repeat_penalty"},
		{`{"repeat_last_n":-2}`, "repeat_last_n"},
		{`{"repeat_last_n":-2147483648}`, "repeat_last_n"},
	} {
		_, err := parseOllamaOptions(decodeOptions(t, c.js), sample.DefaultParams())
		var oe *OptionError
		var pe *sample.ParamError
		switch {
		case errors.As(err, &oe):
			if oe.Option != c.option {
				t.Errorf("%s: refused %q, want %q: %v", c.js, oe.Option, c.option, err)
			}
		case errors.As(err, &pe):
			if pe.Param != c.option {
				t.Errorf("%s: refused %q, want %q: %v", c.js, pe.Param, c.option, err)
			}
		default:
			t.Errorf("%s: %v, want a refusal naming %q", c.js, err, c.option)
		}
		if err != nil && !strings.Contains(err.Error(), c.option) {
			t.Errorf("%s: message %q does not name %q", c.js, err, c.option)
		}
	}
}

// TestANumCtxPastTheServersContextIsClampedAsOllamaClampsIt: Ollama clamps a num_ctx larger than its runner's
// context to that context (optionsForPrompt, and llm/server.go's warning "requested context size too large
// for model"); bankml's slots keep the server's context, so such a request is answered within the slot's
// context, exactly as the same request without num_ctx (or with num_ctx equal to the slot's), and the server's
// log has one warning naming both sizes.
func TestANumCtxPastTheServersContextIsClampedAsOllamaClampsIt(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{NCtx: 256, Threads: 1, Log: log})
	answer := func(t *testing.T, options string) string {
		t.Helper()
		body := `{"model":"stories260K","prompt":"Once upon a time","stream":false,"options":{"temperature":0,"num_predict":300` + options + `}}`
		st, b := ts.post(t, "/api/generate", []byte(body))
		if st != 200 {
			t.Fatalf("%s: %d %s", body, st, b)
		}
		var out struct {
			Response   string `json:"response"`
			DoneReason string `json:"done_reason"`
			EvalCount  int    `json:"eval_count"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s|%d|%q", out.DoneReason, out.EvalCount, out.Response)
	}
	for _, c := range []struct{ name, options, same, warning string }{
		{"num_ctx equal to the slot's context is the slot's context", `,"num_ctx":256`, ``, ""},
		{"num_ctx one past the slot's context is clamped to it", `,"num_ctx":257`, ``, "num_ctx=257 n_ctx_slot=256"},
		{"a num_ctx of a million is clamped to it", `,"num_ctx":1048576`, ``, "num_ctx=1048576 n_ctx_slot=256"},
		{"repeat_last_n -1 then covers the slot's context", `,"num_ctx":4096,"repeat_last_n":-1`, `,"repeat_last_n":256`, "num_ctx=4096 n_ctx_slot=256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := answer(t, c.same)
			before := strings.Count(buf.String(), "requested context size too large")
			if got := answer(t, c.options); got != want {
				t.Fatalf("answer %s, want %s (options {%s})", got, want, c.same)
			}
			logged := buf.String()
			n := strings.Count(logged, "requested context size too large") - before
			switch {
			case c.warning == "" && n != 0:
				t.Fatalf("warned for a num_ctx within the context:\n%s", logged)
			case c.warning != "" && (n != 1 || !strings.Contains(logged, c.warning)):
				t.Fatalf("%d warnings, want one with %q:\n%s", n, c.warning, logged)
			}
		})
	}
}

// TestAnOllamaFormatIsNamedAsSent: a schema Ollama's "format" carries that no value meets is refused naming
// "format", the field the client sent (not the OpenAI response_format it is rendered through).
func TestAnOllamaFormatIsNamedAsSent(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Threads: 1})
	for _, tc := range []struct{ name, path, body string }{
		{"on /api/chat", "/api/chat", `{"model":"stories260K","stream":false,"messages":[{"role":"user","content":"Hi"}],"format":{"type":"integer","minimum":5,"maximum":1}}`},
		{"on /api/generate", "/api/generate", `{"model":"stories260K","stream":false,"prompt":"Hi","format":{"type":"integer","minimum":5,"maximum":1}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := ts.post(t, tc.path, []byte(tc.body))
			if st != 400 || !strings.Contains(string(b), `format`) || strings.Contains(string(b), "response_format") || !strings.Contains(string(b), "no integer meets minimum 5 and maximum 1") {
				t.Fatalf("%d %s; want a 400 naming format", st, b)
			}
		})
	}
}

// TestAPromptPastTheRequestsNumCtxNamesTheNumCtxGiven: a prompt that does not fit the request's context is a 400
// quoting the num_ctx the request gave and, when the server took another (0 or less and below 4 raised to 4, as
// Ollama v0.17.4's scheduler raises it; past the slot's context cut to it), the context it took and why, where it
// quoted 4 as if the request had asked for it.
func TestAPromptPastTheRequestsNumCtxNamesTheNumCtxGiven(t *testing.T) {
	ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{NCtx: 512})
	short := "Once upon a time there was a little girl named Lily"
	long := strings.Repeat("Once upon a time ", 200)
	for _, c := range []struct {
		name    string
		prompt  string
		numCtx  string
		message string // after "the prompt has N tokens, which does not fit "
	}{
		{"num_ctx 0 is raised to 4", short, "0", "the request's num_ctx of 0, raised to 4 (Ollama's smallest context)"},
		{"a negative num_ctx is raised to 4", short, "-5", "the request's num_ctx of -5, raised to 4 (Ollama's smallest context)"},
		{"num_ctx 3 is raised to 4", short, "3", "the request's num_ctx of 3, raised to 4 (Ollama's smallest context)"},
		{"num_ctx 4 is the request's own", short, "4", "the request's num_ctx of 4"},
		{"num_ctx 8 is the request's own", short, "8.9", "the request's num_ctx of 8"},
		{"a num_ctx past the slot's context is cut to it", long, "8192", "the request's num_ctx of 8192, cut to 512 (the server's slot context)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := `{"model":"stories260K.gguf","stream":false,"prompt":` + strconv.Quote(c.prompt) + `,"options":{"num_ctx":` + c.numCtx + `}}`
			st, b := ts.post(t, "/api/generate", []byte(body))
			var got struct{ Error string }
			if err := json.Unmarshal(b, &got); err != nil || st != 400 {
				t.Fatalf("%d %s, want a 400", st, b)
			}
			_, after, ok := strings.Cut(got.Error, " tokens, which does not fit ")
			if !strings.HasPrefix(got.Error, "the prompt has ") || !ok || after != c.message {
				t.Fatalf("%q, want \"the prompt has N tokens, which does not fit %s\"", got.Error, c.message)
			}
		})
	}
}
