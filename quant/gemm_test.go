package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/fmath"
)

// TestGemmF32TilesAreFusedChainsAndEdgesRoundedOnes: at every level the CPU has, each element of GemmF32 is the
// chain its doc names (fused multiply-adds in the SIMD tiles, rounded products and adds elsewhere), bit for bit,
// for shapes with partial tiles, with and without accumulation, and whatever the strips of rows.
func TestGemmF32TilesAreFusedChainsAndEdgesRoundedOnes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, l := range []Level{LevelGeneric, LevelAVX2, LevelAVX512} {
		if l.Check() != nil {
			t.Logf("%s: not on this CPU", l)
			continue
		}
		for _, s := range [][3]int{{8, 32, 17}, {9, 35, 64}, {4, 16, 1}, {3, 5, 7}, {12, 48, 0}} {
			m, n, k := s[0], s[1], s[2]
			a, b := make([]float32, m*k), make([]float32, k*n)
			for i := range a {
				a[i] = float32(rng.NormFloat64())
			}
			for i := range b {
				b[i] = float32(rng.NormFloat64())
			}
			for _, acc := range []bool{false, true} {
				c0 := make([]float32, m*n)
				for i := range c0 {
					c0[i] = float32(rng.NormFloat64())
				}
				c := append([]float32(nil), c0...)
				for r := 0; r < m; r += 4 { // strips of 4, as package train splits them
					l.GemmF32(c, a, b, m, n, k, r, min(r+4, m), acc)
				}
				bad := 0
				for i := range m {
					for j := range n {
						fused := l >= LevelAVX2 && i/4*4+4 <= m && j < n/16*16 && k > 0
						var want float32
						if acc {
							want = c0[i*n+j]
						}
						for p := range k {
							if fused {
								want = fmath.FMA32(a[i*k+p], b[p*n+j], want)
							} else {
								want += float32(a[i*k+p] * b[p*n+j])
							}
						}
						if math.Float32bits(want) != math.Float32bits(c[i*n+j]) {
							bad++
						}
					}
				}
				if bad > 0 {
					t.Errorf("%s %dx%dx%d acc=%v: %d of %d elements differ from their chain", l, m, n, k, acc, bad, m*n)
				}
			}
		}
	}
}

func BenchmarkGemmF32(b *testing.B) {
	const m, n, k = 256, 256, 256
	x, y, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for _, l := range []Level{LevelGeneric, LevelAVX2} {
		if l.Check() != nil {
			continue
		}
		b.Run(l.String(), func(b *testing.B) {
			for b.Loop() {
				l.GemmF32(c, x, y, m, n, k, 0, m, false)
			}
			b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
		})
	}
}
