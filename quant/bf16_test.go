package quant

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// TestFP32ToBF16Cases: ggml's rounding rule case by case (no reference
// needed): ties to even, carries into the exponent and to Inf, subnormals,
// and NaNs made quiet with their top bits kept.
func TestFP32ToBF16Cases(t *testing.T) {
	for _, c := range []struct {
		name string
		in   uint32
		want uint16
	}{
		{"one", 0x3f800000, 0x3f80},
		{"below half ulp", 0x3f807fff, 0x3f80},
		{"tie to even (down)", 0x3f808000, 0x3f80},
		{"tie to even (up)", 0x3f818000, 0x3f82},
		{"above half ulp", 0x3f808001, 0x3f81},
		{"carry into exponent", 0x3fffffff, 0x4000},
		{"negative tie", 0xbf818000, 0xbf82},
		{"max finite rounds to inf", 0x7f7fffff, 0x7f80},
		{"largest below inf boundary", 0x7f7f7fff, 0x7f7f},
		{"tie at the inf boundary", 0x7f7f8000, 0x7f80},
		{"+inf", 0x7f800000, 0x7f80},
		{"-inf", 0xff800000, 0xff80},
		{"+0", 0, 0},
		{"-0", 0x80000000, 0x8000},
		{"subnormal tie to even (zero)", 0x00008000, 0x0000},
		{"subnormal tie to even (up)", 0x00018000, 0x0002},
		{"subnormal rounds into normal", 0x007fffff, 0x0080},
		{"smallest subnormal", 0x00000001, 0x0000},
		{"signalling NaN quieted", 0x7f800001, 0x7fc0},
		{"NaN payload kept", 0x7fa5ffff, 0x7fe5},
		{"negative NaN", 0xff812345, 0xffc1},
		{"all-ones NaN", 0xffffffff, 0xffff},
	} {
		if got := FP32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("%s: FP32ToBF16(%#08x) = %#04x, want %#04x", c.name, c.in, got, c.want)
		}
	}
}

func TestBF16ToFP32AllValuesMatchReference(t *testing.T) {
	k := legacyKernels(t)
	h := make([]uint16, 1<<16)
	for i := range h {
		h[i] = uint16(i)
	}
	got, base, cpu := make([]float32, len(h)), make([]float32, len(h)), make([]float32, len(h))
	BF16ToFP32Row(h, got)
	k.BF16ToFP32Row(h, base)
	k.CPUBF16ToFP32(h, cpu)
	for i := range h {
		if math.Float32bits(got[i]) != math.Float32bits(base[i]) || math.Float32bits(got[i]) != math.Float32bits(cpu[i]) {
			t.Fatalf("bf16 %#04x: %#08x, ggml_bf16_to_fp32_row %#08x, ggml_cpu_bf16_to_fp32 %#08x", i, math.Float32bits(got[i]), math.Float32bits(base[i]), math.Float32bits(cpu[i]))
		}
		if v := BF16ToFP32(uint16(i)); math.Float32bits(v) != math.Float32bits(got[i]) {
			t.Fatalf("BF16ToFP32(%#04x) = %#08x, row %#08x", i, math.Float32bits(v), math.Float32bits(got[i]))
		}
	}
	t.Logf("bf16 → f32: %d/%d values bit-identical (base row, haswell row)", len(h), len(h))
}

// TestFP32ToBF16MatchesReference: every rounding case — each of the 65,536
// upper halves with the low halves 0x0000, 0x0001, 0x7fff (just below the
// tie), 0x8000 (the tie), 0x8001 and 0xffff — then a strided sweep of all
// 2^32 bit patterns (stride 61 by default; QUANT_BF16_STRIDE=1 checks every
// float32, which takes minutes), through ggml_cpu_fp32_to_bf16 (haswell,
// mul_mat's converter), ggml_fp32_to_bf16_row and ggml_fp32_to_bf16_row_ref
// (libggml-base.so).
func TestFP32ToBF16MatchesReference(t *testing.T) {
	k := legacyKernels(t)
	stride := uint64(61)
	if s := os.Getenv("QUANT_BF16_STRIDE"); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil || v == 0 {
			t.Fatalf("QUANT_BF16_STRIDE=%q: want a positive integer", s)
		}
		stride = v
	}
	const chunk = 1 << 20
	x := make([]float32, 0, chunk)
	got, want := make([]uint16, chunk), make([]uint16, chunk)
	checked := 0
	flush := func() {
		FP32ToBF16Row(x, got)
		for _, ref := range []struct {
			name string
			f    func([]float32, []uint16)
		}{{"ggml_cpu_fp32_to_bf16", k.CPUFP32ToBF16}, {"ggml_fp32_to_bf16_row", k.FP32ToBF16Row}, {"ggml_fp32_to_bf16_row_ref", k.FP32ToBF16RowRef}} {
			ref.f(x, want)
			for i := range x {
				if got[i] != want[i] {
					t.Fatalf("f32 %#08x: %#04x, %s %#04x", math.Float32bits(x[i]), got[i], ref.name, want[i])
				}
			}
		}
		checked += len(x)
		x = x[:0]
	}
	add := func(u uint32) {
		x = append(x, math.Float32frombits(u))
		if len(x) == chunk {
			flush()
		}
	}
	for hi := range uint32(1 << 16) {
		for _, lo := range []uint32{0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff} {
			add(hi<<16 | lo)
		}
	}
	for u := uint64(0); u < 1<<32; u += stride {
		add(uint32(u))
	}
	flush()
	t.Logf("f32 → bf16: %d/%d values (every rounding case, then stride %d) identical to ggml_cpu_fp32_to_bf16, ggml_fp32_to_bf16_row and _row_ref", checked, checked, stride)
}

// bf16TestRow is randRow rounded to bf16, or (every 5th trial) values whose
// products underflow (so lanes can end at -0) or overflow.
func bf16TestRow(r *rand.Rand, trial, n int) []uint16 {
	x := randRow(r, n)
	switch trial % 5 {
	case 3:
		for i := range x {
			x[i] *= float32(math.Pow(2, float64(-60-r.IntN(30))))
		}
	case 4:
		for i := range x {
			x[i] *= float32(math.Pow(2, float64(50+r.IntN(20))))
		}
	}
	h := make([]uint16, n)
	FP32ToBF16Row(x, h)
	return h
}

// TestVecDotBF16MatchesReference: every length from 1 to 300 (all leftover
// cases of the 32-wide loop), 20 rows each, plus long rows, bit for bit with
// the haswell ggml_vec_dot_bf16.
func TestVecDotBF16MatchesReference(t *testing.T) {
	k := legacyKernels(t)
	r := rand.New(rand.NewPCG(31, 32))
	dots := 0
	lengths := make([]int, 0, 310)
	for n := 1; n <= 300; n++ {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 4096, 4097, 4127, 11008, 12288)
	for _, n := range lengths {
		for trial := range 20 {
			x, y := bf16TestRow(r, trial, n), bf16TestRow(r, trial/2, n)
			if got, want := VecDotBF16(x, y), k.VecDotBF16(x, y); !bitsEq(got, want) {
				t.Fatalf("n=%d trial %d: %g (%#x), reference %g (%#x)", n, trial, got, math.Float32bits(got), want, math.Float32bits(want))
			}
			dots++
		}
	}
	t.Logf("ggml_vec_dot_bf16: %d/%d dots bit-identical", dots, dots)
}
