package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
)

func kernels(t testing.TB) *reference.Kernels {
	t.Helper()
	k, err := reference.LoadKernels()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	return k
}

func bitsEq(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

// randRow draws values of mixed magnitudes, with exact zeros, negative zeros
// and repeated values, the cases where rounding and ties show.
func randRow(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		switch r.IntN(10) {
		case 0:
			x[i] = 0
		case 1:
			x[i] = float32(math.Copysign(0, -1))
		case 2:
			x[i] = float32(r.IntN(255) - 127)
		default:
			x[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(16)-8)))
		}
	}
	return x
}

func TestFP16ToFP32AllValues(t *testing.T) {
	k := kernels(t)
	for h := range 1 << 16 {
		got, want := FP16ToFP32(uint16(h)), k.FP16ToFP32(uint16(h))
		if !bitsEq(got, want) {
			t.Fatalf("FP16ToFP32(%#04x) = %#x, reference %#x", h, math.Float32bits(got), math.Float32bits(want))
		}
	}
}

func TestFP32ToFP16MatchesReference(t *testing.T) {
	k := kernels(t)
	check := func(f float32) {
		if f != f {
			return // NaN payloads: bankml follows F16C, ggml_fp32_to_fp16 its own rule
		}
		if got, want := FP32ToFP16(f), k.FP32ToFP16(f); got != want {
			t.Fatalf("FP32ToFP16(%g = %#x) = %#04x, reference %#04x", f, math.Float32bits(f), got, want)
		}
	}
	n := 0
	for u := uint64(0); u < 1<<32; u += 4099 { // a stride prime to every power of two
		check(math.Float32frombits(uint32(u)))
		n++
	}
	// Every f16 value, its halfway points to both neighbours and one ulp either side.
	for h := range 1 << 15 {
		f := FP16ToFP32(uint16(h))
		next := FP16ToFP32(uint16(h + 1))
		mid := float32((float64(f) + float64(next)) / 2)
		for _, v := range []float32{f, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			check(v)
			check(-v)
			n += 2
		}
	}
	t.Logf("%d values identical", n)
}

func TestQuantizeRowQ8_0MatchesReference(t *testing.T) {
	k := kernels(t)
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 2000 {
		n := QK8_0 * (1 + r.IntN(8))
		x := randRow(r, n)
		switch trial % 10 {
		case 0:
			for i := range x { // all-zero blocks
				x[i] = 0
			}
		case 1:
			for i := range x { // tiny blocks: 127/amax overflows to +Inf
				x[i] *= 1e-38
			}
		case 2:
			for i := range x { // subnormals
				x[i] *= 1e-42
			}
		}
		got := make([]byte, n/QK8_0*BlockQ8_0Size)
		want := make([]byte, len(got))
		QuantizeRowQ8_0(x, got)
		k.QuantizeRowQ8_0(x, want)
		if string(got) != string(want) {
			t.Fatalf("trial %d: quantize_row_q8_0 differs\n got %x\nwant %x", trial, got, want)
		}
	}
}

func TestDequantizeRowsMatchReference(t *testing.T) {
	k := kernels(t)
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 500 {
		nb := 1 + r.IntN(8)
		q8 := make([]byte, nb*BlockQ8_0Size)
		q4 := make([]byte, nb*BlockQ4_0Size)
		for i := range q8 {
			q8[i] = byte(r.Uint32())
		}
		for i := range q4 {
			q4[i] = byte(r.Uint32())
		}
		for b := range nb { // finite scales
			q8[b*BlockQ8_0Size+1] &= 0x3b
			q4[b*BlockQ4_0Size+1] &= 0x3b
		}
		got, want := make([]float32, nb*QK8_0), make([]float32, nb*QK8_0)
		DequantizeRowQ8_0(q8, got)
		k.DequantizeRowQ8_0(q8, want)
		for i := range got {
			if !bitsEq(got[i], want[i]) {
				t.Fatalf("trial %d: q8_0 value %d: %g, reference %g", trial, i, got[i], want[i])
			}
		}
		DequantizeRowQ4_0(q4, got)
		k.DequantizeRowQ4_0(q4, want)
		for i := range got {
			if !bitsEq(got[i], want[i]) {
				t.Fatalf("trial %d: q4_0 value %d: %g, reference %g", trial, i, got[i], want[i])
			}
		}
	}
}

// TestVecDotsMatchReference: every length from 1 to 300 (all leftover cases
// of the 32-wide loops) and random values, bit for bit.
func TestVecDotsMatchReference(t *testing.T) {
	k := kernels(t)
	r := rand.New(rand.NewPCG(7, 8))
	levels := Levels()
	f16Dots := make([]int, len(levels))
	defer func() {
		for li, l := range levels {
			t.Logf("ggml_vec_dot_f16 %s: %d/%d rows (lengths 1-300) bit-equal", l, f16Dots[li], 300*20)
		}
	}()
	for n := 1; n <= 300; n++ {
		for range 20 {
			x, y := randRow(r, n), randRow(r, n)
			if got, want := VecDotF32(x, y), k.VecDotF32(x, y); !bitsEq(got, want) {
				t.Fatalf("VecDotF32 n=%d: %g (%#x), reference %g (%#x)", n, got, math.Float32bits(got), want, math.Float32bits(want))
			}
			xh, yh := make([]uint16, n), make([]uint16, n)
			FP32ToFP16Row(x, xh)
			FP32ToFP16Row(y, yh)
			want := k.VecDotF16(xh, yh)
			if got := VecDotF16(xh, yh); !bitsEq(got, want) {
				t.Fatalf("VecDotF16 n=%d: %g, reference %g", n, got, want)
			}
			for li, l := range levels {
				if got := l.VecDotF16(xh, yh); !bitsEq(got, want) {
					t.Fatalf("%s VecDotF16 n=%d: %g, reference %g", l, n, got, want)
				}
				f16Dots[li]++
			}
			if n%QK8_0 != 0 {
				continue
			}
			nb := n / QK8_0
			wq8, xq8 := make([]byte, nb*BlockQ8_0Size), make([]byte, nb*BlockQ8_0Size)
			QuantizeRowQ8_0(x, wq8)
			QuantizeRowQ8_0(y, xq8)
			if got, want := VecDotQ8_0Q8_0(wq8, xq8, nb), k.VecDotQ8_0Q8_0(n, wq8, xq8); !bitsEq(got, want) {
				t.Fatalf("VecDotQ8_0Q8_0 n=%d: %g, reference %g", n, got, want)
			}
			wq4 := make([]byte, nb*BlockQ4_0Size)
			for i := range wq4 {
				wq4[i] = byte(r.Uint32())
			}
			for b := range nb {
				wq4[b*BlockQ4_0Size+1] &= 0x3b
			}
			if got, want := VecDotQ4_0Q8_0(wq4, xq8, nb), k.VecDotQ4_0Q8_0(n, wq4, xq8); !bitsEq(got, want) {
				t.Fatalf("VecDotQ4_0Q8_0 n=%d: %g, reference %g", n, got, want)
			}
		}
	}
}
