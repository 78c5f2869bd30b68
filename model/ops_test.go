package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/quant"
)

// TestSwiGLUMatchesReference compares swiglu with the reference's
// ggml_vec_swiglu_f32 on every length up to 100 (both the 8-wide ggml_v_expf
// path and the scalar tail) and on inputs that reach ggml_v_expf's
// large-argument blend path.
func TestSwiGLUMatchesReference(t *testing.T) {
	k, err := reference.LoadKernels()
	if err != nil {
		testdata.Absent(t, "reference not installed (run scripts/install-reference.sh): %v", err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	lengths := []int{200, 1000, 1024, 1029, 12288}
	for n := 1; n <= 100; n++ {
		lengths = append(lengths, n)
	}
	for _, l := range quant.Levels() {
		checked := 0
		for _, n := range lengths {
			for trial := range 50 {
				x, g := make([]float32, n), make([]float32, n)
				for i := range x {
					scale := 4.0
					if trial%5 == 0 {
						scale = 120 // |x| past 87 and 126·ln2: overflow and blend paths
					}
					x[i] = float32(r.NormFloat64() * scale)
					g[i] = float32(r.NormFloat64())
				}
				got, want := make([]float32, n), make([]float32, n)
				swiglu(l, got, x, g)
				k.SwiGLU(want, x, g)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v n=%d x=%g g=%g: %g (%#x), reference %g (%#x)", l, n, x[i], g[i], got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
				checked += n
			}
		}
		t.Logf("%v: swiglu %d of %d values bit-equal to ggml_vec_swiglu_f32", l, checked, checked)
	}
}

// TestRMSNormRowsEqualsOneRowAtATime checks that the four-rows-at-a-time
// RMS norm gives every row rmsNormMul's bits (which the model oracles
// compare with the reference's rms_norm+mul), for 1 to 9 rows, in place
// and into another buffer, on rows whose squares span many exponents (so
// that any reordering of a row's double sum would show).
func TestRMSNormRowsEqualsOneRowAtATime(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, width := range []int{1, 7, 128, 4096} {
		w := make([]float32, width)
		for i := range w {
			w[i] = float32(r.NormFloat64())
		}
		for n := 1; n <= 9; n++ {
			x := make([]float32, n*width)
			for i := range x {
				x[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20)))
			}
			want := make([]float32, len(x))
			for row := range n {
				rmsNormMul(want[row*width:(row+1)*width], x[row*width:(row+1)*width], w, 1e-6)
			}
			got := make([]float32, len(x))
			rmsNormRows(got, x, w, width, 1e-6)
			inPlace := append([]float32(nil), x...)
			rmsNormRows(inPlace, inPlace, w, width, 1e-6)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(inPlace[i]) != math.Float32bits(want[i]) {
					t.Fatalf("width %d, %d rows: value %d is %g (in place %g), want %g", width, n, i, got[i], inPlace[i], want[i])
				}
			}
		}
	}
}

// TestSiluTilesEqualTheirLoops: swiglu's tile steps at each level (negTile,
// siluMulTile) give the bits of their portable loops, on values that reach
// every IEEE case of the division and product (zeros of both signs,
// infinities, NaNs, subnormals, 1+e overflowing or cancelling), out of place
// and in place (y = x). The loops' result against ggml_vec_swiglu_f32 is
// TestSwiGLUMatchesReference's.
func TestSiluTilesEqualTheirLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc00000), math.Float32frombits(1), math.Float32frombits(0x807fffff),
		-1, 1, math.MaxFloat32, -math.MaxFloat32, 0x1p-126}
	pick := func() float32 {
		if r.IntN(3) == 0 {
			return special[r.IntN(len(special))]
		}
		return float32(r.NormFloat64() * math.Ldexp(1, r.IntN(40)-20))
	}
	for _, l := range quant.Levels() {
		for trial := range 200 {
			x, e, g := make([]float32, faTile), make([]float32, faTile), make([]float32, faTile)
			for i := range x {
				x[i], e[i], g[i] = pick(), pick(), pick()
			}
			ne, want := make([]float32, faTile), make([]float32, faTile)
			negTileGo(want, x)
			negTile(l, ne, x)
			for i := range ne {
				if math.Float32bits(ne[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v trial %d: negTile(%g) = %#x, loop %#x", l, trial, x[i], math.Float32bits(ne[i]), math.Float32bits(want[i]))
				}
			}
			siluMulTileGo(want, x, e, g)
			got := make([]float32, faTile)
			siluMulTile(l, got, x, e, g)
			inPlace := append([]float32(nil), x...)
			siluMulTile(l, inPlace, inPlace, e, g)
			for i := range got {
				for _, v := range []struct {
					name string
					y    []float32
				}{{"out of place", got}, {"in place", inPlace}} {
					if math.Float32bits(v.y[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%v trial %d %s: x=%g e=%g g=%g: %#x, loop %#x", l, trial, v.name, x[i], e[i], g[i], math.Float32bits(v.y[i]), math.Float32bits(want[i]))
					}
				}
			}
		}
	}
}
