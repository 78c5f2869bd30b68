package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
)

// kFormat describes one weight format of the Q8_K family for the
// table-driven oracle, fuzz and matmul-path tests.
type kFormat struct {
	name      string
	typ       gguf.GGMLType
	blockSize int
	// randBlock fills blk with a random block: valid codes when valid is
	// set, else arbitrary bytes; the f16 scales are always finite.
	randBlock func(r *rand.Rand, blk []byte, valid bool)
	quantize  func(x []float32, dst []byte)
	dequant   func(src []byte, y []float32)
	dot       func(w, a []byte, nb int) float32
	generic   func(w, a []byte, nb int) float32
	// spec and specGeneric are the executable specifications of dot and
	// generic (plain element-view loops).
	spec, specGeneric func(w, a []byte, nb int) float32

	refQuantize func(k *reference.Kernels) func(x []float32, y []byte)
	refDequant  func(k *reference.Kernels) func(x []byte, y []float32)
	refDot      func(k *reference.Kernels) func(n int, x, y []byte) float32
	refGeneric  func(k *reference.Kernels) func(n int, x, y []byte) float32
}

func putHalfK(b []byte, h uint16) { binary.LittleEndian.PutUint16(b, h) }

// tq1ValidByte returns the byte quantize_row_tq1_0_ref writes for the base-3
// value v (0..242).
func tq1ValidByte(v int) byte { return byte((v*256 + 242) / 243) }

var kFormats = []kFormat{
	{
		name: "TQ1_0", typ: gguf.TQ1_0, blockSize: BlockTQ1_0Size,
		randBlock: func(r *rand.Rand, blk []byte, valid bool) {
			for i := range 52 {
				blk[i] = byte(r.Uint32())
				if valid {
					if i < 48 {
						blk[i] = tq1ValidByte(r.IntN(243))
					} else {
						blk[i] = tq1ValidByte(3 * r.IntN(81))
					}
				}
			}
			putHalfK(blk[52:], kRandHalf(r))
		},
		quantize: QuantizeTQ1_0Ref, dequant: DequantizeRowTQ1_0,
		dot: VecDotTQ1_0Q8_K, generic: VecDotTQ1_0Q8_KGeneric,
		spec: func(w, a []byte, nb int) float32 {
			return specVecDotTQ(nb, a, func(b int, c *[QK_K]uint8) float32 {
				blk := (*[BlockTQ1_0Size]byte)(w[b*BlockTQ1_0Size:])
				tq1Codes(blk, c)
				return tq1D(blk)
			})
		},
		specGeneric: func(w, a []byte, nb int) float32 {
			return specVecDotTQGeneric(nb, a, func(b int, c *[QK_K]uint8) float32 {
				blk := (*[BlockTQ1_0Size]byte)(w[b*BlockTQ1_0Size:])
				tq1Codes(blk, c)
				return tq1D(blk)
			})
		},
		refQuantize: func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowTQ1_0Ref },
		refDequant:  func(k *reference.Kernels) func([]byte, []float32) { return k.DequantizeRowTQ1_0 },
		refDot:      func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotTQ1_0Q8_K },
		refGeneric:  func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotTQ1_0Q8_KGeneric },
	},
	{
		name: "TQ2_0", typ: gguf.TQ2_0, blockSize: BlockTQ2_0Size,
		randBlock: func(r *rand.Rand, blk []byte, valid bool) {
			for i := range 64 {
				blk[i] = byte(r.Uint32())
				if valid {
					blk[i] = 0
					for n := range 4 {
						blk[i] |= byte(r.IntN(3)) << (2 * n)
					}
				}
			}
			putHalfK(blk[64:], kRandHalf(r))
		},
		quantize: QuantizeTQ2_0Ref, dequant: DequantizeRowTQ2_0,
		dot: VecDotTQ2_0Q8_K, generic: VecDotTQ2_0Q8_KGeneric,
		spec: func(w, a []byte, nb int) float32 {
			return specVecDotTQ(nb, a, func(b int, c *[QK_K]uint8) float32 {
				blk := (*[BlockTQ2_0Size]byte)(w[b*BlockTQ2_0Size:])
				tq2Codes(blk, c)
				return tq2D(blk)
			})
		},
		specGeneric: func(w, a []byte, nb int) float32 {
			return specVecDotTQGeneric(nb, a, func(b int, c *[QK_K]uint8) float32 {
				blk := (*[BlockTQ2_0Size]byte)(w[b*BlockTQ2_0Size:])
				tq2Codes(blk, c)
				return tq2D(blk)
			})
		},
		refQuantize: func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowTQ2_0Ref },
		refDequant:  func(k *reference.Kernels) func([]byte, []float32) { return k.DequantizeRowTQ2_0 },
		refDot:      func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotTQ2_0Q8_K },
		refGeneric:  func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotTQ2_0Q8_KGeneric },
	},
	{
		name: "Q2_K", typ: gguf.Q2_K, blockSize: BlockQ2_KSize,
		randBlock: func(r *rand.Rand, blk []byte, valid bool) {
			for i := range q2KOffD {
				blk[i] = byte(r.Uint32())
			}
			putHalfK(blk[q2KOffD:], kRandHalf(r))
			putHalfK(blk[q2KOffDmin:], kRandHalf(r))
		},
		quantize: QuantizeQ2_KRef, dequant: DequantizeRowQ2_K,
		dot: VecDotQ2_KQ8_K, generic: VecDotQ2_KQ8_KGeneric,
		spec: specVecDotQ2_K, specGeneric: specVecDotQ2_KGeneric,
		refQuantize: func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowQ2_KRef },
		refDequant:  func(k *reference.Kernels) func([]byte, []float32) { return k.DequantizeRowQ2_K },
		refDot:      func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ2_KQ8_K },
		refGeneric:  func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ2_KQ8_KGeneric },
	},
	{
		name: "Q3_K", typ: gguf.Q3_K, blockSize: BlockQ3_KSize,
		randBlock: func(r *rand.Rand, blk []byte, valid bool) {
			for i := range q3KOffD {
				blk[i] = byte(r.Uint32())
			}
			putHalfK(blk[q3KOffD:], kRandHalf(r))
		},
		quantize: QuantizeQ3_KRef, dequant: DequantizeRowQ3_K,
		dot: VecDotQ3_KQ8_K, generic: VecDotQ3_KQ8_KGeneric,
		spec: specVecDotQ3_K, specGeneric: specVecDotQ3_KGeneric,
		refQuantize: func(k *reference.Kernels) func([]float32, []byte) { return k.QuantizeRowQ3_KRef },
		refDequant:  func(k *reference.Kernels) func([]byte, []float32) { return k.DequantizeRowQ3_K },
		refDot:      func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ3_KQ8_K },
		refGeneric:  func(k *reference.Kernels) func(int, []byte, []byte) float32 { return k.VecDotQ3_KQ8_KGeneric },
	},
}

// randKBlocks returns nb random blocks of f.
func (f *kFormat) randKBlocks(r *rand.Rand, nb int, valid bool) []byte {
	w := make([]byte, nb*f.blockSize)
	for b := range nb {
		f.randBlock(r, w[b*f.blockSize:(b+1)*f.blockSize], valid)
	}
	return w
}

func TestKQuantsDequantizeMatchReference(t *testing.T) {
	k := kquantKernels(t)
	for _, f := range kFormats {
		t.Run(f.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(91, uint64(f.typ)))
			ref := f.refDequant(k)
			blocks := 0
			for trial := range 400 {
				nb := 1 + r.IntN(8)
				w := f.randKBlocks(r, nb, trial%2 == 0)
				got, want := make([]float32, nb*QK_K), make([]float32, nb*QK_K)
				f.dequant(w, got)
				ref(w, want)
				for i := range got {
					if !bitsEq(got[i], want[i]) {
						t.Fatalf("trial %d: value %d: %g (%#x), reference %g (%#x)", trial, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
				}
				blocks += nb
			}
			t.Logf("%s: %d/%d random blocks dequantize to the reference's bits", f.name, blocks, blocks)
		})
	}
}

func TestKQuantsQuantizeRefMatchReference(t *testing.T) {
	k := kquantKernels(t)
	for _, f := range kFormats {
		t.Run(f.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(92, uint64(f.typ)))
			ref := f.refQuantize(k)
			rows := 0
			for _, c := range kRowCases {
				for trial := range 60 {
					nb := 1 + r.IntN(4)
					x := c.gen(r, nb*QK_K)
					got, want := make([]byte, nb*f.blockSize), make([]byte, nb*f.blockSize)
					f.quantize(x, got)
					ref(x, want)
					if string(got) != string(want) {
						for b := range nb {
							g, w := got[b*f.blockSize:(b+1)*f.blockSize], want[b*f.blockSize:(b+1)*f.blockSize]
							if string(g) != string(w) {
								t.Fatalf("%s trial %d block %d differs\n got %x\nwant %x", c.name, trial, b, g, w)
							}
						}
					}
					rows++
				}
			}
			t.Logf("%s: %d/%d rows quantize (quantize_row_%s_ref) to the reference's bytes", f.name, rows, rows, f.typ)
		})
	}
}

// kDotLengths are the row lengths in blocks of the dot tests: every small
// count, and the real rows of an 8B model (n_embd 4096, n_ff 12288).
var kDotLengths = []int{1, 2, 3, 4, 5, 6, 7, 8, 16, 48}

func TestKQuantsVecDotMatchReference(t *testing.T) {
	k := kquantKernels(t)
	for _, f := range kFormats {
		t.Run(f.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(93, uint64(f.typ)))
			refDot, refGeneric := f.refDot(k), f.refGeneric(k)
			dots, rowsW := 0, 0
			levels := Levels()
			levelDots := make([]int, len(levels))
			for _, nb := range kDotLengths {
				// Weight rows: random valid blocks, random bytes, and rows
				// quantized by the reference quantizer from each row case.
				var ws [][]byte
				for range 3 {
					ws = append(ws, f.randKBlocks(r, nb, true), f.randKBlocks(r, nb, false))
				}
				for _, c := range kRowCases {
					w := make([]byte, nb*f.blockSize)
					f.quantize(c.gen(r, nb*QK_K), w)
					ws = append(ws, w)
				}
				// Activation rows: every row case through QuantizeRowQ8_K,
				// and raw Q8_K blocks with consistent and random bsums.
				as := kQ8_KRows(r, nb)
				as = append(as, kRandQ8_K(r, nb, true), kRandQ8_K(r, nb, false))
				n := nb * QK_K
				for wi, w := range ws {
					for ai, a := range as {
						want := refDot(n, w, a)
						if got := f.dot(w, a, nb); !bitsEq(got, want) {
							t.Fatalf("nb=%d w%d a%d: vec_dot %g (%#x), reference %g (%#x)", nb, wi, ai, got, math.Float32bits(got), want, math.Float32bits(want))
						}
						for li, l := range levels {
							if got := l.VecDot(f.typ)(w, a, nb); !bitsEq(got, want) {
								t.Fatalf("%s nb=%d w%d a%d: vec_dot %g (%#x), reference %g (%#x)", l, nb, wi, ai, got, math.Float32bits(got), want, math.Float32bits(want))
							}
							levelDots[li]++
						}
						if got, want := f.generic(w, a, nb), refGeneric(n, w, a); !bitsEq(got, want) {
							t.Fatalf("nb=%d w%d a%d: _generic %g (%#x), reference %g (%#x)", nb, wi, ai, got, math.Float32bits(got), want, math.Float32bits(want))
						}
						dots++
					}
				}
				rowsW += len(ws)
			}
			t.Logf("%s: %d weight rows, %d/%d dots equal to ggml_vec_dot_%s_q8_K and %d/%d to its _generic", f.name, rowsW, dots, dots, f.typ, dots, dots)
			for li, l := range levels {
				t.Logf("%s %s: %d/%d dots equal to ggml_vec_dot_%s_q8_K", f.name, l, levelDots[li], dots, f.typ)
			}
		})
	}
}

// TestKQuantsSourceOrderDiffers shows where the compiler's contractions
// matter: a port of the C source read literally (every product rounded, then
// added) disagrees with the reference on some rows, while the modelled
// order never does. The Q2_K and Q3_K AVX2 kernels call _mm256_fmadd_ps
// themselves, so their literal reading is already the model.
func TestKQuantsSourceOrderDiffers(t *testing.T) {
	k := kquantKernels(t)
	for _, tc := range []struct {
		name    string
		fi      int
		generic bool
		literal func(w, a []byte, nb int) float32
	}{
		{"ggml_vec_dot_tq1_0_q8_K", 0, false, literalTQ(BlockTQ1_0Size, tq1CodesAt, false)},
		{"ggml_vec_dot_tq1_0_q8_K_generic", 0, true, literalTQ(BlockTQ1_0Size, tq1CodesAt, true)},
		{"ggml_vec_dot_tq2_0_q8_K", 1, false, literalTQ(BlockTQ2_0Size, tq2CodesAt, false)},
		{"ggml_vec_dot_tq2_0_q8_K_generic", 1, true, literalTQ(BlockTQ2_0Size, tq2CodesAt, true)},
		{"ggml_vec_dot_q2_K_q8_K_generic", 2, true, literalQ2_KGeneric},
		{"ggml_vec_dot_q3_K_q8_K_generic", 3, true, literalQ3_KGeneric},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &kFormats[tc.fi]
			ref, model := f.refDot(k), f.dot
			if tc.generic {
				ref, model = f.refGeneric(k), f.generic
			}
			r := rand.New(rand.NewPCG(94, uint64(tc.fi)))
			const nb = 16
			differ, total := 0, 0
			for range 300 {
				w := make([]byte, nb*f.blockSize)
				f.quantize(kRowCases[4].gen(r, nb*QK_K), w) // gaussian weights
				a := make([]byte, nb*BlockQ8_KSize)
				QuantizeRowQ8_K(kRowCases[4].gen(r, nb*QK_K), a)
				want := ref(nb*QK_K, w, a)
				if !bitsEq(model(w, a, nb), want) {
					t.Fatal("modelled order differs from the reference")
				}
				if !bitsEq(tc.literal(w, a, nb), want) {
					differ++
				}
				total++
			}
			t.Logf("%s: a literal (unfused) port differs from the reference on %d/%d rows of 4096; the model on 0/%d", tc.name, differ, total, total)
		})
	}
}

func tq1CodesAt(w []byte, b int, c *[QK_K]uint8) float32 {
	blk := (*[BlockTQ1_0Size]byte)(w[b*BlockTQ1_0Size:])
	tq1Codes(blk, c)
	return tq1D(blk)
}

func tq2CodesAt(w []byte, b int, c *[QK_K]uint8) float32 {
	blk := (*[BlockTQ2_0Size]byte)(w[b*BlockTQ2_0Size:])
	tq2Codes(blk, c)
	return tq2D(blk)
}

// literalTQ is the ternary kernels read literally: the AVX2 lanes'
// _mm256_add_ps(_mm256_mul_ps(..)) or the generic sumf += (float)sum*d with
// the product rounded before the add.
func literalTQ(size int, codes func(w []byte, b int, c *[QK_K]uint8) float32, generic bool) func(w, a []byte, nb int) float32 {
	return func(w, a []byte, nb int) float32 {
		var acc [8]float32
		var sumf float32
		var c [QK_K]uint8
		for b := range nb {
			ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
			d := q8KD(ab) * codes(w, b, &c)
			if generic {
				var sum int32
				for e := range QK_K {
					sum += (int32(c[e]) - 1) * int32(int8(ab[q8KOffQs+e]))
				}
				sumf += float32(float32(sum) * d)
				continue
			}
			var s16 [16]int32
			for e := range QK_K {
				s16[(e%32)/2] += int32(c[e]) * int32(int8(ab[q8KOffQs+e]))
			}
			var lanes [8]int32
			tqLanes(&s16, ab, &lanes)
			for l := range 8 {
				acc[l] = float32(float32(lanes[l])*d) + acc[l]
			}
		}
		if generic {
			return sumf
		}
		return hsum8(&acc)
	}
}

// literalQ2_KGeneric is ggml_vec_dot_q2_K_q8_K_generic read literally:
// sumf += dall*isum - dmin*summs with both products rounded.
func literalQ2_KGeneric(w, a []byte, nb int) float32 {
	var sumf float32
	var c [QK_K]uint8
	for b := range nb {
		blk := (*[BlockQ2_KSize]byte)(w[b*BlockQ2_KSize:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		q2KCodes(blk, &c)
		var isum, summs int32
		for e := range QK_K {
			isum += int32(blk[e/16]&0xf) * int32(c[e]) * int32(int8(ab[q8KOffQs+e]))
		}
		for j := range 16 {
			summs += int32(q8KBsum(ab, j)) * int32(blk[j]>>4)
		}
		xd, xdmin := q2KD(blk)
		dall, dmin := q8KD(ab)*xd, q8KD(ab)*xdmin
		sumf += float32(dall*float32(isum)) - float32(dmin*float32(summs))
	}
	return sumf
}

// literalQ3_KGeneric is ggml_vec_dot_q3_K_q8_K_generic read literally:
// sums[l] += d*aux32[l] with the product rounded.
func literalQ3_KGeneric(w, a []byte, nb int) float32 {
	var sums [8]float32
	var s [16]int32
	var wq [QK_K]int8
	for b := range nb {
		blk := (*[BlockQ3_KSize]byte)(w[b*BlockQ3_KSize:])
		ab := (*[BlockQ8_KSize]byte)(a[b*BlockQ8_KSize:])
		q3KScales(blk, &s)
		q3KWeights(blk, &wq)
		var aux32 [8]int32
		for e := range QK_K {
			aux32[e%8] += s[e/16] * int32(wq[e]) * int32(int8(ab[q8KOffQs+e]))
		}
		d := q3KD(blk) * q8KD(ab)
		for l := range 8 {
			sums[l] += float32(d * float32(aux32[l]))
		}
	}
	var sumf float32
	for _, v := range sums {
		sumf += v
	}
	return sumf
}

// TestKQuantsFastMatchesSpec is the fuzz-style check of every fast path
// against its executable specification on random blocks (random bytes,
// random Q8_K with random bsums, so int16 wrap-around is exercised), without
// the reference.
func TestKQuantsFastMatchesSpec(t *testing.T) {
	for _, f := range kFormats {
		t.Run(f.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(96, uint64(f.typ)))
			n := 0
			for trial := range 3000 {
				nb := 1 + r.IntN(6)
				w := f.randKBlocks(r, nb, trial%3 == 0)
				a := kRandQ8_K(r, nb, trial%2 == 0)
				kCheckSpec(t, &f, w, a, nb)
				n++
			}
			t.Logf("%s: %d/%d random rows: fast paths equal their specifications", f.name, n, n)
		})
	}
}

func kCheckSpec(t *testing.T, f *kFormat, w, a []byte, nb int) {
	t.Helper()
	if got, want := f.dot(w, a, nb), f.spec(w, a, nb); !bitsEq(got, want) {
		t.Fatalf("%s nb=%d: vec_dot %g, spec %g\nw %x\na %x", f.name, nb, got, want, w, a)
	}
	if got, want := f.generic(w, a, nb), f.specGeneric(w, a, nb); !bitsEq(got, want) {
		t.Fatalf("%s nb=%d: _generic %g, spec %g\nw %x\na %x", f.name, nb, got, want, w, a)
	}
}

// kFuzz runs the fast-path-against-specification check on fuzzer-chosen
// bytes: the first bytes seed the block contents.
func kFuzz(f *testing.F, fi int) {
	for s := range uint64(8) {
		f.Add(s, uint8(s%3+1))
	}
	f.Fuzz(func(t *testing.T, seed uint64, nb uint8) {
		fm := &kFormats[fi]
		n := int(nb%4) + 1
		r := rand.New(rand.NewPCG(seed, uint64(fm.typ)))
		w := fm.randKBlocks(r, n, seed%2 == 0)
		a := kRandQ8_K(r, n, seed%3 == 0)
		kCheckSpec(t, fm, w, a, n)
	})
}

func FuzzVecDotTQ1_0Q8_K(f *testing.F) { kFuzz(f, 0) }
func FuzzVecDotTQ2_0Q8_K(f *testing.F) { kFuzz(f, 1) }
func FuzzVecDotQ2_KQ8_K(f *testing.F)  { kFuzz(f, 2) }
func FuzzVecDotQ3_KQ8_K(f *testing.F)  { kFuzz(f, 3) }

// TestKQuantsTritDecoding: the AVX2 TQ1_0 kernel's byte arithmetic (multiply
// by 3^n with shifts and masks, vpsubusb 1, two vpavgb, >>6) gives
// (q*3)>>8 for every byte, the trit the generic kernel and the dequantizer
// use; so one table serves all.
func TestKQuantsTritDecoding(t *testing.T) {
	for q := range 256 {
		for n := range 5 {
			v := uint8(q) * tq1Pow3[n] // mod 256, as the shifts and masks give
			s := uint8(max(int(v)-1, 0))
			avg := func(a, b uint8) uint8 { return uint8((uint16(a) + uint16(b) + 1) >> 1) }
			simd := avg(s, avg(s, 0)) >> 6 & 3
			if simd != tq1Trits[q][n] {
				t.Fatalf("byte %d trit %d: AVX2 decoding %d, table %d", q, n, simd, tq1Trits[q][n])
			}
		}
	}
}

// TestKQuantsBadLengths: short or ragged buffers neither panic nor read past
// what they hold.
func TestKQuantsBadLengths(t *testing.T) {
	for _, f := range kFormats {
		t.Run(f.name, func(t *testing.T) {
			for _, tc := range []struct{ nw, na, nb int }{
				{0, 0, 1}, {f.blockSize - 1, BlockQ8_KSize, 1}, {f.blockSize, BlockQ8_KSize - 1, 1},
				{2 * f.blockSize, BlockQ8_KSize, 2}, {f.blockSize, BlockQ8_KSize, -3},
			} {
				w, a := make([]byte, tc.nw), make([]byte, tc.na)
				f.dot(w, a, tc.nb)
				f.generic(w, a, tc.nb)
				f.dequant(w, make([]float32, QK_K+5))
				f.quantize(make([]float32, 2*QK_K), w)
				f.quantize(make([]float32, QK_K-1), make([]byte, f.blockSize))
			}
		})
	}
}

// TestKQuantsMatMulPath: ggml_mul_mat graphs of the reference (haswell CPU
// library, 1 and 2 threads) for 1, 2, 3, 4, 5, 8, 16 and 64 activation
// columns equal, output by output, the vec_dot kernel applied to the weight
// row and the column quantized with quantize_row_q8_K: the path the lead's
// MatMul must take for these types.
func TestKQuantsMatMulPath(t *testing.T) {
	k := kquantKernels(t)
	for _, f := range kFormats {
		t.Run(f.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(97, uint64(f.typ)))
			const rows, nb = 16, 4
			cols := nb * QK_K
			var w []byte
			for range rows {
				w = append(w, f.randKBlocks(r, nb, true)...)
			}
			outs := 0
			for _, n := range []int{1, 2, 3, 4, 5, 8, 16, 64} {
				x := make([]float32, 0, n*cols)
				for j := range n {
					x = append(x, kRowCases[j%len(kRowCases)].gen(r, cols)...)
				}
				xq := make([]byte, n*nb*BlockQ8_KSize)
				for j := range n {
					QuantizeRowQ8_K(x[j*cols:(j+1)*cols], xq[j*nb*BlockQ8_KSize:])
				}
				for _, threads := range []int{1, 2} {
					got, err := k.GraphMulMat(int32(f.typ), rows, cols, w, x, n, threads)
					if err != nil {
						t.Fatal(err)
					}
					rb := nb * f.blockSize
					for j := range n {
						for i := range rows {
							want := f.dot(w[i*rb:(i+1)*rb], xq[j*nb*BlockQ8_KSize:(j+1)*nb*BlockQ8_KSize], nb)
							if o := got[j*rows+i]; !bitsEq(o, want) {
								t.Fatalf("n=%d threads=%d out[%d,%d]: graph %g, vec_dot %g", n, threads, j, i, o, want)
							}
							outs++
						}
					}
				}
			}
			t.Logf("%s: mul_mat graphs (n = 1..64 columns, 1 and 2 threads): %d/%d outputs equal vec_dot on quantize_row_q8_K columns", f.name, outs, outs)
		})
	}
}
