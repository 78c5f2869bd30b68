package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/gguf"
	"golang.org/x/sys/cpu"
)

// TestQ2_0TileDecodesAgree: the AVX-512 Q2_0 tile gives the bits of
// VecDotQ2_0Q8_0 (oracle-tested) with its code planes decoded by shifts
// and masks and, where the CPU has GFNI, by affine bit maps, whatever
// this CPU's default (q2GFNI), for 1 to 16 columns, and so does its
// four-column form (tileQ2_0AVX512Col4).
func TestQ2_0TileDecodesAgree(t *testing.T) {
	if LevelAVX512.Check() != nil {
		t.Skip("no AVX-512 here: the tile cannot run")
	}
	decodes := []int{0}
	if cpu.X86.HasAVX512GFNI {
		decodes = append(decodes, 1)
	} else {
		t.Log("no GFNI here: the shift decode only")
	}
	r := rand.New(rand.NewPCG(87, 88))
	for _, shape := range [][3]int{{16, 256, 1}, {37, 1024, 4}, {48, 768, 16}, {64, 4096, 4}} {
		rows, cols, n := shape[0], shape[1], shape[2]
		nb := cols / QK2_0
		w := randLowbitBlocks(r, rows*nb, BlockQ2_0Size)
		p := packMatrix(gguf.Q2_0, w, rows, nb)
		var a q8Act
		a.reset(cols, n)
		raw := make([][]byte, n)
		for c := range n {
			raw[c] = randActivations(r, cols/QK8_0)
			a.fromQ8_0(c, raw[c])
		}
		forms := []string{"any"}
		if n == 4 {
			forms = append(forms, "col4")
		}
		for _, dec := range decodes {
			for _, form := range forms {
				out := make([]float32, 16*n)
				for g := range p.groups {
					codes, scales := p.block(g, 0) // the group's first block: the tiles step whole blocks
					if form == "col4" {
						tileQ2_0AVX512Col4(&codes[0], &scales[0], nb, &a.qs[0], &a.dy[0], &a.nsum[0], a.k, &out[0], dec)
					} else {
						tileQ2_0AVX512(&codes[0], &scales[0], nb, &a.qs[0], &a.dy[0], &a.nsum[0], a.k, n, &out[0], dec)
					}
					for c := range n {
						for i := range packRows {
							row := g*packRows + i
							if row >= rows {
								break
							}
							want := VecDotQ2_0Q8_0(w[row*nb*BlockQ2_0Size:(row+1)*nb*BlockQ2_0Size], raw[c], nb)
							if got := out[16*c+i]; math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("%s gfni=%d rows=%d cols=%d n=%d: (%d,%d) = %g, plain %g", form, dec, rows, cols, n, row, c, got, want)
							}
						}
					}
				}
			}
		}
	}
}
