package fmath

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ebitengine/purego"
)

// TestLogfMatchesLibmBitForBit compares Logf with this machine's libm logf
// (the function the reference's ggml and libllama call) bit for bit, NaN
// payloads included: specials, every float32 the YaRN parameters of the
// models under test pass (scaling factors, n_ctx_orig/(2π·β), RoPE bases),
// and a strided sweep over the positive and negative bit patterns.
func TestLogfMatchesLibmBitForBit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("libm oracle: glibc is only on linux")
	}
	h, err := dlopenLibm()
	if err != nil {
		t.Skipf("libm oracle: cannot open libm.so.6: %v", err)
	}
	var logf func(float32) float32
	purego.RegisterLibFunc(&logf, h, "logf")

	var args []float32
	args = append(args, 0, float32(math.Copysign(0, -1)), 1, -1, 2, 0.5, math.SmallestNonzeroFloat32, 0x1p-126, 0x1.fffffcp-127,
		math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0x7f800001),
		math.Float32frombits(0xffc12345), 0x1.66p-1, 0x1.66p0)
	for _, f := range []float32{1.5, 2, 4, 8, 16, 32, 0.25} { // rope.scaling.factor and 1/freq_scale
		args = append(args, f, 1/(1/f))
	}
	for _, nCtxOrig := range []int{2048, 4096, 8192, 16384, 32768, 40960} {
		for _, beta := range []float32{32, 1} {
			args = append(args, float32(nCtxOrig)/(beta*2*float32(math.Pi)))
		}
	}
	args = append(args, 10000, 500000, 1000000, 5000000)
	const stride = 509
	for _, sign := range []uint32{0, 1 << 31} {
		for u := uint32(0); u <= 0x7f800000; u += stride {
			args = append(args, math.Float32frombits(sign|u))
		}
	}

	var bad atomic.Int64
	var mu sync.Mutex
	var first []string
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(args); i += workers {
				x := args[i]
				got, want := Logf(x), logf(x)
				if math.Float32bits(got) != math.Float32bits(want) {
					if bad.Add(1) <= 5 {
						mu.Lock()
						first = append(first, formatMismatch(x, got, want))
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, s := range first {
		t.Error(s)
	}
	if n := bad.Load(); n > 0 {
		t.Fatalf("%d of %d differ", n, len(args))
	}
	t.Logf("%d of %d identical", len(args), len(args))
}

func formatMismatch(x, got, want float32) string {
	return fmt.Sprintf("Logf(%g = %#x) = %#x, libm %#x", x, math.Float32bits(x), math.Float32bits(got), math.Float32bits(want))
}
