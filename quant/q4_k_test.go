package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/internal/reference"
)

// q4KTestMakeX8 is make_block_q4_Kx8 (ggml-cpu/repack.cpp, interleave 8):
// eight Q4_K blocks (one per weight row) into one block_q4_Kx8.
func q4KTestMakeX8(in [8][]byte) []byte {
	out := make([]byte, reference.BlockQ4_Kx8Size)
	for i := range 8 {
		copy(out[2*i:], in[i][0:2])    // d
		copy(out[16+2*i:], in[i][2:4]) // dmin
	}
	sc := out[32 : 32+96]
	qs := out[128:]
	for i := range QK_K * 4 / 8 {
		copy(qs[8*i:8*i+8], in[i%8][q4KOffQs+(i/8)*8:])
	}
	var s, m [8]byte
	pack := func(o int) {
		for k := range 4 {
			sc[o+k] = s[k]&63 + (s[k+4]&48)<<2
			sc[o+4+k] = m[k]&63 + (m[k+4]&48)<<2
			sc[o+8+k] = s[k+4]&15 + (m[k+4]&15)<<4
		}
	}
	for i := range 4 {
		for j := range 8 {
			b := in[j][k456OffScales:]
			s[j], m[j] = b[i]&63, b[i+4]&63
		}
		pack(12 * i)
	}
	for i := range 4 {
		for j := range 8 {
			b := in[j][k456OffScales:]
			s[j] = (b[i]&192)>>2 | b[i+8]&15
			m[j] = (b[i+4]&192)>>2 | (b[i+8]&240)>>4
		}
		pack(48 + 12*i)
	}
	return out
}

// q4KTestRepack repacks rows (a multiple of 8) of nb Q4_K blocks as
// repack_q4_K_to_q4_K_8_bl does: groups of eight rows, block by block.
func q4KTestRepack(w []byte, rows, nb int) []byte {
	var out []byte
	for g := 0; g < rows; g += 8 {
		for x := range nb {
			var in [8][]byte
			for i := range 8 {
				o := ((g+i)*nb + x) * BlockQ4_KSize
				in[i] = w[o : o+BlockQ4_KSize]
			}
			out = append(out, q4KTestMakeX8(in)...)
		}
	}
	return out
}

// q4KTestRow returns row i of a Q4_K matrix of nb blocks per row.
func q4KTestRow(w []byte, i, nb int) []byte { return w[i*nb*BlockQ4_KSize : (i+1)*nb*BlockQ4_KSize] }

// TestQuantizeRowQ8_K4x8MatchesReference: ggml_quantize_mat_q8_K_4x8's four
// interleaved rows, taken apart, equal QuantizeRowQ8_K4x8 of each row: d, the
// 256 quants and the sums of 32 the gemm reads from the interleaved bsums.
func TestQuantizeRowQ8_K4x8MatchesReference(t *testing.T) {
	k := k456Kernels(t)
	r := rand.New(rand.NewPCG(71, 72))
	const trials = 1500
	bad, blocks, signDiff := 0, 0, 0
	for trial := range trials {
		nb := 1 + r.IntN(4)
		n := nb * QK_K
		x := make([]float32, 4*n)
		for row := range 4 {
			copy(x[row*n:], k456Row(r, n))
		}
		if trial%3 == 0 { // ±amax in both orders: where the sign rules differ
			for row := range 4 {
				for b := range nb {
					xb := x[row*n+b*QK_K : row*n+(b+1)*QK_K]
					m := float32(100 + r.IntN(100))
					i, j := r.IntN(QK_K), r.IntN(QK_K)
					if i == j {
						continue
					}
					xb[min(i, j)], xb[max(i, j)] = -m, m
				}
			}
		}
		ref := make([]byte, nb*reference.BlockQ8_Kx4Size)
		k.QuantizeMatQ8_K4x8(x, n, ref)
		for row := range 4 {
			got := make([]byte, nb*BlockQ8_KSize)
			QuantizeRowQ8_K4x8(x[row*n:(row+1)*n], got)
			plain := make([]byte, nb*BlockQ8_KSize)
			k.K456QuantizeRowQ8_K(x[row*n:(row+1)*n], plain)
			for b := range nb {
				blocks++
				rb := ref[b*reference.BlockQ8_Kx4Size:]
				gb := got[b*BlockQ8_KSize:]
				if string(gb[:4]) != string(plain[b*BlockQ8_KSize:][:4]) {
					signDiff++
				}
				ok := string(rb[4*row:4*row+4]) == string(gb[:4])
				for j := range QK_K / 8 { // qs[32j + 8row + t] is row's quant 8j+t
					ok = ok && string(rb[16+32*j+8*row:16+32*j+8*row+8]) == string(gb[q8KOffQs+8*j:q8KOffQs+8*j+8])
				}
				for s := range 8 { // the gemm's hadd pairs: sum of 32 of sub-block s
					p := 1040 + 2*(16*(s/2)+4*row+2*(s%2))
					ref32 := int16(binary.LittleEndian.Uint16(rb[p:])) + int16(binary.LittleEndian.Uint16(rb[p+2:]))
					got32 := int16(k456Bsum(gb, 2*s) + k456Bsum(gb, 2*s+1))
					ok = ok && ref32 == got32
				}
				if !ok {
					if bad < 3 {
						t.Errorf("trial %d row %d block %d: differs", trial, row, b)
					}
					bad++
				}
			}
		}
	}
	t.Logf("Q8_K 4x8: %d/%d row blocks identical (d, qs, sums of 32); %d of them differ in sign from quantize_row_q8_K", blocks-bad, blocks, signDiff)
}

// q4KTestWeights returns rows×nb random Q4_K blocks, some rows the
// reference quantizer's output.
func q4KTestWeights(r *rand.Rand, k *reference.Kernels, rows, nb int) []byte {
	f := &k456Formats[0]
	var w []byte
	for range rows {
		w = append(w, k456RandBlocks(r, f, nb, k.QuantizeRowQ4_KRef)...)
	}
	return w
}

// TestRepackQ4_KMatchesReference: ggml_gemv_q4_K_8x8_q8_K and
// ggml_gemm_q4_K_8x8_q8_K on repacked weights, bit for bit against
// RepackGemvQ4_KQ8_K and RepackGemmQ4_KQ8_K on the plain rows (and, for
// information, how often VecDotQ4_KQ8_K would have given another answer).
func TestRepackQ4_KMatchesReference(t *testing.T) {
	k := k456Kernels(t)
	r := rand.New(rand.NewPCG(73, 74))
	var gemvN, gemvBad, gemmN, gemmBad, vecDiff, gemmVsGemv int
	for _, nb := range []int{1, 2, 3, 5, 16, 48} {
		for _, nc := range []int{8, 16, 40} {
			for range 6 {
				w := q4KTestWeights(r, k, nc, nb)
				vx := q4KTestRepack(w, nc, nb)
				n := nb * QK_K

				a := make([]byte, nb*BlockQ8_KSize)
				k.K456QuantizeRowQ8_K(k456Row(r, n), a)
				s := make([]float32, nc)
				k.GemvQ4_K8x8Q8_K(n, s, vx, a, nc)
				for c := range nc {
					gemvN++
					row := q4KTestRow(w, c, nb)
					if got := RepackGemvQ4_KQ8_K(row, a, nb); !bitsEq(got, s[c]) {
						if gemvBad < 5 {
							t.Errorf("gemv nb=%d nc=%d col %d: %g, reference %g", nb, nc, c, got, s[c])
						}
						gemvBad++
					}
					if !bitsEq(VecDotQ4_KQ8_K(row, a, nb), s[c]) {
						vecDiff++
					}
				}

				for _, nr := range []int{4, 16, 20} {
					x := k456Row(r, nr*n)
					vy := make([]byte, nr/4*nb*reference.BlockQ8_Kx4Size)
					for g := 0; g < nr; g += 4 {
						k.QuantizeMatQ8_K4x8(x[g*n:(g+4)*n], n, vy[g/4*nb*reference.BlockQ8_Kx4Size:])
					}
					bs := nc + 3
					out := make([]float32, nr*bs)
					k.GemmQ4_K8x8Q8_K(n, out, bs, vx, vy, nr, nc)
					aq := make([]byte, nb*BlockQ8_KSize)
					for y := range nr {
						QuantizeRowQ8_K4x8(x[y*n:(y+1)*n], aq)
						for c := range nc {
							gemmN++
							row := q4KTestRow(w, c, nb)
							got := RepackGemmQ4_KQ8_K(row, aq, nb)
							if !bitsEq(got, out[y*bs+c]) {
								if gemmBad < 5 {
									t.Errorf("gemm nb=%d nc=%d nr=%d (%d,%d): %g, reference %g", nb, nc, nr, y, c, got, out[y*bs+c])
								}
								gemmBad++
							}
							if !bitsEq(RepackGemvQ4_KQ8_K(row, aq, nb), out[y*bs+c]) {
								gemmVsGemv++
							}
						}
					}
				}
			}
		}
	}
	t.Logf("Q4_K repacked: %d/%d gemv dots, %d/%d gemm dots", gemvN-gemvBad, gemvN, gemmN-gemmBad, gemmN)
	t.Logf("Q4_K: vec_dot's chain differs from gemv's on %d/%d outputs; gemv's chain from gemm's on %d/%d", vecDiff, gemvN, gemmVsGemv, gemmN)
}

// TestK456MatMulPath runs the reference's whole mul_mat op (haswell CPU
// library, 1 and 2 threads) for each column count of issue 4, with the
// weights in a plain context and in the CPU_REPACK buffer as llama.cpp loads
// them, and checks every output against the path bankml models:
//   - plain context, all three types: vec_dot (llamafile's sgemm has no
//     K-quant case) on quantize_row_q8_K activations;
//   - CPU_REPACK, Q4_K with rows%8 == 0: the first n - n%4 columns through
//     ggml_quantize_mat_q8_K_4x8 and the gemm chain, the rest through
//     quantize_row_q8_K and the gemv chain;
//
// Q5_K, Q6_K and Q4_K with other row counts are not placed in CPU_REPACK on
// x86 (its supports_op asks the same selector, which has no x86 case for
// them), so they take the plain path whatever buffer llama.cpp offers.
func TestK456MatMulPath(t *testing.T) {
	k := k456Kernels(t)
	r := rand.New(rand.NewPCG(75, 76))
	counts := map[string][2]int{}
	for fi := range k456Formats {
		f := &k456Formats[fi]
		typ := map[string]gguf.GGMLType{"Q4_K": gguf.Q4_K, "Q5_K": gguf.Q5_K, "Q6_K": gguf.Q6_K}[f.name]
		for _, cols := range []int{256, 1024} {
			nb := cols / QK_K
			for _, rows := range []int{1, 8, 12, 16} {
				w := make([]byte, 0, rows*nb*f.blockSize)
				for range rows {
					w = append(w, k456RandBlocks(r, f, nb, f.refQuantize(k))...)
				}
				for _, n := range []int{1, 2, 3, 4, 5, 8, 16, 64} {
					for _, threads := range []int{1, 2} {
						for _, repack := range []bool{false, true} {
							if repack && (f.name != "Q4_K" || rows%8 != 0) {
								continue
							}
							x := k456Row(r, n*cols)
							got, err := k.GraphMulMatK456(int32(typ), rows, cols, w, x, n, threads, repack)
							if err != nil {
								t.Fatal(err)
							}
							path := "vec_dot"
							if repack && f.name == "Q4_K" && rows%8 == 0 {
								path = "repack"
							}
							key := f.name + " " + path
							c := counts[key]
							for j := range n {
								xj := x[j*cols : (j+1)*cols]
								aq := make([]byte, nb*BlockQ8_KSize)
								dot := f.dot
								if path == "repack" && j < n-n%4 {
									QuantizeRowQ8_K4x8(xj, aq)
									dot = RepackGemmQ4_KQ8_K
								} else {
									k.K456QuantizeRowQ8_K(xj, aq)
									if path == "repack" {
										dot = RepackGemvQ4_KQ8_K
									}
								}
								for i := range rows {
									c[0]++
									want := dot(w[i*nb*f.blockSize:(i+1)*nb*f.blockSize], aq, nb)
									if g := got[j*rows+i]; !bitsEq(g, want) {
										if c[1] < 5 {
											t.Errorf("%s %s rows=%d cols=%d n=%d threads=%d: output (%d,%d) = %g (%#x), model %g (%#x)",
												f.name, path, rows, cols, n, threads, i, j, g, math.Float32bits(g), want, math.Float32bits(want))
										}
										c[1]++
									}
								}
							}
							counts[key] = c
						}
					}
				}
			}
		}
	}
	for _, key := range []string{"Q4_K vec_dot", "Q4_K repack", "Q5_K vec_dot", "Q6_K vec_dot"} {
		c := counts[key]
		t.Logf("%s mul_mat: %d/%d outputs", key, c[0]-c[1], c[0])
	}
}
