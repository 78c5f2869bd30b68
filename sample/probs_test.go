package sample

import (
	"fmt"
	"math"
	"testing"

	"github.com/bankml/bankml/internal/cshim"
	"github.com/bankml/bankml/internal/reference"
)

// probsShimSrc computes what llama-server reports for n_probs, compiled by
// the local g++ with libstdc++ and glibc as the server is: the pre-sampling
// probabilities of get_token_probabilities (tools/server/server-common.cpp:
// std::partial_sort of the raw logits for the top n, softmax with expf over
// the whole vocabulary, the sum in float), the logprob of
// completion_token_output::logarithm (std::log of a float, -FLT_MAX for 0),
// and the post-sampling order of common_sampler_get_candidates (std::sort by
// descending p).
const probsShimSrc = `
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

struct td { int32_t id; float logit; float p; };

extern "C" void token_probs(const float * logits, int n, int n_top, td * out, float * logprobs) {
    std::vector<td> cur(n);
    for (int i = 0; i < n; i++) cur[i] = td{i, logits[i], 0.0f};
    if ((size_t) n_top > cur.size()) n_top = (int) cur.size();
    if (n_top > 0) {
        std::partial_sort(cur.begin(), cur.begin() + n_top, cur.end(),
            [](const td & a, const td & b) { return a.logit > b.logit; });
    }
    float max_l = -std::numeric_limits<float>::infinity();
    if (n_top > 0) {
        max_l = cur[0].logit;
    } else {
        for (const auto & t : cur) max_l = std::max(max_l, t.logit);
    }
    float cum = 0.0f;
    for (auto & t : cur) { float p = expf(t.logit - max_l); t.p = p; cum += p; }
    for (auto & t : cur) t.p /= cum;
    for (int i = 0; i < n; i++) {
        out[i] = cur[i];
        logprobs[i] = cur[i].p == 0.0f ? std::numeric_limits<float>::lowest() : std::log(cur[i].p);
    }
}

extern "C" void sort_by_p(td * a, size_t n) {
    std::sort(a, a + n, [](const td & x, const td & y) { return x.p > y.p; });
}
`

type probsShim struct {
	tokenProbs func(logits *float32, n, nTop int32, out *TokenData, logprobs *float32)
	sortByP    func(a *reference.TokenData, n uintptr)
}

func loadProbsShim(t *testing.T) *probsShim {
	t.Helper()
	c := cshim.Build(t, "probs", probsShimSrc)
	var s probsShim
	c.Func(t, &s.tokenProbs, "token_probs")
	c.Func(t, &s.sortByP, "sort_by_p")
	return &s
}

// greedyRows decodes a model's oracle prompt and a few greedy steps with the
// reference and returns the logit rows.
func greedyRows(t *testing.T, om *oracleModel, n int) [][]float32 {
	t.Helper()
	prompt, err := om.m.Tokenize(om.prompt, true, true)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := om.m.NewSession(len(prompt)+n, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	logits, err := sess.Decode(prompt)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]float32
	for i := range n {
		rows = append(rows, logits)
		if i+1 < n {
			if logits, err = sess.Decode([]int32{Greedy(logits)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return rows
}

// TestLogprobsMatchLlamaServer: TokenProbs and Logarithm give the
// probabilities and logprobs llama-server computes for n_probs (pre-sampling:
// the softmax of the raw logits over the whole vocabulary, the default), bit
// for bit and in the same order, for every token of the vocabulary, on the
// logits of both oracle models (plus a tied row); and Chain.Probs with
// post = true gives the candidates the reference's chain left, sorted as
// common_sampler_get_candidates sorts them, with the drawn token's
// probability.
func TestLogprobsMatchLlamaServer(t *testing.T) {
	shim := loadProbsShim(t)
	ms := oracleModels(t)
	total, ok := 0, 0
	for _, om := range ms {
		rows := greedyRows(t, om, 6)
		tied := append([]float32(nil), rows[1]...)
		quarters(tied)
		rows = append(rows, tied)
		n := om.m.NVocab()
		want := make([]TokenData, n)
		wantLP := make([]float32, n)
		for ri, logits := range rows {
			for _, nTop := range []int{1, 5, 20, 100} {
				total++
				shim.tokenProbs(&logits[0], int32(n), int32(nTop), &want[0], &wantLP[0])
				got := TokenProbs(logits, nTop)
				bad := ""
				for i := range got {
					if got[i] != want[i] || math.Float32bits(got[i].P) != math.Float32bits(want[i].P) {
						bad = fmt.Sprintf("entry %d: %+v, llama-server %+v", i, got[i], want[i])
						break
					}
					if lp := Logarithm(got[i].P); math.Float32bits(lp) != math.Float32bits(wantLP[i]) {
						bad = fmt.Sprintf("entry %d: logprob %v, llama-server %v", i, lp, wantLP[i])
						break
					}
				}
				if bad != "" {
					t.Errorf("%s row %d n_probs %d: %s", om.name, ri, nTop, bad)
					continue
				}
				ok++
			}
		}

		// Post-sampling: run the default chain (its candidates stay sorted by
		// top-k) and one whose candidates end unsorted (min-p's unsorted
		// path, then sorted by probability), for a few steps on these rows.
		unsorted := DefaultParams()
		unsorted.TopK, unsorted.TopP = 0, 1
		for _, p := range []Params{DefaultParams(), unsorted} {
			p.Seed = 99
			ours, err := New(p, Model{NVocab: n, SuppressTokens: om.suppress, Vocab: om.vocab})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := refChain(om, p)
			if err != nil {
				t.Fatal(err)
			}
			for ri, logits := range rows {
				total++
				tok, err := ours.Sample(logits)
				if err != nil {
					t.Fatal(err)
				}
				ra, err := ref.Apply(logits)
				if err != nil {
					t.Fatal(err)
				}
				rc := ra.Cands
				rtok := rc[ra.Selected].ID
				if !ra.Sorted { // common_sampler_get_candidates(do_sort = true)
					shim.sortByP(&rc[0], uintptr(len(rc)))
				}
				got := ours.Probs(tok, logits, 10, true)
				wantP := float32(1)
				for _, d := range rc {
					if d.ID == rtok {
						wantP = d.P
						break
					}
				}
				var wantTop []TokenProb
				for _, d := range rc[:min(10, len(rc))] {
					if d.P == 0 {
						break
					}
					wantTop = append(wantTop, TokenProb{d.ID, d.P})
				}
				if tok != rtok || got.P != wantP || fmt.Sprint(got.Top) != fmt.Sprint(wantTop) {
					t.Errorf("%s row %d post-sampling (top_k %d): token %d p %v top %v; reference token %d p %v top %v",
						om.name, ri, p.TopK, tok, got.P, got.Top, rtok, wantP, wantTop)
				} else {
					ok++
				}
				ours.Accept(tok)
				ref.Accept(rtok)
			}
			ref.Free()
		}
	}
	t.Logf("logprobs: %d of %d identical to llama-server's (pre-sampling over the whole vocabulary, n_probs 1-100; post-sampling candidates)", ok, total)
	if ok != total {
		t.Fatalf("%d of %d differ", total-ok, total)
	}
}
