package model

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/parallel"
	"github.com/bankml/bankml/quant"
	"github.com/bankml/bankml/ternary"
)

// ErrUnsupported marks a model the runtime cannot run yet (architecture,
// tensor type, hyperparameter); errors.Is works through the wrapping.
var ErrUnsupported = errors.New("not supported yet")

// ropeKind is how an architecture rotates Q and K (llama_model_rope_type in
// src/llama-model.cpp).
type ropeKind uint8

const (
	ropeNone ropeKind = iota // no RoPE (bert: absolute positions)
	ropeNorm                 // LLAMA_ROPE_TYPE_NORM: adjacent pairs (2i, 2i+1)
	ropeNeox                 // LLAMA_ROPE_TYPE_NEOX: pairs (i, i+n/2)
)

// arch is one architecture of the registry: what its loader binds
// (load_hparams, load_arch_tensors) and its forward pass (the graph of
// src/models/<name>.cpp), over the shared ops of pass.
type arch struct {
	name string
	rope ropeKind
	// encoder: non-causal attention over the whole input, no KV cache kept
	// between decodes, embeddings and no logits (bert).
	encoder bool
	// normEps: the graph's norms are layer norms with
	// attention.layer_norm_epsilon; otherwise RMS norms with
	// attention.layer_norm_rms_epsilon.
	normEps bool
	// hparams reads the architecture's own keys (load_arch_hparams); nil:
	// none.
	hparams func(md meta, hp *Hparams) error
	// input lists the tensors before the blocks besides token_embd, and head
	// those after them (output_norm and output are bound by default unless
	// noOutput); layer lists a block's tensors (after "blk.N.").
	input, head, layer []tensor
	// noOutput: the logits use token_embd directly (bitnet); outputNorm
	// false: no output_norm (bert).
	noOutput, noOutputNorm bool
	// check validates the bound tensors beyond the list (either phi3's fused
	// attn_qkv or its three projections); nil: nothing more.
	check func(m *Model) error
	// inputs runs the architecture's ops on the token embeddings before the
	// blocks (gemma3's scaling, bert's types, positions and norm); nil: none.
	inputs func(p *pass)
	// block computes layer il of a pass (the architecture's forward).
	block func(p *pass, il int, l *Layer)
}

// archs is the architecture registry, keyed by general.architecture (each
// file arch_*.go adds its own in init): the graphs this package runs, each
// proven against the reference by the oracle tests. Read-only after init.
var archs = map[string]*arch{}

// register adds a to the registry.
func register(a *arch) {
	if _, dup := archs[a.name]; dup {
		panic("model: architecture " + a.name + " registered twice")
	}
	archs[a.name] = a
}

// Architectures returns the general.architecture values Load accepts, sorted.
func Architectures() []string {
	out := make([]string, 0, len(archs))
	for a := range archs {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// CheckArchitecture reports, from the header alone, whether Load can take
// f's architecture and hyperparameters: nil for a registered architecture
// whose hyperparameters readHparams accepts, else an error naming
// general.architecture and the registered values (wrapping ErrUnsupported
// when the key is present but not registered), or the hyperparameter key at
// fault (a missing {arch}.context_length among them, which llama.cpp refuses
// as "key not found in model").
func CheckArchitecture(f *gguf.File) error {
	arch := f.Architecture()
	if arch == "" {
		return fmt.Errorf("model: general.architecture missing")
	}
	if _, ok := archs[arch]; !ok {
		return fmt.Errorf("model: architecture %q (this runtime runs %s): %w", arch, strings.Join(Architectures(), ", "), ErrUnsupported)
	}
	_, err := readHparams(f)
	return err
}

// Hparams are the hyperparameters of a model, read from GGUF metadata with
// llama.cpp's key names and defaults (llama_model::load_hparams and the
// architectures' load_arch_hparams).
type Hparams struct {
	NEmbd     int     // {arch}.embedding_length
	NLayer    int     // {arch}.block_count
	NFF       int     // {arch}.feed_forward_length
	NHead     int     // {arch}.attention.head_count
	NHeadKV   int     // {arch}.attention.head_count_kv (default NHead)
	HeadDim   int     // {arch}.attention.key_length (default NEmbd/NHead); value_length must agree
	NRot      int     // {arch}.rope.dimension_count (default HeadDim)
	NCtxTrain int     // {arch}.context_length (required, as llama.cpp requires it)
	RMSEps    float32 // {arch}.attention.layer_norm_rms_epsilon (the RMS-norm graphs)
	NormEps   float32 // {arch}.attention.layer_norm_epsilon (the layer-norm graphs: bert)
	FreqBase  float32 // {arch}.rope.freq_base (default 10000)
	NVocab    int     // rows of token_embd.weight

	// RoPE scaling as the model was trained (llama_hparams):
	RopeScaling    string  // {arch}.rope.scaling.type: "none", "linear" (the default), "yarn" or (phi3) "longrope"
	FreqScaleTrain float32 // 1/{arch}.rope.scaling.factor (or rope.scale_linear); 1 when absent or 0
	NCtxOrigYarn   int     // {arch}.rope.scaling.original_context_length (default NCtxTrain)
	RopeAttnFactor float32 // {arch}.rope.scaling.attn_factor (default 1)

	// Sliding-window attention (gemma3): NSWA is attention.sliding_window
	// (0: none), SWA[il] whether layer il slides (sliding_window_pattern:
	// every N-th layer, counting from 1, is global; default 6), FreqBaseSWA
	// the sliding layers' rope.freq_base_swa (default 10000; their freq_scale
	// is 1).
	NSWA        int
	SWA         []bool
	FreqBaseSWA float32
	// LogitSoftcap is {arch}.final_logit_softcapping (gemma3; 0: none).
	LogitSoftcap float32
	// AttnScale is the factor Q is scaled by before attention when the graph
	// scales Q itself (gemma3's f_attention_scale, phi3's 1/sqrt(head_dim));
	// 0: attention scales the scores by 1/sqrt(head_dim).
	AttnScale float32

	Causal      bool     // {arch}.attention.causal (default true; bert's files say false)
	Pooling     int      // {arch}.pooling_type (llama_pooling_type; -1 when absent)
	NTokenTypes int      // tokenizer.ggml.token_type_count (bert)
	NClsOut     int      // the ranking head's labels: {arch}.classifier.output_labels' length (default 1)
	ClsLabels   []string // {arch}.classifier.output_labels
}

// Model is a loaded model whose weight matrices are views into the
// memory-mapped GGUF file (read-only; nothing else is copied but the f32 norm
// vectors, a few KiB per layer, and the packed copies WaitPacked counts).
type Model struct {
	Arch       string
	HP         Hparams
	Rope       Rope          // RoPE as llama_context derives it with its default parameters
	RopeSWA    Rope          // gemma3's sliding-window layers' RoPE
	TokEmbd    *quant.Matrix `gguf:"token_embd.weight"`
	Output     Linear        `gguf:"output.weight"` // or TokEmbd's matrix when the embeddings are tied
	OutputNorm []float32     `gguf:"output_norm.weight"`
	Layers     []Layer

	// bert's inputs: the token types (row 0 is added to every token), the
	// absolute positions and the input norm.
	TokTypes *quant.Matrix `gguf:"token_types.weight"`
	PosEmbd  *quant.Matrix `gguf:"position_embd.weight"`
	TokNorm  []float32     `gguf:"token_embd_norm.weight"`
	TokNormB []float32     `gguf:"token_embd_norm.bias"`
	// The ranking head (pooling rank): bert's cls dense layer, then cls.output.
	Cls     Linear    `gguf:"cls.weight"`
	ClsB    []float32 `gguf:"cls.bias"`
	ClsOut  Linear    `gguf:"cls.output.weight"`
	ClsOutB []float32 `gguf:"cls.output.bias"`
	// phi3's rope factors (the short ones up to n_ctx_orig_yarn).
	RopeLong  []float32 `gguf:"rope_factors_long.weight"`
	RopeShort []float32 `gguf:"rope_factors_short.weight"`

	// Level is the CPU level whose kernels run the model's matmuls
	// (quant.DefaultLevel: BANKML_CPU or the best this CPU has).
	Level quant.Level

	a *arch
	// packing: closed when the packed copies are all made (at once by Load,
	// in the background by LoadBackground); packedBytes and packErr are
	// written before it is closed.
	packDone    chan struct{}
	packStop    atomic.Bool
	packedBytes int
	packErr     error
}

// Encoder reports whether the model is an encoder (bert): every input is
// evaluated whole with non-causal attention and gives embeddings, not
// logits.
func (m *Model) Encoder() bool { return m.a != nil && m.a.encoder }

// Close stops a background packing (LoadBackground) after the matrices being
// packed and waits for it, so that the file can then be unmapped: close the
// Model before its gguf.File. Matrices not packed yet keep their plain-layout
// kernels (the same bits). Closing a Model that Load returned, or twice,
// does nothing; the Model stays usable.
func (m *Model) Close() {
	m.packStop.Store(true)
	<-m.packDone
}

// WaitPacked waits until the packed copies of the model's Q1_0, Q2_0 and
// TQ2_0 projection weights are made (at once for Load, in the background for
// LoadBackground) and returns the bytes they take (0 at LevelGeneric, whose
// kernels read the mapped file) and the error of the first matrix that could
// not be packed (that matrix keeps running its plain-layout kernel, which
// gives the same bits).
func (m *Model) WaitPacked() (int, error) {
	<-m.packDone
	return m.packedBytes, m.packErr
}

// Load binds the tensors and hyperparameters of f to a Model. It refuses,
// with an error naming the reason, an architecture that is not registered
// (CheckArchitecture), a tensor type quant cannot multiply, RoPE scaling
// other than none, linear and YaRN, partial RoPE, or experts (all wrapping
// ErrUnsupported); a missing
// tensor, a tensor the graph does not use or a shape that disagrees with the
// hyperparameters is an error too. Metadata of the wrong type or out of range
// is named with its key, and an invalid BANKML_CPU (quant.DefaultLevel) is
// an error too.
//
// At the SIMD levels Load packs every Q1_0, Q2_0 and TQ2_0 weight of the
// projections (quant.Matrix.Repack: a copy of the matrix's size, rounded up
// to 16 rows; docs/PERFORMANCE.md measures what it buys): the file stays
// mapped read-only and those pages are not read again after Load.
// TokEmbd is never packed (get_rows reads the file).
func Load(f *gguf.File) (*Model, error) { return load(f, false) }

// LoadBackground is Load with the packing of the SIMD levels done on another
// goroutine after it returns, so that an 8B-shaped model is ready in the
// time the mapping and the header take instead of the seconds packing takes
// (docs/PERFORMANCE.md). Until a matrix's packed copy is published its
// matmuls run the plain-layout kernels of the same level, which give the
// same bits (quant.Matrix.ReservePack); WaitPacked waits for the end and
// reports the bytes. The errors are Load's: every matrix is checked before
// it returns.
func LoadBackground(f *gguf.File) (*Model, error) { return load(f, true) }

// readHparams reads f's hyperparameters as llama_model::load_hparams does
// for the registered architecture (the header alone; f's architecture must
// be registered): the required keys refused by name when missing, of the
// wrong type or out of range, and what the graphs do not run (partial RoPE,
// value_length != key_length, unknown RoPE scaling, experts) wrapping
// ErrUnsupported.
func readHparams(f *gguf.File) (Hparams, error) {
	name := f.Architecture()
	a := archs[name]
	md := meta{f: f, arch: name}
	var hp Hparams
	var err error
	for _, p := range []struct {
		dst      *int
		key      string
		def      int
		required bool
	}{
		{&hp.NEmbd, "embedding_length", 0, true},
		{&hp.NLayer, "block_count", 0, true},
		{&hp.NFF, "feed_forward_length", 0, true},
		{&hp.NHead, "attention.head_count", 0, true},
	} {
		if *p.dst, err = md.uint(p.key, p.def, p.required); err != nil {
			return Hparams{}, err
		}
	}
	if hp.NHeadKV, err = md.uint("attention.head_count_kv", hp.NHead, false); err != nil {
		return Hparams{}, err
	}
	if hp.NHead%hp.NHeadKV != 0 {
		return Hparams{}, fmt.Errorf("model: %d heads are not a multiple of %d kv heads", hp.NHead, hp.NHeadKV)
	}
	if _, ok := f.Get(name + ".attention.key_length"); !ok && hp.NEmbd%hp.NHead != 0 {
		return Hparams{}, fmt.Errorf("model: n_embd %d is not a multiple of %d heads and %s.attention.key_length is missing", hp.NEmbd, hp.NHead, name)
	}
	if hp.HeadDim, err = md.uint("attention.key_length", hp.NEmbd/hp.NHead, false); err != nil {
		return Hparams{}, err
	}
	// Every graph asserts n_embd_head_v == n_embd_head_k (value_length
	// defaults to n_embd/n_head like key_length).
	if vl, err := md.uint("attention.value_length", hp.NEmbd/hp.NHead, false); err != nil {
		return Hparams{}, err
	} else if vl != hp.HeadDim {
		return Hparams{}, fmt.Errorf("model: value_length %d != key_length %d: %w", vl, hp.HeadDim, ErrUnsupported)
	}
	if hp.NRot, err = md.uint("rope.dimension_count", hp.HeadDim, false); err != nil {
		return Hparams{}, err
	}
	if a.rope != ropeNone && (hp.NRot != hp.HeadDim || hp.NRot%2 != 0) {
		return Hparams{}, fmt.Errorf("model: rope.dimension_count %d with head size %d (partial RoPE): %w", hp.NRot, hp.HeadDim, ErrUnsupported)
	}
	if hp.NCtxTrain, err = md.uint("context_length", 0, true); err != nil {
		return Hparams{}, err
	}
	if a.normEps {
		if hp.NormEps, err = md.float("attention.layer_norm_epsilon", 0, true); err != nil {
			return Hparams{}, err
		}
	} else if hp.RMSEps, err = md.float("attention.layer_norm_rms_epsilon", 0, true); err != nil {
		return Hparams{}, err
	}
	if hp.FreqBase, err = md.float("rope.freq_base", 10000, false); err != nil {
		return Hparams{}, err
	}
	if hp.FreqBase == 0 {
		return Hparams{}, fmt.Errorf("model: metadata %s.rope.freq_base is 0", name)
	}
	if err := readRopeScaling(md, &hp, a); err != nil {
		return Hparams{}, err
	}
	hp.Causal = true
	if v, ok := f.Get(name + ".attention.causal"); ok {
		if hp.Causal, ok = v.Bool(); !ok {
			return Hparams{}, fmt.Errorf("model: metadata %s.attention.causal has type %s, want a bool", name, v.Type)
		}
	}
	if hp.Causal == a.encoder {
		return Hparams{}, fmt.Errorf("model: metadata %s.attention.causal = %t: the %s graph runs %s attention: %w", name, hp.Causal, name, map[bool]string{true: "non-causal", false: "causal"}[a.encoder], ErrUnsupported)
	}
	hp.Pooling = -1
	if v, ok := f.GetUint64(name + ".pooling_type"); ok {
		if v > 4 {
			return Hparams{}, fmt.Errorf("model: metadata %s.pooling_type = %d (llama.cpp's types are 0 to 4)", name, v)
		}
		hp.Pooling = int(v)
	} else if v, ok := f.Get(name + ".pooling_type"); ok {
		return Hparams{}, fmt.Errorf("model: metadata %s.pooling_type has type %s, want an integer", name, v.Type)
	}
	if v, ok := f.GetUint64("tokenizer.ggml.token_type_count"); ok {
		hp.NTokenTypes = int(v)
	}
	hp.NClsOut = 1
	if arr, ok := f.GetArray(name + ".classifier.output_labels"); ok {
		labels, err := arr.Strings()
		if err != nil {
			return Hparams{}, fmt.Errorf("model: metadata %s.classifier.output_labels: %w", name, err)
		}
		if len(labels) > 0 {
			hp.NClsOut, hp.ClsLabels = len(labels), labels
		}
	}
	// Mixture-of-experts files need expert tensors these graphs do not run.
	// (Keys llama.cpp does not read for these graphs, such as attention.scale
	// or rope.scaling.yarn_log_multiplier, are ignored as it ignores them.)
	if v, ok := f.GetUint64(name + ".expert_count"); ok && v != 0 {
		return Hparams{}, fmt.Errorf("model: metadata %s.expert_count = %d (mixture of experts): %w", name, v, ErrUnsupported)
	}
	if a.hparams != nil {
		if err := a.hparams(md, &hp); err != nil {
			return Hparams{}, err
		}
	}
	return hp, nil
}

func load(f *gguf.File, background bool) (*Model, error) {
	if err := CheckArchitecture(f); err != nil {
		return nil, err
	}
	level, err := quant.DefaultLevel()
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	name := f.Architecture()
	a := archs[name]
	hp, err := readHparams(f)
	if err != nil {
		return nil, err
	}

	m := &Model{Arch: name, a: a}
	tb := tensorBinder{f: f, used: map[string]bool{}}
	if err := tb.noPlanes("token_embd.weight"); err != nil {
		return nil, err
	}
	if m.TokEmbd, err = tb.mat("token_embd.weight", hp.NEmbd, 0, false); err != nil {
		return nil, err
	}
	hp.NVocab = m.TokEmbd.Rows
	if err := tb.bindFields(m, "", a.input, &hp); err != nil {
		return nil, err
	}
	if !a.noOutputNorm {
		if m.OutputNorm, err = tb.vec("output_norm.weight", hp.NEmbd); err != nil {
			return nil, err
		}
	}
	if !a.encoder {
		var out *Linear
		if !a.noOutput {
			if out, err = tb.linear("output.weight", hp.NEmbd, hp.NVocab, true); err != nil {
				return nil, err
			}
		}
		if out == nil { // tied embeddings: llama.cpp duplicates token_embd (TENSOR_DUPLICATED)
			l := linearOf(m.TokEmbd)
			out = &l
		}
		m.Output = *out
	}
	if err := tb.bindFields(m, "", a.head, &hp); err != nil {
		return nil, err
	}
	m.Layers = make([]Layer, hp.NLayer)
	for i := range m.Layers {
		if err := tb.bindFields(&m.Layers[i], fmt.Sprintf("blk.%d.", i), a.layer, &hp); err != nil {
			return nil, err
		}
	}
	if a.check != nil {
		m.HP = hp
		if err := a.check(m); err != nil {
			return nil, err
		}
	}
	// Like llama.cpp's loader, refuse tensors the graph does not use (a wrong
	// block_count, biases or norms another architecture has).
	for _, t := range f.Tensors {
		if !tb.used[t.Name] {
			return nil, fmt.Errorf("model: tensor %q is not used by the %s graph (%d layers): %w", t.Name, name, hp.NLayer, ErrUnsupported)
		}
	}
	m.HP = hp
	if a.rope != ropeNone {
		m.Rope = newRope(hp, a.rope == ropeNeox, hp.FreqBase, hp.FreqScaleTrain)
		if hp.NSWA > 0 {
			m.RopeSWA = newRope(hp, a.rope == ropeNeox, hp.FreqBaseSWA, 1)
		}
	}
	m.Level = level
	m.packDone = make(chan struct{})
	if level == quant.LevelGeneric {
		close(m.packDone)
		return m, nil
	}
	if !background {
		m.repack()
		if m.packErr != nil {
			return nil, m.packErr
		}
		return m, nil
	}
	for _, l := range m.Linears() {
		for i := range l.Planes {
			if err := l.Planes[i].ReservePack(); err != nil {
				return nil, fmt.Errorf("model: %s: %w", l.Planes[i].Name, err)
			}
		}
	}
	go m.repack()
	return m, nil
}

// Linears lists the model's projection weights (pointers into the Model):
// each layer's bound projections in the order of Layer's fields (Wq, Wk, Wv,
// Wqkv, Wo, FFNGate, FFNUp, FFNDown), then Output and the ranking head's.
func (m *Model) Linears() []*Linear {
	var out []*Linear
	for i := range m.Layers {
		out = append(out, m.Layers[i].linears()...)
	}
	for _, l := range []*Linear{&m.Output, &m.Cls, &m.ClsOut} {
		if len(l.Planes) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// repack packs every projection weight (Linear.repack), one matrix per
// chunk on a pool of GOMAXPROCS workers, releases the packed matrices'
// mapped pages from the resident set, sets packedBytes and packErr and
// closes packDone.
func (m *Model) repack() {
	defer close(m.packDone)
	j := &repackJob{ls: m.Linears(), maps: sharedFileMaps(), stop: &m.packStop}
	j.bytes = make([]int, len(j.ls))
	j.errs = make([]error, len(j.ls))
	p := parallel.New(runtime.GOMAXPROCS(0))
	defer p.Close()
	p.Run(len(j.ls), 1, j)
	for i := range j.ls {
		if j.errs[i] != nil && m.packErr == nil {
			m.packErr = j.errs[i]
		}
		m.packedBytes += j.bytes[i]
	}
}

// repackJob packs Linears [lo, hi) of ls.
type repackJob struct {
	ls    []*Linear
	maps  [][2]uintptr // read-only shared file mappings (releasePages)
	bytes []int
	errs  []error
	stop  *atomic.Bool // Model.Close: pack no further matrix
}

func (j *repackJob) Do(_, lo, hi int) {
	for i := lo; i < hi; i++ {
		if j.stop.Load() {
			return
		}
		j.bytes[i], j.errs[i] = j.ls[i].repack(j.maps)
	}
}

// meta reads {arch}.* metadata with llama.cpp's defaults.
type meta struct {
	f    *gguf.File
	arch string
}

func (md meta) uint(key string, def int, required bool) (int, error) {
	full := md.arch + "." + key
	v, ok := md.f.GetUint64(full)
	if !ok {
		return def, md.absent(full, "an integer", required)
	}
	if v == 0 || v > 1<<24 {
		return 0, fmt.Errorf("model: metadata %s = %d out of range", full, v)
	}
	return int(v), nil
}

func (md meta) float(key string, def float64, required bool) (float32, error) {
	full := md.arch + "." + key
	v, ok := md.f.GetFloat64(full)
	if !ok {
		if err := md.absent(full, "a float", required); err != nil {
			return 0, err
		}
		v = def
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > math.MaxFloat32 {
		return 0, fmt.Errorf("model: metadata %s = %g, want a finite value >= 0", full, v)
	}
	return float32(v), nil
}

// absent is the error for a key the accessor did not find: of the wrong
// type when present, missing when required, else nil (the default applies).
func (md meta) absent(full, want string, required bool) error {
	if val, present := md.f.Get(full); present {
		return fmt.Errorf("model: metadata %s has type %s, want %s", full, val.Type, want)
	}
	if required {
		return fmt.Errorf("model: metadata %s missing", full)
	}
	return nil
}

// readRopeScaling reads the RoPE scaling keys as llama_model::load_hparams
// does: rope.scaling.type (default "linear"; "longrope" only for an
// architecture with rope factors, where it scales as linear and the factors
// do the rest), rope.scaling.factor (else the older rope.scale_linear;
// freq_scale = 1/factor, 1 for 0 or absent),
// rope.scaling.original_context_length (default context_length) and
// rope.scaling.attn_factor (default 1).
func readRopeScaling(md meta, hp *Hparams, a *arch) error {
	hp.RopeScaling = "linear"
	if v, ok := md.f.Get(md.arch + ".rope.scaling.type"); ok {
		s, isStr := md.f.GetString(md.arch + ".rope.scaling.type")
		if !isStr {
			return fmt.Errorf("model: metadata %s.rope.scaling.type has type %s, want a string", md.arch, v.Type)
		}
		hp.RopeScaling = s
	}
	switch hp.RopeScaling {
	case "none", "linear", "yarn":
	case "longrope":
		if a.name != "phi3" {
			return fmt.Errorf("model: rope scaling %q on %s (this runtime runs longrope with phi3's rope factors only): %w", hp.RopeScaling, a.name, ErrUnsupported)
		}
	default:
		return fmt.Errorf("model: rope scaling %q (this runtime runs none, linear, yarn and phi3's longrope): %w", hp.RopeScaling, ErrUnsupported)
	}
	factor, err := md.float("rope.scaling.factor", 0, false)
	if err != nil {
		return err
	}
	if _, ok := md.f.Get(md.arch + ".rope.scaling.factor"); !ok {
		if factor, err = md.float("rope.scale_linear", 0, false); err != nil {
			return err
		}
	}
	hp.FreqScaleTrain = 1
	if factor != 0 {
		hp.FreqScaleTrain = 1 / factor
	}
	if hp.NCtxOrigYarn, err = md.uint("rope.scaling.original_context_length", hp.NCtxTrain, false); err != nil {
		return err
	}
	if hp.RopeAttnFactor, err = md.float("rope.scaling.attn_factor", 1, false); err != nil {
		return err
	}
	return nil
}

// tensorBinder binds tensors of f by name, recording which ones are used.
type tensorBinder struct {
	f    *gguf.File
	used map[string]bool
}

// mat binds a 2-D weight of cols × rows (rows 0: any), or nil when optional
// and absent.
func (tb tensorBinder) mat(name string, cols, rows int, optional bool) (*quant.Matrix, error) {
	t, ok := tb.f.Tensor(name)
	tb.used[name] = ok
	if !ok {
		if optional {
			return nil, nil
		}
		return nil, fmt.Errorf("model: tensor %q missing", name)
	}
	if len(t.Ne) != 2 || t.Ne[0] != int64(cols) || (rows > 0 && t.Ne[1] != int64(rows)) {
		return nil, fmt.Errorf("model: tensor %q: shape %v, want [%d %d]", name, t.Ne, cols, rows)
	}
	q := &quant.Matrix{Name: name, Type: t.Type, Cols: cols, Rows: int(t.Ne[1]), Data: tb.f.TensorData(t)}
	if err := q.Supported(); err != nil {
		return nil, fmt.Errorf("model: %w: %w", err, ErrUnsupported)
	}
	return q, nil
}

// linear binds a projection weight (see mat) as a one-plane Linear, or as
// its PTQTP planes when the file stores it so (planes), or nil when optional
// and absent.
func (tb tensorBinder) linear(name string, cols, rows int, optional bool) (*Linear, error) {
	if l, err := tb.planes(name, cols, rows); l != nil || err != nil {
		return l, err
	}
	q, err := tb.mat(name, cols, rows, optional)
	if q == nil || err != nil {
		return nil, err
	}
	l := linearOf(q)
	return &l, nil
}

// hasPlanes reports whether name is stored as PTQTP planes.
func (tb tensorBinder) hasPlanes(name string) bool {
	pl, err := ternary.LoadPlanes(tb.f, name)
	return err != nil || pl != nil
}

// vec reads a 1-D weight of n values as float32 (a copy: norms are small).
func (tb tensorBinder) vec(name string, n int) ([]float32, error) {
	t, ok := tb.f.Tensor(name)
	tb.used[name] = ok
	if !ok {
		return nil, fmt.Errorf("model: tensor %q missing", name)
	}
	if t.NElements() != int64(n) {
		return nil, fmt.Errorf("model: tensor %q: %d elements, want %d", name, t.NElements(), n)
	}
	q := &quant.Matrix{Name: name, Type: t.Type, Cols: n, Rows: 1, Data: tb.f.TensorData(t)}
	if err := q.Supported(); err != nil {
		return nil, fmt.Errorf("model: %w: %w", err, ErrUnsupported)
	}
	out := make([]float32, n)
	q.Row(0, out)
	return out, nil
}
