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

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/fsutil"
)

// chunkBytes is about how many bytes of a tensor are generated and written at a time.
const chunkBytes = 1 << 20

// tensorSpec is one planned tensor.
type tensorSpec struct {
	info gguf.TensorInfo
	norm bool // an RMS-norm weight
}

// Plan returns the metadata and the tensor infos (name, shape, type; offsets are left to the writer) of the model
// that cfg describes, after checking it. Errors wrap [ErrConfig] and say which setting is wrong, e.g. a row length
// that is not a multiple of the chosen type's block size.
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
		{Key: arch + ".attention.head_count_kv", Value: u32(s.NHeadKV)},
		{Key: arch + ".rope.freq_base", Value: gguf.Float32Value(s.RopeFreqBase)},
		{Key: arch + ".attention.layer_norm_rms_epsilon", Value: gguf.Float32Value(s.RMSEps)},
		{Key: arch + ".attention.key_length", Value: u32(s.HeadDim)},
		{Key: arch + ".attention.value_length", Value: u32(s.HeadDim)},
	}
	if arch == ArchLlama {
		kvs = append(kvs,
			gguf.KV{Key: "llama.vocab_size", Value: u32(nVocab)},
			gguf.KV{Key: "llama.rope.dimension_count", Value: u32(s.HeadDim)})
	}
	kvs = append(kvs,
		gguf.KV{Key: "general.file_type", Value: gguf.Uint32Value(fileTypes[cfg.Weight])},
		gguf.KV{Key: "general.quantization_version", Value: gguf.Uint32Value(2)},
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
	planned := make(map[string]bool, len(kvs)+len(cfg.Metadata))
	for _, kv := range kvs {
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

// tensors lists the model's tensors in the order they are written: token_embd, the blocks, output_norm, output.
func tensors(cfg Config, nVocab int64) ([]tensorSpec, error) {
	s := cfg.Shape
	embd, ff := int64(s.NEmbd), int64(s.NFF)
	q, kv := int64(s.NHead*s.HeadDim), int64(s.NHeadKV*s.HeadDim)
	var out []tensorSpec
	add := func(name string, t gguf.GGMLType, ne ...int64) error {
		if block := int64(t.BlockSize()); ne[0]%block != 0 {
			return fmt.Errorf("%w: tensor %s has rows of %d elements, not a multiple of the %d-element blocks of %s",
				ErrConfig, name, ne[0], block, t)
		}
		out = append(out, tensorSpec{info: gguf.TensorInfo{Name: name, Ne: ne, Type: t}, norm: len(ne) == 1})
		return nil
	}
	norm := func(name string, n int64) { _ = add(name, gguf.F32, n) } // F32 fits any row

	if err := add("token_embd.weight", cfg.Embd, embd, nVocab); err != nil {
		return nil, err
	}
	w := cfg.Weight
	for i := range s.NLayer {
		b := fmt.Sprintf("blk.%d.", i)
		norm(b+"attn_norm.weight", embd)
		for _, m := range []struct {
			name   string
			n0, n1 int64
		}{{"attn_q", embd, q}, {"attn_k", embd, kv}, {"attn_v", embd, kv}, {"attn_output", q, embd}} {
			if err := add(b+m.name+".weight", w, m.n0, m.n1); err != nil {
				return nil, err
			}
		}
		if cfg.Arch == ArchQwen3 {
			norm(b+"attn_q_norm.weight", int64(s.HeadDim))
			norm(b+"attn_k_norm.weight", int64(s.HeadDim))
		}
		norm(b+"ffn_norm.weight", embd)
		for _, m := range []struct {
			name   string
			n0, n1 int64
		}{{"ffn_gate", embd, ff}, {"ffn_up", embd, ff}, {"ffn_down", ff, embd}} {
			if err := add(b+m.name+".weight", w, m.n0, m.n1); err != nil {
				return nil, err
			}
		}
	}
	norm("output_norm.weight", embd)
	if !s.Tied {
		if err := add("output.weight", cfg.Output, embd, nVocab); err != nil {
			return nil, err
		}
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
// (chunkBytes rounded down to whole blocks), generated by GOMAXPROCS goroutines and written in order (see the
// package documentation for the values). Memory use is that of the vocabulary plus a few MiB per CPU, whatever the
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
				g.reset(cfg.Seed, ti.Name, c.index, ti.Type, ti.Ne[0], c.spec.norm)
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
			return 0, fmt.Errorf("%w: %s is not a regular file (%s)", ErrExists, path, st.Mode().Type())
		}
		if !overwrite {
			return 0, fmt.Errorf("%w: %s (use --force to overwrite it)", ErrExists, path)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
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
