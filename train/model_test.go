package train

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
)

// tinyConfig is a small student: every matrix TQ2_0-wide (256), two layers, grouped K/V heads.
func tinyConfig(mode Mode) Config {
	return Config{Vocab: 512, Embd: 256, Layers: 2, Heads: 4, KVHeads: 2, FF: 256, Seq: 16, RMSEps: 1e-5, RopeBase: 10000, Mode: mode}
}

// tinyData is a deterministic stream of n tokens with k soft targets per position.
func tinyData(n, k, vocab int) *Data {
	rng := rand.New(rand.NewPCG(3, 3))
	d := &Data{Tokens: make([]int32, n), Soft: Soft{K: k, ID: make([]int32, n*k), P: make([]float32, n*k)}}
	for i := range d.Tokens {
		d.Tokens[i] = int32(rng.IntN(vocab))
		rest := float32(1)
		for j := range k {
			d.Soft.ID[i*k+j] = int32(rng.IntN(vocab))
			p := rest * float32(rng.Float64())
			d.Soft.P[i*k+j], rest = p, rest-p
		}
	}
	return d
}

func tinyOptions() Options {
	o := DefaultOptions()
	o.Steps, o.Batch, o.Warmup, o.LR = 4, 3, 2, 5e-3
	return o
}

func newTinyTrainer(t testing.TB, mode Mode, workers int) *Trainer {
	t.Helper()
	m, err := NewModel(tinyConfig(mode), 5)
	if err != nil {
		t.Fatal(err)
	}
	pool := parallel.New(workers)
	t.Cleanup(pool.Close)
	tr, err := NewTrainer(m, tinyOptions(), tinyData(400, 4, 512), pool, quant.Detect())
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// weightsEqual counts the tensors of a whose weights and moments equal b's bit for bit.
func weightsEqual(a, b *Model) (same, total int) {
	for i, t := range a.Tensors {
		u := b.Tensors[i]
		eq := true
		for _, p := range [][2][]float32{{t.W, u.W}, {t.M, u.M}, {t.V, u.V}} {
			for j := range p[0] {
				if math.Float32bits(p[0][j]) != math.Float32bits(p[1][j]) {
					eq = false
				}
			}
		}
		if eq {
			same++
		}
		total++
	}
	return same, total
}

func TestTrainingIsBitIdenticalAtAnyThreadCount(t *testing.T) {
	for _, mode := range []Mode{ModeTernary, ModeFloat} {
		ref := newTinyTrainer(t, mode, 1)
		if err := ref.Run(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		for _, workers := range []int{2, 3} {
			tr := newTinyTrainer(t, mode, workers)
			if err := tr.Run(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			same, total := weightsEqual(ref.Model, tr.Model)
			losses := 0
			for i, r := range tr.History {
				if r.CE == ref.History[i].CE && r.KL == ref.History[i].KL && r.GNorm == ref.History[i].GNorm {
					losses++
				}
			}
			t.Logf("%s, %d workers against 1: %d of %d tensors (weights and AdamW moments) and %d of %d steps' losses bit-identical",
				mode, workers, same, total, losses, len(tr.History))
			if same != total || losses != len(tr.History) {
				t.Errorf("%s: %d workers differ from 1 worker", mode, workers)
			}
		}
	}
}

func TestResumeFromACheckpointIsBitIdentical(t *testing.T) {
	straight := newTinyTrainer(t, ModeTernary, 2)
	if err := straight.Run(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	first := newTinyTrainer(t, ModeTernary, 2)
	for range 2 {
		if _, err := first.TrainStep(); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "checkpoint.bin")
	if err := first.SaveCheckpoint(path); err != nil {
		t.Fatal(err)
	}
	m, cp, err := LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	pool := parallel.New(3) // another thread count, too
	defer pool.Close()
	tr, err := NewTrainer(m, cp.Options, first.Data, pool, quant.Detect())
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Resume(cp); err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	same, total := weightsEqual(straight.Model, tr.Model)
	t.Logf("stopped at step 2 of 4, resumed on 3 workers: %d of %d tensors bit-identical to the run that never stopped", same, total)
	if same != total || len(tr.History) != len(straight.History) {
		t.Fatalf("resumed run differs: %d of %d tensors, %d records against %d", same, total, len(tr.History), len(straight.History))
	}
	for i := range tr.History {
		a, b := tr.History[i], straight.History[i]
		if a.CE != b.CE || a.KL != b.KL || a.GNorm != b.GNorm || a.LR != b.LR {
			t.Errorf("step %d: resumed %+v, straight %+v", i+1, a, b)
		}
	}
}

// The straight-through estimator: a ternary model's forward reads Q(W) and its gradient is exactly what a float
// model whose weights are Q(W) computes (dx through Q(W); dW against the input, as for a float layer).
func TestTernaryGradientIsTheFloatGradientAtTheQuantizedWeights(t *testing.T) {
	pool := parallel.New(2)
	defer pool.Close()
	e := &exec{pool: pool, level: quant.Detect()}
	tm, _ := NewModel(tinyConfig(ModeTernary), 9)
	fm, _ := NewModel(tinyConfig(ModeFloat), 9)
	tm.prepare(e)
	for i, t := range tm.Tensors {
		if t.Matrix {
			copy(fm.Tensors[i].W, t.fw)
		}
	}
	d := tinyData(2*16+1, 4, 512)
	p1, p2 := newPass(tm.Cfg, 2), newPass(fm.Cfg, 2)
	ce1, kl1 := tm.loss(e, p1, d.Tokens[:32], d.Tokens[1:33], &Soft{K: 4, ID: d.Soft.ID[:128], P: d.Soft.P[:128]}, 0.5)
	ce2, kl2 := fm.loss(e, p2, d.Tokens[:32], d.Tokens[1:33], &Soft{K: 4, ID: d.Soft.ID[:128], P: d.Soft.P[:128]}, 0.5)
	if ce1 != ce2 || kl1 != kl2 {
		t.Fatalf("losses differ: ternary %v %v, float at Q(W) %v %v", ce1, kl1, ce2, kl2)
	}
	same, nonzero := 0, 0
	for i, t := range tm.Tensors {
		eq := true
		for j, g := range t.G {
			if math.Float32bits(g) != math.Float32bits(fm.Tensors[i].G[j]) {
				eq = false
			}
			if g != 0 {
				nonzero++
			}
		}
		if eq {
			same++
		}
	}
	t.Logf("%d of %d tensors' gradients bit-identical (%d nonzero elements)", same, len(tm.Tensors), nonzero)
	if same != len(tm.Tensors) || nonzero == 0 {
		t.Fatal("the straight-through gradient is not the float gradient at Q(W)")
	}
}

// The whole model's backward (every op wired together) against the loss's derivative along a random direction,
// by central differences of the float32 forward with the loss summed in float64.
func TestModelGradientMatchesTheDirectionalDerivative(t *testing.T) {
	pool := parallel.New(2)
	defer pool.Close()
	e := &exec{pool: pool, level: quant.Detect()}
	cfg := tinyConfig(ModeFloat)
	m, _ := NewModel(cfg, 4)
	d := tinyData(2*16+1, 4, 512)
	soft := &Soft{K: 4, ID: d.Soft.ID[:128], P: d.Soft.P[:128]}
	p := newPass(cfg, 2)
	lossAt := func() float64 {
		ce, kl := m.loss(e, p, d.Tokens[:32], d.Tokens[1:33], soft, 0.5)
		return 0.5*ce + 0.5*kl
	}
	lossAt()
	rng := rand.New(rand.NewPCG(8, 8))
	agree := 0
	for _, tt := range m.Tensors {
		dir := make([]float64, len(tt.W))
		var norm, wn float64
		for i := range dir {
			dir[i] = rng.NormFloat64()
			norm += dir[i] * dir[i]
			wn += float64(tt.W[i]) * float64(tt.W[i])
		}
		var want float64
		for i := range dir {
			dir[i] /= math.Sqrt(norm)
			want += dir[i] * float64(tt.G[i])
		}
		orig := append([]float32(nil), tt.W...)
		eps := 1e-2 * math.Sqrt(wn) // a step of 1% of the tensor's norm
		step := func(s float64) float64 {
			for i := range tt.W {
				tt.W[i] = float32(float64(orig[i]) + s*eps*dir[i])
			}
			return lossAt()
		}
		got := (step(1) - step(-1)) / (2 * eps)
		copy(tt.W, orig)
		lossAt()
		if rel := math.Abs(got-want) / max(math.Abs(want), 1e-4); rel > 2e-2 {
			t.Errorf("%s: backward %.6g along a random direction, finite differences %.6g", tt.Name, want, got)
			continue
		}
		agree++
	}
	t.Logf("%d of %d tensors' gradients agree with the directional derivative within 2%%", agree, len(m.Tensors))
}

// The exported TQ2_0 and Q2_0 matrices dequantize to exactly the weights the straight-through forward read.
func TestExportWritesTheForwardsTernaryWeights(t *testing.T) {
	tr := newTinyTrainer(t, ModeTernary, 2)
	if err := tr.Run(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	tr.Model.prepare(&tr.e)
	for _, typ := range []gguf.GGMLType{gguf.TQ2_0, gguf.Q2_0} {
		var b bytes.Buffer
		if err := Export(&b, tr.Model, nil, typ, "test"); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Parse(b.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		same, total := 0, 0
		for _, tt := range tr.Model.Tensors {
			if !tt.Matrix {
				continue
			}
			ti, _ := f.Tensor(tt.Name)
			mat := quant.Matrix{Name: tt.Name, Type: ti.Type, Rows: tt.Rows, Cols: tt.Cols, Data: f.TensorData(ti)}
			row := make([]float32, tt.Cols)
			eq := ti.Type == typ
			for r := range tt.Rows {
				mat.Row(r, row)
				for c, v := range row {
					if math.Float32bits(v) != math.Float32bits(tt.fw[r*tt.Cols+c]) {
						eq = false
					}
				}
			}
			if eq {
				same++
			}
			total++
		}
		t.Logf("%s: %d of %d matrices dequantize to the forward's Q(W) bit for bit", typ, same, total)
		if same != total {
			t.Errorf("%s: exported weights differ from the trained forward's", typ)
		}
	}
	var b bytes.Buffer
	fm, _ := NewModel(tinyConfig(ModeFloat), 1)
	if err := Export(&b, fm, nil, gguf.TQ2_0, "x"); err == nil {
		t.Error("a float model exported as TQ2_0 without an error")
	}
}

func TestDataAndBatchesAreReproducible(t *testing.T) {
	d := tinyData(300, 3, 512)
	path := filepath.Join(t.TempDir(), "data.tok")
	if err := WriteData(path, d); err != nil {
		t.Fatal(err)
	}
	back, err := ReadData(path)
	if err != nil {
		t.Fatal(err)
	}
	if !equalInts(back.Tokens, d.Tokens) || !equalInts(back.Soft.ID, d.Soft.ID) || back.Soft.K != 3 {
		t.Fatal("data file round trip changed the data")
	}
	os.WriteFile(path, []byte("BMLTOK2\nxx"), 0o644)
	if _, err := ReadData(path); err == nil {
		t.Error("a truncated data file was read")
	}
	tr := newTinyTrainer(t, ModeFloat, 1)
	a1, b1, _ := tr.Batch(7)
	a2, b2, _ := tr.Batch(7)
	a3, _, _ := tr.Batch(8)
	if !equalInts(a1, a2) || !equalInts(b1, b2) || equalInts(a1, a3) {
		t.Error("a step's batch is not a pure function of (seed, step)")
	}
	for i := range len(a1) - 1 {
		if i%16 != 15 && b1[i] != a1[i+1] {
			t.Fatalf("target %d is not the next token", i)
		}
	}
}

func equalInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestHeldOutFilterDropsStoriesSharingASpan(t *testing.T) {
	held := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	stories := []Story{{Tokens: []int32{9, 9, 3, 4, 5, 6, 9}}, {Tokens: []int32{9, 3, 4, 5, 9, 6, 7}}, {Tokens: []int32{5, 6, 7, 8}}}
	kept, dropped := HeldOutFilter(stories, held, 4)
	if dropped != 2 || len(kept) != 1 || kept[0].Tokens[1] != 3 {
		t.Errorf("kept %v, dropped %d: want only the story without a 4-token run of the held-out text", kept, dropped)
	}
}
