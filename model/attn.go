package model

import (
	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/quant"
)

// The kernels of flash attention's inner loops, each with its portable twin
// (the *Go function, run at quant.LevelGeneric and wherever the assembly
// does not apply) and, on amd64, an assembly kernel per SIMD level
// (attn_amd64.s) that computes the same bits: the fused multiply-adds are
// vfmadd231ps (one rounding, as fmath.FMA32), the f16 widening vcvtph2ps
// (exact), the f16 rounding vcvtps2ph $0 (nearest even, as fp16Soft for
// every value but NaN: the f16 kernel stops before a step that makes a NaN
// and the twin finishes it, and the tiled kernel redoes a row whose result
// holds a NaN with the twins, so NaN payloads and signs are the twins').

// vAccF16Go is the V accumulation of one_chunk over the cells i <
// len(vs) (ggml_vec_scale_f16 and ggml_vec_mad_f16 as the haswell build
// compiled them: f16 rounding after every step): when ms[i] != 1 the
// accumulator is rescaled, acc = fp16Soft(acc*ms[i]); then acc =
// fp16Soft(fma(v, vs[i], acc)) with v = cell i's values vc[off+i*stride:]
// (len(acc) of them). A rescale by exactly 1 changes no bit, so ms[i] = 1
// stands for "no rescale".
func vAccF16Go(acc, vc []uint16, off, stride int, vs, ms []float32) {
	dv := len(acc)
	for i, w := range vs {
		if r := ms[i]; r != 1 {
			for d := range dv {
				acc[d] = fp16Soft(quant.FP16ToFP32(acc[d]) * r)
			}
		}
		row := vc[off+i*stride:][:dv]
		for d := range dv {
			acc[d] = fp16Soft(fmath.FMA32(quant.FP16ToFP32(row[d]), w, quant.FP16ToFP32(acc[d])))
		}
	}
}

// kqTileGo is the tiled kernel's scores of one query row q (DK values)
// against a tile of faTile cells (simd_gemm): kq[c] is the fused chain
// acc = fma(K[c][d], q[d], acc) over d = 0..DK-1 from acc = 0, with kt the
// tile's K widened and transposed (kt[d*faTile+c] = K[c][d]).
func kqTileGo(kq, q, kt []float32) {
	for c := range faTile {
		var acc float32
		for d, qd := range q {
			acc = fmath.FMA32(kt[d*faTile+c], qd, acc)
		}
		kq[c] = acc
	}
}

// vkqTileGo is the tiled kernel's VKQ += KQ·V for one query row (simd_gemm):
// vkq[d] continues the fused chain acc = fma(V[c][d], kq[c], acc) over the
// faTile cells c in order, with vw the tile's V widened (vw[c*DV+d]).
func vkqTileGo(vkq, vw, kq []float32) {
	dv := len(vkq)
	for d := range dv {
		acc := vkq[d]
		for c := range faTile {
			acc = fmath.FMA32(vw[c*dv+d], kq[c], acc)
		}
		vkq[d] = acc
	}
}

// vExpfTileGo is the exponentials of ggml_vec_soft_max_f32 over a tile's
// faTile scores: kq[i] = ggml_v_expf(kq[i]-m), in vectors of 8 (vExpf).
func vExpfTileGo(kq []float32, m float32) {
	for g := 0; g < faTile; g += 8 {
		large := false
		for k := range 8 {
			large = large || vExpfLarge(kq[g+k]-m)
		}
		for k := range 8 {
			kq[g+k] = vExpf(kq[g+k]-m, large)
		}
	}
}

// widenF16Go is dst[i] = f32(src[i]).
func widenF16Go(dst []float32, src []uint16) {
	for i, h := range src {
		dst[i] = quant.FP16ToFP32(h)
	}
}

// tileQuery is one query row of the tiled kernel: Q (DK values, f32), the
// cells [lo, nKV) its mask allows, its output (DV values) and its
// online-softmax state (running maximum M, sum S, unnormalised vkq).
type tileQuery struct {
	q, out []float32
	nKV    int
	lo     int // the first cell the mask allows (a sliding window's start; 0 otherwise)
	M, S   float32
	vkq    []float32
}

// tileScratch is tiledKV's working memory (grown on demand, reused).
type tileScratch struct {
	kw, kt, vw, kq []float32
}

func grow32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// tiledKV is ggml_compute_forward_flash_attn_ext_tiled for the query rows qs,
// which all read one KV head: cell ic's K and V are kc and vc at
// ic*stride+off (DK and DV values). The KV tiles of faTile cells are widened
// from f16 once and shared by every row (the reference's Q tile shares them
// the same way; no row's result depends on its tile mates). Per row and
// tile: scores KQ = Q·K (kqTile), scaled, masked cells -inf; a tile whose
// maximum is -inf changes nothing; otherwise the new maximum, fmaxf and a
// glibc expf rescale of VKQ and S; ggml_vec_soft_max_f32 (ggml_v_expf on
// groups of 8, hsum_float_8, the sum in double added to the float S); then
// VKQ += KQ·V (vkqTile). Masked cells weigh exactly 0 but still enter the VKQ
// chain with the cache's values (zeros where never written), as in
// simd_gemm. At the end out = VKQ/S. Tiles run up to the largest nKV of qs;
// the cache must hold whole tiles there (it holds multiples of 256 cells).
func tiledKV(l quant.Level, qs []tileQuery, kc, vc []uint16, off, stride int, scale float32, ts *tileScratch) {
	dk, dv := len(qs[0].q), len(qs[0].out)
	nKV, lo := 0, qs[0].lo
	for i := range qs {
		t := &qs[i]
		nKV, lo = max(nKV, t.nKV), min(lo, t.lo)
		t.M, t.S = float32(negInf), 0
		for d := range t.vkq {
			t.vkq[d] = 0
		}
	}
	ts.kw, ts.kt = grow32(ts.kw, faTile*dk), grow32(ts.kt, faTile*dk)
	ts.vw, ts.kq = grow32(ts.vw, faTile*dv), grow32(ts.kq, faTile)
	kw, kt, vw, kq := ts.kw, ts.kt, ts.vw, ts.kq
	// Tiles before every row's window are masked for all of them: skipped.
	for ic := lo / faTile * faTile; ic < nKV; ic += faTile {
		for c := range faTile {
			o := (ic+c)*stride + off
			widenF16(l, kw[c*dk:(c+1)*dk], kc[o:o+dk])
			widenF16(l, vw[c*dv:(c+1)*dv], vc[o:o+dv])
		}
		for c := range faTile {
			for d, x := range kw[c*dk : (c+1)*dk] {
				kt[d*faTile+c] = x
			}
		}
		for i := range qs {
			t := &qs[i]
			if ic >= t.nKV || ic+faTile <= t.lo {
				continue // fully masked: every score -inf, the tile is skipped
			}
			kqTile(l, kq, t.q, kt)
			tileMax := float32(negInf)
			for c := range faTile {
				if ic+c >= t.nKV || ic+c < t.lo {
					kq[c] = float32(negInf)
					continue
				}
				kq[c] = float32(kq[c]*scale) + 0 // the mask value of an unmasked cell
				if kq[c] > tileMax {
					tileMax = kq[c]
				}
			}
			if tileMax == float32(negInf) {
				continue
			}
			mNew := max(t.M, tileMax)
			if mNew > t.M {
				ms := fmath.Expf(t.M - mNew)
				for d := range t.vkq {
					t.vkq[d] *= ms
				}
				t.S *= ms
			}
			t.M = mNew
			vExpfTile(l, kq, t.M)
			var sum float64
			for g := 0; g < faTile; g += 8 {
				sum += float64(hsum8((*[8]float32)(kq[g : g+8])))
			}
			t.S = float32(float64(t.S) + sum)
			vkqTile(l, t.vkq, vw, kq)
		}
	}
	for i := range qs {
		t := &qs[i]
		normalize(t.out, t.vkq, t.S)
		if l != quant.LevelGeneric && hasNaN(t.out) {
			// A NaN's sign and payload are the twins' (software FMA) only
			// if the twins make it.
			tiledKV(quant.LevelGeneric, qs[i:i+1], kc, vc, off, stride, scale, ts)
		}
	}
}

func hasNaN(x []float32) bool {
	for _, v := range x {
		if v != v {
			return true
		}
	}
	return false
}
