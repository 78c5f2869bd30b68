package train

import (
	"bytes"
	"math"
	"os"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
)

// A genome's trits are the TQ2_0 codes quant dequantizes: trit·d for every weight.
func TestGenomeTritsAreTheTQ2_0Weights(t *testing.T) {
	d := float32(0.125)
	g, err := NewGenome("g", 3, 512, d, 4)
	if err != nil {
		t.Fatal(err)
	}
	tr := g.Trits()
	row := make([]float32, 512)
	m := g.Matrix()
	same, counts := 0, [3]int{}
	for r := range 3 {
		m.Row(r, row)
		for c, v := range row {
			want := float32(tr[r*512+c]) * d
			if math.Float32bits(v) == math.Float32bits(want) || (v == 0 && want == 0) {
				same++
			}
			counts[tr[r*512+c]+1]++
		}
	}
	t.Logf("%d of %d weights dequantize to trit·d; trits −1/0/+1: %v", same, 3*512, counts)
	if same != 3*512 || counts[0] == 0 || counts[1] == 0 || counts[2] == 0 {
		t.Fatal("genome layout differs from TQ2_0's")
	}
	if _, err := NewGenome("g", 2, 100, d, 1); err == nil {
		t.Error("a genome 100 wide was made")
	}
}

// The flips are a pure function of (seed, iteration, pair); each member's perturbation is undone exactly by the
// undo log, rails included; the update moves at most K trits by one bin.
func TestESPerturbRestoreAndUpdate(t *testing.T) {
	g1, _ := NewGenome("a", 4, 256, 0.1, 1)
	g2, _ := NewGenome("b", 1, 256, 0.1, 2)
	opt := ESOptions{Seed: 9, Pairs: 4, FlipRate: 0.05, UpdateFraction: 0.01}
	es, err := NewES([]*Genome{g1, g2}, opt)
	if err != nil {
		t.Fatal(err)
	}
	i1, d1 := es.flip(3, 2, 5)
	i2, d2 := es.flip(3, 2, 5)
	i3, _ := es.flip(3, 3, 5)
	i4, _ := es.flip(4, 2, 5)
	if i1 != i2 || d1 != d2 || (i1 == i3 && i1 == i4) {
		t.Error("flips are not a pure function of (seed, iteration, pair, counter)")
	}
	before := append(append([]byte(nil), g1.Data...), g2.Data...)
	restored := 0
	for p := range opt.Pairs {
		for _, s := range []int8{1, -1} {
			es.perturb(p, s)
			changed := !bytes.Equal(before, append(append([]byte(nil), g1.Data...), g2.Data...))
			es.restore()
			if changed && bytes.Equal(before, append(append([]byte(nil), g1.Data...), g2.Data...)) {
				restored++
			}
		}
	}
	t.Logf("%d of %d perturbed members restored to the exact bytes (%d flips each, %d trits)", restored, 2*opt.Pairs, es.flips(), es.total)
	if restored != 2*opt.Pairs {
		t.Fatal("the undo log did not restore every member")
	}
	old := append(g1.Trits(), g2.Trits()...)
	calls := 0
	es.Step(func() float64 { calls++; return float64(calls % 3) })
	moved := 0
	for i, v := range append(g1.Trits(), g2.Trits()...) {
		switch d := v - old[i]; d {
		case 0:
		case 1, -1:
			moved++
		default:
			t.Fatalf("trit %d moved by %d", i, d)
		}
	}
	k := int(math.Round(opt.UpdateFraction * float64(es.total)))
	t.Logf("one iteration: %d members scored, %d trits moved one bin (K = %d)", calls, moved, k)
	if calls != 2*opt.Pairs || moved == 0 || moved > k {
		t.Errorf("%d members scored and %d trits moved; want %d and 1..%d", calls, moved, 2*opt.Pairs, k)
	}
}

// The two-spirals demo. CI runs a short schedule and asserts that ES lowers the loss and lifts the accuracy well
// above chance on the deployed int8 path; BANKML_ORACLE_HEAVY=1 runs it to 100 % accuracy.
func TestESSpiralsDemo(t *testing.T) {
	pool := parallel.New(2)
	defer pool.Close()
	o := DefaultSpirals()
	heavy := os.Getenv("BANKML_ORACLE_HEAVY") == "1"
	if !heavy {
		o.MaxIters = 60
	}
	w, _ := quant.NewWork(quant.Detect(), pool)
	s0, _ := newSpirals(o, w)
	ce0, acc0 := s0.eval()
	r, err := RunSpirals(t.Context(), o, pool, quant.Detect(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("spirals: accuracy %.4f → %.4f, cross-entropy %.4f → %.4f after %d iterations (%.1f s); verified %v",
		acc0, r.Accuracy, ce0, r.CE, r.Iters, r.Seconds, r.Verified)
	if !r.Verified {
		t.Fatal("the result did not verify from the genome bytes")
	}
	if heavy {
		if r.Accuracy != 1 {
			t.Fatalf("accuracy %.4f after %d iterations, want 1", r.Accuracy, r.Iters)
		}
		return
	}
	if !(r.CE < ce0 && r.Accuracy >= 0.6 && r.Accuracy > acc0) {
		t.Fatalf("60 iterations did not train: accuracy %.4f → %.4f, cross-entropy %.4f → %.4f", acc0, r.Accuracy, ce0, r.CE)
	}
}

// The fine-tune of a student's last layers: it runs on the exported TQ2_0 bytes, lowers (or keeps) the loss on its
// windows, and writes the student with only those two tensors changed.
func TestESFineTuneChangesOnlyTheLastLayers(t *testing.T) {
	tr := newTinyTrainer(t, ModeTernary, 2)
	if err := tr.Run(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	var src bytes.Buffer
	if err := Export(&src, tr.Model, nil, gguf.TQ2_0, "s"); err != nil {
		t.Fatal(err)
	}
	sf, err := gguf.Parse(src.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var dst bytes.Buffer
	o := FineTuneOptions{ES: ESOptions{Seed: 1, Pairs: 3, FlipRate: 0.002, UpdateFraction: 0.002}, Iters: 4, Windows: 2, Seed: 1, Lambda: 0.5}
	r, err := FineTuneLastLayers(t.Context(), tr.Model, sf, tr.Data, o, &dst, tr.e.pool, tr.e.level, nil)
	if err != nil {
		t.Fatal(err)
	}
	df, err := gguf.Parse(dst.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	changed := map[string]bool{}
	for i := range sf.Tensors {
		a, b := sf.TensorData(&sf.Tensors[i]), df.TensorData(&df.Tensors[i])
		if !bytes.Equal(a, b) {
			changed[sf.Tensors[i].Name] = true
		}
	}
	t.Logf("loss %.4f → %.4f in %d iterations; tensors changed: %v", r.Before, r.After, r.Iters, changed)
	for n := range changed {
		if n != "output.weight" && n != "blk.1.ffn_down.weight" {
			t.Errorf("%s changed", n)
		}
	}
	if len(changed) == 0 || r.After > r.Before {
		t.Errorf("the fine-tune changed %d tensors and moved the loss %.4f → %.4f", len(changed), r.Before, r.After)
	}
}

// The demo's incremental evaluation (only the rows a member's flips touch recomputed) gives the bits of a full
// evaluation.
func TestSpiralsIncrementalEvaluationEqualsTheFullOne(t *testing.T) {
	pool := parallel.New(2)
	defer pool.Close()
	o := DefaultSpirals()
	w, _ := quant.NewWork(quant.Detect(), pool)
	s, _ := newSpirals(o, w)
	es, _ := NewES([]*Genome{s.g2, s.g3}, ESOptions{Seed: 3, Pairs: 4, FlipRate: 0.001, UpdateFraction: 0.005})
	s.eval()
	same := 0
	for p := range 4 {
		es.perturb(p, 1)
		c1, a1 := s.evalChanged(es.Applied())
		z := append([]float32(nil), s.z3...)
		base := append([]float32(nil), s.base...)
		c2, a2 := s.eval()
		if c1 == c2 && a1 == a2 && equalFloats(z, s.z3) {
			same++
		}
		copy(s.base, base)
		es.restore()
	}
	t.Logf("%d of 4 perturbed members: incremental evaluation bit-identical to the full one", same)
	if same != 4 {
		t.Fatal("incremental evaluation differs")
	}
}

func equalFloats(a, b []float32) bool {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return len(a) == len(b)
}
