package synth

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/quant"
)

// meanSquare is the mean of q² over a block type's codes as synth draws them, so that d = sigma/sqrt(meanSquare)
// gives weights of root mean square sigma (before the per-block jitter).
var meanSquare = map[gguf.GGMLType]float64{
	gguf.Q1_0:  1,      // ±1
	gguf.Q2_0:  1.25,   // -1, 0, 1, 2 with probabilities 4/8, 1/8, 2/8, 1/8 (mean 0)
	gguf.Q4_0:  21.5,   // -8..7 uniformly
	gguf.Q8_0:  5461.5, // -128..127 uniformly
	gguf.TQ1_0: 2.0 / 3,
	gguf.TQ2_0: 2.0 / 3,
	// The K-quants: the mean over a super-block of (sub-block scale × centred code)², in units of d (see kMin).
	gguf.Q2_K: 77.5 * 1.25,    // scales 0..15 (E s² = 77.5), codes 0..3 centred by the min: ±0.5, ±1.5
	gguf.Q3_K: 341.5 * 5.5,    // signed scales -32..31 (E s² = 341.5), codes -4..3 (E q² = 5.5)
	gguf.Q4_K: 1333.5 * 21.25, // scales 0..63 (E s² = 1333.5), codes 0..15 centred by the min: ±0.5 .. ±7.5
	gguf.Q5_K: 1333.5 * 85.25, // scales 0..63, codes 0..31 centred by the min: ±0.5 .. ±15.5
	gguf.Q6_K: 5461.5 * 341.5, // signed int8 scales (E s² = 5461.5), codes -32..31 (E q² = 341.5)
}

// kMin is, for the K-quants with sub-block minimums, dmin/d: every sub-block's min equals its scale (both 4- or
// 6-bit codes) and dmin = kMin*d, so that a sub-block's weights d*s*(q - kMin) are centred on 0 (kMin is the mean
// code). Q3_K and Q6_K have no mins: their signed scales and codes are both uniform, with means -0.5 each, so a
// weight's mean is 0.25*d against a root mean square of 43*d (Q3_K) or 1366*d (Q6_K).
var kMin = map[gguf.GGMLType]float32{gguf.Q2_K: 1.5, gguf.Q4_K: 7.5, gguf.Q5_K: 15.5}

// generator produces the bytes of one chunk of a tensor from the chunk's own ChaCha8 stream. One generator serves
// many chunks: reset it for each.
//
// Block layouts are those of ggml/src/ggml-common.h; the block payloads are random codes generated directly (not
// quantized from floats), with the scale d chosen so that a weight's root mean square is about 1/sqrt(row length):
// with RMS-normed inputs, every matrix product then yields activations of order 1 and logits stay finite through
// any number of layers. Norm weights are F32 in [0.75, 1.25); biases F32 in [-0.25, 0.25), bitnet's weight scales
// F32 in [0.75, 1.25), phi3's rope factors F32 in [1, 4).
//
// Codes per type (d is the block scale, of the super-block for the K-quants, jittered per block by a factor in
// [0.5, 1.5)):
//   - Q1_0: random bits (±d); Q2_0: 2-bit codes for -1, 0, +1, +2 times d with probabilities 4/8, 1/8, 2/8, 1/8,
//     so that the weights have mean 0 (uniform codes would bias every product by d/2); Q4_0: random nibbles;
//     Q8_0: random int8;
//   - TQ2_0: 2-bit codes 0, 1, 2 only (-1, 0, +1); TQ1_0: base-3 packed trits encoded with the reference's
//     ceiling division (quantize_row_tq1_0_ref), so every byte is one the reference's quantizer can produce;
//   - Q2_K, Q4_K, Q5_K: random codes; per 16- or 32-element sub-block a random 4-bit (Q2_K) or 6-bit scale s,
//     stored also as the sub-block's min, with dmin = c*d where c is the mean code (1.5, 7.5, 15.5), so that each
//     sub-block's weights d*s*(q - c) are centred on 0; Q4_K's and Q5_K's scales packed as quantize_row_q4_K_ref
//     packs them;
//   - Q3_K, Q6_K: random bytes (any pattern is valid): signed sub-block scales and codes both uniform, whose
//     means of -0.5 give a weight mean of 0.25*d, negligible against the spread;
//   - F32, F16, BF16: uniform in [-a, a] (F16 and BF16 rounded to nearest even).
//
// Why random codes for the K-quants rather than quantizing random rows with quant's Ref quantizers (which would
// give the blocks a real converter writes): those cost about 30 µs per 256-element super-block, some 15 minutes of
// CPU for an 8B-shaped file (3e7 super-blocks), where random codes cost about as much as the other types'. The
// random blocks are valid ggml blocks that exercise every bit of the scales (6-bit packing, signed scales,
// subnormal f16 d included), which is what tests of the decoders and dot products need; their value statistics
// differ from a quantizer's (uniform codes, not a bell curve), which matters to no test since the weights are
// noise.
//
// Each tensor draws from its own ChaCha8 stream (math/rand/v2, the C2SP chacha8rand generator, whose output is
// fixed by its specification) and turns bytes into values with integer operations and single float32/float64
// roundings that Go cannot fuse into FMAs.
type generator struct {
	t     gguf.GGMLType
	rng   rand.ChaCha8
	kind  valueKind // F32 values other than weights: norms, biases, rope factors
	scale float64   // block types: the base scale d; float types: the value of one unit of the random integer
	extra []byte    // Q2_0: the random bytes of a chunk (two per qs byte), reused
}

// minScale returns the f16 bits of a K-quant's dmin for the block scale bits d: kMin[t] times d, exact in float32
// (d has 11 significant bits, kMin at most 5) and rounded once to f16.
func (g *generator) minScale(d uint16) uint16 {
	return quant.FP32ToFP16(quant.FP16ToFP32(d) * kMin[g.t])
}

// packK4Scales overwrites the 12 random bytes sc (Q4_K's and Q5_K's scales) with 8 six-bit sub-block scales taken
// from the low bits of its first 8 bytes, each also stored as that sub-block's min, packed as
// quantize_row_q4_K_ref packs them (get_scale_min_k4 reads them back).
func packK4Scales(sc []byte) {
	var s [8]byte
	for j := range s {
		s[j] = sc[j] & 63
	}
	for j := range 4 {
		sc[j], sc[j+4] = s[j], s[j]
	}
	for j := 4; j < 8; j++ {
		sc[j+4] = s[j]&15 | s[j]&15<<4
		sc[j-4] |= s[j] >> 4 << 6
		sc[j] |= s[j] >> 4 << 6
	}
}

// reset prepares g for chunk number chunk (0 for the first chunkBytes of the tensor, and so on) of tensor name, of
// type t with rows of rowLen elements and values of kind. The chunk's stream is keyed by
// sha256("bankml synth v1\x00", seed and chunk as 8 little-endian bytes each, name).
func (g *generator) reset(seed uint64, name string, chunk uint64, t gguf.GGMLType, rowLen int64, kind valueKind) {
	h := sha256.New()
	h.Write([]byte("bankml synth v1\x00"))
	h.Write(binary.LittleEndian.AppendUint64(nil, seed))
	h.Write(binary.LittleEndian.AppendUint64(nil, chunk))
	h.Write([]byte(name))
	var key [32]byte
	copy(key[:], h.Sum(nil))
	g.rng.Seed(key)
	g.t, g.kind = t, kind
	sigma := 1 / math.Sqrt(float64(rowLen))
	switch t {
	case gguf.F32:
		g.scale = sigma * math.Sqrt(3) / (1 << 31) // uniform in [-a, a), a = sigma*sqrt(3), from an int32
	case gguf.F16, gguf.BF16:
		g.scale = sigma * math.Sqrt(3) / (1 << 15) // from an int16
	default:
		g.scale = sigma / math.Sqrt(meanSquare[t])
	}
}

// The code tables of the ternary types, indexed by a random byte r.
var (
	q2Codes    [4096]byte // Q2_0 qs: four codes, each from 3 random bits by q2Code
	tq2Codes   [256]byte  // TQ2_0 qs: four 2-bit codes in 0..2 (the (r*81>>8)-th of the 81 combinations)
	tq1QSCodes [256]byte  // TQ1_0 qs: five trits, value v = r*243>>8, stored as ceil(v*256/243)
	tq1QHCodes [256]byte  // TQ1_0 qh: four trits, value v = r*81>>8, shifted one trit up and stored likewise
)

// q2Code maps 3 random bits to a Q2_0 code (0 is -1, 1 is 0, 2 is +1, 3 is +2) so that the weights have mean 0:
// uniform codes would have mean d/2, a bias that every matrix product adds up along the residual stream.
var q2Code = [8]int{0, 0, 0, 0, 1, 2, 2, 3}

func init() {
	for r := range 4096 {
		q2Codes[r] = byte(q2Code[r&7] | q2Code[r>>3&7]<<2 | q2Code[r>>6&7]<<4 | q2Code[r>>9&7]<<6)
	}
	for r := range 256 {
		v := r * 81 >> 8
		var b int
		for i := range 4 {
			b |= (v % 3) << (2 * i)
			v /= 3
		}
		tq2Codes[r] = byte(b)
		tq1QSCodes[r] = byte(((r*243>>8)*256 + 242) / 243) // quantize_row_tq1_0_ref's ceiling division
		tq1QHCodes[r] = byte(((r*81>>8)*3*256 + 242) / 243)
	}
}

// blockScale returns the f16 bits of a block scale: the base scale times a jitter in [0.5, 1.5) taken from the 16
// random bits j.
func (g *generator) blockScale(j uint16) uint16 {
	return quant.FP32ToFP16(float32(g.scale * (0.5 + float64(j)/65536)))
}

// fill writes the next len(p) bytes of the tensor into p; len(p) is a whole number of blocks (of elements for F32,
// F16 and BF16).
func (g *generator) fill(p []byte) {
	le := binary.LittleEndian
	if g.t == gguf.Q2_0 { // 34 random bytes per block: 2 for the scale, 2 per qs byte
		n := len(p) / 18 * 34
		if cap(g.extra) < n {
			g.extra = make([]byte, n)
		}
		r := g.extra[:n]
		g.rng.Read(r)
		for b, s := 0, 0; b+18 <= len(p); b, s = b+18, s+34 {
			blk, src := p[b:b+18:b+18], r[s:s+34:s+34]
			le.PutUint16(blk, g.blockScale(le.Uint16(src)))
			qs, rs := blk[2:], src[2:]
			for i := range qs {
				qs[i] = q2Codes[(uint16(rs[2*i])|uint16(rs[2*i+1])<<8)>>4]
			}
		}
		return
	}
	g.rng.Read(p)
	switch g.t {
	case gguf.F32:
		for i := 0; i+4 <= len(p); i += 4 {
			r := le.Uint32(p[i:])
			var v float32
			switch g.kind {
			case kindNorm:
				v = float32(0.75 + float64(r>>16)/131072)
			case kindBias:
				v = float32(float64(int32(r)) / (1 << 33))
			case kindFactor:
				v = float32(1 + float64(r>>16)*3/65536)
			default:
				v = float32(float64(int32(r)) * g.scale)
			}
			le.PutUint32(p[i:], math.Float32bits(v))
		}
	case gguf.F16:
		for i := 0; i+2 <= len(p); i += 2 {
			v := float32(float64(int16(le.Uint16(p[i:]))) * g.scale)
			le.PutUint16(p[i:], quant.FP32ToFP16(v))
		}
	case gguf.BF16:
		for i := 0; i+2 <= len(p); i += 2 {
			v := float32(float64(int16(le.Uint16(p[i:]))) * g.scale)
			le.PutUint16(p[i:], bf16(v))
		}
	case gguf.Q1_0, gguf.Q4_0, gguf.Q8_0: // d first, then codes: any bit pattern is a valid code
		size := g.t.TypeSize()
		for b := 0; b+size <= len(p); b += size {
			le.PutUint16(p[b:], g.blockScale(le.Uint16(p[b:])))
		}
	case gguf.TQ2_0: // qs[64], d
		for b := 0; b+66 <= len(p); b += 66 {
			for i := b; i < b+64; i++ {
				p[i] = tq2Codes[p[i]]
			}
			le.PutUint16(p[b+64:], g.blockScale(le.Uint16(p[b+64:])))
		}
	case gguf.TQ1_0: // qs[48], qh[4], d
		for b := 0; b+54 <= len(p); b += 54 {
			for i := b; i < b+48; i++ {
				p[i] = tq1QSCodes[p[i]]
			}
			for i := b + 48; i < b+52; i++ {
				p[i] = tq1QHCodes[p[i]]
			}
			le.PutUint16(p[b+52:], g.blockScale(le.Uint16(p[b+52:])))
		}
	case gguf.Q2_K: // scales[16] (scale | min<<4), qs[64], d, dmin
		for b := 0; b+quant.BlockQ2_KSize <= len(p); b += quant.BlockQ2_KSize {
			for i := b; i < b+16; i++ {
				p[i] = p[i]&15 | p[i]&15<<4
			}
			d := g.blockScale(le.Uint16(p[b+80:]))
			le.PutUint16(p[b+80:], d)
			le.PutUint16(p[b+82:], g.minScale(d))
		}
	case gguf.Q3_K: // hmask[32], qs[64], scales[12], d: any bit pattern is a valid code and a valid signed scale
		for b := 0; b+quant.BlockQ3_KSize <= len(p); b += quant.BlockQ3_KSize {
			le.PutUint16(p[b+108:], g.blockScale(le.Uint16(p[b+108:])))
		}
	case gguf.Q4_K, gguf.Q5_K: // d, dmin, scales[12], (Q5_K: qh[32]), qs[128]
		size := g.t.TypeSize()
		for b := 0; b+size <= len(p); b += size {
			d := g.blockScale(le.Uint16(p[b:]))
			le.PutUint16(p[b:], d)
			le.PutUint16(p[b+2:], g.minScale(d))
			packK4Scales(p[b+4 : b+16])
		}
	case gguf.Q6_K: // ql[128], qh[64], int8 scales[16], d: any bit pattern is valid
		for b := 0; b+quant.BlockQ6_KSize <= len(p); b += quant.BlockQ6_KSize {
			le.PutUint16(p[b+208:], g.blockScale(le.Uint16(p[b+208:])))
		}
	}
}

// bf16 converts a finite float32 to bfloat16 with round-to-nearest-even, as ggml's GGML_FP32_TO_BF16 does.
func bf16(f float32) uint16 {
	u := math.Float32bits(f)
	return uint16((u + (0x7fff + (u>>16)&1)) >> 16)
}
