package quant

import (
	"encoding/binary"

	"github.com/bankml/bankml/fmath"
)

// The portable twins of the packed tile kernels (tile_amd64.s): one packed
// group of sixteen rows against nc prepared activation columns, out[16c+r]
// for column c0+c and row r of the group. Each is the element-wise statement
// of what the assembly computes lane by lane, with the same float chain as
// the plain kernels (VecDotQ1_0Q8_0, VecDotQ2_0Q8_0, VecDotTQ2_0Q8_K).

// groupScales converts the sixteen f16 d of a block's scale section.
func groupScales(scales []byte, d *[packRows]float32) {
	for r := range packRows {
		d[r] = FP16ToFP32(binary.LittleEndian.Uint16(scales[2*r:]))
	}
}

// tileQ2_0Go: per block, isum_s = -Σq_s + Σ code·q over sub-block s,
// s = fma(float(isum1), dy1, float(isum0)*dy0), sumf = fma(s, d, sumf).
// grp is the packed group (nb blocks of packBlockBytes).
func tileQ2_0Go(grp []byte, nb int, a *q8Act, c0, nc int, out []float32) {
	var d [packRows]float32
	for c := range nc {
		col := c0 + c
		var sumf [packRows]float32
		for b := range nb {
			blk := grp[q2BlockBytes*b:]
			groupScales(blk[256:], &d)
			cb := blk[:256]
			for r := range packRows {
				var p [2]float32
				for s := range 2 {
					i := col*a.k/QK8_0 + 2*b + s
					q := a.qs[32*i:]
					isum := a.nsum[i]
					for g := range 2 {
						v := cb[64*(2*s+g)+4*r:]
						for n := range 4 {
							for j := range 4 {
								isum += int32(v[j]>>(2*n)&3) * int32(int8(q[16*g+4*n+j]))
							}
						}
					}
					p[s] = float32(isum)
					if s == 0 {
						p[0] = p[0] * a.dy[i]
					} else {
						p[1] = fmath.FMA32(p[1], a.dy[i], p[0])
					}
				}
				sumf[r] = fmath.FMA32(p[1], d[r], sumf[r])
			}
		}
		copy(out[16*c:16*c+16], sumf[:])
	}
}

// tileQ1_0Go: per block and lane j, L_k = Σ_i (bit ? q : -q) over the four
// activations 32k+4j+i, blk = float(L0)*dy0 then blk = fma(float(L_k), dy_k,
// blk), acc_j = fma(d, blk, acc_j); the result is hsum8 over j.
func tileQ1_0Go(p *packed, g int, a *q8Act, c0, nc int, out []float32) {
	var d [packRows]float32
	for c := range nc {
		col := c0 + c
		var acc [8][packRows]float32
		for b := range p.nb {
			cb, scales := p.block(g, b)
			groupScales(scales, &d)
			for j := range 8 {
				var blk [packRows]float32
				for k := range 4 {
					i := col*a.k/QK8_0 + 4*b + k
					q, nq := a.qs[32*i+4*j:], a.nqs[32*i+4*j:]
					for r := range packRows {
						w := binary.LittleEndian.Uint32(cb[64*k+4*r:]) >> (4 * j)
						var l int32
						for e := range 4 {
							if w>>e&1 != 0 {
								l += int32(int8(q[e]))
							} else {
								l += int32(int8(nq[e]))
							}
						}
						if k == 0 {
							blk[r] = float32(l) * a.dy[i]
						} else {
							blk[r] = fmath.FMA32(float32(l), a.dy[i], blk[r])
						}
					}
				}
				for r := range packRows {
					acc[j][r] = fmath.FMA32(d[r], blk[r], acc[j][r])
				}
			}
		}
		hsumLanes(&acc, out[16*c:16*c+16])
	}
}

// tileTQ2_0Go: per block and lane l, L = nb_l + Σ code·y over the 32
// activations of lane l (both halves, all four code planes),
// acc_l = fma(float(L), y.d*x.d, acc_l); the result is hsum8 over l.
// Columns whose Q8_K bsums could wrap (a.exact false) run VecDotTQ2_0Q8_K on
// the raw blocks of each row, which the caller passes as rows (nil: none).
func tileTQ2_0Go(grp []byte, nb int, a *q8KAct, c0, nc int, out []float32) {
	var d [packRows]float32
	for c := range nc {
		col := c0 + c
		var acc [8][packRows]float32
		for b := range nb {
			blk := grp[tq2BlockBytes*b:]
			groupScales(blk[1024:], &d)
			i := col*a.k/QK_K + b
			y := a.qs[QK_K*i:]
			cb := blk[:1024]
			for r := range packRows {
				dd := a.d[i] * d[r]
				for l := range 8 {
					lane := a.nb[8*i+l]
					for h := range 2 {
						v := cb[64*(8*h+l)+4*r:]
						for n := range 4 {
							for e := range 4 {
								lane += int32(v[e]>>(2*n)&3) * int32(int8(y[128*h+32*n+4*l+e]))
							}
						}
					}
					acc[l][r] = fmath.FMA32(float32(lane), dd, acc[l][r])
				}
			}
		}
		hsumLanes(&acc, out[16*c:16*c+16])
	}
}

// hsumLanes is hsum_float_8 over the eight lane accumulators of each row.
func hsumLanes(acc *[8][packRows]float32, out []float32) {
	for r := range packRows {
		v := [8]float32{acc[0][r], acc[1][r], acc[2][r], acc[3][r], acc[4][r], acc[5][r], acc[6][r], acc[7][r]}
		out[r] = hsum8(&v)
	}
}
