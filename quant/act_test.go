package quant

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// actRowCases are the activation rows of the quantizer oracles: random,
// with outliers, all zero, extreme magnitudes, subnormal-only blocks, and
// edgeRow's NaNs, infinities and tiny blocks.
func actRowCases(r *rand.Rand, n int) [][]float32 {
	out := randRow(r, n)
	for range n / 32 {
		out[r.IntN(n)] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(8))))
	}
	tiny := make([]float32, n)
	for i := range tiny {
		tiny[i] = float32(r.NormFloat64() * 1e-40)
	}
	ext := make([]float32, n)
	for i := range ext {
		switch r.IntN(4) {
		case 0:
			ext[i] = math.MaxFloat32
		case 1:
			ext[i] = -math.MaxFloat32
		case 2:
			ext[i] = float32(r.NormFloat64() * 1e30)
		default:
			ext[i] = float32(math.Copysign(0, -1))
		}
	}
	return [][]float32{randRow(r, n), out, make([]float32, n), tiny, ext, edgeRow(r, n, QK8_0), edgeRow(r, n, QK_K)}
}

// TestPreparedActivationsMatchReference: at every level, the prepared
// Q8_0 and Q8_K columns (act.go) hold exactly what the haswell
// quantize_row_q8_0 / quantize_row_q8_K write: the q bytes, d (as the
// float the kernels read), -q, -Σq per block, and -Σq per 32 for Q8_K's
// lane offsets (equal to the reference's bsums pairs).
func TestPreparedActivationsMatchReference(t *testing.T) {
	k := kquantKernels(t)
	r := rand.New(rand.NewPCG(71, 72))
	for _, l := range Levels() {
		rows8, rowsK := 0, 0
		for _, n := range []int{256, 512, 4096, 12288} {
			for trial := range 6 {
				for ci, x := range actRowCases(r, n) {
					// Q8_0
					ref := make([]byte, n/QK8_0*BlockQ8_0Size)
					k.QuantizeRowQ8_0(x, ref)
					var a q8Act
					a.reset(n, 2)
					a.quantize(l, 1, x)
					for b := range n / QK8_0 {
						blk := ref[b*BlockQ8_0Size:]
						i := n/QK8_0 + b
						q := a.qs[32*i : 32*i+32]
						if !bytes.Equal(q, blk[2:34]) {
							t.Fatalf("%s Q8_0 n=%d trial %d case %d block %d: qs %x, reference %x", l, n, trial, ci, b, q, blk[2:34])
						}
						if got, want := math.Float32bits(a.dy[i]), math.Float32bits(FP16ToFP32(binary.LittleEndian.Uint16(blk))); got != want {
							t.Fatalf("%s Q8_0 n=%d case %d block %d: d %#x, reference %#x", l, n, ci, b, got, want)
						}
						var s int32
						for j, v := range q {
							s += int32(int8(v))
							if a.nqs[32*i+j] != -v {
								t.Fatalf("%s Q8_0 block %d: -q wrong", l, b)
							}
						}
						if a.nsum[i] != -s {
							t.Fatalf("%s Q8_0 block %d: nsum %d, want %d", l, b, a.nsum[i], -s)
						}
					}
					// QuantizeRowQ8_0 itself (NaN rows included).
					ours := make([]byte, len(ref))
					QuantizeRowQ8_0(x, ours)
					if !bytes.Equal(ours, ref) {
						t.Fatalf("QuantizeRowQ8_0 n=%d case %d differs from the reference", n, ci)
					}
					rows8++
					// Q8_K (quantize_row_q8_K_ref is for finite input: skip the NaN rows).
					if ci >= 5 {
						continue
					}
					refK := make([]byte, n/QK_K*BlockQ8_KSize)
					k.QuantizeRowQ8_K(x, refK)
					var ak q8KAct
					ak.reset(n, 2)
					ak.quantize(l, 1, x)
					if !ak.exact[1] {
						t.Fatalf("%s Q8_K: a quantized column is not exact", l)
					}
					for b := range n / QK_K {
						blk := refK[b*BlockQ8_KSize:]
						i := n/QK_K + b
						d := math.Float32frombits(binary.LittleEndian.Uint32(blk))
						if !bytes.Equal(ak.qs[QK_K*i:QK_K*(i+1)], blk[q8KOffQs:q8KOffQs+QK_K]) || math.Float32bits(ak.d[i]) != math.Float32bits(d) {
							t.Fatalf("%s Q8_K n=%d case %d block %d: qs or d differ", l, n, ci, b)
						}
						if d == 0 {
							continue // the reference leaves bsums as they were
						}
						for ln := range 8 {
							b0 := int32(int16(binary.LittleEndian.Uint16(blk[q8KOffBsums+4*ln:])))
							b1 := int32(int16(binary.LittleEndian.Uint16(blk[q8KOffBsums+4*ln+2:])))
							if ak.nb[8*i+ln] != -(b0 + b1) {
								t.Fatalf("%s Q8_K n=%d case %d block %d lane %d: %d, reference bsums give %d", l, n, ci, b, ln, ak.nb[8*i+ln], -(b0 + b1))
							}
						}
					}
					rowsK++
				}
			}
		}
		t.Logf("%s: %d/%d Q8_0 rows and %d/%d Q8_K rows prepared as the reference quantizes them", l, rows8, rows8, rowsK, rowsK)
	}
}
