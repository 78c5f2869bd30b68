package engine

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestEvaluateMatchesReference: Engine.Evaluate's logits rows are bit-equal to the reference's for the same
// sequence decoded in the same llama_decode calls with the same logits flags (reference.Session.Evaluate,
// llama-perplexity's loop): one call, calls whose first ones carry no outputs, outputs spanning calls, every
// token an output, and calls longer than a micro-batch. A second engine request on the same slot
// afterwards still gets the rows of a fresh evaluation.
func TestEvaluateMatchesReference(t *testing.T) {
	for _, tm := range []*testModel{stories(t), qwen3(t)} {
		tm.withRef(t)
		// qwen3's 151,936-token vocabulary makes every output row costly: fewer rows there.
		scale := 1
		if tm.m.HP.NVocab > 1000 {
			scale = 8
		}
		text := strings.Repeat("Once upon a time, there was a little girl named Lily. She loved to play outside. ", 30)
		toks := tm.tok.Tokenize(text, true, false)[:600]
		e := newEngine(t, tm, Options{NCtx: 1024, Threads: 1, PastTrainingContext: true})
		s, err := tm.ref.NewSession(1024, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		nv := tm.m.HP.NVocab
		rows, total := 0, 0
		for _, c := range []struct {
			name           string
			n, outputs, nb int
		}{
			{"one call, the second half scored", 256, 128, 0},
			{"calls of 48: the first ones carry no outputs", 128, 64, 48},
			{"every token an output, calls of 100", 300, 300, 100}, // qwen3: the last 37 of calls of 100
			{"no outputs at all", 64, 0, 16},
			{"a call longer than a micro-batch", 600, 200, 0},
		} {
			seq, outputs := toks[:c.n], c.outputs/scale
			want, err := s.Evaluate(seq, outputs, c.nb)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second time on a slot that holds the first
				got, err := e.Evaluate(context.Background(), EvalRequest{Tokens: seq, Outputs: outputs, NBatch: c.nb})
				if err != nil {
					t.Fatalf("%s: %s: %v", tm.name, c.name, err)
				}
				if len(got) != outputs*nv || len(want) != len(got) {
					t.Fatalf("%s: %s: %d logits, reference %d, want %d", tm.name, c.name, len(got), len(want), outputs*nv)
				}
				for r := range outputs {
					total++
					if slices.EqualFunc(got[r*nv:(r+1)*nv], want[r*nv:(r+1)*nv], func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
						rows++
					}
				}
			}
		}
		if rows != total {
			t.Errorf("%s: %d of %d logits rows bit-equal to the reference's", tm.name, rows, total)
		} else {
			t.Logf("%s: %d of %d logits rows bit-equal to the reference's", tm.name, rows, total)
		}
	}
}

// TestEvaluateRefusesBadRequests: each malformed request is refused with an error naming it; a sequence past
// the context wraps ErrContextFull; a cancelled context returns its error.
func TestEvaluateRefusesBadRequests(t *testing.T) {
	tm := stories(t)
	e := newEngine(t, tm, Options{NCtx: 256})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	long := make([]int32, 300)
	for _, c := range []struct {
		name string
		ctx  context.Context
		req  EvalRequest
		want string
	}{
		{"an empty sequence", context.Background(), EvalRequest{}, "empty sequence"},
		{"more outputs than tokens", context.Background(), EvalRequest{Tokens: []int32{1, 2}, Outputs: 3}, "3 outputs of a sequence of 2"},
		{"negative outputs", context.Background(), EvalRequest{Tokens: []int32{1, 2}, Outputs: -1}, "-1 outputs"},
		{"a negative batch", context.Background(), EvalRequest{Tokens: []int32{1, 2}, NBatch: -4}, "batch size -4"},
		{"a token outside the vocabulary", context.Background(), EvalRequest{Tokens: []int32{1, 9999}}, "token 1 is 9999, outside the vocabulary of 512"},
		{"a sequence past the context", context.Background(), EvalRequest{Tokens: long}, "exceeds the context of 256"},
		{"a cancelled context", cancelled, EvalRequest{Tokens: []int32{1, 2}}, "context canceled"},
	} {
		_, err := e.Evaluate(c.ctx, c.req)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if _, err := e.Evaluate(context.Background(), EvalRequest{Tokens: long}); !errors.Is(err, ErrContextFull) {
		t.Errorf("past the context: %v does not wrap ErrContextFull", err)
	}
}
