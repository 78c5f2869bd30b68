package fmath

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/ebitengine/purego"
)

// libm opens this machine's glibc libm: the very library the reference's ggml
// calls at run time, so it is the oracle for these functions.
type libm struct {
	expf func(float32) float32
	cosf func(float32) float32
	sinf func(float32) float32
	// sincosf(x, &sin, &cos): glibc's void sincosf(float, float *, float *).
	sincosf func(float32, *float32, *float32)
	powf    func(float32, float32) float32
	fmaf    func(float32, float32, float32) float32
	logf    func(float32) float32
	pow     func(float64, float64) float64
	log     func(float64) float64
	exp     func(float64) float64
}

func openLibm(t *testing.T) *libm {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("libm oracle: glibc is only on linux")
	}
	h, err := dlopenLibm()
	if err != nil {
		t.Skipf("libm oracle: cannot open libm.so.6: %v", err)
	}
	var l libm
	purego.RegisterLibFunc(&l.expf, h, "expf")
	purego.RegisterLibFunc(&l.cosf, h, "cosf")
	purego.RegisterLibFunc(&l.sinf, h, "sinf")
	purego.RegisterLibFunc(&l.sincosf, h, "sincosf")
	purego.RegisterLibFunc(&l.powf, h, "powf")
	purego.RegisterLibFunc(&l.fmaf, h, "fmaf")
	purego.RegisterLibFunc(&l.logf, h, "logf")
	purego.RegisterLibFunc(&l.pow, h, "pow")
	purego.RegisterLibFunc(&l.log, h, "log")
	purego.RegisterLibFunc(&l.exp, h, "exp")
	return &l
}

func sameBits(a, b float32) bool {
	if a != a && b != b {
		return true // both NaN
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

func TestExpfMatchesLibmBitForBit(t *testing.T) {
	l := openLibm(t)
	specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 88, 88.7228, 88.72284, 89, -87, -103, -103.3, -103.97, -104, -150,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32}
	for _, x := range specials {
		if got, want := Expf(x), l.expf(x); !sameBits(got, want) {
			t.Errorf("Expf(%g) = %g (%#x), libm %g (%#x)", x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	// Every 211th float32 bit pattern of both signs below |x| = 110: the softmax
	// and flash-attention domain and past both cut-offs.
	n, bad := 0, 0
	for _, sign := range []uint32{0, 1 << 31} {
		for u := uint32(0); u <= 0x42dc0000; u += 211 {
			x := math.Float32frombits(sign | u)
			n++
			if got, want := Expf(x), l.expf(x); !sameBits(got, want) {
				if bad++; bad <= 5 {
					t.Errorf("Expf(%g) = %#x, libm %#x", x, math.Float32bits(got), math.Float32bits(want))
				}
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d differ", bad, n)
	}
	t.Logf("%d of %d identical", n, n)
}

func TestFMA32MatchesHardwareFmaf(t *testing.T) {
	l := openLibm(t)
	r := rand.New(rand.NewPCG(1, 2))
	rnd := func() float32 {
		switch r.IntN(4) {
		case 0:
			return math.Float32frombits(r.Uint32()) // any bit pattern
		default:
			return float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-20)))
		}
	}
	for i := range 2_000_000 {
		a, b, c := rnd(), rnd(), rnd()
		switch i % 3 {
		case 0: // near-cancellation
			c = -float32(float64(a) * float64(b))
		case 1: // a*b near half an ulp of c, its low bits far below c's:
			// the sum rounds in float64 onto a float32 midpoint (double rounding).
			c = float32(r.NormFloat64())
			half := math.Float32frombits(math.Float32bits(c)&0xff800000) * 0x1p-24
			a = half * (1 + float32(r.IntN(1<<10))*0x1p-23)
			b = 1 + float32(r.IntN(1<<10)-512)*0x1p-23
		}
		if got, want := FMA32(a, b, c), l.fmaf(a, b, c); !sameBits(got, want) {
			t.Fatalf("FMA32(%g, %g, %g) = %#x, fmaf %#x", a, b, c, math.Float32bits(got), math.Float32bits(want))
		}
	}
}

// TestTrigAgainstLibm checks Sinf, Cosf and Sincosf bit for bit (NaN payloads
// included) against libm's sinf, cosf and sincosf on
//
//	(a) the RoPE angle grid ggml builds (theta = p * theta_scale^i, float32
//	    products, for positions below 32768 and the head sizes and bases of the
//	    models under test), checking Powf on the theta scales on the way;
//	(b) a strided sweep over the float32 bit patterns of both signs up to
//	    +Inf (stride trigSweepStride, or $FMATH_TRIG_STRIDE: 1 is exhaustive),
//	    plus specials: NaNs, infinities, zeros, the path thresholds and the
//	    float32 neighbours of multiples of π/2, where the reduction cancels;
//	(c) a million random arguments (any bit pattern, |x| < 1000, RoPE range).
//
// libm calls through purego cost about half a microsecond, so the work is
// spread over GOMAXPROCS goroutines and the default stride keeps the test
// within a few seconds.
func TestTrigAgainstLibm(t *testing.T) {
	l := openLibm(t)

	// (a) RoPE grid.
	var grid []float32
	for _, base := range []float32{10000, 1000000} {
		for _, nDims := range []int{4, 8, 64, 128} {
			scale := Powf(base, -2.0/float32(nDims))
			if want := l.powf(base, -2.0/float32(nDims)); !sameBits(scale, want) {
				t.Fatalf("Powf(%g, %g) = %#x, libm %#x", base, -2.0/float32(nDims), math.Float32bits(scale), math.Float32bits(want))
			}
			for p := 0; p < 32768; p += 1 + p/1024 {
				theta := float32(p)
				for i := 0; i < nDims; i += 2 {
					grid = append(grid, theta)
					theta *= scale
				}
			}
		}
	}
	checkTrig(t, l, "RoPE grid", len(grid), func(i int) float32 { return grid[i] })

	// (b) Strided sweep of bit patterns, then specials.
	stride := uint32(trigSweepStride)
	if s := os.Getenv("FMATH_TRIG_STRIDE"); s != "" {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil || v == 0 {
			t.Fatalf("FMATH_TRIG_STRIDE=%q: want a positive integer", s)
		}
		stride = uint32(v)
	}
	perSign := int(0x7f800000/stride) + 1
	checkTrig(t, l, fmt.Sprintf("sweep, stride %d", stride), 2*perSign, func(i int) float32 {
		return math.Float32frombits(uint32(i/perSign)<<31 | uint32(i%perSign)*stride)
	})
	specials := trigSpecials()
	checkTrig(t, l, "specials", len(specials), func(i int) float32 { return specials[i] })

	// (c) Random arguments, drawn up front so the draw does not depend on
	// scheduling.
	r := rand.New(rand.NewPCG(3, 4))
	random := make([]float32, 1_000_000)
	for i := range random {
		switch i % 3 {
		case 0:
			random[i] = math.Float32frombits(r.Uint32())
		case 1:
			random[i] = float32(r.Float64()*2000 - 1000)
		default:
			random[i] = float32(r.Float64() * 32768)
		}
	}
	checkTrig(t, l, "random", len(random), func(i int) float32 { return random[i] })
}

// trigSweepStride is the default stride of the bit-pattern sweep in
// TestTrigAgainstLibm (a prime, so the sweep visits every residue of the
// mantissa bits).
const trigSweepStride = 7919

// trigSpecials lists arguments at the edges of glibc's sinf/cosf paths.
func trigSpecials() []float32 {
	bits := []uint32{
		0x7f800000, 0x7f800001, 0x7fa00000, 0x7fc00000, 0x7fc00001, 0x7fffffff, // +Inf, sNaN, qNaN
		0x00000000, 0x00000001, 0x007fffff, 0x00800000, 0x00800001, // zero, subnormals, 2^-126
		0x397fffff, 0x39800000, 0x39800001, // 2^-12: the tiny cut-off
		0x3f3fffff, 0x3f400000, 0x3f490fda, 0x3f490fdb, 0x3f490fdc, // 0.75 and π/4
		0x42efffff, 0x42f00000, 0x42f00001, // 120: fast to large reduction
		0x7f7fffff, 0x7f000000, 0x4b000000, 0x4b800000, 0x5f000000, // large
	}
	var xs []float32
	for _, b := range bits {
		xs = append(xs, math.Float32frombits(b), math.Float32frombits(b|1<<31))
	}
	// Float32 neighbours of k·π/2, where x - n·π/2 cancels most: k below 4096
	// and k = 2^j·(odd) up to the float32 range.
	add := func(v float64) {
		f := float32(v)
		if math.IsInf(float64(f), 0) {
			return
		}
		b := math.Float32bits(f)
		for _, c := range []uint32{b - 1, b, b + 1} {
			xs = append(xs, math.Float32frombits(c), math.Float32frombits(c|1<<31))
		}
	}
	for k := 1; k < 4096; k++ {
		add(float64(k) * math.Pi / 2)
	}
	for j := 12; j < 128; j++ {
		for _, odd := range []float64{1, 3, 5, 7, 9, 11, 13} {
			add(math.Ldexp(odd, j) * math.Pi / 2)
		}
	}
	return xs
}

// checkTrig compares Sinf, Cosf and Sincosf with libm's sinf, cosf and
// sincosf on arg(0..n-1), split across GOMAXPROCS goroutines, requiring
// identical bits (NaN payloads included).
func checkTrig(t *testing.T, l *libm, what string, n int, arg func(i int) float32) {
	t.Helper()
	workers := runtime.GOMAXPROCS(0)
	var (
		mu   sync.Mutex
		bad  int
		msgs []string
		wg   sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			nbad := 0
			var local []string
			report := func(format string, a ...any) {
				if nbad++; len(local) < 5 {
					local = append(local, fmt.Sprintf(format, a...))
				}
			}
			for i := w; i < n; i += workers {
				x := arg(i)
				xb := math.Float32bits(x)
				if got, want := Sinf(x), l.sinf(x); math.Float32bits(got) != math.Float32bits(want) {
					report("Sinf(%g [%#08x]) = %#08x, libm sinf %#08x", x, xb, math.Float32bits(got), math.Float32bits(want))
				}
				if got, want := Cosf(x), l.cosf(x); math.Float32bits(got) != math.Float32bits(want) {
					report("Cosf(%g [%#08x]) = %#08x, libm cosf %#08x", x, xb, math.Float32bits(got), math.Float32bits(want))
				}
				var ws, wc float32
				l.sincosf(x, &ws, &wc)
				if gs, gc := Sincosf(x); math.Float32bits(gs) != math.Float32bits(ws) || math.Float32bits(gc) != math.Float32bits(wc) {
					report("Sincosf(%g [%#08x]) = %#08x, %#08x, libm sincosf %#08x, %#08x", x, xb,
						math.Float32bits(gs), math.Float32bits(gc), math.Float32bits(ws), math.Float32bits(wc))
				}
			}
			mu.Lock()
			bad += nbad
			msgs = append(msgs, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, m := range msgs {
		t.Error(m)
	}
	if bad > 0 {
		t.Errorf("%s: %d mismatches among %d arguments", what, bad, n)
		return
	}
	t.Logf("%s: %d of %d arguments identical (sinf, cosf, sincosf)", what, n, n)
}

// TestSincosfConstants checks the reduction constants and the 4/π table of
// trig.go, derived from π, against the values glibc's s_sincosf.h and
// s_sincosf_data.c spell out (which equal this machine's libm .rodata).
func TestSincosfConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"hpi_inv", sincosfHpiInv, 0x1.45F306DC9C883p+23},
		{"hpi", sincosfHpi, 0x1.921FB54442D18p0},
		{"pi63", sincosfPi63, 0x1.921FB54442D18p-62},
	} {
		if c.got != c.want {
			t.Errorf("%s = %x, glibc %x", c.name, c.got, c.want)
		}
	}
	// hpi_inv again, from the π of twoOverPiFixed rather than math.Pi.
	f := new(big.Float).SetInt(twoOverPiFixed(128))
	f.SetMantExp(f, 24-128)
	if v, _ := f.Float64(); v != sincosfHpiInv {
		t.Errorf("2/π·2^24 from Machin's π = %x, hpi_inv %x", v, sincosfHpiInv)
	}
	glibc := [24]uint32{
		0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e,
		0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
		0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1,
		0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
		0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599,
		0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
	}
	if invPio4 != glibc {
		t.Errorf("invPio4 = %#x\nglibc __inv_pio4 = %#x", invPio4, glibc)
	}
}
