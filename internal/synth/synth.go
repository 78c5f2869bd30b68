package synth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/fsutil"
)

// chunkBytes is about how many bytes of a tensor are generated and written at a time.
const chunkBytes = 1 << 20

// valueKind is what a tensor's values stand for, which sets how they are drawn (generator.fill).
type valueKind uint8

const (
	kindWeight valueKind = iota // a weight matrix: root mean square 1/sqrt(row length)
	kindNorm                    // a norm weight or a bitnet weight scale: F32 in [0.75, 1.25)
	kindBias                    // a bias: F32 in [-0.25, 0.25)
	kindFactor                  // phi3's rope factors: F32 in [1, 4)
)

// tensorSpec is one planned tensor.
type tensorSpec struct {
	info gguf.TensorInfo
	kind valueKind
}

// Plan returns the metadata and the tensor infos (name, shape, type; offsets are left to the writer) of the model
// that cfg describes, after checking it. Errors wrap [ErrConfig] and say which setting is wrong, e.g. a row length
// that is not a multiple of the chosen type's block size.
//
// The tensors are those of llama.cpp v0.5.0's loaders (src/models/*.cpp, load_arch_tensors; [ForArch] gives each
// architecture its settings). For llama and qwen3: token_embd {n_embd, n_vocab}; per block attn_norm {n_embd},
// attn_q {n_embd, n_head*head_dim}, attn_k and attn_v {n_embd, n_head_kv*head_dim}, attn_output {n_head*head_dim,
// n_embd}, for qwen3 attn_q_norm and attn_k_norm {head_dim}, ffn_norm {n_embd}, ffn_gate and ffn_up {n_embd,
// n_ff}, ffn_down {n_ff, n_embd}; output_norm {n_embd}; output {n_embd, n_vocab}, absent when the embeddings are
// tied. The metadata keys and value types are those llama_model_base::load_hparams reads and
// convert_hf_to_gguf.py (conversion/qwen.py, gguf-py) writes, in the converter's order.
func Plan(cfg Config) ([]gguf.KV, []gguf.TensorInfo, error) {
	kvs, specs, _, err := plan(cfg)
	if err != nil {
		return nil, nil, err
	}
	infos := make([]gguf.TensorInfo, len(specs))
	for i, s := range specs {
		infos[i] = s.info
	}
	return kvs, infos, nil
}

func plan(cfg Config) ([]gguf.KV, []tensorSpec, *Vocab, error) {
	v := cfg.Vocab
	if v == nil {
		var err error
		if v, err = Synthetic(cfg.Shape.NVocab); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := checkVocab(v); err != nil {
		return nil, nil, nil, err
	}
	nVocab := len(v.Tokens)
	if err := cfg.validate(nVocab); err != nil {
		return nil, nil, nil, err
	}
	s := cfg.Shape
	specs, err := tensors(cfg, int64(nVocab))
	if err != nil {
		return nil, nil, nil, err
	}

	arch := cfg.Arch
	u32 := func(n int) gguf.Value { return gguf.Uint32Value(uint32(n)) }
	name := cfg.Name
	if name == "" {
		name = fmt.Sprintf("synthetic %s %s", arch, strings.ToUpper(cfg.Weight.String()))
	}
	desc := cfg.Description
	if desc == "" {
		desc = fmt.Sprintf("bankml synth: random weights; arch %s, n_embd %d, n_layer %d, weights %s, embd %s, output %s, seed %d, %d-token %s vocabulary",
			arch, s.NEmbd, s.NLayer, cfg.Weight, cfg.Embd, cfg.Output, cfg.Seed, nVocab, v.Pre)
		if s.Tied {
			desc = strings.Replace(desc, ", output "+cfg.Output.String(), ", tied output", 1)
		}
	}
	// The order of convert_hf_to_gguf.py: general, hyperparameters, file type, tokenizer.
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.StringValue(arch)},
		{Key: "general.type", Value: gguf.StringValue("model")},
		{Key: "general.name", Value: gguf.StringValue(name)},
		{Key: "general.description", Value: gguf.StringValue(desc)},
		{Key: arch + ".block_count", Value: u32(s.NLayer)},
		{Key: arch + ".context_length", Value: u32(s.NCtxTrain)},
		{Key: arch + ".embedding_length", Value: u32(s.NEmbd)},
		{Key: arch + ".feed_forward_length", Value: u32(s.NFF)},
		{Key: arch + ".attention.head_count", Value: u32(s.NHead)},
	}
	if arch == ArchBert {
		kvs = append(kvs,
			gguf.KV{Key: arch + ".attention.layer_norm_epsilon", Value: gguf.Float32Value(s.RMSEps)},
			gguf.KV{Key: arch + ".attention.causal", Value: gguf.BoolValue(false)})
	} else {
		kvs = append(kvs,
			gguf.KV{Key: arch + ".attention.head_count_kv", Value: u32(s.NHeadKV)},
			gguf.KV{Key: arch + ".rope.freq_base", Value: gguf.Float32Value(s.RopeFreqBase)},
			gguf.KV{Key: arch + ".attention.layer_norm_rms_epsilon", Value: gguf.Float32Value(s.RMSEps)},
			gguf.KV{Key: arch + ".attention.key_length", Value: u32(s.HeadDim)},
			gguf.KV{Key: arch + ".attention.value_length", Value: u32(s.HeadDim)})
	}
	switch arch {
	case ArchLlama:
		kvs = append(kvs,
			gguf.KV{Key: "llama.vocab_size", Value: u32(nVocab)},
			gguf.KV{Key: "llama.rope.dimension_count", Value: u32(s.HeadDim)})
	case ArchPhi3, ArchBitnet:
		kvs = append(kvs, gguf.KV{Key: arch + ".rope.dimension_count", Value: u32(s.HeadDim)})
	}
	if s.SlidingWindow > 0 {
		kvs = append(kvs, gguf.KV{Key: arch + ".attention.sliding_window", Value: u32(s.SlidingWindow)})
	}
	if s.SlidingPattern > 0 {
		kvs = append(kvs, gguf.KV{Key: arch + ".attention.sliding_window_pattern", Value: u32(s.SlidingPattern)})
	}
	if s.RopeFreqBaseSWA != 0 {
		kvs = append(kvs, gguf.KV{Key: arch + ".rope.freq_base_swa", Value: gguf.Float32Value(s.RopeFreqBaseSWA)})
	}
	if s.RopeScaleLinear != 0 {
		kvs = append(kvs,
			gguf.KV{Key: arch + ".rope.scaling.type", Value: gguf.StringValue("linear")},
			gguf.KV{Key: arch + ".rope.scaling.factor", Value: gguf.Float32Value(s.RopeScaleLinear)})
	}
	if s.NCtxOrig > 0 {
		kvs = append(kvs, gguf.KV{Key: arch + ".rope.scaling.original_context_length", Value: u32(s.NCtxOrig)})
	}
	if s.RopeAttnFactor != 0 {
		kvs = append(kvs, gguf.KV{Key: arch + ".rope.scaling.attn_factor", Value: gguf.Float32Value(s.RopeAttnFactor)})
	}
	if s.LogitSoftcap != 0 {
		kvs = append(kvs, gguf.KV{Key: arch + ".final_logit_softcapping", Value: gguf.Float32Value(s.LogitSoftcap)})
	}
	if s.Pooling != "" {
		kvs = append(kvs, gguf.KV{Key: arch + ".pooling_type", Value: gguf.Uint32Value(poolingTypes[s.Pooling])})
	}
	if s.Classifier > 0 {
		labels := make([]string, s.Classifier)
		for i := range labels {
			labels[i] = fmt.Sprintf("LABEL_%d", i)
		}
		kvs = append(kvs, gguf.KV{Key: arch + ".classifier.output_labels", Value: gguf.ArrayValue(gguf.StringArray(labels))})
	}
	kvs = append(kvs,
		gguf.KV{Key: "general.file_type", Value: gguf.Uint32Value(fileTypes[cfg.Weight])},
		gguf.KV{Key: "general.quantization_version", Value: gguf.Uint32Value(2)})
	if v.Raw != nil {
		kvs = append(kvs, v.Raw...)
		if _, ok := v.raw("tokenizer.ggml.token_type_count"); !ok && s.NTokenTypes > 0 {
			kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.token_type_count", Value: u32(s.NTokenTypes)})
		}
	} else {
		kvs = tokenizerKVs(kvs, v, s)
	}
	planned := make(map[string]bool, len(kvs)+len(cfg.Metadata))
	for _, kv := range kvs {
		if planned[kv.Key] {
			return nil, nil, nil, fmt.Errorf("%w: metadata key %q is set twice", ErrConfig, kv.Key)
		}
		planned[kv.Key] = true
	}
	for _, kv := range cfg.Metadata {
		if planned[kv.Key] {
			return nil, nil, nil, fmt.Errorf("%w: metadata key %q is set twice", ErrConfig, kv.Key)
		}
		planned[kv.Key] = true
		kvs = append(kvs, kv)
	}
	return kvs, specs, v, nil
}

// tokenizerKVs appends the tokenizer keys of a vocabulary built here (Synthetic, Qwen3Vocab).
func tokenizerKVs(kvs []gguf.KV, v *Vocab, s Shape) []gguf.KV {
	kvs = append(kvs,
		gguf.KV{Key: "tokenizer.ggml.model", Value: gguf.StringValue(v.Model)},
		gguf.KV{Key: "tokenizer.ggml.pre", Value: gguf.StringValue(v.Pre)},
		gguf.KV{Key: "tokenizer.ggml.tokens", Value: gguf.ArrayValue(gguf.StringArray(v.Tokens))},
		gguf.KV{Key: "tokenizer.ggml.token_type", Value: gguf.ArrayValue(gguf.Int32Array(v.Types))},
	)
	if len(v.Merges) > 0 {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.merges", Value: gguf.ArrayValue(gguf.StringArray(v.Merges))})
	}
	for _, id := range []struct {
		key string
		id  int32
	}{{"tokenizer.ggml.eos_token_id", v.EOS}, {"tokenizer.ggml.padding_token_id", v.PAD}, {"tokenizer.ggml.bos_token_id", v.BOS}} {
		if id.id >= 0 {
			kvs = append(kvs, gguf.KV{Key: id.key, Value: gguf.Uint32Value(uint32(id.id))})
		}
	}
	kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_bos_token", Value: gguf.BoolValue(v.AddBOS)})
	if v.ChatTemplate != "" {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.chat_template", Value: gguf.StringValue(v.ChatTemplate)})
	}
	if s.NTokenTypes > 0 {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.token_type_count", Value: gguf.Uint32Value(uint32(s.NTokenTypes))})
	}
	return kvs
}

// checkVocab checks that a vocabulary is consistent: one type per token, special ids inside it.
func checkVocab(v *Vocab) error {
	n := len(v.Tokens)
	if n == 0 || len(v.Types) != n {
		return fmt.Errorf("%w: vocabulary of %d tokens and %d token types", ErrConfig, n, len(v.Types))
	}
	if v.Model == "" {
		return fmt.Errorf("%w: vocabulary without a tokenizer model", ErrConfig)
	}
	for _, id := range []struct {
		name string
		id   int32
	}{{"bos", v.BOS}, {"eos", v.EOS}, {"padding", v.PAD}} {
		if int(id.id) >= n || id.id < -1 {
			return fmt.Errorf("%w: %s token id %d outside the %d-token vocabulary", ErrConfig, id.name, id.id, n)
		}
	}
	return nil
}

// tensors lists the model's tensors in the order they are written: the input tensors (token_embd; bert's
// token_types, position_embd and token_embd_norm), the blocks, output_norm, output, and a ranking head. Names and
// shapes are those of the architecture's load_arch_tensors in llama.cpp v0.5.0 (src/models/*.cpp).
func tensors(cfg Config, nVocab int64) ([]tensorSpec, error) {
	s := cfg.Shape
	arch := cfg.Arch
	embd, ff := int64(s.NEmbd), int64(s.NFF)
	q, kv := int64(s.NHead*s.HeadDim), int64(s.NHeadKV*s.HeadDim)
	var out []tensorSpec
	var err error
	add := func(name string, t gguf.GGMLType, kind valueKind, ne ...int64) {
		if err != nil {
			return
		}
		if block := int64(t.BlockSize()); ne[0]%block != 0 {
			err = fmt.Errorf("%w: tensor %s has rows of %d elements, not a multiple of the %d-element blocks of %s",
				ErrConfig, name, ne[0], block, t)
			return
		}
		out = append(out, tensorSpec{info: gguf.TensorInfo{Name: name, Ne: ne, Type: t}, kind: kind})
	}
	mat := func(name string, t gguf.GGMLType, n0, n1 int64) { add(name, t, kindWeight, n0, n1) }
	vec := func(name string, kind valueKind, n int64) { add(name, gguf.F32, kind, n) } // F32 fits any row
	// bert's absolute positions stay in the source type (llama-quant.cpp never quantizes them): F16 in an F16
	// file, F32 otherwise. Its token types are F32 (the graph adds their row 0 to F32 activations, and ggml's add
	// takes no F16 operand there).
	posType := gguf.F32
	if cfg.Embd == gguf.F16 {
		posType = gguf.F16
	}

	mat("token_embd.weight", cfg.Embd, embd, nVocab)
	if arch == ArchBert {
		mat("token_types.weight", gguf.F32, embd, int64(s.NTokenTypes))
		mat("position_embd.weight", posType, embd, int64(s.NCtxTrain))
		vec("token_embd_norm.weight", kindNorm, embd)
		vec("token_embd_norm.bias", kindBias, embd)
	}
	w := cfg.Weight
	for i := range s.NLayer {
		b := fmt.Sprintf("blk.%d.", i)
		if arch != ArchBert {
			vec(b+"attn_norm.weight", kindNorm, embd)
		}
		if s.FusedQKV {
			mat(b+"attn_qkv.weight", w, embd, q+2*kv)
		} else {
			for _, m := range []struct {
				name string
				n1   int64
			}{{"attn_q", q}, {"attn_k", kv}, {"attn_v", kv}} {
				mat(b+m.name+".weight", w, embd, m.n1)
				if arch == ArchQwen2 || arch == ArchBert {
					vec(b+m.name+".bias", kindBias, m.n1)
				}
				if s.WeightScales {
					vec(b+m.name+".scale", kindNorm, 1)
				}
			}
		}
		mat(b+"attn_output.weight", w, q, embd)
		switch arch {
		case ArchQwen3, ArchGemma3:
			vec(b+"attn_q_norm.weight", kindNorm, int64(s.HeadDim))
			vec(b+"attn_k_norm.weight", kindNorm, int64(s.HeadDim))
		case ArchBitnet:
			vec(b+"attn_sub_norm.weight", kindNorm, embd)
		}
		switch arch {
		case ArchBert:
			vec(b+"attn_output.bias", kindBias, embd)
			vec(b+"attn_output_norm.weight", kindNorm, embd)
			vec(b+"attn_output_norm.bias", kindBias, embd)
		case ArchGemma3:
			vec(b+"post_attention_norm.weight", kindNorm, embd)
		case ArchBitnet:
			vec(b+"attn_output.scale", kindNorm, 1)
		}
		if arch != ArchBert {
			vec(b+"ffn_norm.weight", kindNorm, embd)
		}
		switch arch {
		case ArchPhi3: // gate and up in one matrix: ffn_up {n_embd, 2*n_ff}, gate first
			mat(b+"ffn_up.weight", w, embd, 2*ff)
		case ArchBert:
			mat(b+"ffn_up.weight", w, embd, ff)
			vec(b+"ffn_up.bias", kindBias, ff)
		default:
			mat(b+"ffn_gate.weight", w, embd, ff)
			if s.WeightScales {
				vec(b+"ffn_gate.scale", kindNorm, 1)
			}
			mat(b+"ffn_up.weight", w, embd, ff)
			if s.WeightScales {
				vec(b+"ffn_up.scale", kindNorm, 1)
			}
		}
		if arch == ArchBitnet {
			vec(b+"ffn_sub_norm.weight", kindNorm, ff)
		}
		mat(b+"ffn_down.weight", w, ff, embd)
		switch arch {
		case ArchBert:
			vec(b+"ffn_down.bias", kindBias, embd)
			vec(b+"layer_output_norm.weight", kindNorm, embd)
			vec(b+"layer_output_norm.bias", kindBias, embd)
		case ArchGemma3:
			vec(b+"post_ffw_norm.weight", kindNorm, embd)
		case ArchBitnet:
			vec(b+"ffn_down.scale", kindNorm, 1)
		}
		if s.RopeFactors && i == 0 { // one pair for every layer (TENSOR_DUPLICATED past layer 0)
			vec("rope_factors_long.weight", kindFactor, int64(s.HeadDim/2))
			vec("rope_factors_short.weight", kindFactor, int64(s.HeadDim/2))
		}
	}
	if arch != ArchBert {
		vec("output_norm.weight", kindNorm, embd)
		if !s.Tied {
			mat("output.weight", cfg.Output, embd, nVocab)
		}
	}
	if s.Classifier > 0 {
		if arch == ArchBert {
			mat("cls.weight", cfg.Output, embd, embd)
			vec("cls.bias", kindBias, embd)
		}
		mat("cls.output.weight", cfg.Output, embd, int64(s.Classifier))
		if arch == ArchBert {
			vec("cls.output.bias", kindBias, int64(s.Classifier))
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// workers is the number of goroutines that generate chunks; the output does not depend on it.
var workers = runtime.GOMAXPROCS(0)

// chunk is one piece of a tensor's data on its way from a worker to the writer.
type chunk struct {
	spec  *tensorSpec
	index uint64        // chunk number within the tensor
	buf   []byte        // the chunk's bytes, filled by a worker
	ready chan struct{} // closed once buf is filled
}

// Write streams the model cfg describes to w as a GGUF file: the header, then each tensor in chunks of about 1 MiB
// (chunkBytes rounded down to whole blocks), generated by GOMAXPROCS goroutines and written in order (see
// generator for the values). Memory use is that of the vocabulary plus a few MiB per CPU, whatever the
// model's size. Errors wrap [ErrConfig] for a bad cfg (nothing is written then), or the writer's error.
func Write(w io.Writer, cfg Config) error {
	kvs, specs, _, err := plan(cfg)
	if err != nil {
		return err
	}
	infos := make([]gguf.TensorInfo, len(specs))
	for i, s := range specs {
		infos[i] = s.info
	}
	gw, err := gguf.NewWriter(w, kvs, infos)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	for i, ti := range gw.Tensors() {
		specs[i].info = ti // with Size
	}

	n := max(1, workers)
	free := make(chan []byte, 2*n+2) // the buffers: the only memory that scales with the data
	for range cap(free) {
		free <- make([]byte, chunkBytes)
	}
	order := make(chan *chunk, cap(free)) // chunks in file order, for the writer
	work := make(chan *chunk, cap(free))  // the same chunks, for the workers
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // producer: cut every tensor into chunks
		defer wg.Done()
		defer close(work)
		defer close(order)
		for i := range specs {
			s := &specs[i]
			unit := uint64(s.info.Type.TypeSize())
			size := max(1, chunkBytes/unit) * unit
			for k, off := uint64(0), uint64(0); off < s.info.Size; k, off = k+1, off+size {
				c := &chunk{spec: s, index: k, ready: make(chan struct{})}
				select {
				case c.buf = <-free:
				case <-quit:
					return
				}
				c.buf = c.buf[:min(size, s.info.Size-off)]
				select {
				case order <- c:
				case <-quit:
					return
				}
				work <- c // never blocks: work has room for every chunk that holds a buffer
			}
		}
	}()
	for range n {
		wg.Add(1)
		go func() { // worker
			defer wg.Done()
			var g generator
			for c := range work {
				ti := &c.spec.info
				g.reset(cfg.Seed, ti.Name, c.index, ti.Type, ti.Ne[0], c.spec.kind)
				g.fill(c.buf)
				close(c.ready)
			}
		}()
	}
	for c := range order {
		<-c.ready
		if _, err = gw.Write(c.buf); err != nil {
			break
		}
		free <- c.buf[:cap(c.buf)]
	}
	close(quit)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	if err := gw.Close(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// WriteFile writes the model to path through a temporary file in the same folder, renamed into place only once
// complete, so path never holds a partial model; on error the temporary file is removed. It returns the size of
// the file in bytes. See WriteFileContext for overwriting and cancellation.
func WriteFile(path string, cfg Config) (size int64, err error) {
	return WriteFileContext(context.Background(), path, cfg, false)
}

// ErrExists is wrapped when the output path exists and overwriting was not asked for, or it is not a regular file.
var ErrExists = errors.New("synth: output exists")

// WriteFileContext is WriteFile that stops when ctx is done (the temporary file is removed and ctx's error
// returned) and refuses an existing path unless overwrite is set; a path that exists and is not a regular file
// (a directory, a device, a FIFO) is always refused, so synth never replaces one.
func WriteFileContext(ctx context.Context, path string, cfg Config, overwrite bool) (size int64, err error) {
	if st, err := os.Lstat(path); err == nil {
		if !st.Mode().IsRegular() {
			return 0, fmt.Errorf("%w: %s is not a regular file: it is %s", ErrExists, path, fsutil.Kind(st.Mode()))
		}
		if !overwrite {
			return 0, fmt.Errorf("%w: %s (use --force to overwrite it)", ErrExists, path)
		}
	} else if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) { // WriteAtomic names a bad folder
		return 0, fmt.Errorf("synth: %w", err)
	}
	var werr error // Write's own errors name themselves
	size, err = fsutil.WriteAtomic(ctx, path, func(w io.Writer) error { werr = Write(w, cfg); return werr })
	switch {
	case err == nil:
		return size, nil
	case werr != nil:
		return 0, werr
	}
	return 0, fmt.Errorf("synth: %w", err)
}
