package quant

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestQuantizeRowQ4_0MatchesReference compares QuantizeRowQ4_0 with the
// haswell library's quantize_row_q4_0 (Q4_0's from_float, the quantizer of
// a q4_0 KV cache) on random rows and on rows of special values (zeros,
// ties of magnitude, infinities, NaNs, subnormals, huge values), byte for
// byte.
func TestQuantizeRowQ4_0MatchesReference(t *testing.T) {
	k := kernels(t)
	var ref func(x, y unsafe.Pointer, n int64)
	if err := k.Bind(&ref, "quantize_row_q4_0"); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(40, 1))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), -float32(math.NaN()), 1e-45, -1e-40, 3e38, -3e38, 1, -1, 8, -8, 0.5, -7.5}
	pass, total := 0, 0
	for ci := range 4000 {
		n := QK8_0 * (1 + r.IntN(8))
		x := randRow(r, n)
		if ci%4 == 1 {
			for i := range x {
				if r.IntN(6) == 0 {
					x[i] = specials[r.IntN(len(specials))]
				}
			}
		}
		if ci%4 == 2 { // ties of magnitude: +m and -m in one block
			m := float32(r.NormFloat64())
			for i := range x {
				if r.IntN(3) == 0 {
					x[i] = m
				} else if r.IntN(3) == 0 {
					x[i] = -m
				}
			}
		}
		got := make([]byte, n/QK8_0*BlockQ4_0Size)
		want := make([]byte, len(got))
		QuantizeRowQ4_0(x, got)
		ref(unsafe.Pointer(&x[0]), unsafe.Pointer(&want[0]), int64(n))
		total++
		if !bytes.Equal(got, want) {
			t.Errorf("case %d (n=%d): blocks differ from the reference\n got %x\nwant %x\nx %v", ci, n, got, want, x)
			continue
		}
		pass++
	}
	t.Logf("quantize_row_q4_0: %d of %d rows equal to the reference", pass, total)
}
