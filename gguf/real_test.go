package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bankml/bankml/internal/testdata"
)

// readModel returns the bytes of a test model, or skips the test if the shared data is not there.
func readModel(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(testdata.Model(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The header facts here are those of shared/models/MANIFEST.md.
func TestRealFilesParseWithTheManifestCounts(t *testing.T) {
	for _, tc := range []struct {
		file        string
		kvs, n      int
		arch        string
		types       map[GGMLType]int
		vocab       int
		merges      int // -1: no merges key
		alignedData bool
	}{
		{"stories260K.gguf", 19, 48, "llama", map[GGMLType]int{F32: 48}, 512, -1, true},
		{"derived/stories260K-F16.gguf", 21, 48, "llama", map[GGMLType]int{F16: 37, F32: 11}, 512, -1, true},
		{"derived/stories260K-Q8_0.gguf", 21, 48, "llama", map[GGMLType]int{F16: 5, F32: 11, Q8_0: 32}, 512, -1, true},
		{"derived/stories260K-Q4_0.gguf", 21, 48, "llama", map[GGMLType]int{F16: 5, F32: 11, Q4_0: 31, Q8_0: 1}, 512, -1, true},
		{"llama-2-tiny-random.gguf", 18, 12, "llama", map[GGMLType]int{F16: 9, F32: 3}, 32000, -1, true},
		{"vocab/ggml-vocab-bert-bge.gguf", 20, 0, "bert", map[GGMLType]int{}, 30522, -1, false},
		{"vocab/ggml-vocab-gpt-2.gguf", 16, 0, "gpt2", map[GGMLType]int{}, 50257, 50000, false},
		{"vocab/ggml-vocab-llama-spm.gguf", 22, 0, "llama", map[GGMLType]int{}, 32000, -1, false},
		{"vocab/ggml-vocab-deepseek-llm.gguf", 23, 0, "llama", map[GGMLType]int{}, 102400, 99757, false},
		{"vocab/ggml-vocab-starcoder.gguf", 19, 0, "starcoder2", map[GGMLType]int{}, 49152, 48872, false},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			data := readModel(t, tc.file)
			f, err := Open(filepath.Join(testdata.ModelsDir(t), tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Version != 3 || len(f.KVs) != tc.kvs || len(f.Tensors) != tc.n || f.Architecture() != tc.arch ||
				f.Alignment != 32 || f.FileSize != uint64(len(data)) {
				t.Fatalf("v%d %d KVs %d tensors arch %q alignment %d size %d", f.Version, len(f.KVs), len(f.Tensors),
					f.Architecture(), f.Alignment, f.FileSize)
			}
			if tc.alignedData != (f.DataOffset%32 == 0 && f.DataOffset < f.FileSize) {
				t.Errorf("data offset %d of %d", f.DataOffset, f.FileSize)
			}
			types := map[GGMLType]int{}
			for i := range f.Tensors {
				ti := &f.Tensors[i]
				types[ti.Type]++
				view := f.TensorData(ti)
				want := data[f.DataOffset+ti.Offset:][:ti.Size]
				if ti.Size != uint64(ti.NElements())/uint64(ti.Type.BlockSize())*uint64(ti.Type.TypeSize()) || !bytes.Equal(view, want) {
					t.Fatalf("tensor %s: size %d, view of %d bytes differs from the file", ti.Name, ti.Size, len(view))
				}
			}
			if !reflect.DeepEqual(types, tc.types) {
				t.Errorf("types %v, want %v", types, tc.types)
			}
			toks, _ := f.GetArray("tokenizer.ggml.tokens")
			if s, err := toks.Strings(); err != nil || len(s) != tc.vocab {
				t.Errorf("tokens: %d, %v", len(s), err)
			}
			merges := -1
			if m, ok := f.GetArray("tokenizer.ggml.merges"); ok {
				merges = m.Len
			}
			if merges != tc.merges {
				t.Errorf("merges %d, want %d", merges, tc.merges)
			}
			// Open (mmap) and Parse (bytes) agree on everything.
			g, err := Parse(data)
			if err != nil || !reflect.DeepEqual(f.KVs, g.KVs) || !reflect.DeepEqual(f.Tensors, g.Tensors) || f.DataOffset != g.DataOffset {
				t.Errorf("Open and Parse differ (%v)", err)
			}
		})
	}
}

func TestStories260KHeaderValues(t *testing.T) {
	f, err := Parse(readModel(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key  string
		want uint64
	}{
		{"llama.embedding_length", 64}, {"llama.block_count", 5}, {"llama.attention.head_count", 8},
		{"llama.attention.head_count_kv", 4}, {"llama.feed_forward_length", 172}, {"llama.context_length", 2048},
		{"llama.rope.dimension_count", 8}, {"tokenizer.ggml.bos_token_id", 1}, {"tokenizer.ggml.eos_token_id", 2},
		{"tokenizer.ggml.unknown_token_id", 0}, {"tokenizer.ggml.padding_token_id", 0xFFFFFFFF},
	} {
		if got, ok := f.GetUint64(tc.key); !ok || got != tc.want {
			t.Errorf("%s = %d (%v), want %d", tc.key, got, ok, tc.want)
		}
	}
	if eps, ok := f.GetFloat64("llama.attention.layer_norm_rms_epsilon"); !ok || eps != float64(float32(1e-5)) {
		t.Errorf("rms eps %v", eps)
	}
	if m, ok := f.GetString("tokenizer.ggml.model"); !ok || m != "llama" {
		t.Errorf("tokenizer model %q", m)
	}
	scores, _ := f.GetArray("tokenizer.ggml.scores")
	types, _ := f.GetArray("tokenizer.ggml.token_type")
	s, err1 := scores.Float32s()
	tt, err2 := types.Int32s()
	if err1 != nil || err2 != nil || len(s) != 512 || len(tt) != 512 {
		t.Errorf("scores %d %v, token types %d %v", len(s), err1, len(tt), err2)
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || !reflect.DeepEqual(emb.Ne, []int64{64, 512}) || emb.Type != F32 || len(f.TensorData(emb)) != 64*512*4 {
		t.Errorf("token_embd.weight: %+v", emb)
	}
	if _, ok := f.Tensor("output.weight"); !ok {
		t.Error("no output.weight")
	}
}

// Every cut of the real file short of its last tensor's end fails with ErrTruncated or ErrOutOfBounds, and never
// panics.
func TestTruncatedCopiesFail(t *testing.T) {
	data := readModel(t, "stories260K.gguf")
	full, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	last := full.Tensors[len(full.Tensors)-1]
	end := int(full.DataOffset + last.Offset + last.Size)
	var cuts []int
	for n := 0; n <= int(full.DataOffset)+64; n++ { // every byte of the header and the first data bytes
		cuts = append(cuts, n)
	}
	for n := int(full.DataOffset) + 64; n < end; n += 4099 {
		cuts = append(cuts, n)
	}
	cuts = append(cuts, end-1)
	for _, n := range cuts {
		_, err := Parse(data[:n])
		if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrOutOfBounds) {
			t.Fatalf("cut at %d: %v", n, err)
		}
	}
	// Real files on disk, through Open.
	dir := t.TempDir()
	for _, n := range []int{10, 100, 1000, int(full.DataOffset), end - 1} {
		path := filepath.Join(dir, "cut.gguf")
		if err := os.WriteFile(path, data[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if f != nil || (!errors.Is(err, ErrTruncated) && !errors.Is(err, ErrOutOfBounds)) || !strings.Contains(err.Error(), path) {
			t.Errorf("cut at %d: %v", n, err)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty.gguf")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(empty); !errors.Is(err, ErrTruncated) {
		t.Errorf("empty file: %v", err)
	}
}

// Corrupted copies of the real file, written to disk and opened, fail with the named problem.
func TestCorruptedCopiesFail(t *testing.T) {
	data := readModel(t, "stories260K.gguf")
	// keyAt returns the offset just after the bytes of a key in the header.
	keyAt := func(key string) int {
		i := bytes.Index(data, []byte(key))
		if i < 0 {
			t.Fatalf("no key %q", key)
		}
		return i + len(key)
	}
	put64 := func(off int, v uint64) func([]byte) {
		return func(b []byte) { binary.LittleEndian.PutUint64(b[off:], v) }
	}
	for _, tc := range []struct {
		name string
		edit func([]byte)
		err  error
		text string
	}{
		{"magic", func(b []byte) { copy(b, "GGML") }, ErrBadMagic, `"GGML"`},
		{"big-endian version", func(b []byte) { copy(b[4:], []byte{0, 0, 0, 3}) }, ErrBigEndian, "0x3000000"},
		{"version 4", func(b []byte) { b[4] = 4 }, ErrVersion, "4"},
		{"huge tensor count", put64(8, 1<<62), ErrTruncated, "tensor count"},
		{"huge metadata count", put64(16, 1<<62), ErrTruncated, "metadata count"},
		{"metadata count one too many", put64(16, 20), ErrTruncated, "tensor 0: truncated: tensor name length"},
		{"huge key length", put64(24, 1<<62), ErrTruncated, "key length 4611686018427387904"},
		{"huge string length", put64(keyAt("general.architecture")+4, 1<<62), ErrTruncated, "string length"},
		{"huge array length", put64(keyAt("tokenizer.ggml.tokens")+8, 1<<62), ErrTruncated, "array of str count"},
		{"array length one too many", put64(keyAt("tokenizer.ggml.scores")+8, 513), ErrTruncated, "key length"},
		{"unknown value type", func(b []byte) { b[keyAt("general.architecture")] = 13 }, ErrUnknownType, "id 13"},
		{"bad alignment", func(b []byte) { copy(b[keyAt("llama.block_count")-17:], KeyAlignment) }, ErrAlignment, "5 is not a nonzero power of two"},
		{"tensor type", func(b []byte) { b[keyAt("output.weight")+4+16] = 99 }, ErrTensorType, `tensor "output.weight"`},
		{"tensor dims", func(b []byte) { b[keyAt("output.weight")] = 5 }, ErrDims, "5 dimensions"},
		{"tensor offset", func(b []byte) { b[keyAt("output.weight")+4+16+4] += 32 }, ErrLayout, ""},
	} {
		b := bytes.Clone(data)
		tc.edit(b)
		path := filepath.Join(t.TempDir(), "bad.gguf")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if f != nil || !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: got %v, want %v containing %q", tc.name, err, tc.err, tc.text)
		}
	}
}
