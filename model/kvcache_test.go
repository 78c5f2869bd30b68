package model

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/bankml/bankml/gguf"
)

// TestFWHTIsTheHadamardProduct: fwht equals the product with
// ggml_gen_hadamard's Sylvester matrix (entries ±1/sqrt(n)) computed in
// float64, to float32 rounding (a spec check of the butterflies' order and
// signs; the bits are the oracle's, TestQuantizedKVLogitsMatchReference).
func TestFWHTIsTheHadamardProduct(t *testing.T) {
	for _, n := range []int{64, 128, 256} {
		h := make([]float64, n*n)
		h[0] = 1 / math.Sqrt(float64(n))
		for s := 1; s < n; s *= 2 {
			for i := range s {
				for j := range s {
					v := h[i*n+j]
					h[(i+s)*n+j], h[i*n+j+s], h[(i+s)*n+j+s] = v, v, -v
				}
			}
		}
		x := make([]float32, 2*n)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)*0.37)) * 3
		}
		got := append([]float32(nil), x...)
		fwht(got, n)
		for r := range 2 {
			for i := range n {
				var want float64
				for k := range n {
					want += h[k*n+i] * float64(x[r*n+k])
				}
				if d := math.Abs(float64(got[r*n+i]) - want); d > 1e-5*math.Max(1, math.Abs(want)) {
					t.Fatalf("n=%d row %d [%d] = %g, Hadamard product %g", n, r, i, got[r*n+i], want)
				}
			}
		}
	}
}

// TestQuantizedKVStateRoundTrip: a slot file of a quantized cache restores
// the cells (the next logits equal those of the context that wrote it), and
// a context of other cache types refuses it, naming both.
func TestQuantizedKVStateRoundTrip(t *testing.T) {
	m := loadModel(t, synthModel{arch: "qwen3", preset: "tiny", typ: gguf.Q8_0, yarn: true, seed: 9}.path(t))
	types := CacheTypes{K: gguf.Q8_0, V: gguf.Q4_0}
	c, err := m.NewContextTypes(512, 1, types)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	toks := make([]int32, 270)
	for i := range toks {
		toks[i] = int32(100 + i*37%5000)
	}
	if _, err := c.DecodeOutputs(toks, 1); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := c.WriteState(&buf, "m"); err != nil {
		t.Fatal(err)
	}
	want, err := c.Decode([]int32{7})
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.NewContextTypes(512, 1, types)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.ReadState(bytes.NewReader(buf.Bytes()), "m"); err != nil {
		t.Fatal(err)
	}
	got, err := r.Decode([]int32{7})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("after restore logit %d = %g, before %g", i, got[i], want[i])
		}
	}
	for _, other := range []CacheTypes{{}, {K: gguf.Q8_0, V: gguf.Q8_0}, {K: gguf.Q4_0, V: gguf.Q4_0}} {
		o, err := m.NewContextTypes(512, 1, other)
		if err != nil {
			t.Fatal(err)
		}
		_, err = o.ReadState(bytes.NewReader(buf.Bytes()), "m")
		if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "cache types K q8_0, V q4_0") {
			t.Errorf("a %v context read the file: %v", other.norm(), err)
		}
		if o.NPast() != 0 {
			t.Errorf("a refused file left %d cells", o.NPast())
		}
		o.Close()
	}
}
