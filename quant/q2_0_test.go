package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
)

func TestQuantizeRowQ2_0MatchesReference(t *testing.T) {
	k := lowbitKernels(t)
	r := rand.New(rand.NewPCG(21, 22))
	for trial := range 3000 {
		n := QK2_0 * (1 + r.IntN(8))
		x := edgeRow(r, n, QK2_0)
		if trial%7 == 0 { // exact halves of amax: roundf's ties
			for i := range x {
				x[i] = float32(r.IntN(9)-4) * 0.5
			}
		}
		got := make([]byte, n/QK2_0*BlockQ2_0Size)
		want := make([]byte, len(got))
		QuantizeRowQ2_0(x, got)
		k.QuantizeRowQ2_0Ref(x, want)
		if string(got) != string(want) {
			t.Fatalf("trial %d: quantize_row_q2_0_ref differs\n got %x\nwant %x", trial, got, want)
		}
	}
}

func TestDequantizeRowQ2_0MatchesReference(t *testing.T) {
	k := lowbitKernels(t)
	r := rand.New(rand.NewPCG(23, 24))
	checkDequantEveryF16Scale(t, r, BlockQ2_0Size, QK2_0, DequantizeRowQ2_0, k.DequantizeRowQ2_0)
}

// TestVecDotQ2_0Q8_0MatchesReference: rows of 1 to 60 blocks and the
// Bonsai-8B row lengths, bit for bit against the haswell kernel.
func TestVecDotQ2_0Q8_0MatchesReference(t *testing.T) {
	k := lowbitKernels(t)
	r := rand.New(rand.NewPCG(25, 26))
	checkLowbitDot(t, r, 60, gguf.Q2_0, k.VecDotQ2_0Q8_0)
}

// TestQ2_0X64VariantDiffers runs the x64 (no-FMA) build of
// ggml_vec_dot_q2_0_q8_0 on the rows the haswell build runs: it must equal
// its own model (every product and sum rounded) bit for bit, and it
// disagrees with haswell, the target, on a share of real-shaped rows —
// which is why the haswell chain, fused, is the one bankml reproduces.
func TestQ2_0X64VariantDiffers(t *testing.T) {
	k := lowbitKernels(t)
	r := rand.New(rand.NewPCG(27, 28))
	for _, cols := range []int{64, 4096, 12288} {
		nb := cols / QK2_0
		const rows = 2000
		differ := 0
		for range rows {
			w := randLowbitBlocks(r, nb, BlockQ2_0Size)
			a := make([]byte, 2*nb*BlockQ8_0Size)
			QuantizeRowQ8_0(randRow(r, cols), a)
			has, x64 := k.VecDotQ2_0Q8_0(cols, w, a), k.VecDotQ2_0Q8_0X64(cols, w, a)
			if m := vecDotQ2_0Q8_0NoFMA(w, a, nb); !bitsEq(m, x64) {
				t.Fatalf("cols=%d: no-FMA model %g (%#x), x64 variant %g (%#x)", cols, m, math.Float32bits(m), x64, math.Float32bits(x64))
			}
			if got := VecDotQ2_0Q8_0(w, a, nb); !bitsEq(got, has) {
				t.Fatalf("cols=%d: %g, haswell %g", cols, got, has)
			}
			if !bitsEq(has, x64) {
				differ++
			}
		}
		t.Logf("cols=%d: x64 and haswell disagree on %d of %d rows", cols, differ, rows)
		if cols >= 4096 && differ == 0 {
			t.Errorf("cols=%d: x64 and haswell never disagree: the FMA chain is not being exercised", cols)
		}
	}
}

func BenchmarkVecDotQ2_0Q8_0(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const nb = 4096 / QK2_0
	w := randLowbitBlocks(r, nb, BlockQ2_0Size)
	a := make([]byte, 2*nb*BlockQ8_0Size)
	QuantizeRowQ8_0(randRow(r, 4096), a)
	b.SetBytes(int64(len(w)))
	var s float32
	for b.Loop() {
		s += VecDotQ2_0Q8_0(w, a, nb)
	}
	_ = s
}

func BenchmarkRefVecDotLowbit(b *testing.B) {
	k, err := reference.LoadKernels()
	if err != nil || k.LowBitErr() != nil {
		b.Skip("reference not installed")
	}
	r := rand.New(rand.NewPCG(1, 2))
	a := make([]byte, 4096/QK8_0*BlockQ8_0Size)
	QuantizeRowQ8_0(randRow(r, 4096), a)
	w1 := randLowbitBlocks(r, 4096/QK1_0, BlockQ1_0Size)
	w2 := randLowbitBlocks(r, 4096/QK2_0, BlockQ2_0Size)
	b.Run("q1_0", func(b *testing.B) {
		b.SetBytes(int64(len(w1)))
		for b.Loop() {
			k.VecDotQ1_0Q8_0(4096, w1, a)
		}
	})
	b.Run("q2_0", func(b *testing.B) {
		b.SetBytes(int64(len(w2)))
		for b.Loop() {
			k.VecDotQ2_0Q8_0(4096, w2, a)
		}
	})
}
