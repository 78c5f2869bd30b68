package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTinyRowsEveryLevelMatchesTwin: the tinyBLAS tiles (tinyRowsF32,
// tinyRowsF16, tinyRowsBF16) give the Go twin's bits (one TinyDot* per
// output; the twins are tested against the reference's matmul in the
// F32/F16/BF16 oracles) at every level this CPU has, on random shapes (rows
// and columns that fill the 4x3 tiles and that leave ragged edges, output
// strides wider than the share, every 25th with rows long enough that the
// columns run in several L2 panels) and on values of three kinds: ordinary
// values, values of every magnitude (overflow to Inf, subnormal products,
// cancellation) and raw bit patterns (±0, subnormals, Inf and NaN with
// payloads). Outputs outside the share stay untouched.
func TestTinyRowsEveryLevelMatchesTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 5))
	value := func(kind int) float32 {
		switch kind {
		case 0:
			return float32(r.NormFloat64())
		case 1:
			return float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(80)-40)))
		default:
			return math.Float32frombits(r.Uint32())
		}
	}
	f16 := func(kind int) uint16 {
		if kind == 2 {
			return uint16(r.Uint32())
		}
		return FP32ToFP16(value(kind) / 4)
	}
	bf16 := func(kind int) uint16 {
		if kind == 2 {
			return uint16(r.Uint32())
		}
		return FP32ToBF16(value(kind))
	}
	for _, tc := range []struct {
		name string
		run  func(l Level, kind, k, nr, n int, out []float32, ldo int) func() []float32
	}{
		{"f32", func(l Level, kind, k, nr, n int, out []float32, ldo int) func() []float32 {
			a, b := make([]float32, nr*k), make([]float32, n*k)
			for i := range a {
				a[i] = value(kind)
			}
			for i := range b {
				b[i] = value(kind)
			}
			tinyRowsF32(l, a, b, k, nr, n, out, ldo)
			return func() []float32 {
				want := make([]float32, len(out))
				tinyRowsGo(TinyDotF32, a, b, k, nr, n, want, ldo)
				return want
			}
		}},
		{"f16", func(l Level, kind, k, nr, n int, out []float32, ldo int) func() []float32 {
			a, b := make([]uint16, nr*k), make([]uint16, n*k)
			for i := range a {
				a[i] = f16(kind)
			}
			for i := range b {
				b[i] = f16(kind)
			}
			tinyRowsF16(l, a, b, k, nr, n, out, ldo)
			return func() []float32 {
				want := make([]float32, len(out))
				tinyRowsGo(TinyDotF16, a, b, k, nr, n, want, ldo)
				return want
			}
		}},
		{"bf16", func(l Level, kind, k, nr, n int, out []float32, ldo int) func() []float32 {
			a, b := make([]uint16, nr*k), make([]uint16, n*k)
			for i := range a {
				a[i] = bf16(kind)
			}
			for i := range b {
				b[i] = bf16(kind)
			}
			tinyRowsBF16(l, a, b, k, nr, n, out, ldo)
			return func() []float32 {
				want := make([]float32, len(out))
				tinyRowsGo(TinyDotBF16, a, b, k, nr, n, want, ldo)
				return want
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, l := range Levels() {
				outputs, equal := 0, 0
				for trial := range 300 {
					kind := trial % 3
					k := 8 * (1 + r.IntN(70))
					nr, n := 1+r.IntN(14), 1+r.IntN(8)
					if trial%25 == 24 { // rows long enough for several column panels
						k, nr, n = 8*(1024+r.IntN(512)), 1+r.IntN(9), 8+r.IntN(24)
					}
					ldo := nr + r.IntN(3)
					const sentinel = -12345.5
					out := make([]float32, n*ldo)
					for i := range out {
						out[i] = sentinel
					}
					want := tc.run(l, kind, k, nr, n, out, ldo)()
					for c := range n {
						for i := range ldo {
							o := c*ldo + i
							if i >= nr {
								if out[o] != sentinel {
									t.Fatalf("%s k=%d nr=%d n=%d: out[%d] written outside the share", l, k, nr, n, o)
								}
								continue
							}
							outputs++
							if math.Float32bits(out[o]) == math.Float32bits(want[o]) {
								equal++
							} else if equal+100 > outputs { // report the first few
								t.Errorf("%s kind %d k=%d nr=%d n=%d: output (row %d, column %d) %#08x (%g), twin %#08x (%g)",
									l, kind, k, nr, n, i, c, math.Float32bits(out[o]), out[o], math.Float32bits(want[o]), want[o])
							}
						}
					}
				}
				t.Logf("%s: %d of %d outputs equal to the twin's", l, equal, outputs)
				if equal != outputs {
					t.Fatalf("%s: %d of %d outputs differ", l, outputs-equal, outputs)
				}
			}
		})
	}
}

// BenchmarkTinyRowsF16 times tinyBLAS's f16 product (one share: every row
// against every column) at each level, on the tiny model's shape (k 256,
// 512 rows, 128 columns: its ffn_up in a 128-token prompt) and on Qwen3-8B's
// attn_q (k 4096, 512 of its rows, 512 columns):
//
//	go test -run '^$' -bench TinyRowsF16 -count 3 ./quant/
func BenchmarkTinyRowsF16(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sh := range []struct {
		name       string
		k, rows, n int
	}{{"tiny", 256, 512, 128}, {"8b", 4096, 512, 512}} {
		a, x := make([]uint16, sh.rows*sh.k), make([]uint16, sh.n*sh.k)
		for i := range a {
			a[i] = FP32ToFP16(float32(r.NormFloat64()))
		}
		for i := range x {
			x[i] = FP32ToFP16(float32(r.NormFloat64()))
		}
		out := make([]float32, sh.rows*sh.n)
		for _, l := range Levels() {
			if l == LevelGeneric && sh.name == "8b" {
				continue // minutes per product
			}
			b.Run(sh.name+"/"+l.String(), func(b *testing.B) {
				for b.Loop() {
					tinyRowsF16(l, a, x, sh.k, sh.rows, sh.n, out, sh.rows)
				}
				b.ReportMetric(float64(2*sh.k*sh.rows*sh.n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
