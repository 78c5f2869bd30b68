package perplexity

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/engine"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/cshim"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/model"
	"github.com/bankml/bankml/tokenizer"
)

// heldout is the held-out text of children's stories written for this
// repository (testdata/heldout-stories.txt, 15,535 tokens of stories260K's
// vocabulary with BOS).
func heldout(t testing.TB) string {
	b, err := os.ReadFile(filepath.Join("testdata", "heldout-stories.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n") // what llama-perplexity -f keeps
}

// recorder keeps every logits row an Evaluator returns, in order.
type recorder struct {
	Evaluator
	rows []float32
}

func (r *recorder) Evaluate(t []int32, outputs, nBatch int) ([]float32, error) {
	l, err := r.Evaluator.Evaluate(t, outputs, nBatch)
	r.rows = append(r.rows, l...)
	return l, err
}

// bankmlEval scores through bankml's engine, as bankml perplexity does.
type bankmlEval struct {
	e *engine.Engine
}

func (e bankmlEval) Evaluate(t []int32, outputs, nBatch int) ([]float32, error) {
	return e.e.Evaluate(context.Background(), engine.EvalRequest{Tokens: t, Outputs: outputs, NBatch: nBatch})
}
func (e bankmlEval) NVocab() int { return e.e.Model().HP.NVocab }

// refEval scores with the reference: llama-perplexity's loop of llama_decode calls (Session.Evaluate).
type refEval struct {
	s *reference.Session
	n int
}

func (e refEval) Evaluate(t []int32, outputs, nBatch int) ([]float32, error) {
	return e.s.Evaluate(t, outputs, nBatch)
}
func (e refEval) NVocab() int { return e.n }

// formulaShim is llama-perplexity's scoring as its source computes it
// (tools/perplexity/perplexity.cpp: log_softmax, the nll/nll2 sums, the running
// and final estimates and their printf formats), summed in token order (the
// tool on one hardware thread), compiled with g++ against this machine's libm.
const formulaShim = `
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
extern "C" void score(const float *logits, const int *next, int n_rows, int n_vocab, double *nll, double *nll2) {
	for (int i = 0; i < n_rows; ++i) {
		const float *l = logits + (size_t)i*n_vocab;
		float max_logit = l[0];
		for (int j = 1; j < n_vocab; ++j) max_logit = std::max(max_logit, l[j]);
		double sum_exp = 0.0;
		for (int j = 0; j < n_vocab; ++j) sum_exp += expf(l[j] - max_logit);
		const double v = -(l[next[i]] - max_logit - log(sum_exp));
		*nll += v;
		*nll2 += v*v;
	}
}
extern "C" double running(double nll, int count, char *buf, int i) {
	double ppl = std::exp(nll / count);
	snprintf(buf, 64, "[%d]%.4lf,", i, ppl);
	return ppl;
}
extern "C" void final_estimate(double nll, double nll2, int count, double *ppl_out, double *err_out, char *buf) {
	nll2 /= count;
	nll /= count;
	const double ppl = exp(nll);
	nll2 -= nll * nll;
	*ppl_out = ppl;
	*err_out = 0;
	buf[0] = 0;
	if (nll2 > 0) {
		nll2 = sqrt(nll2/(count-1));
		*err_out = nll2*ppl;
		snprintf(buf, 128, "Final estimate: PPL = %.4lf +/- %.5lf\n", ppl, nll2*ppl);
	}
}
`

// TestPerplexityMatchesReference: on stories260K and the held-out text,
// bankml's perplexity, evaluated through its engine (engine.Evaluate) as
// bankml perplexity evaluates it, equals the reference's. The reference's logits come
// from llama_decode on the same chunks and batches (one sequence, BOS in
// position 0, logits flags on pos >= n_ctx/2); its scoring is
// llama-perplexity's own source compiled with g++ against libm, over those
// logits. Checked bit for bit: the tokens (reference tokenizer), every logits
// row, Σ nll and Σ nll² after every chunk, each running estimate and its
// printed text, the final PPL and error and the final line. Cases: the
// defaults (-c 512 -b 2048, 3 chunks) and -c 128 -b 48 (batches before the
// scored half with no outputs, 4 chunks).
func TestPerplexityMatchesReference(t *testing.T) {
	path := testdata.Model(t, "stories260K.gguf")
	lib, err := reference.Load()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	shim := cshim.Build(t, "pplshim", formulaShim)
	var score func(logits *float32, next *int32, nRows, nVocab int32, nll, nll2 *float64)
	var running func(nll float64, count int32, buf *byte, i int32) float64
	var final func(nll, nll2 float64, count int32, ppl, err *float64, buf *byte)
	shim.Func(t, &score, "score")
	shim.Func(t, &running, "running")
	shim.Func(t, &final, "final_estimate")

	rm, err := lib.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	text := heldout(t)
	ids := tok.Tokenize(text, true, false)
	refIDs, err := rm.Tokenize(text, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) != fmt.Sprint(refIDs) {
		t.Fatalf("tokens differ from the reference's (%d vs %d)", len(ids), len(refIDs))
	}
	if len(ids) < 5000 {
		t.Fatalf("the held-out text is %d tokens, want at least 5000", len(ids))
	}
	nv := m.HP.NVocab
	for _, tc := range []struct{ nCtx, nBatch, chunks int }{{512, 2048, 3}, {128, 48, 4}} {
		t.Run(fmt.Sprintf("c%d-b%d", tc.nCtx, tc.nBatch), func(t *testing.T) {
			opt := Options{NCtx: tc.nCtx, NBatch: tc.nBatch, NChunks: tc.chunks, BOS: tok.BOS(), AddBOS: tok.AddBOS()}
			e, err := engine.New(m, tok, nil, engine.Options{NCtx: tc.nCtx, Threads: 2, PastTrainingContext: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			s, err := rm.NewSession(tc.nCtx, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var gotOut, refOut bytes.Buffer
			bk := &recorder{Evaluator: bankmlEval{e}}
			got, err := Compute(bk, ids, opt, func(i int, ppl float64) { _ = WriteRunning(&gotOut, i, ppl) })
			if err != nil {
				t.Fatal(err)
			}
			rf := &recorder{Evaluator: refEval{s, nv}}
			ref, err := Compute(rf, ids, opt, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(bk.rows) != len(rf.rows) || len(rf.rows) != tc.chunks*(tc.nCtx-tc.nCtx/2)*nv {
				t.Fatalf("%d logits, reference %d, want %d", len(bk.rows), len(rf.rows), tc.chunks*(tc.nCtx-tc.nCtx/2)*nv)
			}
			badRows := 0
			for r := range len(rf.rows) / nv {
				for j := range nv {
					if math.Float32bits(bk.rows[r*nv+j]) != math.Float32bits(rf.rows[r*nv+j]) {
						badRows++
						break
					}
				}
			}
			if badRows > 0 {
				t.Errorf("%d of %d logits rows differ from the reference's", badRows, len(rf.rows)/nv)
			}

			// The reference's scoring over the reference's logits.
			first := tc.nCtx / 2
			perChunk := (tc.nCtx - first) * nv
			var nll, nll2 float64
			count := 0
			buf := make([]byte, 128)
			for i := range tc.chunks {
				next := ids[i*tc.nCtx+first+1 : (i+1)*tc.nCtx]
				score(&rf.rows[i*perChunk], &next[0], int32(len(next)), int32(nv), &nll, &nll2)
				count += len(next)
				ppl := running(nll, int32(count), &buf[0], int32(i+1))
				refOut.WriteString(cstr(buf))
				if math.Float64bits(ppl) != math.Float64bits(got.Running[i]) || math.Float64bits(ppl) != math.Float64bits(ref.Running[i]) {
					t.Errorf("chunk %d: running PPL %v (bankml) %v (reference logits), llama-perplexity %v", i+1, got.Running[i], ref.Running[i], ppl)
				}
			}
			if math.Float64bits(nll) != math.Float64bits(got.NLL) || math.Float64bits(nll2) != math.Float64bits(got.NLL2) || count != got.Count {
				t.Errorf("sums: bankml nll %v nll2 %v count %d; llama-perplexity %v %v %d", got.NLL, got.NLL2, got.Count, nll, nll2, count)
			}
			var ppl, pplErr float64
			final(nll, nll2, int32(count), &ppl, &pplErr, &buf[0])
			refOut.WriteString("\n" + cstr(buf))
			gotOut.WriteString("\n")
			if err := WriteFinal(&gotOut, got); err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(ppl) != math.Float64bits(got.PPL) || math.Float64bits(pplErr) != math.Float64bits(got.PPLErr) {
				t.Errorf("final: bankml PPL %v +/- %v, llama-perplexity %v +/- %v", got.PPL, got.PPLErr, ppl, pplErr)
			}
			if gotOut.String() != refOut.String() {
				t.Errorf("output:\n%s\nllama-perplexity:\n%s", gotOut.String(), refOut.String())
			}
			if !t.Failed() {
				t.Logf("%d of %d logits rows, %d of %d running estimates, the sums and the final estimate bit-equal to the reference: %s",
					len(rf.rows)/nv, len(rf.rows)/nv, tc.chunks, tc.chunks, strings.TrimSpace(strings.ReplaceAll(gotOut.String(), "\n", " ")))
			}
		})
	}
}

func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}
