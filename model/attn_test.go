package model

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bankml/bankml/fmath"
	"github.com/bankml/bankml/gguf"
	"github.com/bankml/bankml/quant"
)

// The attention kernels at every level this CPU has against their portable
// twins and against the row-by-row formulation the model oracles proved
// (refOneChunk, refTiled: the kernels as they were before the assembly),
// bit for bit, on data with -0, subnormals, Inf and NaN. These are
// regression tests; the oracles are the model tests (TestQwen3LayersMatchReference
// and the rest) run at each BANKML_CPU level.

// f16Specials are f16 values the kernels must carry exactly: signed zeros,
// subnormals, the largest finite, infinities, quiet and signalling NaNs.
var f16Specials = []uint16{0x0000, 0x8000, 0x0001, 0x83ff, 0x0200, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7d01, 0x7c01, 0xffff}

// f32Specials are f32 values for Q.
var f32Specials = []float32{0, float32(math.Copysign(0, -1)), math.Float32frombits(1), math.Float32frombits(0x807fffff),
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0xffc00001), 3e38, -65504}

func randF16(r *rand.Rand, p float64, scale float64) uint16 {
	if r.Float64() < p {
		return f16Specials[r.IntN(len(f16Specials))]
	}
	return quant.FP32ToFP16(float32(r.NormFloat64() * scale))
}

func randF32(r *rand.Rand, p float64, scale float64) float32 {
	if r.Float64() < p {
		return f32Specials[r.IntN(len(f32Specials))]
	}
	return float32(r.NormFloat64() * scale)
}

// sameBits reports the first index where a and b differ in bits (-1: none).
func sameBits[T uint16 | float32](a, b []T) int {
	for i := range a {
		var x, y uint32
		switch av := any(a[i]).(type) {
		case uint16:
			x, y = uint32(av), uint32(any(b[i]).(uint16))
		case float32:
			x, y = math.Float32bits(av), math.Float32bits(any(b[i]).(float32))
		}
		if x != y {
			return i
		}
	}
	return -1
}

// sameBitsNaN is sameBits with every NaN equal to every other: a NaN's
// payload follows the vector unit's propagation rules (the reference's
// vfmadd231ps, as its register allocation has it), not fmath.FMA32's.
func sameBitsNaN(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return i
		}
	}
	return -1
}

// randSoftmaxSteps returns one_chunk's per-cell weights vs and rescales ms
// for n cells: vs in [0, 1), ms 1 (no new maximum) or, one cell in four,
// in [0, 1); at rate p a vs is any f32 special and an ms 0, 1, +Inf or
// extra.
func randSoftmaxSteps(r *rand.Rand, n int, p float64, extra float32) (vs, ms []float32) {
	vs, ms = make([]float32, n), make([]float32, n)
	for i := range vs {
		vs[i], ms[i] = float32(r.Float64()), 1
		if r.IntN(4) == 0 {
			ms[i] = float32(r.Float64())
		}
		if r.Float64() < p {
			vs[i] = randF32(r, 1, 1)
		}
		if r.Float64() < p {
			ms[i] = []float32{0, 1, float32(math.Inf(1)), extra}[r.IntN(4)]
		}
	}
	return vs, ms
}

var specialRates = []float64{0, 0.002, 0.02, 0.2}

func TestVAccF16MatchesTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, l := range quant.Levels() {
		for _, dv := range []int{8, 32, 40, 64, 96, 128, 160, 256} {
			for _, p := range specialRates {
				for trial := range 20 {
					n := 1 + r.IntN(70)
					stride := dv + 8*r.IntN(3)
					off := r.IntN(stride - dv + 1)
					vc := make([]uint16, n*stride+off)
					for i := range vc {
						vc[i] = randF16(r, p, []float64{1, 100, 20000}[trial%3])
					}
					vs, ms := randSoftmaxSteps(r, n, p, 70000)
					acc := make([]uint16, dv)
					for i := range acc {
						acc[i] = fp16Soft(quant.FP16ToFP32(randF16(r, p, 10)))
					}
					want := append([]uint16(nil), acc...)
					vAccF16Go(want, vc, off, stride, vs, ms)
					vAccF16(l, acc, vc, off, stride, vs, ms)
					if i := sameBits(acc, want); i >= 0 {
						t.Fatalf("%s dv=%d n=%d p=%g: lane %d = %#04x, twin %#04x", l, dv, n, p, i, acc[i], want[i])
					}
				}
			}
		}
	}
}

func TestVAccQuantMatchesTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, l := range quant.Levels() {
		for _, typ := range []gguf.GGMLType{gguf.Q8_0, gguf.Q4_0} {
			bs := rowBytes(typ, quant.QK8_0)
			for _, dv := range []int{32, 64, 128, 256} {
				for _, p := range specialRates {
					for trial := range 20 {
						n := 1 + r.IntN(70)
						rb := dv/quant.QK8_0*bs + bs*r.IntN(3) // other heads' blocks between cells
						off := bs * r.IntN((rb-dv/quant.QK8_0*bs)/bs+1)
						vq := make([]byte, n*rb+off)
						for i := range vq {
							vq[i] = byte(r.IntN(256))
						}
						for c := range n {
							for b := range dv / quant.QK8_0 {
								o := off + c*rb + b*bs
								binary.LittleEndian.PutUint16(vq[o:], randF16(r, p, []float64{0.01, 1, 100}[trial%3]))
							}
						}
						vs, ms := randSoftmaxSteps(r, n, p, float32(math.NaN()))
						acc := make([]float32, dv)
						for i := range acc {
							acc[i] = randF32(r, p, 10)
						}
						want := append([]float32(nil), acc...)
						vAccQuantGo(typ, want, vq, off, rb, vs, ms)
						vAccQuant(l, typ, acc, vq, off, rb, vs, ms)
						if i := sameBitsNaN(acc, want); i >= 0 {
							t.Fatalf("%s %s dv=%d n=%d p=%g: lane %d = %v (%#08x), twin %v (%#08x)", l, typ, dv, n, p, i, acc[i], math.Float32bits(acc[i]), want[i], math.Float32bits(want[i]))
						}
					}
				}
			}
		}
	}
}

func TestTileKernelsMatchTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, l := range quant.Levels() {
		for _, hd := range []int{8, 16, 40, 64, 128, 192, 256} {
			for _, p := range specialRates {
				for range 10 {
					q, kt, vw := make([]float32, hd), make([]float32, hd*faTile), make([]float32, hd*faTile)
					for i := range q {
						q[i] = randF32(r, p, 1)
					}
					for i := range kt {
						kt[i] = quant.FP16ToFP32(randF16(r, p, 1))
						vw[i] = quant.FP16ToFP32(randF16(r, p, 1))
					}
					got, want := make([]float32, faTile), make([]float32, faTile)
					kqTile(l, got, q, kt)
					kqTileGo(want, q, kt)
					if i := sameBits(got, want); i >= 0 && !(got[i] != got[i] && want[i] != want[i]) {
						t.Fatalf("%s kqTile hd=%d: cell %d = %g, twin %g", l, hd, i, got[i], want[i])
					}
					kq := make([]float32, faTile)
					for i := range kq {
						kq[i] = float32(r.Float64())
						if r.Float64() < p {
							kq[i] = 0
						}
					}
					gv, wv := make([]float32, hd), make([]float32, hd)
					for i := range gv {
						gv[i] = randF32(r, p, 1)
						wv[i] = gv[i]
					}
					vkqTile(l, gv, vw, kq)
					vkqTileGo(wv, vw, kq)
					if i := sameBits(gv, wv); i >= 0 && !(gv[i] != gv[i] && wv[i] != wv[i]) {
						t.Fatalf("%s vkqTile hd=%d: lane %d = %g, twin %g", l, hd, i, gv[i], wv[i])
					}
					ge, we := make([]float32, faTile), make([]float32, faTile)
					m := randF32(r, p, 3)
					for i := range ge {
						ge[i] = randF32(r, p, []float64{3, 60, 150}[i%3])
						we[i] = ge[i]
					}
					in := append([]float32(nil), ge...)
					vExpfTile(l, ge, m)
					vExpfTileGo(we, m)
					if i := sameBits(ge, we); i >= 0 && !(ge[i] != ge[i] && we[i] != we[i]) {
						t.Fatalf("%s vExpfTile m=%g: exp(%g-m) = %g (%#x), twin %g (%#x)", l, m, in[i], ge[i], math.Float32bits(ge[i]), we[i], math.Float32bits(we[i]))
					}
					src := make([]uint16, hd)
					for i := range src {
						src[i] = randF16(r, 0.5, 1)
					}
					gw, ww := make([]float32, hd), make([]float32, hd)
					widenF16(l, gw, src)
					widenF16Go(ww, src)
					if i := sameBits(gw, ww); i >= 0 {
						t.Fatalf("%s widenF16: %#04x -> %#08x, twin %#08x", l, src[i], math.Float32bits(gw[i]), math.Float32bits(ww[i]))
					}
				}
			}
		}
	}
}

// attnCase is a random layer cache and micro-batch for the whole-kernel tests.
type attnCase struct {
	hd, nHead, nHeadKV, nPast, n, cells int
	q                                   []float32
	kc, vc                              []uint16
}

func newAttnCase(r *rand.Rand, hd, nHead, nHeadKV, nPast, n int, p float64) *attnCase {
	cells := (nPast + n + 255) / 256 * 256
	c := &attnCase{hd: hd, nHead: nHead, nHeadKV: nHeadKV, nPast: nPast, n: n, cells: cells}
	nkv := nHeadKV * hd
	c.kc, c.vc = make([]uint16, cells*nkv), make([]uint16, cells*nkv)
	for i := range (nPast + n) * nkv { // cells past the batch stay zero, as in the cache
		c.kc[i], c.vc[i] = randF16(r, p, 1), randF16(r, p, 1)
	}
	if r.IntN(2) == 0 { // values past the last used cell (never read unmasked)
		for i := (nPast + n) * nkv; i < len(c.vc); i++ {
			c.vc[i] = randF16(r, p, 1)
		}
	}
	c.q = make([]float32, n*nHead*hd)
	for i := range c.q {
		c.q[i] = randF32(r, p, 2)
	}
	return c
}

// refRow is the query row (j, h) of a case in the closures' form refOneChunk
// and refTiled take.
func (c *attnCase) refRow(j, h int, scale float32) (q []float32, k, v func(int) []uint16, nKV int) {
	hd, nq, nkv := c.hd, c.nHead*c.hd, c.nHeadKV*c.hd
	hk := h / (c.nHead / c.nHeadKV)
	k = func(ic int) []uint16 { return c.kc[ic*nkv+hk*hd : ic*nkv+(hk+1)*hd] }
	v = func(ic int) []uint16 { return c.vc[ic*nkv+hk*hd : ic*nkv+(hk+1)*hd] }
	return c.q[j*nq+h*hd : j*nq+(h+1)*hd], k, v, c.nPast + j + 1
}

// refOneChunk is the one-row kernel as the model oracles first proved it
// (per cell: Q·K, softmax step, V step over every lane), with l's
// ggml_vec_dot_f16 (package quant's, tested there).
func refOneChunk(l quant.Level, q []float32, k, v func(int) []uint16, ic0, ic1 int, scale float32, vkq []float32) (M, S float32) {
	dv := len(vkq)
	qh, vkq16 := make([]uint16, len(q)), make([]uint16, dv)
	quant.FP32ToFP16Row(q, qh)
	M = float32(negInf)
	for ic := ic0; ic < ic1; ic++ {
		s := l.VecDotF16(k(ic), qh)
		s = s * scale
		s += 0
		vs := float32(1)
		vrow := v(ic)
		if s > M {
			mold := M
			M = s
			ms := fmath.Expf(mold - M)
			for d := range dv {
				vkq16[d] = fp16Soft(quant.FP16ToFP32(vkq16[d]) * ms)
			}
			S = float32(S*ms) + vs
		} else {
			vs = fmath.Expf(s - M)
			S = S + vs
		}
		for d := range dv {
			vkq16[d] = fp16Soft(fmath.FMA32(quant.FP16ToFP32(vrow[d]), vs, quant.FP16ToFP32(vkq16[d])))
		}
	}
	for d := range dv {
		vkq[d] = quant.FP16ToFP32(vkq16[d])
	}
	return M, S
}

// refTiled is the tiled kernel for one row as the model oracles first proved
// it (row by row, K and V read from the cache in place).
func refTiled(q []float32, k, v func(int) []uint16, nKV int, scale float32, out []float32) {
	dk, dv := len(q), len(out)
	vkq, kq := make([]float32, dv), make([]float32, faTile)
	M, S := float32(negInf), float32(0)
	for ic := 0; ic < nKV; ic += faTile {
		tileMax := float32(negInf)
		for tk := range faTile {
			c := ic + tk
			if c >= nKV {
				kq[tk] = float32(negInf)
				continue
			}
			kr := k(c)
			var acc float32
			for d := range dk {
				acc = fmath.FMA32(quant.FP16ToFP32(kr[d]), q[d], acc)
			}
			kq[tk] = float32(acc*scale) + 0
			if kq[tk] > tileMax {
				tileMax = kq[tk]
			}
		}
		if tileMax == float32(negInf) {
			continue
		}
		mNew := max(M, tileMax)
		if mNew > M {
			ms := fmath.Expf(M - mNew)
			for d := range dv {
				vkq[d] *= ms
			}
			S *= ms
		}
		M = mNew
		var sum float64
		var vals [8]float32
		for g := 0; g < faTile; g += 8 {
			large := false
			for l := range 8 {
				large = large || vExpfLarge(kq[g+l]-M)
			}
			for l := range 8 {
				vals[l] = vExpf(kq[g+l]-M, large)
				kq[g+l] = vals[l]
			}
			sum += float64(hsum8(&vals))
		}
		S = float32(float64(S) + sum)
		for d := range dv {
			acc := vkq[d]
			for tk := range faTile {
				acc = fmath.FMA32(quant.FP16ToFP32(v(ic + tk)[d]), kq[tk], acc)
			}
			vkq[d] = acc
		}
	}
	normalize(out, vkq, S)
}

// attnCases are the shapes of the whole-kernel tests: head sizes 64 and 128
// (the assembly's), 40 and 8 (partly or wholly the twins), GQA groups 1-4,
// KV lengths around tile edges.
var attnCases = []struct{ hd, nHead, nHeadKV, nPast, n int }{
	{64, 4, 2, 0, 64}, {128, 4, 1, 0, 70}, {128, 2, 2, 37, 64}, {64, 2, 1, 100, 129}, {40, 2, 1, 5, 64}, {8, 2, 2, 63, 65},
	{128, 4, 2, 0, 1}, {128, 2, 1, 130, 1}, {64, 2, 2, 10, 5}, {40, 2, 1, 3, 2}, {96, 1, 1, 700, 1}, {8, 1, 1, 0, 3},
}

func TestTiledMatchesRowByRow(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, cs := range attnCases {
		if cs.n < faTile {
			continue
		}
		for _, p := range specialRates {
			c := newAttnCase(r, cs.hd, cs.nHead, cs.nHeadKV, cs.nPast, cs.n, p)
			scale := 1 / fmath.Sqrtf(float32(cs.hd))
			want := make([]float32, cs.n*cs.nHead*cs.hd)
			for j := range cs.n {
				for h := range cs.nHead {
					q, k, v, nKV := c.refRow(j, h, scale)
					o := (j*cs.nHead + h) * cs.hd
					refTiled(q, k, v, nKV, scale, want[o:o+cs.hd])
				}
			}
			for _, l := range quant.Levels() {
				got := c.run(t, l, scale)
				if i := sameBits(got, want); i >= 0 {
					t.Fatalf("%s %+v p=%g: out[%d] = %g (%#x), row by row %g (%#x)", l, cs, p, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}
	}
}

func TestOneChunkMatchesCellByCell(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, cs := range attnCases {
		for _, p := range specialRates {
			c := newAttnCase(r, cs.hd, cs.nHead, cs.nHeadKV, cs.nPast, cs.n, p)
			scale := 1 / fmath.Sqrtf(float32(cs.hd))
			for _, l := range quant.Levels() {
				var sc chunkScratch
				for j := range cs.n {
					for h := range cs.nHead {
						q, k, v, nKV := c.refRow(j, h, scale)
						a := attnRow{q: q, kc: c.kc, vc: c.vc, off: h / (cs.nHead / cs.nHeadKV) * cs.hd, stride: cs.nHeadKV * cs.hd,
							nKV: nKV, scale: scale, level: l}
						ic0 := r.IntN(nKV)
						ic1 := ic0 + 1 + r.IntN(nKV-ic0)
						got, want := make([]float32, cs.hd), make([]float32, cs.hd)
						gm, gs := a.oneChunk(ic0, ic1, got, &sc)
						wm, ws := refOneChunk(l, q, k, v, ic0, ic1, scale, want)
						if i := sameBits(got, want); i >= 0 || math.Float32bits(gm) != math.Float32bits(wm) || math.Float32bits(gs) != math.Float32bits(ws) {
							t.Fatalf("%s %+v p=%g row %d head %d cells [%d,%d): M %#x S %#x vkq[%d] %#x; cell by cell M %#x S %#x vkq %#x",
								l, cs, p, j, h, ic0, ic1, math.Float32bits(gm), math.Float32bits(gs), i, math.Float32bits(got[max(i, 0)]),
								math.Float32bits(wm), math.Float32bits(ws), math.Float32bits(want[max(i, 0)]))
						}
					}
				}
			}
		}
	}
}

// context is a Context at level l for the case's heads (one pool thread,
// split-KV mirroring a reference on 2).
func (c *attnCase) context(t testing.TB, l quant.Level) *Context {
	t.Helper()
	m := &Model{Level: l}
	m.HP.NHead, m.HP.NHeadKV, m.HP.HeadDim = c.nHead, c.nHeadKV, c.hd
	ctx, err := m.NewContext(c.cells, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx.attnThreads = 2
	return ctx
}

// run is Context.attention on the case at level l.
func (c *attnCase) run(t testing.TB, l quant.Level, scale float32) []float32 {
	ctx := c.context(t, l)
	defer ctx.Close()
	out := make([]float32, c.n*c.nHead*c.hd)
	ctx.attention(out, c.q, c.kc, c.vc, c.nPast, c.n, scale)
	return out
}

// TestOneRowPathsMatchRowByRow runs Context.attention's one-row paths (the
// one-row kernel for micro-batches under 64 rows, split-KV for decodes past
// 512 padded cells, 2 chunks) against refOneChunk (for split-KV, its
// chunks merged by splitKV, the code the oracles proved).
func TestOneRowPathsMatchRowByRow(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, cs := range attnCases {
		if cs.n >= faTile {
			continue
		}
		for _, p := range specialRates {
			c := newAttnCase(r, cs.hd, cs.nHead, cs.nHeadKV, cs.nPast, cs.n, p)
			scale := 1 / fmath.Sqrtf(float32(cs.hd))
			nek1 := max(kvPad, (cs.nPast+cs.n+kvPad-1)/kvPad*kvPad)
			for _, l := range quant.Levels() {
				want := make([]float32, cs.n*cs.nHead*cs.hd)
				vkq := make([]float32, cs.hd)
				for j := range cs.n {
					for h := range cs.nHead {
						q, k, v, nKV := c.refRow(j, h, scale)
						o := want[(j*cs.nHead+h)*cs.hd:][:cs.hd]
						if cs.n == 1 && nek1 >= 512 {
							splitKV(o, nek1, 2, nKV, func(ic0, ic1 int, part []float32) (M, S float32) {
								return refOneChunk(l, q, k, v, ic0, ic1, scale, part)
							})
							continue
						}
						_, s := refOneChunk(l, q, k, v, 0, nKV, scale, vkq)
						normalize(o, vkq, s)
					}
				}
				got := c.run(t, l, scale)
				if i := sameBits(got, want); i >= 0 {
					t.Fatalf("%s %+v p=%g: out[%d] = %g (%#x), row by row %g (%#x)", l, cs, p, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		}
	}
}
