package serve

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/sample"
)

// TestSamplersSkipUnknown checks that a request's unknown sampler names and characters are skipped with a
// logged warning, as llama-server's "samplers" field (server-schema.cpp) skips them through
// common_sampler_types_from_names (common/sampling.cpp:885) and _from_chars (:914), and that the request
// is answered.
func TestSamplersSkipUnknown(t *testing.T) {
	for _, c := range []struct {
		body string
		want []sample.Type
		warn []string
	}{
		{`{"samplers":["top_k","bogus"]}`, []sample.Type{sample.TopK}, []string{"name=bogus"}},
		{`{"samplers":["Top_K","MIRROR","temperature"]}`, []sample.Type{sample.TopK, sample.Temperature}, []string{"name=mirror"}},
		{`{"samplers":"kzt"}`, []sample.Type{sample.TopK, sample.Temperature}, []string{"char=z"}},
		{`{"samplers":"k?!"}`, []sample.Type{sample.TopK}, []string{`char=?`, `char=!`}},
		{`{"samplers":["bogus"]}`, []sample.Type{}, []string{"name=bogus"}},
		{`{"samplers":["top_p","min_p"]}`, []sample.Type{sample.TopP, sample.MinP}, nil},
	} {
		var log syncBuffer
		ts := newTestServer(t, storiesPath(t), AdmitOptions{}, Options{Log: slog.New(slog.NewTextHandler(&log, nil))})
		p, err := ts.decodeSampling([]byte(c.body), nil)
		if err != nil {
			t.Errorf("%s: %v", c.body, err)
			continue
		}
		if !slices.Equal(p.Samplers, c.want) {
			t.Errorf("%s: samplers %v, want %v", c.body, p.Samplers, c.want)
		}
		got := log.String()
		if n := strings.Count(got, "unable to match sampler"); n != len(c.warn) {
			t.Errorf("%s: %d warnings, want %d: %s", c.body, n, len(c.warn), got)
		}
		for _, w := range c.warn {
			if !strings.Contains(got, w) {
				t.Errorf("%s: log %q lacks %q", c.body, got, w)
			}
		}
		body := strings.TrimSuffix(c.body, "}") + `,"prompt":"x","n_predict":1}`
		if st, b := ts.post(t, "/completion", []byte(body)); st != 200 {
			t.Errorf("%s: %d %s, want 200", body, st, b)
		}
	}
}
