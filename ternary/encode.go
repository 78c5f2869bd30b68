package ternary

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/quant"
)

// Format describes one block format the encoders write: its ggml type, the weights per block and the bytes per
// block.
type Format struct {
	Type       gguf.GGMLType // gguf.TQ2_0, gguf.TQ1_0 or gguf.Q2_0
	Block      int           // weights per block: 256 (TQ2_0, TQ1_0) or 64 (Q2_0)
	BlockBytes int           // bytes per block: 66, 54 or 18
}

// The formats of the ggml encoders.
var (
	FormatTQ2_0 = Format{gguf.TQ2_0, quant.QK_K, quant.BlockTQ2_0Size}
	FormatTQ1_0 = Format{gguf.TQ1_0, quant.QK_K, quant.BlockTQ1_0Size}
	FormatQ2_0  = Format{gguf.Q2_0, quant.QK2_0, quant.BlockQ2_0Size}
)

// RowBytes returns the bytes of n weights in the format (n a multiple of Block).
func (f Format) RowBytes(n int) int { return n / f.Block * f.BlockBytes }

// check validates a row of len(x) weights and its destination for the format.
func (f Format) check(x []float32, dst []byte) error {
	if len(x)%f.Block != 0 {
		return fmt.Errorf("ternary: %s: %d weights are not a whole number of %d-weight blocks", f.Type, len(x), f.Block)
	}
	if need := f.RowBytes(len(x)); len(dst) != need {
		return fmt.Errorf("ternary: %s: %d weights need %d bytes, the destination has %d", f.Type, len(x), need, len(dst))
	}
	return nil
}

// EncodeTQ2_0 writes x as TQ2_0 blocks into dst, byte for byte as the reference's quantize_row_tq2_0_ref
// (ggml-quants.c; llama-quantize's TQ2_0 path, which takes no importance matrix): per block of 256, d = max |x| as
// f16, id = 1/d (0 when d is 0), code = (lroundf(x·id) + 1) & 3. len(x) must be a multiple of 256 and len(dst)
// len(x)/256·66; otherwise the error names the lengths and nothing is written. The arithmetic is
// quant.QuantizeTQ2_0Ref.
//
// Non-finite weights (what the reference does, checked against it by TestEncodersMatchTheReference): the amax loop
// is ggml's MAX(amax, |v|), so a NaN becomes the running maximum and is forgotten at the next element. A NaN that
// is not the block's last element therefore leaves d the absmax of the elements after it, and weights before it
// larger than that overflow the trit range and wrap (&3); a NaN in the last place makes d NaN and every code 1. NaN
// and ±inf products give lroundf's 0x8000000000000000 (x86 cvtss2si), i.e. code 1. A ±inf weight makes d = inf and
// id = 0: the finite weights and the inf itself get code 1, and the block dequantizes to NaN (0·inf).
func EncodeTQ2_0(x []float32, dst []byte) error {
	if err := FormatTQ2_0.check(x, dst); err != nil {
		return err
	}
	rowEncoder(gguf.TQ2_0)(x, dst)
	return nil
}

// EncodeTQ1_0 writes x as TQ1_0 blocks into dst, byte for byte as quantize_row_tq1_0_ref: the same absmax scale
// and trits as [EncodeTQ2_0], packed five (qs) or four (qh) per byte in base 3. len(x) must be a multiple of 256 and
// len(dst) len(x)/256·54. Non-finite weights behave as in EncodeTQ2_0, except that a trit outside 0..2 (a weight
// past a forgotten NaN) is added into the base-3 byte as it is, wrapping in uint8 as the reference does.
func EncodeTQ1_0(x []float32, dst []byte) error {
	if err := FormatTQ1_0.check(x, dst); err != nil {
		return err
	}
	rowEncoder(gguf.TQ1_0)(x, dst)
	return nil
}

// EncodeQ2_0 writes x as Q2_0 blocks (64 weights, f16 d first, then 2-bit codes, four per byte, lowest bits
// first) into dst, byte for byte as quantize_row_q2_0_ref: d = max |x| over the non-NaN weights (a > amax skips
// NaN), code = clamp((int)roundf(x·id) + 1, 0, 3). len(x) must be a multiple of 64 and len(dst) len(x)/64·18.
// Non-finite weights: NaN gives (int)NaN = INT_MIN (cvttss2si), clamped to code 0 (−d); a ±inf weight makes d =
// inf and id = 0, so the finite weights get code 1 and the inf itself (inf·0 = NaN) code 0: the block dequantizes
// to NaN and −inf.
func EncodeQ2_0(x []float32, dst []byte) error {
	if err := FormatQ2_0.check(x, dst); err != nil {
		return err
	}
	rowEncoder(gguf.Q2_0)(x, dst)
	return nil
}

// rowEncoder returns the unchecked encoder of t (lengths already checked by the caller).
func rowEncoder(t gguf.GGMLType) func(x []float32, dst []byte) {
	switch t {
	case gguf.TQ2_0:
		return quant.QuantizeTQ2_0Ref
	case gguf.TQ1_0:
		return quant.QuantizeTQ1_0Ref
	case gguf.Q2_0:
		return quant.QuantizeRowQ2_0
	}
	panic("ternary: no encoder for " + t.String())
}

// Encode writes x in the format of t (gguf.TQ2_0, gguf.TQ1_0 or gguf.Q2_0) with the matching ggml encoder above.
func Encode(t gguf.GGMLType, x []float32, dst []byte) error {
	switch t {
	case gguf.TQ2_0:
		return EncodeTQ2_0(x, dst)
	case gguf.TQ1_0:
		return EncodeTQ1_0(x, dst)
	case gguf.Q2_0:
		return EncodeQ2_0(x, dst)
	}
	return fmt.Errorf("ternary: no encoder for %s (have tq2_0, tq1_0, q2_0)", t)
}

// FormatOf returns the Format of an encoder type, or false.
func FormatOf(t gguf.GGMLType) (Format, bool) {
	for _, f := range []Format{FormatTQ2_0, FormatTQ1_0, FormatQ2_0} {
		if f.Type == t {
			return f, true
		}
	}
	return Format{}, false
}

// absmeanFloor and maxF16 bound the BitNet scale: BitNet b1.58's ε (Fucina's ternaryAbsmeanScale) and the largest
// finite f16, so that the scale every block stores is the scale the trits were chosen for.
const (
	absmeanFloor = 1e-5
	maxF16       = 65504
)

// AbsmeanScale returns BitNet b1.58's per-tensor scale (arXiv:2402.17764; Fucina's ternaryAbsmeanScale): the mean
// of |w| accumulated in float64, rounded to float32, at least 1e-5. Deliberate differences from Fucina: the mean is
// over the finite weights only (Fucina's would be NaN or inf, and one inf would make every block's d infinite), and
// the result is at most 65504, the largest f16, so that it is stored as it is used. An empty or all-non-finite x
// gives 1e-5.
func AbsmeanScale(x []float32) float32 {
	var sum float64
	n := 0
	for _, v := range x {
		if isFinite(v) {
			sum += math.Abs(float64(v))
			n++
		}
	}
	var mean float32
	if n > 0 {
		mean = float32(sum / float64(n))
	}
	return min(max(mean, absmeanFloor), maxF16)
}

// EncodeTQ2_0Scaled writes x as TQ2_0 blocks that all store the one scale d (as f16), with trit
// clamp(round_half_away(x·(1/d)), −1, +1) and code trit+1: BitNet b1.58's round-clip quantizer (Fucina's
// quantizeRowTQ2_0ScaledInto), so the blocks stay plain, valid TQ2_0. The clamp is taken in the float domain: a NaN
// weight gets trit 0 and ±inf trit ±1. d must be positive and at most 65504 (use [AbsmeanScale]); len(x) a multiple
// of 256 and len(dst) len(x)/256·66.
func EncodeTQ2_0Scaled(x []float32, d float32, dst []byte) error {
	if err := FormatTQ2_0.check(x, dst); err != nil {
		return err
	}
	if !(d > 0 && d <= maxF16) {
		return fmt.Errorf("ternary: TQ2_0 scale %g is not in (0, 65504]", d)
	}
	id := 1 / d
	h := quant.FP32ToFP16(d)
	var trits [quant.QK_K]int8
	for b := range len(x) / quant.QK_K {
		xb := x[b*quant.QK_K : (b+1)*quant.QK_K]
		for i, v := range xb {
			trits[i] = scaledTrit(v, id)
		}
		packTQ2_0(dst[b*quant.BlockTQ2_0Size:(b+1)*quant.BlockTQ2_0Size], &trits, h)
	}
	return nil
}

// EncodeQ2_0Scaled writes x as Q2_0 blocks (groups of 64) that all store the one scale d (as f16), with the trits
// of [EncodeTQ2_0Scaled] (clamp(round_half_away(x·(1/d)), −1, +1), NaN to 0) as codes trit+1: the same ternary
// matrix as EncodeTQ2_0Scaled's in Q2_0's layout, for the Q2_0 kernels. d must be positive and at most 65504;
// len(x) a multiple of 64 and len(dst) len(x)/64·18.
func EncodeQ2_0Scaled(x []float32, d float32, dst []byte) error {
	if err := FormatQ2_0.check(x, dst); err != nil {
		return err
	}
	if !(d > 0 && d <= maxF16) {
		return fmt.Errorf("ternary: Q2_0 scale %g is not in (0, 65504]", d)
	}
	id := 1 / d
	h := quant.FP32ToFP16(d)
	var trits [quant.QK2_0]int8
	for b := range len(x) / quant.QK2_0 {
		for i, v := range x[b*quant.QK2_0 : (b+1)*quant.QK2_0] {
			trits[i] = scaledTrit(v, id)
		}
		packQ2_0(dst[b*quant.BlockQ2_0Size:(b+1)*quant.BlockQ2_0Size], trits[:], h)
	}
	return nil
}

// scaledTrit is the round-clip of the scaled encoders: clamp(round_half_away(v·id), −1, +1), NaN to 0, taken in
// the float domain.
func scaledTrit(v, id float32) int8 {
	r := float32(math.Round(float64(v * id)))
	switch {
	case r != r:
		r = 0
	case r > 1:
		r = 1
	case r < -1:
		r = -1
	}
	return int8(r)
}

// EncodeAbsmeanTQ2_0 is BitNet b1.58's absmean encoder of a whole tensor x (all its rows, in order): one scale d =
// AbsmeanScale(x) for the tensor, written into every block by EncodeTQ2_0Scaled. It returns d.
func EncodeAbsmeanTQ2_0(x []float32, dst []byte) (float32, error) {
	d := AbsmeanScale(x)
	return d, EncodeTQ2_0Scaled(x, d, dst)
}

// packTQ2_0 writes one TQ2_0 block: code trit+1 of weight 128h+32n+m at bits 2n of qs[32h+m], then d.
func packTQ2_0(out []byte, trits *[quant.QK_K]int8, d uint16) {
	out = out[:quant.BlockTQ2_0Size]
	for h := range 2 {
		for m := range 32 {
			var q byte
			for n := range 4 {
				q |= byte(trits[128*h+32*n+m]+1) << (2 * n)
			}
			out[32*h+m] = q
		}
	}
	binary.LittleEndian.PutUint16(out[64:], d)
}

// packQ2_0 writes one Q2_0 block: d, then code trit+1 of weight j at bits 2(j%4) of byte 2+j/4.
func packQ2_0(out []byte, trits []int8, d uint16) {
	out = out[:quant.BlockQ2_0Size]
	binary.LittleEndian.PutUint16(out, d)
	for i := range quant.QK2_0 / 4 {
		var q byte
		for j := range 4 {
			q |= byte(trits[4*i+j]+1) << (2 * j)
		}
		out[2+i] = q
	}
}

func isFinite(v float32) bool { return v-v == 0 }

// dequantize is the row dequantizer of an encoder format (quant's dequantize_row_* ports): y[i] = (code−1)·d.
func dequantize(t gguf.GGMLType, src []byte, y []float32) {
	switch t {
	case gguf.TQ2_0:
		quant.DequantizeRowTQ2_0(src, y)
	case gguf.TQ1_0:
		quant.DequantizeRowTQ1_0(src, y)
	case gguf.Q2_0:
		quant.DequantizeRowQ2_0(src, y)
	default:
		panic("ternary: dequantize of " + t.String())
	}
}
