package perplexity

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// fakeEval returns all-zero logits and records the chunks it is given: first token, outputs, length and
// batch size.
type fakeEval struct {
	nVocab int
	chunks []string
}

func (e *fakeEval) Evaluate(t []int32, outputs, nBatch int) ([]float32, error) {
	e.chunks = append(e.chunks, fmt.Sprintf("%d:%d/%d/b%d", t[0], outputs, len(t), nBatch))
	return make([]float32, outputs*e.nVocab), nil
}
func (e *fakeEval) NVocab() int { return e.nVocab }

// TestChunking follows perplexity.cpp's loop: n_chunk = len/n_ctx chunks, each
// evaluated as a new sequence in batches of n_batch with flags on
// pos >= n_ctx/2, BOS replacing each chunk's first token, n_ctx - n_ctx/2 - 1
// tokens scored per chunk.
// With uniform logits every token costs log(n_vocab): PPL = n_vocab and the
// variance 0 up to the rounding of nll2/count - (nll/count)².
func TestChunking(t *testing.T) {
	tokens := make([]int32, 45)
	for i := range tokens {
		tokens[i] = int32(100 + i)
	}
	ev := &fakeEval{nVocab: 200}
	r, err := Compute(ev, tokens, Options{NCtx: 10, NBatch: 4, BOS: 1, AddBOS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 4 chunks of 10 (the last 5 tokens dropped), positions 5..9 outputs, in batches of 4.
	want := "[1:5/10/b4 1:5/10/b4 1:5/10/b4 1:5/10/b4]"
	if got := fmt.Sprint(ev.chunks); got != want {
		t.Errorf("chunks %s, want %s", got, want)
	}
	if r.Chunks != 4 || r.Count != 4*4 || len(r.Running) != 4 {
		t.Errorf("chunks %d count %d running %d, want 4, 16, 4", r.Chunks, r.Count, len(r.Running))
	}
	if math.Abs(r.PPL-200) > 1e-9 || r.PPLErr > 1e-4 {
		t.Errorf("PPL %v +/- %v, want 200 +/- 0 (rounding)", r.PPL, r.PPLErr)
	}
	// Without BOS the first token is kept; NChunks limits; NBatch > NCtx is capped.
	ev = &fakeEval{nVocab: 200}
	if r, err = Compute(ev, tokens, Options{NCtx: 10, NBatch: 2048, NChunks: 2}, nil); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ev.chunks); got != "[100:5/10/b10 110:5/10/b10]" || r.NBatch != 10 {
		t.Errorf("chunks %s, batch %d; want [100:5/10/b10 110:5/10/b10], 10", got, r.NBatch)
	}
}

func TestComputeRefusesBadInput(t *testing.T) {
	ev := &fakeEval{nVocab: 3}
	for _, tc := range []struct {
		n   int
		opt Options
		is  error
	}{
		{19, Options{NCtx: 10}, ErrTooShort},
		{100, Options{NCtx: 1}, nil},
		{100, Options{NCtx: 10, NBatch: -1}, nil},
		{100, Options{NCtx: 10}, nil}, // token 3 of a vocabulary of 3
	} {
		toks := make([]int32, tc.n)
		toks[len(toks)-1-tc.n%10] = 3
		_, err := Compute(ev, toks, tc.opt, nil)
		if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%d tokens, %+v: error %v, want one (%v)", tc.n, tc.opt, err, tc.is)
		}
	}
}
