package model

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/quant"
	"github.com/bankml/bankml/sample"
)

// BenchmarkAttention8B times Context.attention alone on one thread at
// Qwen3-8B's attention shape (32 query heads, 8 KV heads, head size 128)
// for a 128-row prompt micro-batch (the tiled kernel), a decode row after
// 128 cells (one_chunk) and one after 1000 (split-KV, 2 chunks), at every
// level, next to "rowwise": the kernels as they were before the assembly
// (refTiled, refOneChunk: row by row, software FMA, f16 converted one value
// at a time; Q·K at the best level). Ratios within one run count:
//
//	go test -run '^$' -bench Attention8B ./model/
func BenchmarkAttention8B(b *testing.B) { benchAttention(b, 128, 32, 8) }

// BenchmarkAttentionTiny is BenchmarkAttention8B at synth's tiny shape (4
// query heads, 2 KV heads, head size 64), the attention of the tiny F16
// prompt in BenchmarkPromptTiny:
//
//	go test -run '^$' -bench AttentionTiny -count 3 ./model/
func BenchmarkAttentionTiny(b *testing.B) { benchAttention(b, 64, 4, 2) }

// benchAttention is BenchmarkAttention8B's cases at head size hd, nHead
// query heads and nHeadKV KV heads.
func benchAttention(b *testing.B, hd, nHead, nHeadKV int) {
	r := rand.New(rand.NewPCG(9, 10))
	best := quant.Levels()[len(quant.Levels())-1]
	for _, sh := range []struct {
		name     string
		nPast, n int
	}{{"prompt128", 0, 128}, {"decode@128", 128, 1}, {"decode@1000", 1000, 1}} {
		c := newAttnCase(r, hd, nHead, nHeadKV, sh.nPast, sh.n, 0)
		scale := 1 / fmath.Sqrtf(float32(hd))
		for _, l := range quant.Levels() {
			b.Run(sh.name+"/"+l.String(), func(b *testing.B) {
				ctx := c.context(b, l)
				defer ctx.Close()
				out := make([]float32, c.n*c.nHead*c.hd)
				for b.Loop() {
					ctx.attention(out, c.q, c.kc, c.vc, c.nPast, c.n, scale)
				}
			})
		}
		if sh.nPast >= 512 {
			continue // split-KV's chunks: the same one_chunk kernel
		}
		b.Run(sh.name+"/rowwise", func(b *testing.B) {
			out := make([]float32, c.n*c.nHead*c.hd)
			vkq := make([]float32, c.hd)
			for b.Loop() {
				for j := range c.n {
					for h := range c.nHead {
						q, k, v, nKV := c.refRow(j, h, scale)
						o := out[(j*c.nHead+h)*c.hd:][:c.hd]
						if c.n >= faTile {
							refTiled(q, k, v, nKV, scale, o)
						} else {
							_, s := refOneChunk(best, q, k, v, 0, nKV, scale, vkq)
							normalize(o, vkq, s)
						}
					}
				}
			}
		})
	}
}

// BenchmarkPrompt8B evaluates a 128-token prompt and 16 decode tokens on a
// Bonsai-8B-shaped file ($BANKML_BENCH_MODEL, default /tmp/b8-Q1_0.gguf) on
// 2 threads, once per iteration, and reports the prompt's and a decode
// token's times. With $BANKML_ATTN_PROFILE set to a folder, the first
// iteration writes a CPU profile of each phase there (prompt.pprof,
// decode.pprof: the attention's share is the cumulative share of
// Context.attention's closures, `go tool pprof -top -cum`):
//
//	BANKML_ATTN_PROFILE=/tmp go test -run '^$' -bench Prompt8B -benchtime 1x ./model/
func BenchmarkPrompt8B(b *testing.B) {
	path := bonsai8BPath(b)
	m := loadModel(b, path)
	defer m.Close()
	prompt := make([]int32, 128)
	for i := range prompt {
		prompt[i] = int32(100 + i*4099%150000)
	}
	dir := os.Getenv("BANKML_ATTN_PROFILE")
	profile := func(name string, run func()) time.Duration {
		if dir != "" {
			pf, err := os.Create(filepath.Join(dir, name))
			if err != nil {
				b.Fatal(err)
			}
			defer pf.Close()
			if err := pprof.StartCPUProfile(pf); err != nil {
				b.Fatal(err)
			}
			defer pprof.StopCPUProfile()
		}
		t0 := time.Now()
		run()
		return time.Since(t0)
	}
	var tp, td time.Duration
	for b.Loop() {
		c, err := m.NewContext(512, 2)
		if err != nil {
			b.Fatal(err)
		}
		var logits []float32
		tp += profile("prompt.pprof", func() {
			if logits, err = c.Decode(prompt); err != nil {
				b.Fatal(err)
			}
		})
		td += profile("decode.pprof", func() {
			for range 16 {
				if logits, err = c.Decode([]int32{sample.Greedy(logits)}); err != nil {
					b.Fatal(err)
				}
			}
		})
		c.Close()
		dir = ""
	}
	n := float64(b.N)
	b.ReportMetric(tp.Seconds()/n, "prompt-s")
	b.ReportMetric(td.Seconds()/n/16, "decode-s/token")
}

// BenchmarkVAccQuant times one_chunk's V step over a quantized V cache
// (Q8_0, Q4_0) at Qwen3-8B's head size (128 lanes) over 1000 cells: the
// portable twin (vAccQuantGo, the Go loop it replaced) against vAccQuant at
// every level, one thread; ns per cell and lane-block count alike in every
// case, so the ratios of one run count:
//
//	go test -run '^$' -bench VAccQuant ./model/
func BenchmarkVAccQuant(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	const dv, n = 128, 1000
	for _, typ := range []gguf.GGMLType{gguf.Q8_0, gguf.Q4_0} {
		rb := rowBytes(typ, dv) * 8 // eight KV heads per cell
		vq := make([]byte, n*rb)
		for i := range vq {
			vq[i] = byte(r.IntN(256))
		}
		bs := rowBytes(typ, quant.QK8_0)
		for o := 0; o < len(vq); o += bs {
			binary.LittleEndian.PutUint16(vq[o:], quant.FP32ToFP16(float32(r.NormFloat64()*0.01)))
		}
		vs, ms := make([]float32, n), make([]float32, n)
		for i := range vs {
			vs[i], ms[i] = float32(r.Float64()), 1
			if r.IntN(8) == 0 {
				ms[i] = float32(r.Float64())
			}
		}
		acc := make([]float32, dv)
		cases := []string{"go"}
		for _, l := range quant.Levels() {
			cases = append(cases, l.String())
		}
		for _, c := range cases {
			b.Run(typ.String()+"/"+c, func(b *testing.B) {
				for b.Loop() {
					clear(acc)
					if c == "go" {
						vAccQuantGo(typ, acc, vq, 0, rb, vs, ms)
						continue
					}
					l, _ := quant.ParseLevel(c)
					vAccQuant(l, typ, acc, vq, 0, rb, vs, ms)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/cell")
			})
		}
	}
}
