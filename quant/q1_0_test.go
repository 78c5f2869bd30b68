package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
)

// lowbitKernels returns the reference with its Q1_0/Q2_0 oracles bound.
func lowbitKernels(t *testing.T) *reference.Kernels {
	t.Helper()
	return familyKernels(t, (*reference.Kernels).LowBitErr)
}

// edgeRow is randRow with, now and then, the values where quantizers
// misbehave: NaN, ±Inf, subnormals, the largest floats, and whole blocks of
// zeros or of one tiny value.
func edgeRow(r *rand.Rand, n, block int) []float32 {
	x := randRow(r, n)
	for i := range x {
		switch r.IntN(60) {
		case 0:
			x[i] = float32(math.NaN())
		case 1:
			x[i] = float32(math.Inf(1 - 2*r.IntN(2)))
		case 2:
			x[i] = math.Float32frombits(uint32(r.IntN(1<<23)) | uint32(r.IntN(2))<<31) // subnormal
		case 3:
			x[i] = math.Float32frombits(0x7f7fffff - uint32(r.IntN(1000)) | uint32(r.IntN(2))<<31)
		}
	}
	for b := 0; b < n/block; b++ {
		xb := x[b*block : (b+1)*block]
		switch r.IntN(12) {
		case 0:
			for i := range xb {
				xb[i] = 0
			}
		case 1: // all subnormal: 1/amax overflows to +Inf
			for i := range xb {
				xb[i] = math.Float32frombits(uint32(r.IntN(64)) | uint32(r.IntN(2))<<31)
			}
		case 2: // finite values only, in a narrow range
			for i := range xb {
				xb[i] = float32(r.NormFloat64())
			}
		}
	}
	return x
}

// randLowbitBlocks fills nb blocks of size bs with random codes and a random
// finite f16 scale (zeros, subnormals and negatives included).
func randLowbitBlocks(r *rand.Rand, nb, bs int) []byte {
	w := make([]byte, nb*bs)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for b := range nb {
		h := uint16(r.Uint32())
		for h&0x7c00 == 0x7c00 {
			h = uint16(r.Uint32())
		}
		if r.IntN(4) > 0 { // mostly the magnitudes real models have
			h = uint16(r.IntN(2))<<15 | uint16(0x1800+r.IntN(0x1800))
		}
		binary.LittleEndian.PutUint16(w[b*bs:], h)
	}
	return w
}

// randActivations returns a Q8_0 row of nb32 blocks: usually
// quantize_row_q8_0 of random values (what the matmul feeds the kernels),
// sometimes raw random bytes with a random finite scale (-128 included).
func randActivations(r *rand.Rand, nb32 int) []byte {
	a := make([]byte, nb32*BlockQ8_0Size)
	if r.IntN(4) > 0 {
		QuantizeRowQ8_0(randRow(r, nb32*QK8_0), a)
		return a
	}
	for i := range a {
		a[i] = byte(r.Uint32())
	}
	for b := range nb32 {
		h := uint16(r.Uint32()) &^ 0x4000 // exponent below 16: finite
		binary.LittleEndian.PutUint16(a[b*BlockQ8_0Size:], h)
	}
	return a
}

func TestQuantizeRowQ1_0MatchesReference(t *testing.T) {
	k := lowbitKernels(t)
	r := rand.New(rand.NewPCG(11, 12))
	for trial := range 3000 {
		n := QK1_0 * (1 + r.IntN(6))
		x := edgeRow(r, n, QK1_0)
		got := make([]byte, n/QK1_0*BlockQ1_0Size)
		want := make([]byte, len(got))
		QuantizeRowQ1_0(x, got)
		k.QuantizeRowQ1_0Ref(x, want)
		if string(got) != string(want) {
			t.Fatalf("trial %d: quantize_row_q1_0_ref differs\n got %x\nwant %x", trial, got, want)
		}
	}
}

func TestDequantizeRowQ1_0MatchesReference(t *testing.T) {
	k := lowbitKernels(t)
	r := rand.New(rand.NewPCG(13, 14))
	// Every f16 scale, NaNs and infinities included, with random bits.
	checkDequantEveryF16Scale(t, r, BlockQ1_0Size, QK1_0, DequantizeRowQ1_0, k.DequantizeRowQ1_0)
}

// TestVecDotQ1_0Q8_0MatchesReference: rows of 1 to 40 blocks and the
// Bonsai-8B row lengths (4096, 12288), bit for bit against the haswell kernel.
func TestVecDotQ1_0Q8_0MatchesReference(t *testing.T) {
	k := lowbitKernels(t)
	r := rand.New(rand.NewPCG(15, 16))
	checkLowbitDot(t, r, 40, gguf.Q1_0, k.VecDotQ1_0Q8_0)
}

// TestLowbitMatMulPath checks, through the reference's whole mul_mat op
// (ggml_graph_compute_with_ctx of the haswell library), that Q1_0 and Q2_0
// weights take ggml_vec_dot_*_q8_0 per output for one activation column and
// for several (llamafile's sgemm refuses both types), on 1 and 2 threads:
// every output equals VecDotQ1_0Q8_0 / VecDotQ2_0Q8_0 of its row and its
// column quantized with quantize_row_q8_0.
func TestLowbitMatMulPath(t *testing.T) {
	k := lowbitKernels(t)
	r := rand.New(rand.NewPCG(17, 18))
	for _, tc := range []struct {
		typ  gguf.GGMLType
		qk   int
		bs   int
		dot  func(w, a []byte, nb int) float32
		cols int
	}{
		{gguf.Q1_0, QK1_0, BlockQ1_0Size, VecDotQ1_0Q8_0, 512},
		{gguf.Q2_0, QK2_0, BlockQ2_0Size, VecDotQ2_0Q8_0, 512},
		{gguf.Q2_0, QK2_0, BlockQ2_0Size, VecDotQ2_0Q8_0, 192},
	} {
		for _, rows := range []int{1, 4, 8, 12, 33} {
			for _, n := range []int{1, 2, 3, 4, 8, 17} {
				for _, threads := range []int{1, 2} {
					nb := tc.cols / tc.qk
					w := randLowbitBlocks(r, rows*nb, tc.bs)
					x := randRow(r, n*tc.cols)
					got, err := k.GraphMulMat(int32(tc.typ), rows, tc.cols, w, x, n, threads)
					if err != nil {
						t.Fatal(err)
					}
					xq := make([]byte, tc.cols/QK8_0*BlockQ8_0Size)
					for j := range n {
						QuantizeRowQ8_0(x[j*tc.cols:(j+1)*tc.cols], xq)
						for i := range rows {
							want := tc.dot(w[i*nb*tc.bs:(i+1)*nb*tc.bs], xq, nb)
							if g := got[j*rows+i]; !bitsEq(g, want) {
								t.Fatalf("%s rows=%d cols=%d n=%d threads=%d: output (%d,%d) = %g, vec_dot %g", tc.typ, rows, tc.cols, n, threads, i, j, g, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestGraphMulMatSeesSgemm guards the oracle of TestLowbitMatMulPath: the
// same harness on F32 weights must show llamafile's sgemm taking over at two
// columns (TinyDotF32, whose lane order differs from ggml_vec_dot_f32), so a
// type that stays on vec_dot there really is refused by sgemm.
func TestGraphMulMatSeesSgemm(t *testing.T) {
	k := lowbitKernels(t)
	r := rand.New(rand.NewPCG(19, 20))
	const rows, cols = 8, 256
	w := randRow(r, rows*cols)
	wb := make([]byte, 4*len(w))
	for i, v := range w {
		binary.LittleEndian.PutUint32(wb[4*i:], math.Float32bits(v))
	}
	differ := 0
	for _, n := range []int{1, 4} {
		x := randRow(r, n*cols)
		got, err := k.GraphMulMat(int32(gguf.F32), rows, cols, wb, x, n, 1)
		if err != nil {
			t.Fatal(err)
		}
		for j := range n {
			for i := range rows {
				wr, xc := w[i*cols:(i+1)*cols], x[j*cols:(j+1)*cols]
				vec, tiny := VecDotF32(wr, xc), TinyDotF32(wr, xc)
				want := vec
				if n >= 2 {
					want = tiny
				}
				if !bitsEq(got[j*rows+i], want) {
					t.Fatalf("n=%d output (%d,%d) = %g, want %g (vec_dot %g, tinyBLAS %g)", n, i, j, got[j*rows+i], want, vec, tiny)
				}
				if !bitsEq(vec, tiny) {
					differ++
				}
			}
		}
	}
	if differ == 0 {
		t.Fatal("vec_dot and tinyBLAS agreed everywhere: the check cannot tell the paths apart")
	}
}

func BenchmarkVecDotQ1_0Q8_0(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const nb = 4096 / QK1_0
	w := randLowbitBlocks(r, nb, BlockQ1_0Size)
	a := make([]byte, 4*nb*BlockQ8_0Size)
	QuantizeRowQ8_0(randRow(r, 4096), a)
	b.SetBytes(int64(len(w)))
	var s float32
	for b.Loop() {
		s += VecDotQ1_0Q8_0(w, a, nb)
	}
	_ = s
}

// TestQ1_0EdgeScalesMatchReference: the Q1_0 kernels at every level (the
// AVX-512 lookup-table tile's products float(L)*dy among them) against the
// haswell ggml_vec_dot_q1_0_q8_0, bit for bit, on activation blocks with
// the edge scales (±Inf, NaN, ±0, f16 subnormals, the largest f16) and
// activations of -128 (whose int8 negation wraps) and 0, next to ordinary
// blocks: table-driven per scale, each in every sub-block position (one
// edge scale per row). Not covered, and not equal at any level: a row
// mixing edge scales where a NaN dy meets a blk already NaN (from an
// earlier Inf*0 or another NaN): the reference's vfmadd then returns dy's
// NaN (a multiplicand's NaN before the addend's), every bankml kernel
// blk's.
func TestQ1_0EdgeScalesMatchReference(t *testing.T) {
	k := lowbitKernels(t)
	r := rand.New(rand.NewPCG(19, 20))
	scales := []struct {
		name string
		h    uint16
	}{
		{"+Inf", 0x7c00}, {"-Inf", 0xfc00}, {"NaN", 0x7e00}, {"-NaN", 0xfe01},
		{"+0", 0x0000}, {"-0", 0x8000}, {"subnormal", 0x0001}, {"-subnormal", 0x83ff},
		{"max", 0x7bff}, {"-max", 0xfbff}, {"-1", 0xbc00},
	}
	levels := Levels()
	checked := 0
	for _, sc := range scales {
		for pos := range 4 {
			for trial := range 20 {
				const nb = 3
				w := randLowbitBlocks(r, nb, BlockQ1_0Size)
				a := randActivations(r, 4*nb)
				for s := range 4 * nb {
					blk := a[s*BlockQ8_0Size : (s+1)*BlockQ8_0Size]
					if s%4 == pos || trial%5 == 0 {
						binary.LittleEndian.PutUint16(blk, sc.h)
					}
					for i := range QK8_0 {
						switch r.IntN(4) {
						case 0:
							blk[2+i] = 0x80 // -128
						case 1:
							blk[2+i] = 0
						}
					}
				}
				want := k.VecDotQ1_0Q8_0(nb*QK1_0, w, a)
				for _, l := range levels {
					if got := l.VecDot(gguf.Q1_0)(w, a, nb); !bitsEq(got, want) {
						t.Fatalf("%s dy %s at sub-block %d: %g (%#x), reference %g (%#x)", l, sc.name, pos, got, math.Float32bits(got), want, math.Float32bits(want))
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d of %d outputs equal to the reference", checked, len(scales)*4*20*len(levels))
}
