package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/internal/reference"
)

// Oracle tests of the _generic models of generic_q8.go: random rows of 1..64
// blocks, bit for bit against the haswell library's exported
// ggml_vec_dot_*_q8_0_generic, and a count of the rows where the generic
// float order differs from the haswell kernel's.

// genericQ8Case is one format's _generic model, its oracle, and the haswell
// kernel (the reference's) it is compared with.
type genericQ8Case struct {
	name    string
	qk      int                                         // weights per block
	weights func(r *rand.Rand, nb int, sat bool) []byte // sat: one-signed weights
	ours    func(w, a []byte, nb int) float32
	ref     func(k *reference.Kernels) func(n int, x, y []byte) float32
	haswell func(k *reference.Kernels) func(n int, x, y []byte) float32
}

// randQ4_0Blocks draws nb Q4_0 blocks of random nibbles (with sat, nibbles
// 0..2, weights -8..-6) with finite f16 scales, mostly of the magnitudes real
// models have.
func randQ4_0Blocks(r *rand.Rand, nb int, sat bool) []byte {
	w := make([]byte, nb*BlockQ4_0Size)
	for i := range w {
		w[i] = byte(r.Uint32())
		if sat {
			w[i] = byte(r.IntN(3) | r.IntN(3)<<4)
		}
	}
	for b := range nb {
		h := uint16(r.Uint32()) &^ 0x4000 // exponent below 16: finite
		if r.IntN(4) > 0 {
			h = uint16(r.IntN(2))<<15 | uint16(0x1800+r.IntN(0x1800))
		}
		binary.LittleEndian.PutUint16(w[b*BlockQ4_0Size:], h)
	}
	return w
}

func TestVecDotGenericQ8_0Family(t *testing.T) {
	k := familyKernels(t, (*reference.Kernels).GenericQ8Err)
	if err := k.LowBitErr(); err != nil {
		t.Fatal(err)
	}
	cases := []genericQ8Case{
		{
			"Q8_0", QK8_0,
			func(r *rand.Rand, nb int, sat bool) []byte {
				w := make([]byte, nb*BlockQ8_0Size)
				QuantizeRowQ8_0(randSignedRow(r, nb*QK8_0, sat), w)
				return w
			},
			VecDotQ8_0Q8_0Generic,
			func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ8_0Q8_0Generic },
			func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ8_0Q8_0 },
		},
		{
			"Q4_0", QK8_0, randQ4_0Blocks,
			VecDotQ4_0Q8_0Generic,
			func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ4_0Q8_0Generic },
			func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ4_0Q8_0 },
		},
		{
			"Q1_0", QK1_0,
			func(r *rand.Rand, nb int, sat bool) []byte {
				w := make([]byte, nb*BlockQ1_0Size)
				QuantizeRowQ1_0(randSignedRow(r, nb*QK1_0, sat), w)
				return w
			},
			VecDotQ1_0Q8_0Generic,
			func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ1_0Q8_0Generic },
			func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ1_0Q8_0 },
		},
	}
	const perLen = 300
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(0x9e3779b9, uint64(c.qk)^0x51))
			ref, hw := c.ref(k), c.haswell(k)
			var rows, eq, differ int
			for nb := 1; nb <= 64; nb++ {
				for range perLen {
					// A quarter of the rows one-signed on both sides: integer
					// sums near their extremes, whose products with the
					// scales round.
					sat := r.IntN(4) == 0
					w := c.weights(r, nb, sat)
					a := make([]byte, c.qk/QK8_0*nb*BlockQ8_0Size)
					QuantizeRowQ8_0(randSignedRow(r, c.qk*nb, sat), a)
					n := nb * c.qk
					got, want := c.ours(w, a, nb), ref(n, w, a)
					rows++
					if bitsEq(got, want) {
						eq++
					} else if rows-eq <= 10 {
						t.Errorf("%d blocks: %g (%#x), reference _generic %g (%#x)",
							nb, got, math.Float32bits(got), want, math.Float32bits(want))
					}
					if !bitsEq(want, hw(n, w, a)) {
						differ++
					}
				}
			}
			t.Logf("%s _generic: %d/%d rows bit-equal to ggml_vec_dot_%s_q8_0_generic; the haswell kernel differs from the generic order on %d/%d",
				c.name, eq, rows, toLower(c.name), differ, rows)
			if eq != rows {
				t.Fatalf("%d/%d rows differ", rows-eq, rows)
			}
		})
	}
}

// randSignedRow is randRow, or with sat values uniform in [s/2, s) for a
// random power of two s, which quantize to large one-signed codes.
func randSignedRow(r *rand.Rand, n int, sat bool) []float32 {
	if !sat {
		return randRow(r, n)
	}
	x := make([]float32, n)
	s := float32(math.Ldexp(1, r.IntN(16)-8))
	for i := range x {
		x[i] = s * (1 + r.Float32()) / 2
	}
	return x
}

func toLower(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			b[i] = ch + 'a' - 'A'
		}
	}
	return string(b)
}
