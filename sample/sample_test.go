package sample

import (
	"math"
	"testing"
)

func TestGreedyTakesFirstMaximum(t *testing.T) {
	for _, tc := range []struct {
		logits []float32
		want   int32
	}{
		{[]float32{1, 3, 2}, 1},
		{[]float32{5, 5, 1}, 0},
		{[]float32{-1, -2, -1}, 0},
		{[]float32{0}, 0},
	} {
		if got := Greedy(tc.logits); got != tc.want {
			t.Errorf("Greedy(%v) = %d, want %d", tc.logits, got, tc.want)
		}
	}
}

func TestTemperatureZeroIsGreedy(t *testing.T) {
	s := New(Params{Temp: 0, TopP: 1})
	if got := s.Sample([]float32{0, 9, 1}); got != 1 {
		t.Fatalf("got %d, want 1", got)
	}
}

func TestTopKOneAlwaysPicksTheBest(t *testing.T) {
	s := New(Params{Temp: 1.5, TopK: 1, TopP: 1, Seed: 7})
	for range 100 {
		if got := s.Sample([]float32{0.1, 0.2, 3, 0.3}); got != 2 {
			t.Fatalf("got %d, want 2", got)
		}
	}
}

func TestSeededSamplingIsReproducibleAndSpread(t *testing.T) {
	logits := []float32{1, 1, 1, 1}
	a, b := New(Params{Temp: 1, TopP: 1, Seed: 42}), New(Params{Temp: 1, TopP: 1, Seed: 42})
	seen := map[int32]int{}
	for range 400 {
		x, y := a.Sample(logits), b.Sample(logits)
		if x != y {
			t.Fatal("same seed, different draws")
		}
		seen[x]++
	}
	for id := range int32(4) {
		if seen[id] < 50 {
			t.Fatalf("token %d drawn %d of 400 times from a uniform distribution", id, seen[id])
		}
	}
}

func TestTopPCutsTheTail(t *testing.T) {
	// p = softmax: token 0 holds ~0.9999; top_p 0.5 keeps only it.
	s := New(Params{Temp: 1, TopP: 0.5, Seed: 1})
	for range 100 {
		if got := s.Sample([]float32{10, 0, 0, 0}); got != 0 {
			t.Fatalf("got %d, want 0", got)
		}
	}
}

func TestValidateRefusesNonFiniteParameters(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, p := range []Params{{Temp: nan, TopP: 1}, {Temp: inf, TopP: 1}, {Temp: 1, TopP: nan}} {
		if p.Validate() == nil {
			t.Errorf("%+v: no error", p)
		}
	}
	for _, p := range []Params{{Temp: 0.8, TopK: 40, TopP: 0.95}, {Temp: 1, TopP: 0}, {Temp: 1, TopP: 2}} {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
}

func TestTopPZeroKeepsTheBestToken(t *testing.T) {
	s := New(Params{Temp: 1, TopP: 0, Seed: 3})
	for range 100 {
		if got := s.Sample([]float32{0, 0.5, 0.4}); got != 1 {
			t.Fatalf("got %d, want 1", got)
		}
	}
}
