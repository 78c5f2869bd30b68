package engine

import (
	"context"
	"slices"
	"testing"
)

func TestSmokeGreedy(t *testing.T) {
	tm := stories(t).withRef(t)
	e := newEngine(t, tm, Options{NCtx: 256})
	toks, err := tm.ref.Tokenize("Once upon a time", true, true)
	if err != nil {
		t.Fatal(err)
	}
	s, err := tm.ref.NewSession(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.Decode(toks)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Generate(l, 40, true)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Generate(context.Background(), Request{Prompt: Prompt{Text: "Once upon a time"}, Sampling: greedyParams(), NPredict: 40, CachePrompt: true, Slot: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if !slices.Equal(res.Tokens, want) {
		t.Fatalf("tokens %v, reference %v", res.Tokens, want)
	}
}
