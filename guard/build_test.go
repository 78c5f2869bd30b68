package guard

import (
	"encoding/binary"
	"math"

	"github.com/bankml/bankml/gguf"
)

// builder writes GGUF bytes for tests, hostile ones included: nothing is checked.
type builder struct{ b []byte }

func (w *builder) u8(v uint8)   { w.b = append(w.b, v) }
func (w *builder) u32(v uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, v) }
func (w *builder) u64(v uint64) { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *builder) str(s string) { w.u64(uint64(len(s))); w.b = append(w.b, s...) }

// header writes the magic, a version and the counts.
func (w *builder) header(version uint32, nTensors, nKV uint64) {
	w.b = append(w.b, "GGUF"...)
	w.u32(version)
	w.u64(nTensors)
	w.u64(nKV)
}

// tensorInfo writes a tensor info.
func (w *builder) tensorInfo(name string, typ uint32, off uint64, ne ...int64) {
	w.str(name)
	w.u32(uint32(len(ne)))
	for _, d := range ne {
		w.u64(uint64(d))
	}
	w.u32(typ)
	w.u64(off)
}

// pad appends zeros up to a multiple of align.
func (w *builder) pad(align int) {
	for len(w.b)%align != 0 {
		w.b = append(w.b, 0)
	}
}

// kv is one metadata pair: its key and a writer of its value type and value.
type kv struct {
	key   string
	write func(w *builder)
}

func kvU32(k string, v uint32) kv {
	return kv{k, func(w *builder) { w.u32(uint32(gguf.Uint32)); w.u32(v) }}
}
func kvI32(k string, v int32) kv {
	return kv{k, func(w *builder) { w.u32(uint32(gguf.Int32)); w.u32(uint32(v)) }}
}
func kvU64(k string, v uint64) kv {
	return kv{k, func(w *builder) { w.u32(uint32(gguf.Uint64)); w.u64(v) }}
}
func kvStr(k, v string) kv { return kv{k, func(w *builder) { w.u32(uint32(gguf.String)); w.str(v) }} }

// kvStrs is an array of strings.
func kvStrs(k string, v ...string) kv {
	return kv{k, func(w *builder) {
		w.u32(uint32(gguf.TypeArray))
		w.u32(uint32(gguf.String))
		w.u64(uint64(len(v)))
		for _, s := range v {
			w.str(s)
		}
	}}
}

// kvArr is an array of n fixed-size elements of type et, all zero.
func kvArr(k string, et gguf.ValueType, n int) kv {
	size := map[gguf.ValueType]int{gguf.Uint8: 1, gguf.Int32: 4, gguf.Float32: 4, gguf.Uint64: 8}[et]
	return kv{k, func(w *builder) {
		w.u32(uint32(gguf.TypeArray))
		w.u32(uint32(et))
		w.u64(uint64(n))
		w.b = append(w.b, make([]byte, n*size)...)
	}}
}

// ti is a tensor of a test file. size is its data in bytes (-1: what its type and shape need); off is its offset
// (-1: packed after the previous one).
type ti struct {
	name string
	typ  uint32
	ne   []int64
	size int64
	off  int64
}

// tn returns a packed tensor of the size its type and shape need.
func tn(name string, typ gguf.GGMLType, ne ...int64) ti { return ti{name, uint32(typ), ne, -1, -1} }

// gguf writes a version-3 file: the KVs, the tensor infos, padding to align, then the tensors' data (bytes 1, 2,
// 3, ...), each padded to align.
func build(align int, kvs []kv, ts []ti) []byte {
	w := &builder{}
	w.header(3, uint64(len(ts)), uint64(len(kvs)))
	for _, p := range kvs {
		w.str(p.key)
		p.write(w)
	}
	next := int64(0)
	sizes := make([]int64, len(ts))
	for i, x := range ts {
		sizes[i] = x.size
		if sizes[i] < 0 {
			block, size, _ := layout(gguf.GGMLType(x.typ))
			n := int64(1)
			for _, d := range x.ne {
				n *= d
			}
			sizes[i] = n / int64(block) * int64(size)
		}
		off := x.off
		if off < 0 {
			off = next
		}
		w.tensorInfo(x.name, x.typ, uint64(off), x.ne...)
		next = off + (sizes[i]+int64(align)-1)/int64(align)*int64(align)
	}
	if len(ts) > 0 {
		w.pad(align)
	}
	total := int64(0)
	for _, s := range sizes {
		total = (total + int64(align) - 1) / int64(align) * int64(align)
		total += s
	}
	for i := range total {
		w.u8(byte(i + 1))
	}
	return w.b
}

// baseKVs is the metadata of a small valid llama file with a three-token vocabulary.
func baseKVs() []kv {
	return []kv{
		kvStr("general.architecture", "llama"),
		kvStr("general.name", "tiny"),
		kvU32("llama.block_count", 2),
		kvU32("llama.embedding_length", 256),
		kvU32("llama.attention.head_count", 4),
		kvU32("llama.attention.head_count_kv", 2),
		kvStr("tokenizer.ggml.model", "llama"),
		kvStrs("tokenizer.ggml.tokens", "<unk>", "<s>", "</s>"),
		kvArr("tokenizer.ggml.scores", gguf.Float32, 3),
		kvArr("tokenizer.ggml.token_type", gguf.Int32, 3),
		kvU32("tokenizer.ggml.bos_token_id", 1),
		kvU32("tokenizer.ggml.eos_token_id", 2),
		kvU32("tokenizer.ggml.unknown_token_id", 0),
		kvU32("tokenizer.ggml.padding_token_id", math.MaxUint32), // none, as in stories260K
	}
}

// with returns baseKVs with each of extra replacing the pair of the same key, or appended.
func with(extra ...kv) []kv {
	kvs := baseKVs()
	for _, e := range extra {
		found := false
		for i := range kvs {
			if kvs[i].key == e.key {
				kvs[i], found = e, true
			}
		}
		if !found {
			kvs = append(kvs, e)
		}
	}
	return kvs
}

// baseTensors are the tensors of the small valid file: an f32 norm and a q8_0 matrix.
func baseTensors() []ti {
	return []ti{tn("output_norm.weight", gguf.F32, 256), tn("token_embd.weight", gguf.Q8_0, 256, 3)}
}

// valid is the small valid file.
func valid() []byte { return build(32, baseKVs(), baseTensors()) }
