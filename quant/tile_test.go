package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// packedDots computes every (row, column) dot of a packed matrix at level l
// through the tile kernels, one group and chunk of columns at a time.
func packedDotsQ8(t *testing.T, l Level, p *packed, a *q8Act) []float32 {
	t.Helper()
	out := make([]float32, a.ncols*p.rows)
	tmp := make([]float32, 16*a.ncols)
	acc := make([]float32, 128*a.ncols)
	for g := range p.groups {
		codes, scales := p.group(g)
		switch p.typ {
		case gguf.Q2_0:
			tileQ2_0(l, codes, scales, p.nb, a, 0, a.ncols, tmp)
		case gguf.Q1_0:
			tileQ1_0(l, codes, scales, p.nb, a, 0, a.ncols, tmp, acc)
		}
		for c := range a.ncols {
			for r := range packRows {
				if row := g*packRows + r; row < p.rows {
					out[c*p.rows+row] = tmp[16*c+r]
				}
			}
		}
	}
	return out
}

// TestTilesMatchPlainKernels: the packed tiles at every level give the bits
// of the plain kernels (themselves oracle-tested against the reference).
func TestTilesMatchPlainKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(81, 82))
	for _, l := range Levels() {
		for _, tc := range []struct {
			typ    gguf.GGMLType
			qk, bs int
			dot    func(w, a []byte, nb int) float32
		}{
			{gguf.Q2_0, QK2_0, BlockQ2_0Size, VecDotQ2_0Q8_0},
			{gguf.Q1_0, QK1_0, BlockQ1_0Size, VecDotQ1_0Q8_0},
		} {
			for _, shape := range [][3]int{{1, 256, 1}, {37, 512, 3}, {16, 4096, 1}, {33, 1024, 5}} {
				rows, cols, n := shape[0], shape[1], shape[2]
				nb := cols / tc.qk
				w := randLowbitBlocks(r, rows*nb, tc.bs)
				p := packMatrix(tc.typ, w, rows, nb)
				var a q8Act
				a.reset(cols, n)
				raw := make([][]byte, n)
				for c := range n {
					raw[c] = randActivations(r, cols/QK8_0)
					a.fromQ8_0(c, raw[c])
				}
				got := packedDotsQ8(t, l, p, &a)
				for c := range n {
					for i := range rows {
						want := tc.dot(w[i*nb*tc.bs:(i+1)*nb*tc.bs], raw[c], nb)
						if g := got[c*rows+i]; math.Float32bits(g) != math.Float32bits(want) {
							t.Fatalf("%s %s rows=%d cols=%d n=%d: (%d,%d) = %g (%#x), plain %g (%#x)", l, tc.typ, rows, cols, n, i, c, g, math.Float32bits(g), want, math.Float32bits(want))
						}
					}
				}
			}
		}
	}
}
