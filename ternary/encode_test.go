package ternary

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
	"github.com/bankml/bankml/internal/testdata"
	"github.com/bankml/bankml/quant"
)

// refKernels returns the reference's kernels with the low-bit and K-quant families bound.
func refKernels(t testing.TB) *reference.Kernels {
	t.Helper()
	k, err := reference.LoadKernels()
	if err != nil {
		testdata.Absent(t, "the reference is not installed (scripts/install-reference.sh): %v", err)
	}
	for _, bound := range []func() error{k.LowBitErr, k.KQuantsErr} {
		if err := bound(); err != nil {
			t.Fatal(err)
		}
	}
	return k
}

// realRows returns every tensor of the shared stories260K files (F32 and the reference's F16 conversion) as f32
// values, cut to whole 256-weight blocks.
func realRows(t testing.TB) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for _, rel := range []string{"stories260K.gguf", "derived/stories260K-F16.gguf"} {
		f, err := gguf.Open(testdata.Model(t, rel))
		if err != nil {
			t.Fatal(err)
		}
		for i := range f.Tensors {
			ti := &f.Tensors[i]
			if ti.Type != gguf.F32 && ti.Type != gguf.F16 {
				continue
			}
			m := quant.Matrix{Name: ti.Name, Type: ti.Type, Cols: int(ti.Ne[0]), Rows: int(ti.NElements() / ti.Ne[0]), Data: f.TensorData(ti)}
			x := make([]float32, m.Rows*m.Cols)
			for r := range m.Rows {
				m.Row(r, x[r*m.Cols:(r+1)*m.Cols])
			}
			if n := len(x) / 256 * 256; n > 0 {
				out[rel+":"+ti.Name] = x[:n]
			}
		}
		f.Close()
	}
	return out
}

// f16Row returns n weights that are f16 values (as an F16 model holds them): mostly normal weights of scale about
// 0.02, with outliers, subnormals, signed zeros and, when nonFinite is set, NaNs (with payloads), ±inf and blocks
// whose last weight is NaN (the case ggml's MAX keeps).
func f16Row(r *rand.Rand, n int, nonFinite bool) []float32 {
	x := make([]float32, n)
	for i := range x {
		v := float32(r.NormFloat64() * 0.02)
		switch r.IntN(200) {
		case 0, 1:
			v *= 50 // outlier
		case 2:
			v = quant.FP16ToFP32(uint16(r.IntN(1024)) | uint16(r.IntN(2))<<15) // subnormal or zero
		case 3:
			v = float32(math.Copysign(0, -1))
		case 4, 5:
			if nonFinite {
				v = quant.FP16ToFP32(0x7c00 | uint16(1+r.IntN(1023)) | uint16(r.IntN(2))<<15) // NaN with payload
			}
		case 6:
			if nonFinite {
				v = float32(math.Inf(1 - 2*r.IntN(2)))
			}
		}
		x[i] = quant.FP16ToFP32(quant.FP32ToFP16(v))
	}
	if nonFinite && r.IntN(3) == 0 {
		x[n-1] = float32(math.NaN())
	}
	return x
}

type refEncoder struct {
	f   Format
	our func([]float32, []byte) error
	ref func(k *reference.Kernels) func([]float32, []byte)
}

var refEncoders = []refEncoder{
	{FormatTQ2_0, EncodeTQ2_0, func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowTQ2_0Ref }},
	{FormatTQ1_0, EncodeTQ1_0, func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowTQ1_0Ref }},
	{FormatQ2_0, EncodeQ2_0, func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowQ2_0Ref }},
}

// TestEncodersMatchTheReference: TQ2_0, TQ1_0 and Q2_0 encodings are byte-identical to the reference's
// quantize_row_*_ref on every tensor of stories260K (F32 and F16) and on synthetic F16 rows with outliers, with and
// without NaN/±inf.
func TestEncodersMatchTheReference(t *testing.T) {
	k := refKernels(t)
	rows := realRows(t)
	r := rand.New(rand.NewPCG(9, 1))
	var synthetic [][]float32
	for i := range 600 {
		synthetic = append(synthetic, f16Row(r, 256*(1+r.IntN(8)), i%2 == 1))
	}
	for _, e := range refEncoders {
		ref := e.ref(k)
		check := func(what string, x []float32) bool {
			got, want := make([]byte, e.f.RowBytes(len(x))), make([]byte, e.f.RowBytes(len(x)))
			if err := e.our(x, got); err != nil {
				t.Fatal(err)
			}
			ref(x, want)
			if !bytes.Equal(got, want) {
				for b := 0; b < len(got); b += e.f.BlockBytes {
					if !bytes.Equal(got[b:b+e.f.BlockBytes], want[b:b+e.f.BlockBytes]) {
						blk := b / e.f.BlockBytes
						t.Errorf("%s %s: block %d differs\n x %v\n got %x\nwant %x", e.f.Type, what, blk,
							x[blk*e.f.Block:(blk+1)*e.f.Block], got[b:b+e.f.BlockBytes], want[b:b+e.f.BlockBytes])
						break
					}
				}
				return false
			}
			return true
		}
		real, synth := 0, 0
		for name, x := range rows {
			if check(name, x) {
				real++
			}
		}
		for i, x := range synthetic {
			if check("synthetic row "+string(rune('0'+i%10)), x) {
				synth++
			}
		}
		t.Logf("%s: %d of %d stories260K tensors and %d of %d synthetic F16 rows (half with NaN/±inf) byte-identical to quantize_row_%s_ref",
			e.f.Type, real, len(rows), synth, len(synthetic), e.f.Type)
	}
}

// TestEncodersRefuseBadLengths: a row that is not whole blocks, or a destination of the wrong size, is an error
// naming the lengths, and nothing is written.
func TestEncodersRefuseBadLengths(t *testing.T) {
	for _, e := range refEncoders {
		dst := make([]byte, e.f.BlockBytes)
		if err := e.our(make([]float32, e.f.Block+1), dst); err == nil {
			t.Errorf("%s: partial block accepted", e.f.Type)
		}
		if err := e.our(make([]float32, 2*e.f.Block), dst); err == nil {
			t.Errorf("%s: short destination accepted", e.f.Type)
		}
		if !bytes.Equal(dst, make([]byte, len(dst))) {
			t.Errorf("%s: wrote on error", e.f.Type)
		}
	}
	if err := Encode(gguf.Q4_0, nil, nil); err == nil {
		t.Error("Encode accepted Q4_0")
	}
}

func half(b []byte, off int) uint16 { return binary.LittleEndian.Uint16(b[off:]) }

// TestEncodersOnNonFiniteWeights pins, from the C source of ggml-quants.c, what each ggml encoder makes of NaN and
// ±inf (the oracle test above shows the reference agrees on random rows; these are the cases spelled out).
func TestEncodersOnNonFiniteWeights(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	block := func(n int, f func(i int) float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = f(i)
		}
		return x
	}
	// TQ2_0, NaN in the last place: MAX(amax, NaN) is NaN, so d = NaN (f16 0x7e00) and every code is 1 (trit 0).
	x := block(256, func(i int) float32 { return float32(i%3) - 1 })
	x[255] = nan
	out := make([]byte, 66)
	if err := EncodeTQ2_0(x, out); err != nil {
		t.Fatal(err)
	}
	if d := half(out, 64); d != 0x7e00 {
		t.Errorf("TQ2_0 trailing NaN: d %#04x, want 0x7e00 (the software conversion's NaN)", d)
	}
	for i, q := range out[:64] {
		if q != 0x55 {
			t.Fatalf("TQ2_0 trailing NaN: qs[%d] = %#02x, want 0x55 (all codes 1)", i, q)
		}
	}
	// TQ2_0, a NaN first: forgotten by the next MAX, d = 1 from the rest; the NaN itself gets code 1.
	x = block(256, func(i int) float32 { return 1 })
	x[0] = nan
	if err := EncodeTQ2_0(x, out); err != nil {
		t.Fatal(err)
	}
	if d := half(out, 64); d != 0x3c00 {
		t.Errorf("TQ2_0 leading NaN: d %#04x, want 0x3c00 (1.0)", d)
	}
	if out[0] != 0xa9 || out[1] != 0xaa { // weight 0: code 1; weights 32, 64, 96 and all others: code 2
		t.Errorf("TQ2_0 leading NaN: qs %#02x %#02x, want 0xa9 0xaa", out[0], out[1])
	}
	// TQ2_0, an inf: d = inf, id = 0, every code 1 (finite·0 = 0, inf·0 = NaN: both code 1).
	x = block(256, func(i int) float32 { return 0.5 })
	x[3] = -inf
	if err := EncodeTQ2_0(x, out); err != nil {
		t.Fatal(err)
	}
	if d := half(out, 64); d != 0x7c00 {
		t.Errorf("TQ2_0 with -inf: d %#04x, want 0x7c00 (+inf)", d)
	}
	if !bytes.Equal(out[:64], bytes.Repeat([]byte{0x55}, 64)) {
		t.Errorf("TQ2_0 with -inf: qs %x, want all 0x55", out[:64])
	}
	// Q2_0: NaN is skipped by amax (a > amax) and gets code 0; an inf makes d = inf, the finite weights code 1 and
	// the inf itself code 0.
	q := make([]byte, 18)
	x = block(64, func(i int) float32 { return 2 })
	x[1] = nan
	if err := EncodeQ2_0(x, q); err != nil {
		t.Fatal(err)
	}
	if half(q, 0) != 0x4000 || q[2] != 0xa2 || q[3] != 0xaa { // d = 2; weight 1: code 0, others code 2
		t.Errorf("Q2_0 with NaN: %x, want d 0x4000 then a2 aa ...", q)
	}
	x = block(64, func(i int) float32 { return 2 })
	x[4] = inf
	if err := EncodeQ2_0(x, q); err != nil {
		t.Fatal(err)
	}
	if half(q, 0) != 0x7c00 || q[2] != 0x55 || q[3] != 0x54 {
		t.Errorf("Q2_0 with inf: %x, want d 0x7c00 then 55 54 55 ...", q)
	}
	// TQ1_0, trailing NaN: every trit 1, so each qs byte is ceil(121·256/243) = 128 and each qh byte
	// ceil(40·3·256/243) = 127.
	x = block(256, func(i int) float32 { return float32(i%3) - 1 })
	x[255] = nan
	t1 := make([]byte, 54)
	if err := EncodeTQ1_0(x, t1); err != nil {
		t.Fatal(err)
	}
	for i := range 48 {
		if t1[i] != 128 {
			t.Fatalf("TQ1_0 trailing NaN: qs[%d] = %d, want 128", i, t1[i])
		}
	}
	for i := 48; i < 52; i++ {
		if t1[i] != 127 {
			t.Fatalf("TQ1_0 trailing NaN: qh[%d] = %d, want 127", i-48, t1[i])
		}
	}
}

// TestPlanesDequantizeInTheReference: every PTQTP plane is a valid ggml tensor of its type: the reference's
// dequantize_row_tq2_0 / dequantize_row_q2_0 of each plane, summed in plane order, is the reconstruction the stats
// measure, bit for bit, for K = 1, 2, 3 and both group sizes, on 8×1024 of stories260K's weights (from
// blk.0.ffn_gate.weight) with a NaN and an inf planted.
func TestPlanesDequantizeInTheReference(t *testing.T) {
	k := refKernels(t)
	rows := realRows(t)
	x := rows["stories260K.gguf:blk.0.ffn_gate.weight"]
	if len(x) < 8*1024 {
		t.Fatalf("stories260K blk.0.ffn_gate.weight: %d weights", len(x))
	}
	w := append([]float32(nil), x[:8*1024]...)
	w[17], w[300] = float32(math.NaN()), float32(math.Inf(1))
	checked := 0
	for _, g := range []int{256, 64} {
		for planes := 1; planes <= 3; planes++ {
			opt := DefaultOptions()
			opt.Planes, opt.GroupSize = planes, g
			s, _, err := QuantizeMatrix(w, 8, 1024, opt, nil)
			if err != nil {
				t.Fatal(err)
			}
			ref := k.DequantizeRowTQ2_0
			if s.Format.Type == gguf.Q2_0 {
				ref = k.DequantizeRowQ2_0
			}
			want := make([]float32, len(w))
			plane := make([]float32, len(w))
			for p, data := range s.Planes {
				ref(data, plane)
				for i, v := range plane {
					if p == 0 {
						want[i] = v
					} else {
						want[i] += v
					}
				}
			}
			got := make([]float32, len(w))
			if err := s.Reconstruct(got); err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s K=%d: weight %d: %g, the reference's planes give %g", s.Format.Type, planes, i, got[i], want[i])
				}
			}
			checked++
		}
	}
	t.Logf("%d of 6 plane sets (TQ2_0 and Q2_0, K=1..3) dequantize in the reference to the reconstruction, bit for bit", checked)
}

// TestScaledQ2_0HoldsTheScaledTQ2_0Trits: EncodeQ2_0Scaled writes the trits of EncodeTQ2_0Scaled (NaN and ±inf
// included) with the same d in every block, so both dequantize to the same matrix; bad scales and lengths are
// refused.
func TestScaledQ2_0HoldsTheScaledTQ2_0Trits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	w := make([]float32, 512)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	w[3], w[100], w[300] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
	d := AbsmeanScale(w)
	tq, q2 := make([]byte, FormatTQ2_0.RowBytes(512)), make([]byte, FormatQ2_0.RowBytes(512))
	if err := EncodeTQ2_0Scaled(w, d, tq); err != nil {
		t.Fatal(err)
	}
	if err := EncodeQ2_0Scaled(w, d, q2); err != nil {
		t.Fatal(err)
	}
	a, b := make([]float32, 512), make([]float32, 512)
	quant.DequantizeRowTQ2_0(tq, a)
	quant.DequantizeRowQ2_0(q2, b)
	same := 0
	for i := range a {
		if math.Float32bits(a[i]) == math.Float32bits(b[i]) {
			same++
		}
	}
	t.Logf("%d of %d weights dequantize alike from TQ2_0 and Q2_0", same, len(a))
	if same != len(a) {
		t.Fatal("the scaled Q2_0 and TQ2_0 encoders disagree")
	}
	if err := EncodeQ2_0Scaled(w, 0, q2); err == nil {
		t.Error("a zero scale was accepted")
	}
	if err := EncodeQ2_0Scaled(w[:100], d, q2); err == nil {
		t.Error("100 weights (not whole 64-blocks) were accepted")
	}
}
