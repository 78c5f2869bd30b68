package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFP32ToFP16RowEveryLevel: Level.FP32ToFP16Row writes FP32ToFP16's bits
// (oracle-tested against the reference in TestFP32ToFP16MatchesReference)
// at every level this CPU has, NaNs included (the rule FP32ToFP16 states is
// F16C's: this checks it against vcvtps2ph itself), over float32 bit
// patterns strided across all 2^32, every f16 value's halfway points, and
// rows of every length 0..40 (the vector loop's tail).
func TestFP32ToFP16RowEveryLevel(t *testing.T) {
	var x []float32
	for u := uint64(0); u < 1<<32; u += 4099 {
		x = append(x, math.Float32frombits(uint32(u)))
	}
	for h := range 1 << 15 {
		f, next := FP16ToFP32(uint16(h)), FP16ToFP32(uint16(h+1))
		mid := float32((float64(f) + float64(next)) / 2)
		for _, v := range []float32{f, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			x = append(x, v, -v)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	for _, l := range Levels() {
		dst := make([]uint16, len(x)+1)
		n := 0
		for lo := 0; lo < len(x); {
			hi := min(len(x), lo+r.IntN(41))
			dst[hi] = 0xabcd // the value past the row stays
			l.FP32ToFP16Row(x[lo:hi], dst[lo:])
			if dst[hi] != 0xabcd && hi < len(x) {
				t.Fatalf("%s: row [%d,%d) wrote past its end", l, lo, hi)
			}
			for i := lo; i < hi; i++ {
				if want := FP32ToFP16(x[i]); dst[i] != want {
					t.Fatalf("%s: FP32ToFP16Row(%#x) = %#04x, FP32ToFP16 %#04x", l, math.Float32bits(x[i]), dst[i], want)
				}
				n++
			}
			lo = hi
		}
		t.Logf("%s: %d of %d values equal", l, n, len(x))
	}
}
