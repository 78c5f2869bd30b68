package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
)

// Test scaffolding shared by the format families' oracle tests.

// familyKernels returns the reference (kernels) with one format family's
// oracles bound: bound is the family's *Err method (LowBitErr, KQuantsErr,
// LegacyErr, K456Err); the test fails when it reports an error.
func familyKernels(t testing.TB, bound func(*reference.Kernels) error) *reference.Kernels {
	t.Helper()
	k := kernels(t)
	if err := bound(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// checkDequantEveryF16Scale checks a dequantizer against its oracle on
// blocks of random bits that carry, in their leading f16 d, every one of
// the 65536 f16 values (NaNs and infinities included), 1024 blocks at a time.
func checkDequantEveryF16Scale(t *testing.T, r *rand.Rand, blockSize, qk int, ours, ref func([]byte, []float32)) {
	t.Helper()
	const nb = 1 << 16 / 64
	src := make([]byte, nb*blockSize)
	got, want := make([]float32, nb*qk), make([]float32, nb*qk)
	for h0 := 0; h0 < 1<<16; h0 += nb {
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		for b := range nb {
			binary.LittleEndian.PutUint16(src[b*blockSize:], uint16(h0+b))
		}
		ours(src, got)
		ref(src, want)
		for i := range got {
			if !bitsEq(got[i], want[i]) {
				t.Fatalf("block %d value %d: %#x, reference %#x", h0+i/qk, i%qk, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
}

// checkLowbitDot checks typ's dot product (Q1_0 or Q2_0) against its
// haswell oracle at every CPU level this machine has, bit for bit: 200
// random rows of each length from 1 to maxNB blocks, then 300 of each
// Bonsai-8B row length (4096, 12288). Weights are randLowbitBlocks,
// activations randActivations (quantized rows and raw bytes).
func checkLowbitDot(t *testing.T, r *rand.Rand, maxNB int, typ gguf.GGMLType, ref func(n int, x, y []byte) float32) {
	t.Helper()
	qk, blockSize := typ.BlockSize(), typ.TypeSize()
	levels := Levels()
	equal := make([]int, len(levels))
	total := 0
	check := func(nb int) {
		w := randLowbitBlocks(r, nb, blockSize)
		a := randActivations(r, qk/QK8_0*nb)
		want := ref(nb*qk, w, a)
		total++
		for i, l := range levels {
			if got := l.VecDot(typ)(w, a, nb); !bitsEq(got, want) {
				t.Fatalf("%s nb=%d: %g (%#x), reference %g (%#x)", l, nb, got, math.Float32bits(got), want, math.Float32bits(want))
			}
			equal[i]++
		}
	}
	for nb := 1; nb <= maxNB; nb++ {
		for range 200 {
			check(nb)
		}
	}
	for _, nb := range []int{4096 / qk, 12288 / qk} {
		for range 300 {
			check(nb)
		}
	}
	for i, l := range levels {
		t.Logf("%s %s: %d/%d rows equal to the reference", typ, l, equal[i], total)
	}
}

// randRepacked returns a Repack'ed rows x cols matrix of typ (Q1_0, Q2_0 or
// TQ2_0) with random code bits, Data kept; TQ2_0 blocks get d = 0x2000 (an
// f16 of 2^-11) so that random bits do not make every output NaN.
func randRepacked(tb testing.TB, r *rand.Rand, typ gguf.GGMLType, rows, cols int) *Matrix {
	tb.Helper()
	nb := cols / typ.BlockSize()
	w := randLowbitBlocks(r, rows*nb, typ.TypeSize())
	if typ == gguf.TQ2_0 {
		for i := range rows * nb {
			putHalfK(w[i*BlockTQ2_0Size+64:], 0x2000)
		}
	}
	m := &Matrix{Name: "w", Type: typ, Rows: rows, Cols: cols, Data: w}
	if _, err := m.Repack(); err != nil {
		tb.Fatal(err)
	}
	return m
}
