package reference

import (
	"math"
	"slices"
	"testing"
)

// TestSessionDecodesLikeAFreshContext: a Session's first decode gives
// PromptLogits' bits; DecodeAll's last row is its last position; Truncate
// drops the tail (a later decode continues from there) and refuses a length
// past the cache; Generate is Greedy's loop.
func TestSessionDecodesLikeAFreshContext(t *testing.T) {
	m := loadModel(t, "stories260K.gguf")
	prompt, err := m.Tokenize("Once upon a time there was", true, false)
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.PromptLogits(prompt, 1)
	if err != nil {
		t.Fatal(err)
	}
	bits := func(x []float32) []uint32 {
		out := make([]uint32, len(x))
		for i, v := range x {
			out[i] = math.Float32bits(v)
		}
		return out
	}
	s, err := m.NewSession(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.NCtx() != m.NCtxTrain() {
		t.Errorf("n_ctx 0 gives %d, want the training context %d", s.NCtx(), m.NCtxTrain())
	}
	got, err := s.Decode(prompt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(bits(got), bits(want)) {
		t.Error("a session's first decode differs from PromptLogits")
	}
	if !slices.Equal(s.Tokens(), prompt) {
		t.Errorf("cached tokens %v, want %v", s.Tokens(), prompt)
	}
	gen, err := s.Generate(got, 8, false)
	if err != nil {
		t.Fatal(err)
	}
	greedy, err := m.Greedy(prompt, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gen, greedy) {
		t.Errorf("Generate %v, Greedy %v", gen, greedy)
	}
	if err := s.Truncate(len(s.Tokens()) + 1); err == nil {
		t.Error("Truncate past the cache: no error")
	}
	if err := s.Truncate(1); err != nil {
		t.Fatal(err)
	}
	all, err := s.DecodeAll(prompt[1:])
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != (len(prompt)-1)*m.NVocab() {
		t.Fatalf("DecodeAll returned %d logits", len(all))
	}
	if !slices.Equal(s.Tokens(), prompt) {
		t.Errorf("after Truncate(1) and a decode of the rest: %v", s.Tokens())
	}
}
