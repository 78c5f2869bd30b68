package synth

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/quant"
)

// tiny returns the tiny qwen3 config with every weight of type t.
func tiny(t testing.TB, arch string, ty gguf.GGMLType, seed uint64) Config {
	t.Helper()
	s, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	return Config{Arch: arch, Shape: s, Weight: ty, Embd: ty, Output: ty, Seed: seed}
}

// render writes cfg into memory.
func render(t testing.TB, cfg Config) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, cfg); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPresetsHaveTheDocumentedShapes(t *testing.T) {
	for _, tc := range []struct {
		name                                                string
		embd, layer, ff, head, headKV, headDim, vocab, nCtx int
		tied                                                bool
	}{
		{"tiny", 256, 2, 512, 4, 2, 64, 1024, 4096, false},
		{"bonsai-1.7b", 2048, 28, 6144, 16, 8, 128, 151936, 40960, true},
		{"bonsai-8b", 4096, 36, 12288, 32, 8, 128, 151936, 40960, false},
	} {
		s, err := Preset(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if s.NEmbd != tc.embd || s.NLayer != tc.layer || s.NFF != tc.ff || s.NHead != tc.head || s.NHeadKV != tc.headKV ||
			s.HeadDim != tc.headDim || s.NVocab != tc.vocab || s.NCtxTrain != tc.nCtx || s.Tied != tc.tied ||
			s.RopeFreqBase != 1e6 || s.RMSEps != 1e-6 {
			t.Errorf("%s: %+v", tc.name, s)
		}
		// Every row length is a multiple of 256, the largest block of the types synth writes.
		for _, n := range []int{s.NEmbd, s.NFF, s.NHead * s.HeadDim} {
			if n%256 != 0 {
				t.Errorf("%s: row length %d", tc.name, n)
			}
		}
	}
	if _, err := Preset("huge"); !errors.Is(err, ErrConfig) {
		t.Errorf("unknown preset: %v", err)
	}
}

// TestSameSeedSameBytes: a Config always gives the same file; another seed changes every weight tensor; a tensor's
// bytes depend only on the seed, its name and its type, not on the other tensors.
func TestSameSeedSameBytes(t *testing.T) {
	for _, ty := range Types() {
		t.Run(ty.String(), func(t *testing.T) {
			cfg := tiny(t, ArchQwen3, ty, 7)
			a, b := render(t, cfg), render(t, cfg)
			if sha256.Sum256(a) != sha256.Sum256(b) {
				t.Fatal("two writes of one Config differ")
			}
			cfg.Seed = 8
			other := tensorsOf(t, render(t, cfg))
			mine := tensorsOf(t, a)
			for name, data := range mine {
				if bytes.Equal(data, other[name]) {
					t.Errorf("%s unchanged by the seed", name)
				}
			}
			cfg.Seed, cfg.Output = 7, gguf.Q8_0
			if ty == gguf.Q8_0 {
				cfg.Output = gguf.F16
			}
			for name, data := range tensorsOf(t, render(t, cfg)) {
				if name != "output.weight" && !bytes.Equal(data, mine[name]) {
					t.Errorf("%s changed with the output's type", name)
				}
			}
		})
	}
	// A pinned hash: the generator's output must not drift with Go versions or refactorings. Update it only with
	// a deliberate change of the format (and say so in the commit).
	const want = "a184e91ea75ec614e1ce435bafd06d901f3562c6727fbd3f32d7f21bcbc9b8f7"
	if got := fmt.Sprintf("%x", sha256.Sum256(render(t, tiny(t, ArchQwen3, gguf.Q1_0, 0)))); got != want {
		t.Errorf("tiny qwen3 Q1_0 seed 0: sha256 %s, pinned %s", got, want)
	}
}

// TestOutputDoesNotDependOnTheWorkers: one, two or five generating goroutines write the same bytes, for a model
// whose tensors span many chunks.
func TestOutputDoesNotDependOnTheWorkers(t *testing.T) {
	defer func(n int) { workers = n }(workers)
	for _, w := range []gguf.GGMLType{gguf.Q2_0, gguf.Q5_K} {
		cfg := tiny(t, ArchQwen3, gguf.F32, 5) // F32 token_embd: 1 MiB, more than one chunk
		cfg.Weight = w
		var sums [][32]byte
		for _, n := range []int{1, 2, 5} {
			workers = n
			sums = append(sums, sha256.Sum256(render(t, cfg)))
		}
		if sums[0] != sums[1] || sums[0] != sums[2] {
			t.Fatalf("%s: the output depends on the number of workers", w)
		}
	}
}

// failAfter accepts n bytes, then fails.
type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

// TestWriteReportsAWriteErrorAndStops: a failing output stops the generation (no goroutine is left blocked) and the
// error names the tensor being written; WriteFile then leaves no file behind.
func TestWriteReportsAWriteErrorAndStops(t *testing.T) {
	cfg := tiny(t, ArchQwen3, gguf.F32, 5)
	for _, n := range []int{100, 3 << 20} { // in the header; in the data
		if err := Write(&failAfter{n: n}, cfg); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("after %d bytes: %v", n, err)
		}
	}
	dir := t.TempDir()
	cfg.Shape.NFF = 320 // rows of 320 elements: no Q1_0 blocks
	cfg.Weight = gguf.Q1_0
	if _, err := WriteFile(filepath.Join(dir, "bad.gguf"), cfg); !errors.Is(err, ErrConfig) {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
}

// tensorsOf parses a file and returns its tensors' data by name.
func tensorsOf(t testing.TB, data []byte) map[string][]byte {
	t.Helper()
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for i := range f.Tensors {
		if len(f.Tensors[i].Ne) > 1 {
			out[f.Tensors[i].Name] = f.TensorData(&f.Tensors[i])
		}
	}
	return out
}

// TestFileHasTheLoaderTensorsAndKeys: the tiny files parse, hold exactly the tensors llama.cpp's qwen3 and llama
// loaders create, with their shapes and types, and the hyperparameter keys with their values and types.
func TestFileHasTheLoaderTensorsAndKeys(t *testing.T) {
	for _, tc := range []struct {
		arch     string
		perBlock int
		tied     bool
	}{{ArchQwen3, 11, false}, {ArchQwen3, 11, true}, {ArchLlama, 9, false}} {
		t.Run(fmt.Sprintf("%s tied=%t", tc.arch, tc.tied), func(t *testing.T) {
			cfg := tiny(t, tc.arch, gguf.Q2_0, 1)
			cfg.Embd, cfg.Output, cfg.Shape.Tied = gguf.Q8_0, gguf.TQ2_0, tc.tied
			f, err := gguf.Parse(render(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			n := 1 + 2*tc.perBlock + 1
			if !tc.tied {
				n++
			}
			if len(f.Tensors) != n {
				t.Fatalf("%d tensors, want %d", len(f.Tensors), n)
			}
			shapes := map[string]struct {
				ty gguf.GGMLType
				ne []int64
			}{
				"token_embd.weight":        {gguf.Q8_0, []int64{256, 1024}},
				"blk.1.attn_norm.weight":   {gguf.F32, []int64{256}},
				"blk.1.attn_q.weight":      {gguf.Q2_0, []int64{256, 256}},
				"blk.1.attn_k.weight":      {gguf.Q2_0, []int64{256, 128}},
				"blk.1.attn_v.weight":      {gguf.Q2_0, []int64{256, 128}},
				"blk.1.attn_output.weight": {gguf.Q2_0, []int64{256, 256}},
				"blk.1.ffn_norm.weight":    {gguf.F32, []int64{256}},
				"blk.1.ffn_gate.weight":    {gguf.Q2_0, []int64{256, 512}},
				"blk.1.ffn_up.weight":      {gguf.Q2_0, []int64{256, 512}},
				"blk.1.ffn_down.weight":    {gguf.Q2_0, []int64{512, 256}},
				"output_norm.weight":       {gguf.F32, []int64{256}},
			}
			if tc.arch == ArchQwen3 {
				shapes["blk.0.attn_q_norm.weight"] = struct {
					ty gguf.GGMLType
					ne []int64
				}{gguf.F32, []int64{64}}
				shapes["blk.0.attn_k_norm.weight"] = shapes["blk.0.attn_q_norm.weight"]
			} else if _, ok := f.Tensor("blk.0.attn_q_norm.weight"); ok {
				t.Error("llama file has q norms")
			}
			if !tc.tied {
				shapes["output.weight"] = struct {
					ty gguf.GGMLType
					ne []int64
				}{gguf.TQ2_0, []int64{256, 1024}}
			} else if _, ok := f.Tensor("output.weight"); ok {
				t.Error("tied file has output.weight")
			}
			for name, want := range shapes {
				ti, ok := f.Tensor(name)
				if !ok || ti.Type != want.ty || !slices.Equal(ti.Ne, want.ne) {
					t.Errorf("%s: %v, want %s %v", name, ti, want.ty, want.ne)
				}
			}
			a := tc.arch
			for key, want := range map[string]string{
				"general.architecture": "str:" + a, a + ".block_count": "u32:2", a + ".context_length": "u32:4096",
				a + ".embedding_length": "u32:256", a + ".feed_forward_length": "u32:512",
				a + ".attention.head_count": "u32:4", a + ".attention.head_count_kv": "u32:2",
				a + ".attention.key_length": "u32:64", a + ".attention.value_length": "u32:64",
				a + ".rope.freq_base": "f32:1e+06", a + ".attention.layer_norm_rms_epsilon": "f32:1e-06",
				"general.file_type": "u32:41", "general.quantization_version": "u32:2",
				"tokenizer.ggml.model": "str:gpt2", "tokenizer.ggml.pre": "str:qwen2",
				"tokenizer.ggml.bos_token_id": "u32:1021", "tokenizer.ggml.eos_token_id": "u32:1023",
				"tokenizer.ggml.padding_token_id": "u32:1021", "tokenizer.ggml.add_bos_token": "bool:false",
			} {
				v, ok := f.Get(key)
				got := "absent"
				if ok {
					got = show(v)
				}
				if got != want {
					t.Errorf("%s = %s, want %s", key, got, want)
				}
			}
		})
	}
}

// show renders a scalar metadata value with its type.
func show(v gguf.Value) string {
	switch v.Type {
	case gguf.Uint32:
		u, _ := v.Uint64()
		return fmt.Sprintf("u32:%d", u)
	case gguf.Float32:
		f, _ := v.Float64()
		return fmt.Sprintf("f32:%g", float32(f))
	case gguf.String:
		s, _ := v.String()
		return "str:" + s
	case gguf.Bool:
		b, _ := v.Bool()
		return fmt.Sprintf("bool:%t", b)
	}
	return v.Type.String()
}

// TestPlanRefusesBadConfigs: one row per mistake; each is refused with ErrConfig before anything is written.
func TestPlanRefusesBadConfigs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(c *Config)
		want   string
	}{
		{"unknown arch", func(c *Config) { c.Arch = "gpt2" }, "unknown architecture"},
		{"heads not a multiple of kv heads", func(c *Config) { c.Shape.NHeadKV = 3 }, "not a multiple of n_head_kv"},
		{"zero layers", func(c *Config) { c.Shape.NLayer = 0 }, "n_layer = 0"},
		{"odd head dim", func(c *Config) { c.Shape.HeadDim = 63 }, "odd"},
		{"llama head dim", func(c *Config) { c.Arch, c.Shape.HeadDim = ArchLlama, 128 }, "n_embd = n_head*head_dim"},
		{"activation-only K-quant", func(c *Config) { c.Weight = gguf.Q8_K }, "not one synth generates"},
		{"K-quant rows not a multiple of 256", func(c *Config) { c.Weight, c.Shape.NFF = gguf.Q4_K, 384 }, "blk.0.ffn_down.weight has rows of 384"},
		{"removed type", func(c *Config) { c.Embd = 4 }, "not one synth generates"},
		{"rows not a multiple of the block", func(c *Config) { c.Shape.NFF = 320 }, "blk.0.ffn_down.weight has rows of 320"},
		{"tiny synthetic vocabulary", func(c *Config) { c.Shape.NVocab = 100 }, "needs 259"},
		{"vocab without types", func(c *Config) { c.Vocab = &Vocab{Model: "gpt2", Tokens: []string{"a"}} }, "1 tokens and 0 token types"},
		{"eos outside the vocabulary", func(c *Config) {
			c.Vocab = &Vocab{Model: "gpt2", Tokens: []string{"a"}, Types: []int32{1}, BOS: -1, EOS: 1, PAD: -1}
		}, "eos token id 1"},
		{"zero eps", func(c *Config) { c.Shape.RMSEps = 0 }, "must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tiny(t, ArchQwen3, gguf.Q1_0, 0)
			tc.mutate(&cfg)
			var buf bytes.Buffer
			err := Write(&buf, cfg)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) || buf.Len() != 0 {
				t.Fatalf("err %v (%d bytes written), want ErrConfig with %q", err, buf.Len(), tc.want)
			}
		})
	}
}

// dequantize decodes n elements of one tensor's data as ggml-quants.c's dequantize_row_* does (a regression
// helper for the statistics test below, not an oracle).
func dequantize(t gguf.GGMLType, data []byte) []float32 {
	le := binary.LittleEndian
	f16 := func(b []byte) float32 { return quant.FP16ToFP32(le.Uint16(b)) }
	var out []float32
	switch t {
	case gguf.F32:
		for i := 0; i < len(data); i += 4 {
			out = append(out, math.Float32frombits(le.Uint32(data[i:])))
		}
	case gguf.F16:
		for i := 0; i < len(data); i += 2 {
			out = append(out, f16(data[i:]))
		}
	case gguf.BF16:
		for i := 0; i < len(data); i += 2 {
			out = append(out, math.Float32frombits(uint32(le.Uint16(data[i:]))<<16))
		}
	case gguf.Q8_0:
		for b := 0; b < len(data); b += 34 {
			for j := range 32 {
				out = append(out, float32(int8(data[b+2+j]))*f16(data[b:]))
			}
		}
	case gguf.Q4_0:
		for b := 0; b < len(data); b += 18 {
			var blk [32]float32
			for j := range 16 {
				blk[j] = float32(int(data[b+2+j]&15)-8) * f16(data[b:])
				blk[j+16] = float32(int(data[b+2+j]>>4)-8) * f16(data[b:])
			}
			out = append(out, blk[:]...)
		}
	case gguf.Q1_0:
		for b := 0; b < len(data); b += 18 {
			for j := range 128 {
				d := f16(data[b:])
				if data[b+2+j/8]>>(j%8)&1 == 0 {
					d = -d
				}
				out = append(out, d)
			}
		}
	case gguf.Q2_0:
		for b := 0; b < len(data); b += 18 {
			for j := range 64 {
				out = append(out, float32(int(data[b+2+j/4]>>(2*(j%4))&3)-1)*f16(data[b:]))
			}
		}
	case gguf.TQ2_0:
		for b := 0; b < len(data); b += 66 {
			for j := 0; j < 64; j += 32 {
				for l := range 4 {
					for m := range 32 {
						out = append(out, float32(int(data[b+j+m]>>(2*l)&3)-1)*f16(data[b+64:]))
					}
				}
			}
		}
	case gguf.TQ1_0:
		pow3 := []int{1, 3, 9, 27, 81, 243}
		trit := func(q byte, n int) float32 { return float32(int(uint16(byte(int(q)*pow3[n]))*3>>8) - 1) }
		for b := 0; b < len(data); b += 54 {
			d := f16(data[b+52:])
			for _, span := range []struct{ start, width int }{{0, 32}, {32, 16}} {
				for n := range 5 {
					for m := range span.width {
						out = append(out, trit(data[b+span.start+m], n)*d)
					}
				}
			}
			for n := range 4 {
				for j := range 4 {
					out = append(out, trit(data[b+48+j], n)*d)
				}
			}
		}
	case gguf.Q2_K, gguf.Q3_K, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K:
		out = make([]float32, len(data)/t.TypeSize()*t.BlockSize())
		map[gguf.GGMLType]func([]byte, []float32){
			gguf.Q2_K: quant.DequantizeRowQ2_K, gguf.Q3_K: quant.DequantizeRowQ3_K, gguf.Q4_K: quant.DequantizeRowQ4_K,
			gguf.Q5_K: quant.DequantizeRowQ5_K, gguf.Q6_K: quant.DequantizeRowQ6_K,
		}[t](data, out)
	}
	return out
}

// TestGeneratedWeightsHaveTheDocumentedScale: for every type, a 4096-column tensor decodes to finite weights of
// root mean square about 1/sqrt(4096) (the per-block jitter raises it by sqrt(13/12)) and mean about 0, drawn from
// the documented code sets; norm weights lie in [0.75, 1.25).
func TestGeneratedWeightsHaveTheDocumentedScale(t *testing.T) {
	const cols, rows = 4096, 64
	validTQ1 := map[byte]bool{}
	for r := range 256 {
		validTQ1[tq1QSCodes[r]], validTQ1[tq1QHCodes[r]] = true, true
	}
	for _, ty := range Types() {
		t.Run(ty.String(), func(t *testing.T) {
			var g generator
			g.reset(3, "w", 0, ty, cols, kindWeight)
			data := make([]byte, cols*rows/ty.BlockSize()*ty.TypeSize())
			g.fill(data)
			w := dequantize(ty, data)
			if len(w) != cols*rows {
				t.Fatalf("%d weights", len(w))
			}
			var sum, sq float64
			for _, x := range w {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatalf("non-finite weight %v", x)
				}
				sum += float64(x)
				sq += float64(x) * float64(x)
			}
			rms := math.Sqrt(sq / float64(len(w)))
			want := 1 / math.Sqrt(cols)
			if quantized := ty.BlockSize() > 1; quantized {
				want *= math.Sqrt(13.0 / 12)
			}
			if rms < 0.95*want || rms > 1.05*want {
				t.Errorf("rms %.6f, want about %.6f", rms, want)
			}
			// Centred: Q4_0's codes -8..7 have mean -0.5 (0.11 of their rms); Q2_0's are drawn to have mean 0, the
			// K-quants' are centred by their mins or have signed scales.
			if mean := sum / float64(len(w)); math.Abs(mean) > 0.12*rms {
				t.Errorf("mean %.6f with rms %.6f", mean, rms)
			}
			switch ty {
			case gguf.TQ2_0:
				for b := 0; b < len(data); b += 66 {
					for _, q := range data[b : b+64] {
						if q&3 == 3 || q>>2&3 == 3 || q>>4&3 == 3 || q>>6 == 3 {
							t.Fatalf("TQ2_0 code 3 in %#x", q)
						}
					}
				}
			case gguf.TQ1_0:
				for b := 0; b < len(data); b += 54 {
					for _, q := range data[b : b+52] {
						if !validTQ1[q] {
							t.Fatalf("TQ1_0 byte %#x is no ceiling-division code", q)
						}
					}
				}
			}
		})
	}
	var g generator
	g.reset(3, "n", 0, gguf.F32, 256, kindNorm)
	data := make([]byte, 4*256)
	g.fill(data)
	for _, x := range dequantize(gguf.F32, data) {
		if x < 0.75 || x >= 1.25 {
			t.Fatalf("norm weight %v", x)
		}
	}
}

// TestKQuantMinsEqualScales: in every Q2_K, Q4_K and Q5_K sub-block the min equals the scale (so that dmin = c*d
// centres the weights), read back through quant's decoders: with all codes 0 a weight is -dmin*m, with all codes
// at their maximum it is d*s*qmax - dmin*m. The 6-bit scales take all 64 values.
func TestKQuantMinsEqualScales(t *testing.T) {
	for _, tc := range []struct {
		t          gguf.GGMLType
		codes      [2]int // byte range of qs (and qh) in a block
		dOff, qmax int
		sub, nvals int // sub-block length, scale values
	}{
		{gguf.Q2_K, [2]int{16, 80}, 80, 3, 16, 16},
		{gguf.Q4_K, [2]int{16, 144}, 0, 15, 32, 64},
		{gguf.Q5_K, [2]int{16, 176}, 0, 31, 32, 64},
	} {
		t.Run(tc.t.String(), func(t *testing.T) {
			var g generator
			g.reset(5, "w", 0, tc.t, 4096, kindWeight)
			size := tc.t.TypeSize()
			data := make([]byte, 64*size)
			g.fill(data)
			seen := map[int]bool{}
			for b := 0; b < len(data); b += size {
				blk := slices.Clone(data[b : b+size])
				d := quant.FP16ToFP32(binary.LittleEndian.Uint16(blk[tc.dOff:]))
				dmin := quant.FP16ToFP32(binary.LittleEndian.Uint16(blk[tc.dOff+2:]))
				if want := quant.FP16ToFP32(quant.FP32ToFP16(d * kMin[tc.t])); dmin != want {
					t.Fatalf("block %d: dmin %g, d %g", b/size, dmin, d)
				}
				clear(blk[tc.codes[0]:tc.codes[1]])
				w0 := dequantize(tc.t, blk)
				for i := tc.codes[0]; i < tc.codes[1]; i++ {
					blk[i] = 0xff
				}
				w1 := dequantize(tc.t, blk)
				for j := 0; j < 256; j += tc.sub {
					s := math.Round(float64(w1[j]-w0[j]) / float64(d) / float64(tc.qmax))
					m := math.Round(-float64(w0[j]) / float64(dmin))
					if s != m || s < 0 || int(s) >= tc.nvals {
						t.Fatalf("block %d sub-block %d: scale %g, min %g", b/size, j/tc.sub, s, m)
					}
					seen[int(s)] = true
				}
			}
			if len(seen) != tc.nvals {
				t.Errorf("%d distinct scales, want %d", len(seen), tc.nvals)
			}
		})
	}
}

// TestTQ1CodesMatchTheReferenceQuantizer: every TQ1_0 byte synth writes is the one quantize_row_tq1_0_ref writes for
// the trits it stands for, computed here independently from the reference's formula.
func TestTQ1CodesMatchTheReferenceQuantizer(t *testing.T) {
	for r := range 256 {
		v := r * 243 >> 8 // trits t0..t4, most significant first: v = ((((t0*3+t1)*3+t2)*3+t3)*3+t4)
		var q uint8
		for n := 4; n >= 0; n-- {
			q = q*3 + uint8(v/[]int{1, 3, 9, 27, 81}[n]%3)
		}
		if want := uint8((uint16(q)*256 + 242) / 243); tq1QSCodes[r] != want {
			t.Fatalf("qs code for %d: %#x, want %#x", r, tq1QSCodes[r], want)
		}
	}
}

func refLib(t testing.TB) *reference.Lib {
	t.Helper()
	lib, err := reference.Load()
	if err != nil {
		t.Skipf("skipping: the reference is not installed (run scripts/install-reference.sh): %v", err)
	}
	return lib
}

// TestReferenceLoadsSyntheticFiles: the reference loads a tiny synthetic file of each weight type (qwen3, and llama
// for two types), evaluates one token and returns finite, not all equal logits over the whole vocabulary.
func TestReferenceLoadsSyntheticFiles(t *testing.T) {
	lib := refLib(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		arch        string
		weight, emb gguf.GGMLType
	}{
		{ArchQwen3, gguf.Q1_0, gguf.Q1_0},
		{ArchQwen3, gguf.Q2_0, gguf.Q2_0},
		{ArchQwen3, gguf.TQ1_0, gguf.TQ1_0},
		{ArchQwen3, gguf.TQ2_0, gguf.TQ2_0},
		{ArchQwen3, gguf.Q8_0, gguf.Q8_0},
		{ArchQwen3, gguf.Q4_0, gguf.Q8_0},
		{ArchQwen3, gguf.Q2_K, gguf.Q2_K},
		{ArchQwen3, gguf.Q3_K, gguf.Q3_K},
		{ArchQwen3, gguf.Q4_K, gguf.Q4_K},
		{ArchQwen3, gguf.Q5_K, gguf.Q5_K},
		{ArchQwen3, gguf.Q6_K, gguf.Q6_K},
		{ArchQwen3, gguf.F16, gguf.F16},
		{ArchQwen3, gguf.BF16, gguf.F32},
		{ArchQwen3, gguf.F32, gguf.F32},
		{ArchLlama, gguf.Q1_0, gguf.Q8_0},
		{ArchLlama, gguf.TQ2_0, gguf.F16},
	} {
		t.Run(tc.arch+" "+tc.weight.String(), func(t *testing.T) {
			cfg := tiny(t, tc.arch, tc.weight, 11)
			cfg.Embd, cfg.Output = tc.emb, tc.emb
			path := filepath.Join(dir, fmt.Sprintf("%s-%s.gguf", tc.arch, tc.weight))
			if _, err := WriteFile(path, cfg); err != nil {
				t.Fatal(err)
			}
			m, err := lib.LoadModel(path)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.NVocab() != 1024 {
				t.Fatalf("n_vocab %d", m.NVocab())
			}
			for _, prompt := range [][]int32{{42}, {7, 300, 1022, 5}} {
				logits, err := m.PromptLogits(prompt, 1)
				if err != nil {
					t.Fatal(err)
				}
				lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
				for _, x := range logits {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						t.Fatalf("prompt %v: non-finite logit %v", prompt, x)
					}
					lo, hi = min(lo, x), max(hi, x)
				}
				if len(logits) != 1024 || !(hi > lo) || hi-lo > 100 {
					t.Fatalf("prompt %v: %d logits in [%g, %g]", prompt, len(logits), lo, hi)
				}
			}
		})
	}
}

// TestReferenceRoundTripsTextWithTheSyntheticVocab: the synthetic vocabulary is consistent: the reference tokenizes
// valid UTF-8 text and detokenizes it back to the same bytes, and parses its special tokens. (Invalid UTF-8 is not
// tried: the reference's tokenizer replaces it with U+FFFD whatever the vocabulary.)
func TestReferenceRoundTripsTextWithTheSyntheticVocab(t *testing.T) {
	lib := refLib(t)
	path := filepath.Join(t.TempDir(), "vocab.gguf")
	if _, err := WriteFile(path, tiny(t, ArchQwen3, gguf.Q1_0, 0)); err != nil {
		t.Fatal(err)
	}
	m, err := lib.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, text := range []string{"Hello world", "  ünïcode 🚀\n\ttabs 123", "\x00 control\x7f bytes"} {
		ids, err := m.Tokenize(text, false, false)
		if err != nil {
			t.Fatal(err)
		}
		var back []byte
		for _, id := range ids {
			p, err := m.TokenToPiece(id, false)
			if err != nil {
				t.Fatal(err)
			}
			back = append(back, p...)
		}
		if string(back) != text {
			t.Errorf("%q: ids %v detokenize to %q", text, ids, back)
		}
	}
	ids, err := m.Tokenize("<|im_start|>user<|im_end|>", false, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) < 3 || ids[0] != 1022 || ids[len(ids)-1] != 1023 {
		t.Errorf("special tokens: %v", ids)
	}
}

// TestQwen3VocabIsTheConvertersVocab: the Qwen3 vocabulary as converted here: its size, the token types of the
// added tokens (control when special or "<|...|>", user-defined otherwise), padding ids, special ids, merges and
// the chat template.
func TestQwen3VocabIsTheConvertersVocab(t *testing.T) {
	dir := filepath.Dir(testdata.Model(t, "qwen3/tokenizer.json.gz"))
	v, err := Qwen3Vocab(dir, Qwen3NVocab)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Tokens) != 151936 || len(v.Types) != 151936 || len(v.Merges) != 151387 {
		t.Fatalf("%d tokens, %d types, %d merges", len(v.Tokens), len(v.Types), len(v.Merges))
	}
	for _, tc := range []struct {
		id   int
		text string
		ty   int32
	}{
		{0, "!", TokenNormal}, {9707, "Hello", TokenNormal}, {1879, "Ġworld", TokenNormal},
		{151643, "<|endoftext|>", TokenControl}, {151645, "<|im_end|>", TokenControl},
		{151657, "<tool_call>", TokenUserDefined}, {151659, "<|fim_prefix|>", TokenControl},
		{151667, "<think>", TokenUserDefined}, {151668, "</think>", TokenUserDefined},
		{151669, "[PAD151669]", TokenUnused}, {151935, "[PAD151935]", TokenUnused},
	} {
		if v.Tokens[tc.id] != tc.text || v.Types[tc.id] != tc.ty {
			t.Errorf("token %d: %q type %d, want %q type %d", tc.id, v.Tokens[tc.id], v.Types[tc.id], tc.text, tc.ty)
		}
	}
	if v.Model != "gpt2" || v.Pre != "qwen2" || v.BOS != 151643 || v.EOS != 151645 || v.PAD != 151643 || v.AddBOS {
		t.Errorf("model %q pre %q bos %d eos %d pad %d add_bos %t", v.Model, v.Pre, v.BOS, v.EOS, v.PAD, v.AddBOS)
	}
	if v.Merges[0] != "Ġ Ġ" || v.Merges[2] != "i n" {
		t.Errorf("merges start %q", v.Merges[:3])
	}
	var cfg struct {
		ChatTemplate string `json:"chat_template"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &cfg); err != nil || cfg.ChatTemplate == "" || v.ChatTemplate != cfg.ChatTemplate {
		t.Errorf("chat template of %d bytes, tokenizer_config.json has %d (%v)", len(v.ChatTemplate), len(cfg.ChatTemplate), err)
	}
	if _, err := Qwen3Vocab(dir, 151000); !errors.Is(err, ErrConfig) {
		t.Errorf("a size below the tokenizer's: %v", err)
	}
	if _, err := Qwen3Vocab(t.TempDir(), Qwen3NVocab); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a folder without a tokenizer: %v", err)
	}
}

// TestReferenceTokenizesLikeQwen3: a tiny qwen3 model with the real Qwen3 vocabulary loads in the reference, which
// tokenizes "Hello world" to the ids that tokenizer.json gives "Hello" and "Ġworld" (9707 and 1879), parses the
// chat tokens and evaluates a prompt to finite logits over all 151936 ids.
func TestReferenceTokenizesLikeQwen3(t *testing.T) {
	lib := refLib(t)
	tokPath := testdata.Model(t, "qwen3/tokenizer.json.gz")
	v, err := Qwen3Vocab(filepath.Dir(tokPath), Qwen3NVocab)
	if err != nil {
		t.Fatal(err)
	}
	cfg := tiny(t, ArchQwen3, gguf.Q1_0, 0)
	cfg.Vocab, cfg.Shape.Tied = v, true
	path := filepath.Join(t.TempDir(), "qwen3-vocab.gguf")
	if _, err := WriteFile(path, cfg); err != nil {
		t.Fatal(err)
	}
	m, err := lib.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	// The expected ids, looked up in tokenizer.json itself.
	f, err := os.Open(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var tj struct {
		Model struct {
			Vocab map[string]int32 `json:"vocab"`
		} `json:"model"`
	}
	if err := json.NewDecoder(gz).Decode(&tj); err != nil {
		t.Fatal(err)
	}
	want := []int32{tj.Model.Vocab["Hello"], tj.Model.Vocab["Ġworld"]}
	if want[0] != 9707 || want[1] != 1879 {
		t.Fatalf("tokenizer.json gives %v", want)
	}
	for _, tc := range []struct {
		text    string
		special bool
		want    []int32
	}{
		{"Hello world", false, want},
		{"<|im_start|>user\nHi<|im_end|>", true, []int32{151644, tj.Model.Vocab["user"], tj.Model.Vocab["Ċ"], tj.Model.Vocab["Hi"], 151645}},
		{"<think>", true, []int32{151667}},
	} {
		got, err := m.Tokenize(tc.text, true, tc.special) // add_special: Qwen3 adds no bos
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.text, got, tc.want)
		}
	}
	logits, err := m.PromptLogits(want, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(logits) != Qwen3NVocab {
		t.Fatalf("%d logits", len(logits))
	}
	for i, x := range logits {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			t.Fatalf("logit %d is %v", i, x)
		}
	}
}
