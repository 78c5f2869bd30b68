package train

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/bankml/bankml/gguf"

	"github.com/bankml/bankml/ternary"
)

// llama_ftype values of the files Export writes (general.file_type).
const (
	ftypeF32   = 0
	ftypeTQ2_0 = 37
	ftypeQ2_0  = 41
)

// TokenizerKVs returns the tokenizer.* metadata of a GGUF file (the teacher's vocabulary, merges, scores, token
// types and special ids), to give an exported student the teacher's tokenizer.
func TokenizerKVs(f *gguf.File) []gguf.KV {
	var kvs []gguf.KV
	for _, kv := range f.KVs {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			kvs = append(kvs, kv)
		}
	}
	return kvs
}

// Export writes the model as a llama GGUF file that llama.cpp and bankml run: the llama.* hyperparameters, the
// tokenizer metadata given (TokenizerKVs of the teacher), the norms as F32 and every matrix as typ: gguf.F32 (the
// weights as trained), or gguf.TQ2_0 / gguf.Q2_0, which need every matrix in ModeTernary and write the trits
// of the straight-through forward with the trained per-tensor scale d in every block (ternary.EncodeTQ2_0Scaled,
// EncodeQ2_0Scaled): the exported matrix dequantizes to exactly the Q(W) the last forward pass read.
func Export(w io.Writer, m *Model, tokenizer []gguf.KV, typ gguf.GGMLType, name string) error {
	c := m.Cfg
	ftype := ftypeF32
	switch typ {
	case gguf.F32:
	case gguf.TQ2_0:
		ftype = ftypeTQ2_0
	case gguf.Q2_0:
		ftype = ftypeQ2_0
	default:
		return fmt.Errorf("train: export as %s: want f32, tq2_0 or q2_0", typ)
	}
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.StringValue("llama")},
		{Key: "general.name", Value: gguf.StringValue(name)},
		{Key: "general.file_type", Value: gguf.Uint32Value(uint32(ftype))},
	}
	if typ != gguf.F32 {
		kvs = append(kvs, gguf.KV{Key: "general.quantization_version", Value: gguf.Uint32Value(2)})
	}
	kvs = append(kvs,
		gguf.KV{Key: "llama.context_length", Value: gguf.Uint32Value(uint32(c.Seq))},
		gguf.KV{Key: "llama.embedding_length", Value: gguf.Uint32Value(uint32(c.Embd))},
		gguf.KV{Key: "llama.feed_forward_length", Value: gguf.Uint32Value(uint32(c.FF))},
		gguf.KV{Key: "llama.attention.head_count", Value: gguf.Uint32Value(uint32(c.Heads))},
		gguf.KV{Key: "llama.attention.head_count_kv", Value: gguf.Uint32Value(uint32(c.KVHeads))},
		gguf.KV{Key: "llama.block_count", Value: gguf.Uint32Value(uint32(c.Layers))},
		gguf.KV{Key: "llama.rope.dimension_count", Value: gguf.Uint32Value(uint32(c.HeadDim()))},
		gguf.KV{Key: "llama.rope.freq_base", Value: gguf.Float32Value(float32(c.RopeBase))},
		gguf.KV{Key: "llama.attention.layer_norm_rms_epsilon", Value: gguf.Float32Value(float32(c.RMSEps))},
	)
	kvs = append(kvs, tokenizer...)
	var infos []gguf.TensorInfo
	types := make([]gguf.GGMLType, len(m.Tensors))
	for i, t := range m.Tensors {
		tt := gguf.F32
		if t.Matrix && typ != gguf.F32 {
			if t.Mode != ModeTernary {
				return fmt.Errorf("train: export as %s: %s was trained %s, not ternary (export f32 and convert it with bankml quantize)", typ, t.Name, t.Mode)
			}
			tt = typ
		}
		types[i] = tt
		ne := []int64{int64(t.Cols)}
		if t.Matrix {
			ne = append(ne, int64(t.Rows))
		}
		infos = append(infos, gguf.TensorInfo{Name: t.Name, Ne: ne, Type: tt})
	}
	gw, err := gguf.NewWriter(w, kvs, infos)
	if err != nil {
		return fmt.Errorf("train: export: %w", err)
	}
	for i, t := range m.Tensors {
		var b []byte
		switch types[i] {
		case gguf.F32:
			b = make([]byte, 4*len(t.W))
			for j, v := range t.W {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(v))
			}
		case gguf.TQ2_0:
			b = make([]byte, ternary.FormatTQ2_0.RowBytes(len(t.W)))
			err = ternary.EncodeTQ2_0Scaled(t.W, TernaryScale(t.W), b)
		case gguf.Q2_0:
			b = make([]byte, ternary.FormatQ2_0.RowBytes(len(t.W)))
			err = ternary.EncodeQ2_0Scaled(t.W, TernaryScale(t.W), b)
		}
		if err != nil {
			return fmt.Errorf("train: export %s: %w", t.Name, err)
		}
		if err := gw.WriteTensor(b); err != nil {
			return fmt.Errorf("train: export %s: %w", t.Name, err)
		}
	}
	return gw.Close()
}
