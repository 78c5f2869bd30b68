package model

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// kvCases are the cache types of the KV oracles: both quantized types for K
// and V, and one quantized beside f16 each way (Q and K, or V and the
// output, rotated alone; mixed types take the one-row kernel).
var kvCases = []CacheTypes{
	{K: gguf.Q8_0, V: gguf.Q8_0},
	{K: gguf.Q4_0, V: gguf.Q4_0},
	{K: gguf.F16, V: gguf.Q8_0},
	{K: gguf.Q8_0, V: gguf.F16},
	{K: gguf.Q4_0, V: gguf.Q8_0},
}

func (t CacheTypes) String() string { return fmt.Sprintf("k-%s-v-%s", t.K, t.V) }

// kvModels are the models of the KV oracles: llama (NORM RoPE) and qwen3 with
// head size 64 (K and V rotated by 64×64 matrices) and qwen3 with head size
// 128 (K by 128×128, V by 64×64), one GQA group each; under
// BANKML_ORACLE_HEAVY=1 also the bonsai-1.7b shapes (q8_0 K and V).
func kvModels() []synthModel {
	ms := []synthModel{
		{arch: "llama", preset: "tiny", typ: gguf.Q2_0, yarn: true, seed: 7},
		{arch: "qwen3", preset: "tiny", typ: gguf.Q8_0, yarn: true, seed: 9},
		{arch: "qwen3", preset: "tiny-hd128", typ: gguf.Q1_0, yarn: true, seed: 8},
	}
	if heavy() {
		ms = append(ms, synthModel{arch: "qwen3", preset: "bonsai-1.7b", typ: gguf.Q2_0, yarn: true, seed: 11})
	}
	return ms
}

// TestQuantizedKVLogitsMatchReference runs each model with each pair of
// cache types in bankml and in the reference (llama_context with type_k and
// type_v, flash attention auto, 1 thread) over one sequence: a prompt of 100
// tokens whose last 8 rows are outputs, a second prompt of 180 likewise
// (past 256 cells, a new micro-batch of 180 rows), then 12 single-token decodes of the greedy
// choice (the decodes run the one-row kernel, which the reference takes for
// every row over a quantized cache), and compares every logit row bit for
// bit.
func TestQuantizedKVLogitsMatchReference(t *testing.T) {
	lib := refLib(t)
	pass, total := 0, 0
	for _, sm := range kvModels() {
		p := loadPair(t, lib, sm)
		for _, types := range kvCases {
			if sm.preset == "bonsai-1.7b" && types != kvCases[0] {
				continue // ~10 minutes a case: q8_0 K and V only
			}
			t.Run(p.name+"/"+types.String(), func(t *testing.T) {
				c, err := p.m.NewContextTypes(1024, oracleThreads(), types)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetAttnThreads(1)
				s, err := p.ref.NewSessionTypes(1024, 1, int32(types.K), int32(types.V))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				nv := p.m.HP.NVocab
				toks := func(n, seed int) []int32 {
					out := make([]int32, n)
					for i := range out {
						out[i] = int32((seed*7919 + i*104729) % min(nv, 50000))
					}
					return out
				}
				rows, eq := 0, 0
				cmp := func(what string, got, want []float32) {
					t.Helper()
					if len(got) != len(want) {
						t.Fatalf("%s: %d logits, reference %d", what, len(got), len(want))
					}
					for r := 0; r < len(got)/nv; r++ {
						rows++
						same := true
						for i := r * nv; i < (r+1)*nv; i++ {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								if same {
									t.Errorf("%s row %d: first difference at [%d]: %g, reference %g", what, r, i-r*nv, got[i], want[i])
								}
								same = false
								break
							}
						}
						if same {
							eq++
						}
					}
				}
				for i, n := range []int{100, 180} {
					in := toks(n, i+1)
					got, err := c.DecodeOutputs(in, 8)
					if err != nil {
						t.Fatal(err)
					}
					want, err := s.DecodeOutputs(in, 8)
					if err != nil {
						t.Fatal(err)
					}
					cmp(fmt.Sprintf("prompt %d", i), got, want)
				}
				last, err := s.DecodeAll([]int32{5})
				if err != nil {
					t.Fatal(err)
				}
				got, err := c.DecodeAll([]int32{5})
				if err != nil {
					t.Fatal(err)
				}
				cmp("decode 0", got, last)
				for i := range 12 {
					next := []int32{argmaxF(last)}
					if last, err = s.DecodeAll(next); err != nil {
						t.Fatal(err)
					}
					if got, err = c.DecodeAll(next); err != nil {
						t.Fatal(err)
					}
					cmp(fmt.Sprintf("decode %d", i+1), got, last)
				}
				total++
				if eq == rows && !t.Failed() {
					pass++
				}
				t.Logf("%d of %d logit rows bit-equal to the reference over %d cells", eq, rows, c.NPast())
			})
		}
	}
	t.Logf("quantized KV: %d of %d model × cache-type runs bit-equal to the reference", pass, total)
}

func argmaxF(x []float32) int32 {
	best := 0
	for i := range x {
		if x[i] > x[best] {
			best = i
		}
	}
	return int32(best)
}

// TestQuantizedKVRefusals: bankml refuses what llama_init_from_model
// refuses (a quantized type whose block size does not divide the head size:
// stories260K's heads of 8) and the types it does not run; the reference
// refuses the same stories260K contexts.
func TestQuantizedKVRefusals(t *testing.T) {
	path := filepath.Join(modelsDir(t), "stories260K.gguf")
	m := loadModel(t, path)
	rm, err := refLib(t).LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	for _, tc := range []struct {
		name  string
		types CacheTypes
		want  string
	}{
		{"a q8_0 K cache over heads of 8", CacheTypes{K: gguf.Q8_0, V: gguf.F16}, "K cache type q8_0 with block size 32 does not divide n_embd_head_k=8"},
		{"a q4_0 V cache over heads of 8", CacheTypes{K: gguf.F16, V: gguf.Q4_0}, "V cache type q4_0 with block size 32 does not divide n_embd_head_v=8"},
		{"a q4_1 cache", CacheTypes{K: gguf.Q4_1, V: gguf.F16}, "K cache type q4_1 is not supported by bankml (allowed: f16, q8_0, q4_0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.NewContextTypes(256, 1, tc.types)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %v, want one starting with %q (llama.cpp's words, no package prefix)", err, tc.want)
			}
			if tc.types.K == gguf.Q4_1 {
				return
			}
			if s, err := rm.NewSessionTypes(256, 1, int32(tc.types.K), int32(tc.types.V)); err == nil {
				s.Close()
				t.Error("the reference accepted the context")
			} else if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the reference refused with %v, not naming %q", err, tc.want)
			}
		})
	}
	for _, s := range []string{"q4_1", "bf16", "f32", "q8"} {
		if _, err := ParseCacheType(s); err == nil {
			t.Errorf("ParseCacheType(%q): no error", s)
		}
	}
	for _, s := range CacheTypeNames {
		if ty, err := ParseCacheType(s); err != nil || ty.String() != s {
			t.Errorf("ParseCacheType(%q) = %v, %v", s, ty, err)
		}
	}
}
