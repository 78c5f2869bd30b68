package train

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/bankml/bankml/quant"
	"github.com/bankml/bankml/ternary"
)

// Mode is how a weight matrix trains.
type Mode int

const (
	// ModeFloat: the forward pass reads the float weight and the optimizer updates it.
	ModeFloat Mode = iota
	// ModeTernary: BitNet b1.58's straight-through estimator. The forward pass reads Q(W) = d·clamp(round(W/d),
	// −1, 1) with d the tensor's absmean scale rounded to f16 (the d every exported TQ2_0 block stores); dx flows
	// through Q(W), and dW, computed against the input as for a float layer, updates the latent W (w + (Q(w) −
	// w).detach()).
	ModeTernary
	// ModeFrozen: the forward pass reads the weight as it is and the optimizer leaves it alone (dx still flows).
	ModeFrozen
)

var modeNames = [...]string{ModeFloat: "float", ModeTernary: "ternary", ModeFrozen: "frozen"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads float, ternary (or ste) and frozen.
func ParseMode(s string) (Mode, error) {
	if s == "ste" {
		return ModeTernary, nil
	}
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("train: unknown mode %q (want float, ternary or frozen)", s)
}

// Config is the shape of a llama model and how its matrices train.
type Config struct {
	Vocab    int     `json:"vocab"`
	Embd     int     `json:"n_embd"`
	Layers   int     `json:"n_layer"`
	Heads    int     `json:"n_head"`
	KVHeads  int     `json:"n_head_kv"`
	FF       int     `json:"n_ff"`
	Seq      int     `json:"seq"` // tokens per training sequence (the exported context_length)
	RMSEps   float64 `json:"rms_eps"`
	RopeBase float64 `json:"rope_base"`
	Mode     Mode    `json:"mode"` // of every matrix: token_embd, the seven projections per layer, output
}

// Validate checks the shape; a ternary model needs every matrix a whole number of 256-weight TQ2_0 blocks wide. As
// Options.Validate, an error names each size by the flag of bankml train that sets it, a size below its least in the
// CLI's range wording ("train: --n-head: value 0 out of range [1, inf)") and sizes that do not fit together by
// both flags and why ("train: --n-embd 256 is not a multiple of --n-head 7: each head takes n_embd/n_head
// dimensions"); Vocab (the teacher's vocabulary), RMSEps, RopeBase and Mode, which no flag of bankml train sets,
// by their names in the GGUF file or the field.
func (c Config) Validate() error {
	for _, f := range []struct {
		name  string
		v, lo int
		note  string
	}{
		{"vocabulary size", c.Vocab, 2, "the teacher's n_vocab"},
		{"--n-embd", c.Embd, 2, ""},
		{"--n-layer", c.Layers, 1, ""},
		{"--n-head", c.Heads, 1, ""},
		{"--n-head-kv", c.KVHeads, 1, ""},
		{"--n-ff", c.FF, 1, ""},
		{"--seq", c.Seq, 2, "a token and the one after it at least"},
	} {
		if f.v < f.lo {
			note := ""
			if f.note != "" {
				note = " (" + f.note + ")"
			}
			return fmt.Errorf("train: %s: value %d out of range [%d, inf)%s", f.name, f.v, f.lo, note)
		}
	}
	switch {
	case c.Embd%c.Heads != 0:
		return fmt.Errorf("train: --n-embd %d is not a multiple of --n-head %d: each head takes n_embd/n_head dimensions", c.Embd, c.Heads)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("train: --n-head %d is not a multiple of --n-head-kv %d: each K/V head serves n_head/n_head_kv heads", c.Heads, c.KVHeads)
	case c.HeadDim()%2 != 0:
		return fmt.Errorf("train: --n-embd %d over --n-head %d is a head size of %d, which is odd: rotary embedding turns the head's dimensions in pairs", c.Embd, c.Heads, c.HeadDim())
	}
	if !(c.RMSEps > 0) || math.IsInf(c.RMSEps, 1) {
		return fmt.Errorf("train: rms_eps: value %g out of range (0, inf)", c.RMSEps)
	}
	if !(c.RopeBase > 0) || math.IsInf(c.RopeBase, 1) {
		return fmt.Errorf("train: rope_base: value %g out of range (0, inf)", c.RopeBase)
	}
	if c.Mode < ModeFloat || c.Mode > ModeFrozen {
		return fmt.Errorf("train: mode %d: want %s, %s or %s", int(c.Mode), ModeFloat, ModeTernary, ModeFrozen)
	}
	if c.Mode == ModeTernary {
		for _, f := range []struct {
			flag string
			v    int
		}{{"--n-embd", c.Embd}, {"--n-ff", c.FF}} {
			if f.v%quant.QK_K != 0 {
				return fmt.Errorf("train: %s %d is not a multiple of %d: a ternary model's matrices are whole TQ2_0 blocks of %d weights (--mode float takes any size)", f.flag, f.v, quant.QK_K, quant.QK_K)
			}
		}
	}
	return nil
}

// HeadDim is n_embd / n_head.
func (c Config) HeadDim() int { return c.Embd / c.Heads }

// Tensor is one parameter: its GGUF name, shape (Rows×Cols, row-major; a vector has Rows 1), how it trains, its
// weight W, gradient G and AdamW moments M and V.
type Tensor struct {
	Name       string
	Rows, Cols int
	Matrix     bool
	Mode       Mode
	Decay      bool // AdamW's weight decay applies (matrices)
	W, G, M, V []float32

	scale float32   // the f16-rounded absmean d of the last ternary forward
	fw    []float32 // the weight the forward pass reads: Q(W) in ModeTernary, else W itself
	fwT   []float32 // fw transposed (Cols×Rows), for the forward product
}

// trains reports whether the optimizer updates t.
func (t *Tensor) trains() bool { return t.Mode != ModeFrozen }

// TernaryScale returns the f16-rounded absmean scale of w (ternary.AbsmeanScale, then rounded to f16 as a TQ2_0
// block stores it): the d of the straight-through forward and of the exported blocks.
func TernaryScale(w []float32) float32 {
	return quant.FP16ToFP32(quant.FP32ToFP16(ternary.AbsmeanScale(w)))
}

// Trit is the round-clip of BitNet b1.58 as ternary.EncodeTQ2_0Scaled computes it: clamp(round_half_away(w·(1/d)),
// −1, 1), NaN to 0, and 0 never negative (so Trit·d is bit for bit what the TQ2_0 block dequantizes to).
func Trit(w, id float32) float32 {
	r := float32(math.Round(float64(w * id)))
	switch {
	case r != r || r == 0:
		return 0
	case r > 1:
		return 1
	case r < -1:
		return -1
	}
	return r
}

// layer holds one block's parameters.
type layer struct {
	attnNorm, wq, wk, wv, wo, ffnNorm, gate, up, down *Tensor
}

// Model is a llama model in training: its parameters in GGUF order and the buffers of one batch shape.
type Model struct {
	Cfg     Config
	Tensors []*Tensor

	embd, outNorm, output *Tensor
	layers                []layer
	rope                  *rope[float32]
}

// NewModel makes a model of cfg with weights drawn from seed: matrices N(0, 0.02²), the two residual-writing
// projections of each block (attn_output, ffn_down) scaled by 1/sqrt(2·n_layer) (GPT-2's rule), norms 1. Each
// tensor draws from its own PCG stream (seed, index), so the weights are a pure function of cfg and seed.
func NewModel(cfg Config, seed uint64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Model{Cfg: cfg}
	hd := cfg.HeadDim()
	mat := func(name string, rows, cols int, std float64) *Tensor {
		t := &Tensor{Name: name, Rows: rows, Cols: cols, Matrix: true, Mode: cfg.Mode, Decay: true, W: make([]float32, rows*cols)}
		rng := rand.New(rand.NewPCG(seed, uint64(len(m.Tensors))))
		for i := range t.W {
			t.W[i] = float32(rng.NormFloat64() * std)
		}
		m.Tensors = append(m.Tensors, t)
		return t
	}
	vec := func(name string, n int) *Tensor {
		t := &Tensor{Name: name, Rows: 1, Cols: n, Mode: ModeFloat, W: make([]float32, n)}
		for i := range t.W {
			t.W[i] = 1
		}
		m.Tensors = append(m.Tensors, t)
		return t
	}
	const std = 0.02
	res := std / math.Sqrt(2*float64(cfg.Layers))
	m.embd = mat("token_embd.weight", cfg.Vocab, cfg.Embd, std)
	m.outNorm = vec("output_norm.weight", cfg.Embd)
	m.output = mat("output.weight", cfg.Vocab, cfg.Embd, std)
	for i := range cfg.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		var l layer
		l.wq = mat(p+"attn_q.weight", cfg.Heads*hd, cfg.Embd, std)
		l.wk = mat(p+"attn_k.weight", cfg.KVHeads*hd, cfg.Embd, std)
		l.wv = mat(p+"attn_v.weight", cfg.KVHeads*hd, cfg.Embd, std)
		l.wo = mat(p+"attn_output.weight", cfg.Embd, cfg.Heads*hd, res)
		l.attnNorm = vec(p+"attn_norm.weight", cfg.Embd)
		l.gate = mat(p+"ffn_gate.weight", cfg.FF, cfg.Embd, std)
		l.down = mat(p+"ffn_down.weight", cfg.Embd, cfg.FF, res)
		l.up = mat(p+"ffn_up.weight", cfg.FF, cfg.Embd, std)
		l.ffnNorm = vec(p+"ffn_norm.weight", cfg.Embd)
		m.layers = append(m.layers, l)
	}
	m.alloc()
	return m, nil
}

// alloc gives every tensor its gradient, moments and forward buffers, and the model its RoPE table.
func (m *Model) alloc() {
	for _, t := range m.Tensors {
		n := len(t.W)
		t.G, t.M, t.V = make([]float32, n), make([]float32, n), make([]float32, n)
		if t.Matrix {
			if t.Mode == ModeTernary {
				t.fw = make([]float32, n)
			} else {
				t.fw = t.W
			}
			t.fwT = make([]float32, n)
		}
	}
	m.rope = newRope[float32](m.Cfg.Seq, m.Cfg.HeadDim(), m.Cfg.RopeBase)
}

// Params returns the number of weights.
func (m *Model) Params() int {
	n := 0
	for _, t := range m.Tensors {
		n += len(t.W)
	}
	return n
}

// Tensor returns the parameter named name, or nil.
func (m *Model) Tensor(name string) *Tensor {
	for _, t := range m.Tensors {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// SetMode sets the mode of the matrices whose names satisfy match (the vectors stay float).
func (m *Model) SetMode(match func(name string) bool, mode Mode) {
	for _, t := range m.Tensors {
		if t.Matrix && match(t.Name) {
			if mode == ModeTernary && t.Mode != ModeTernary {
				t.fw = make([]float32, len(t.W))
			} else if mode != ModeTernary {
				t.fw = t.W
			}
			t.Mode = mode
		}
	}
}

// prepare sets every matrix's forward weight (quantizing the ternary ones) and its transpose.
func (m *Model) prepare(e *exec) {
	for _, t := range m.Tensors {
		if !t.Matrix {
			continue
		}
		if t.Mode == ModeTernary {
			d := TernaryScale(t.W)
			t.scale = d
			id := 1 / d
			e.rows(len(t.W), 4096, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					t.fw[i] = Trit(t.W[i], id) * d
				}
			})
		}
		transpose(e, t.fwT, t.fw, t.Rows, t.Cols)
	}
}
