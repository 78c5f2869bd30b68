package model

import (
	"path/filepath"
	"testing"

	"github.com/bankml/bankml/sample"
)

// benchPrompt is "<s>Once upon a time" in stories260K's vocabulary.
var benchPrompt = []int32{1, 403, 407, 261, 378}

// BenchmarkGreedyStories260K times a 5-token prompt and 64 greedy tokens on
// one thread; BenchmarkReferenceGreedyStories260K runs the same on the
// reference. Run both in one invocation to compare them side by side:
//
//	go test -run '^$' -bench 'GreedyStories260K' -count 5 ./model/
func BenchmarkGreedyStories260K(b *testing.B) {
	m := loadModel(b, filepath.Join(modelsDir(b), "stories260K.gguf"))
	for b.Loop() {
		c := newCtx(b, m, len(benchPrompt)+64, 1)
		logits, err := c.Decode(benchPrompt)
		if err != nil {
			b.Fatal(err)
		}
		for range 63 {
			if logits, err = c.Decode([]int32{sample.Greedy(logits)}); err != nil {
				b.Fatal(err)
			}
		}
		c.Close()
	}
}

func BenchmarkReferenceGreedyStories260K(b *testing.B) {
	lib := refLib(b)
	rm, err := lib.LoadModel(filepath.Join(modelsDir(b), "stories260K.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	defer rm.Close()
	for b.Loop() {
		if _, err := rm.Greedy(benchPrompt, 64, 1); err != nil {
			b.Fatal(err)
		}
	}
}
