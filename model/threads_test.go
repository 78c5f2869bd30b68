package model

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/bankml/bankml/sample"
)

// TestLogitsIndependentOfThreads: the logits of a prompt and of the greedy
// decode steps after it are the same bits on 1, 2 and 3 matmul threads
// (contexts under 512 cells, so split-KV attention, whose chunking mirrors
// the reference's thread count, is not involved), for the plain stories260K
// and its Q4_0 derivative (the repacked Q4_0 path).
func TestLogitsIndependentOfThreads(t *testing.T) {
	prompt := []int32{1, 403, 407, 261, 378}
	for len(prompt) < 70 { // past 64 rows: the tiled attention kernel too
		prompt = append(prompt, prompt[1:5]...)
	}
	const steps = 8
	for _, file := range []string{"stories260K.gguf", "derived/stories260K-Q4_0.gguf"} {
		m := loadModel(t, filepath.Join(modelsDir(t), file))
		run := func(threads int) [][]float32 {
			c := newCtx(t, m, len(prompt)+steps, threads)
			var all [][]float32
			logits, err := c.Decode(prompt)
			for err == nil {
				all = append(all, logits)
				if len(all) == steps {
					break
				}
				logits, err = c.Decode([]int32{sample.Greedy(logits)})
			}
			if err != nil {
				t.Fatal(err)
			}
			return all
		}
		want := run(1)
		for _, threads := range []int{2, 3} {
			got := run(threads)
			for s := range want {
				for i := range want[s] {
					if math.Float32bits(got[s][i]) != math.Float32bits(want[s][i]) {
						t.Fatalf("%s, step %d, %d threads: logit %d = %g, 1 thread %g", file, s, threads, i, got[s][i], want[s][i])
					}
				}
			}
		}
		t.Logf("%s: %d steps × %d logits equal on 1, 2 and 3 threads", file, steps, len(want[0]))
	}
}
