package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// q0DotRows returns nr weight rows of nb blocks of size bs of one of
// several kinds chosen by kind: random blocks with extreme bytes (-128,
// 127) and finite scales; every byte -128 or 127 (the vpsignb wrap of
// -128, vpmaddubsw's largest sums); all bytes -128 with random raw f16
// scales (±Inf, NaN included); and (Q8_0 only) rows quantized by
// QuantizeRowQ8_0 from legacyTestRow's kinds.
func q0DotRows(r *rand.Rand, kind, nr, nb, bs int) []byte {
	b := make([]byte, 0, nr*nb*bs)
	for range nr {
		var row []byte
		switch kind % 4 {
		case 0:
			row = legacyRandBlocks(r, nb, bs, 0)
		case 1:
			row = legacyRandBlocks(r, nb, bs, 0)
			for i := range row {
				if i%bs >= 2 {
					row[i] = []byte{0x80, 0x7f, 0x81}[r.IntN(3)]
				}
			}
		case 2:
			row = make([]byte, nb*bs)
			for i := range row {
				row[i] = 0x80
			}
			for ib := range nb {
				binary.LittleEndian.PutUint16(row[ib*bs:], uint16(r.Uint32()))
			}
		default:
			row = make([]byte, nb*bs)
			if bs == BlockQ8_0Size {
				QuantizeRowQ8_0(legacyTestRow(r, r.IntN(10), nb*QK8_0), row)
			} else {
				row = legacyRandBlocks(r, nb, bs, 0)
			}
		}
		b = append(b, row...)
	}
	return b
}

// TestQ0DotsMatchReferenceAtEveryLevel: VecDotQ8_0Q8_0 and VecDotQ4_0Q8_0
// at every CPU level this machine has (Level.VecDot, and Level.VecDotRows:
// the multi-row kernel MatMul runs, 1 to 9 rows per call, four interleaved
// plus the rest, or VecDot row by row at generic), against the reference's ggml_vec_dot_q8_0_q8_0 and
// ggml_vec_dot_q4_0_q8_0, bit for bit: 1 to 40 blocks and the Qwen3-8B row
// lengths (4096, 12288), weights and activations of the kinds of
// q0DotRows (NaN scales on both sides included: the operand order of
// dx*dy, which differs between the two kernels, decides which NaN survives).
func TestQ0DotsMatchReferenceAtEveryLevel(t *testing.T) {
	k := kernels(t)
	levels := Levels()
	cases := []struct {
		typ gguf.GGMLType
		bs  int
		ref func(n int, x, y []byte) float32
	}{
		{gguf.Q8_0, BlockQ8_0Size, k.VecDotQ8_0Q8_0},
		{gguf.Q4_0, BlockQ4_0Size, k.VecDotQ4_0Q8_0},
	}
	for _, c := range cases {
		t.Run(c.typ.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(81, 82))
			equal := make([]int, len(levels))
			total := 0
			var nbs []int
			for nb := 1; nb <= 40; nb++ {
				nbs = append(nbs, nb, nb, nb)
			}
			nbs = append(nbs, 128, 128, 384, 384)
			for trial, nb := range nbs {
				for k0 := range 4 {
					kind := k0 + trial
					nr := 1 + kind%9
					w := q0DotRows(r, kind, nr, nb, c.bs)
					a := q0DotRows(r, k0+trial/4, 1, nb, BlockQ8_0Size)
					rb := nb * c.bs
					want := make([]float32, nr)
					for i := range want {
						want[i] = c.ref(nb*QK8_0, w[i*rb:(i+1)*rb], a)
					}
					total += nr
					got := make([]float32, nr)
					for li, l := range levels {
						dot := l.VecDot(c.typ)
						l.VecDotRows(c.typ)(w, rb, a, nb, got)
						for i := range want {
							one := dot(w[i*rb:(i+1)*rb], a, nb)
							if !bitsEq(one, want[i]) || !bitsEq(got[i], want[i]) {
								t.Fatalf("%s nb=%d weight kind=%d row %d of %d: %g (%#x), rows kernel %g (%#x), reference %g (%#x)", l, nb, kind%4, i, nr,
									one, math.Float32bits(one), got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
							}
							equal[li]++
						}
					}
				}
			}
			for li, l := range levels {
				t.Logf("%s %s: %d/%d rows bit-equal to ggml_vec_dot_%s_q8_0", c.typ, l, equal[li], total, c.typ)
			}
		})
	}
}
