package inspect

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/testdata"
)

func open(t *testing.T, rel string) (*gguf.File, string) {
	t.Helper()
	p := testdata.Model(t, rel)
	f, err := gguf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, p
}

// TestSummarizeGivesTheModelsManifestCounts: the counts and types are those ../shared/models/MANIFEST.md records
// (read there with a separate parser); the parameter count is recomputed from the tensor shapes.
func TestSummarizeGivesTheModelsManifestCounts(t *testing.T) {
	for _, tc := range []struct {
		file           string
		kvs, n, layers int
		types          map[string]int
	}{
		{"stories260K.gguf", 19, 48, 5, map[string]int{"f32": 48}},
		{"derived/stories260K-F16.gguf", 21, 48, 5, map[string]int{"f16": 37, "f32": 11}},
		{"derived/stories260K-Q8_0.gguf", 21, 48, 5, map[string]int{"f16": 5, "f32": 11, "q8_0": 32}},
		{"derived/stories260K-Q4_0.gguf", 21, 48, 5, map[string]int{"f16": 5, "f32": 11, "q4_0": 31, "q8_0": 1}},
		{"llama-2-tiny-random.gguf", 18, 12, 1, map[string]int{"f16": 9, "f32": 3}},
		{"vocab/ggml-vocab-gpt-2.gguf", 16, 0, 0, map[string]int{}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, p := open(t, tc.file)
			r := Summarize(f, p)
			types := map[string]int{}
			var params, bytes int64
			for _, tt := range r.Types {
				types[tt.Type] = tt.Tensors
				if want := 8 * float64(tt.Bytes) / float64(tt.Parameters); tt.BitsPerWeight != want {
					t.Errorf("%s: %v bits per weight, want %v", tt.Type, tt.BitsPerWeight, want)
				}
			}
			for _, ti := range f.Tensors {
				n := int64(1)
				for _, d := range ti.Ne {
					n *= d
				}
				params += n
				bytes += int64(ti.Size)
			}
			if r.KVCount != tc.kvs || len(r.Metadata) != tc.kvs || r.TensorCount != tc.n || len(r.Tensors) != tc.n ||
				r.Layers != tc.layers || !reflect.DeepEqual(types, tc.types) {
				t.Errorf("%d KVs (%d listed), %d tensors (%d listed), %d layers, types %v; want %d, %d, %d, %v",
					r.KVCount, len(r.Metadata), r.TensorCount, len(r.Tensors), r.Layers, types, tc.kvs, tc.n, tc.layers, tc.types)
			}
			if r.Parameters != params || int64(r.TensorBytes) != bytes {
				t.Errorf("%d parameters, %d bytes; the tensors sum to %d, %d", r.Parameters, r.TensorBytes, params, bytes)
			}
			if r.FileSize != f.FileSize || r.Architecture == "" {
				t.Errorf("file size %d, arch %q", r.FileSize, r.Architecture)
			}
		})
	}
}

func TestStories260KIsAllF32At32BitsPerWeight(t *testing.T) {
	f, p := open(t, "stories260K.gguf")
	r := Summarize(f, p)
	if r.Parameters != 292800 || r.TensorBytes != 4*292800 || r.BitsPerWeight != 32 || len(r.Types) != 1 || r.Types[0].Type != "f32" {
		t.Fatalf("%d parameters, %d bytes, %v bpw, types %+v", r.Parameters, r.TensorBytes, r.BitsPerWeight, r.Types)
	}
	// 292800 = 2·64·512 (embeddings, output) + 64 (output norm) + 5·(2·64·64 + 2·64·32 + 3·64·172 + 2·64), from
	// MANIFEST.md's hyperparameters: n_embd 64, n_head_kv·head_dim 32, n_ff 172, vocab 512, 5 layers.
	if 2*64*512+64+5*(2*64*64+2*64*32+3*64*172+2*64) != 292800 {
		t.Fatal("arithmetic")
	}
	first := r.Tensors[0]
	if first.Name != "token_embd.weight" || !reflect.DeepEqual(first.Shape, []int64{64, 512}) || first.Offset != 0 ||
		first.FileOffset != r.DataOffset || first.Bytes != 131072 || first.Elements != 32768 {
		t.Errorf("first tensor %+v", first)
	}
}

// TestLongArraysAreSummarised: type, length and the first ArrayHead values; short arrays whole.
func TestLongArraysAreSummarised(t *testing.T) {
	f, p := open(t, "stories260K.gguf")
	r := Summarize(f, p)
	byKey := map[string]Meta{}
	for _, m := range r.Metadata {
		byKey[m.Key] = m
	}
	tok := byKey["tokenizer.ggml.tokens"]
	vals, _ := tok.Value.([]any)
	if tok.Type != "arr[str]" || tok.Len == nil || *tok.Len != 512 || !tok.Truncated || len(vals) != ArrayHead ||
		vals[0] != "<unk>" || vals[1] != "<s>" || vals[2] != "</s>" {
		t.Errorf("tokens: %+v", tok)
	}
	eps := byKey["llama.attention.layer_norm_rms_epsilon"]
	if eps.Type != "f32" || eps.Value != json.Number("1e-05") || eps.Len != nil {
		t.Errorf("epsilon: %+v", eps)
	}
	pad := byKey["tokenizer.ggml.padding_token_id"]
	if pad.Type != "u32" || pad.Value != json.Number("4294967295") {
		t.Errorf("padding id: %+v", pad)
	}
}

// TestEveryValueTypeRenders covers the value types the shared models do not hold, built with gguf.Parse.
func TestEveryValueTypeRenders(t *testing.T) {
	var b bytes.Buffer
	var le func(v any)
	le = func(v any) {
		switch x := v.(type) {
		case uint8:
			b.WriteByte(x)
		case uint32:
			b.Write([]byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24)})
		case uint64:
			for i := range 8 {
				b.WriteByte(byte(x >> (8 * i)))
			}
		case string:
			le(uint64(len(x)))
			b.WriteString(x)
		}
	}
	b.WriteString("GGUF")
	le(uint32(3))
	le(uint64(0)) // tensors
	le(uint64(9)) // kvs
	kv := func(key string, typ uint32) { le(key); le(typ) }
	kv("i8", uint32(gguf.Int8))
	le(uint8(0xFE))
	kv("i64", uint32(gguf.Int64))
	le(uint64(math.MaxUint64)) // -1
	kv("u64", uint32(gguf.Uint64))
	le(uint64(math.MaxUint64))
	kv("f64", uint32(gguf.Float64))
	le(math.Float64bits(0.1))
	kv("nan", uint32(gguf.Float32))
	le(math.Float32bits(float32(math.NaN())))
	kv("inf", uint32(gguf.Float64))
	le(math.Float64bits(math.Inf(-1)))
	kv("bool", uint32(gguf.Bool))
	le(uint8(1))
	kv("nested", uint32(gguf.TypeArray))
	le(uint32(gguf.TypeArray))
	le(uint64(2))
	for _, n := range []uint64{1, 3} {
		le(uint32(gguf.Uint8))
		le(n)
		for range n {
			le(uint8(7))
		}
	}
	kv("long string", uint32(gguf.String))
	le(strings.Repeat("é", 100) + "\n")
	f, err := gguf.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	r := Summarize(f, "synthetic.gguf")
	js, err := json.Marshal(r.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"key":"i8","type":"i8","value":-2},{"key":"i64","type":"i64","value":-1},` +
		`{"key":"u64","type":"u64","value":18446744073709551615},{"key":"f64","type":"f64","value":0.1},` +
		`{"key":"nan","type":"f32","value":"NaN"},{"key":"inf","type":"f64","value":"-Inf"},{"key":"bool","type":"bool","value":true},` +
		`{"key":"nested","type":"arr[arr]","len":2,"value":[{"len":1,"type":"arr[u8]"},{"len":3,"type":"arr[u8]"}]},` +
		`{"key":"long string","type":"str","value":"` + strings.Repeat("é", 100) + `\n"}]`
	if string(js) != want {
		t.Errorf("JSON\n got %s\nwant %s", js, want)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"u64          u64           18446744073709551615\n", "nan          f32           NaN\n", `arr[arr] × 2  [arr[u8] × 1, arr[u8] × 3]`,
		`"` + strings.Repeat("é", 36) + `"… (201 bytes)`, "tensors: 0", "parameters: 0 (0), 0 bytes of tensors, 0 bits per weight"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, text.String())
		}
	}
}

func TestTextListsEveryTensorAndTheTotals(t *testing.T) {
	f, p := open(t, "derived/stories260K-Q4_0.gguf")
	var out bytes.Buffer
	if err := Summarize(f, p).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, ti := range f.Tensors {
		if !strings.Contains(s, "\n  "+ti.Name+" ") {
			t.Errorf("no row for %s", ti.Name)
		}
	}
	for _, want := range []string{
		"metadata: 21 keys", "tensors: 48",
		"  q4_0       31      204288  114912       4.5000\n",
		"  all        48      292800  262624       7.1755\n",
		"architecture: llama",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("text lacks %q:\n%s", want, s)
		}
	}
}
