package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/internal/reference"
)

// kquantKernels returns the reference with the Q8_K family's oracles bound,
// skipping (failing under CI) when the reference is absent.
func kquantKernels(t *testing.T) *reference.Kernels {
	t.Helper()
	return familyKernels(t, (*reference.Kernels).KQuantsErr)
}

// kRowCase is a named generator of activation or weight rows for the K-quant
// tests.
type kRowCase struct {
	name string
	gen  func(r *rand.Rand, n int) []float32
}

// kRowCases are the row shapes every K-quant quantizer is checked on: mixed
// magnitudes with signed zeros and integers (randRow), single outliers,
// all-zero rows and rows with all-zero groups, near-ties, and NaN/Inf-free
// extremes (huge, tiny and subnormal values).
var kRowCases = []kRowCase{
	{"random", randRow},
	{"outliers", func(r *rand.Rand, n int) []float32 {
		x := randRow(r, n)
		for range 1 + r.IntN(4) {
			x[r.IntN(n)] = float32(r.NormFloat64() * 1e4)
		}
		return x
	}},
	{"all-zero", func(r *rand.Rand, n int) []float32 { return make([]float32, n) }},
	{"zero-groups", func(r *rand.Rand, n int) []float32 {
		x := randRow(r, n)
		for g := 0; g < n/16; g++ {
			if r.IntN(3) == 0 {
				clear(x[16*g : 16*g+16])
			}
		}
		return x
	}},
	{"gaussian", func(r *rand.Rand, n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}},
	{"ties", func(r *rand.Rand, n int) []float32 {
		// Values on a coarse grid, so scaled values land on .5 often.
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.IntN(33)-16) / 8
		}
		return x
	}},
	{"extremes", func(r *rand.Rand, n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			switch r.IntN(6) {
			case 0:
				x[i] = float32(r.NormFloat64()) * 1e30
			case 1:
				x[i] = float32(r.NormFloat64()) * 1e-30
			case 2:
				x[i] = math.Float32frombits(r.Uint32() & 0x807fffff) // subnormal
			case 3:
				x[i] = math.MaxFloat32 / 4 * float32(r.Float64()*2-1)
			default:
				x[i] = float32(r.NormFloat64())
			}
		}
		return x
	}},
	{"tiny", func(r *rand.Rand, n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64()) * 1e-20
		}
		return x
	}},
}

// kRandHalf returns a random finite f16 bit pattern (any sign, normal or
// subnormal), with the extremes (±max, smallest subnormal, ±0) often.
func kRandHalf(r *rand.Rand) uint16 {
	switch r.IntN(16) {
	case 0:
		return 0x7bff // 65504
	case 1:
		return 0x0001
	case 2:
		return 0x8000
	case 3:
		return 0
	}
	h := uint16(r.Uint32())
	if h>>10&0x1f == 0x1f {
		h &^= 0x0400
	}
	return h
}

// kRandQ8_K returns nb random Q8_K blocks: d a random float of moderate
// magnitude, qs any bytes, bsums either consistent with qs or random int16s
// (the kernels use them as stored).
func kRandQ8_K(r *rand.Rand, nb int, consistentBsums bool) []byte {
	a := make([]byte, nb*BlockQ8_KSize)
	for b := range nb {
		blk := a[b*BlockQ8_KSize : (b+1)*BlockQ8_KSize]
		d := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(20)-10)))
		binary.LittleEndian.PutUint32(blk, math.Float32bits(d))
		for i := range QK_K {
			blk[q8KOffQs+i] = byte(r.Uint32())
		}
		for j := range 16 {
			var s int32
			for _, q := range blk[q8KOffQs+16*j : q8KOffQs+16*j+16] {
				s += int32(int8(q))
			}
			if !consistentBsums {
				s = int32(int16(r.Uint32()))
			}
			binary.LittleEndian.PutUint16(blk[q8KOffBsums+2*j:], uint16(int16(s)))
		}
	}
	return a
}

// kQ8_KRows quantizes a random row of each case for nb blocks.
func kQ8_KRows(r *rand.Rand, nb int) [][]byte {
	var rows [][]byte
	for _, c := range kRowCases {
		a := make([]byte, nb*BlockQ8_KSize)
		QuantizeRowQ8_K(c.gen(r, nb*QK_K), a)
		rows = append(rows, a)
	}
	return rows
}

func TestQuantizeRowQ8_KMatchesReference(t *testing.T) {
	k := kquantKernels(t)
	r := rand.New(rand.NewPCG(81, 82))
	refs := []struct {
		name string
		f    func(x []float32, y []byte)
	}{
		{"quantize_row_q8_K", k.QuantizeRowQ8_K},
		{"quantize_row_q8_K_generic", k.QuantizeRowQ8_KGeneric},
		{"quantize_row_q8_K_ref", k.QuantizeRowQ8_KRef},
	}
	rows := 0
	for _, c := range kRowCases {
		t.Run(c.name, func(t *testing.T) {
			for trial := range 150 {
				nb := 1 + r.IntN(6)
				x := c.gen(r, nb*QK_K)
				got := make([]byte, nb*BlockQ8_KSize)
				QuantizeRowQ8_K(x, got)
				for _, ref := range refs {
					want := make([]byte, len(got))
					ref.f(x, want)
					if string(got) != string(want) {
						t.Fatalf("trial %d: %s differs\n got %x\nwant %x", trial, ref.name, got, want)
					}
				}
				rows++
			}
		})
	}
	t.Logf("Q8_K: %d/%d rows quantize to the reference's bytes (haswell, _generic, _ref)", rows, rows)
}

func TestDequantizeRowQ8_KMatchesReference(t *testing.T) {
	k := kquantKernels(t)
	r := rand.New(rand.NewPCG(83, 84))
	blocks := 0
	for trial := range 300 {
		nb := 1 + r.IntN(6)
		a := kRandQ8_K(r, nb, trial%2 == 0)
		got, want := make([]float32, nb*QK_K), make([]float32, nb*QK_K)
		DequantizeRowQ8_K(a, got)
		k.DequantizeRowQ8_K(a, want)
		for i := range got {
			if !bitsEq(got[i], want[i]) {
				t.Fatalf("trial %d: value %d: %g, reference %g", trial, i, got[i], want[i])
			}
		}
		blocks += nb
	}
	t.Logf("Q8_K: %d/%d blocks dequantize to the reference's bits", blocks, blocks)
}

// TestQuantizeRowQ8_KBadLengths: short or ragged buffers neither panic nor
// write past what they hold.
func TestQuantizeRowQ8_KBadLengths(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nx, nd int
	}{
		{"empty", 0, 0},
		{"ragged x", QK_K + 7, BlockQ8_KSize},
		{"short dst", 2 * QK_K, BlockQ8_KSize + 5},
		{"short x", QK_K - 1, BlockQ8_KSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := make([]float32, tc.nx)
			for i := range x {
				x[i] = float32(i)
			}
			QuantizeRowQ8_K(x, make([]byte, tc.nd))
			DequantizeRowQ8_K(make([]byte, tc.nd), x)
		})
	}
}

// BenchmarkQuantizeRowQ8_K and BenchmarkRefQuantizeRowQ8_K: one 4096-wide
// activation row (16 blocks), reported per block.
func BenchmarkQuantizeRowQ8_K(b *testing.B) {
	x := randRow(rand.New(rand.NewPCG(1, 2)), 4096)
	dst := make([]byte, 16*BlockQ8_KSize)
	for b.Loop() {
		QuantizeRowQ8_K(x, dst)
	}
	reportPerBlockK(b, 16)
}

func BenchmarkRefQuantizeRowQ8_K(b *testing.B) {
	k := kquantKernelsB(b)
	x := randRow(rand.New(rand.NewPCG(1, 2)), 4096)
	dst := make([]byte, 16*BlockQ8_KSize)
	for b.Loop() {
		k.QuantizeRowQ8_K(x, dst)
	}
	reportPerBlockK(b, 16)
}

// reportPerBlockK reports ns per block for nb blocks per iteration.
func reportPerBlockK(b *testing.B, nb int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nb), "ns/block")
}

func kquantKernelsB(b *testing.B) *reference.Kernels {
	b.Helper()
	k, err := reference.LoadKernels()
	if err != nil {
		b.Skipf("reference not installed: %v", err)
	}
	if err := k.KQuantsErr(); err != nil {
		b.Fatalf("reference K-quant kernels: %v", err)
	}
	return k
}
